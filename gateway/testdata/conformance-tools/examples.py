"""An example tool that needs a signed-in caller, for the real-client tests."""


def my_account(user_info: dict) -> str:
    """Names the caller's account (user_info is filled in by the server)."""
    return "account " + str(user_info.get("user_id", ""))


def favourite_colour(user_info: dict) -> str:
    """Asks the signed-in user for a colour, logging as it goes (the real-client tests)."""
    import logging

    import mirobody

    log = logging.getLogger("favourite_colour")
    log.info("asking %s", user_info.get("user_id", ""))
    answer = mirobody.elicit("What is your favourite colour?",
                             {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]})
    mirobody.log("notice", "answered", data={"action": answer.get("action")})
    if answer.get("action") != "accept":
        return "no colour"
    return "favourite colour: " + answer["content"]["colour"]
