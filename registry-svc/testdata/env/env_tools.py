"""Fixture: what a tool sees of the environment (Issue 9, item 2)."""
import os


def environment() -> dict:
    """Return the tool host's environment."""
    return dict(os.environ)
