"""A tool that shows what user_info.session_id a caller gets."""


def session_of(user_info: dict) -> str:
    """Return the caller's user_info.session_id, or "none"."""
    return user_info.get("session_id") or "none"
