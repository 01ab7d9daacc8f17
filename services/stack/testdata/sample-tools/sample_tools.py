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


def book_table(restaurant: str) -> str:
    """Books a table, asking the user for the details first."""
    note = mirobody.sample("A greeting for " + restaurant, max_tokens=20, system_prompt="You greet.")
    a = mirobody.elicit("How should we book " + restaurant + "?", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name"},
            "people": {"type": "integer", "minimum": 1, "default": 2},
            "seating": {"type": "string", "enum": ["inside", "outside"]},
            "vegetarian": {"type": "boolean", "default": False},
        },
        "required": ["name", "people"],
    })
    if a["action"] != "accept":
        return "not booked: " + a["action"]
    c = a["content"]
    return "booked %s: %s x%d %s vegetarian=%s (%s)" % (
        restaurant, c["name"], c["people"], c.get("seating", "any"), c.get("vegetarian"), note["content"]["text"])
