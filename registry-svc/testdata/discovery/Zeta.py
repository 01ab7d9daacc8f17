def collide() -> str:
    """From Zeta."""
    return "Zeta"
