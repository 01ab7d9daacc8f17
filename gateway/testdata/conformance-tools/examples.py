"""An example tool that needs a signed-in caller, for the real-client tests."""


def my_account(user_info: dict) -> str:
    """Names the caller's account (user_info is filled in by the server)."""
    return "account " + str(user_info.get("user_id", ""))
