def collide() -> str:
    """From alpha."""
    return "alpha"
