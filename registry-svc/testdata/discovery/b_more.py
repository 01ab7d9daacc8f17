"""Fixture: a service that another module imports."""


class MoreService:
    def more_op(self) -> str:
        """More."""
        return "more"
