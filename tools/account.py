"""Example Mirobody tool that receives the caller's identity.

A parameter named user_info is never part of the tool's schema: the server
fills it with {"success": True, "user_id": ..., "session_id": ...} from the
authenticated caller, so a model or client can neither supply nor forge it.
Anonymous callers are asked to authenticate before such a tool runs.
"""


def whoami(user_info: dict) -> dict:
    """Tell which Mirobody account and session this conversation belongs to.

    Use it when the user asks which account they are signed in with, or to
    include the account id in a support request.

    Returns:
        The account id and the session id (empty outside a session).
    """
    return {"account_id": user_info["user_id"], "session_id": user_info.get("session_id", "")}
