"""Tools that ask their caller, for the Deep agent's tests."""

import mirobody


def haiku(topic: str) -> str:
    """Writes a haiku about topic with the caller's model."""
    r = mirobody.sample("A haiku about " + topic, max_tokens=60, system_prompt="You write haiku.")
    return "haiku: " + r["content"]["text"]


def ask_user() -> str:
    """Asks the user, when the caller can ask."""
    try:
        mirobody.elicit("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    except mirobody.CapabilityUnavailable as e:
        return "cannot ask: " + e.capability
    return "asked"
