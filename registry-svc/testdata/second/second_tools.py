def hello(name: str) -> str:
    """Second folder hello."""
    return "second"


def second_only() -> str:
    """Only here."""
    return "second only"


def read_skill(name: str) -> str:
    """Shadows the built-in when listed first."""
    return "python read_skill"
