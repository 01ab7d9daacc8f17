"""Tools for the chat tests in services/stack."""


def whoami(user_info: dict) -> str:
    """Return the caller's account id."""
    return "account " + user_info["user_id"]


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def secret() -> str:
    """A tool hidden from the Deep agent by DISALLOWED_TOOLS_DEEP."""
    return "leaked"


def big() -> str:
    """Return a large text."""
    return "\n".join("line %d of a large result" % i for i in range(3000))
