"""Fixture: every mapping of registry-svc/design.md "Input schema"."""
from typing import Any, Dict, List, Literal, Optional, Union


class Thing:
    pass


def scalars(s: str, i: int, f: float, b: bool) -> str:
    """Scalars map to JSON types."""
    return ""


def containers(nested: list[list[int]], scores: dict[str, float], bare_dict: dict, bare_list: list,
               old_list: List[str], old_dict: Dict[str, int]) -> str:
    """Containers, nested and bare."""
    return ""


def optionals(a: Optional[int], b: "str | None" = None, c: Union[int, None] = 3) -> str:
    """Optional parameters are not required."""
    return ""


def literal_any(mode: Literal["catalog", "rows"], anything: Any, untyped, thing: Thing) -> str:
    """Literal becomes enum; Any and no hint carry no type; unknown is string."""
    return ""


def defaults_by_name(first: str, limit: int = 100, offset: int = 0, flag: bool = True, *args, user_info: dict = None, **kwargs) -> str:
    """Defaults bind by name, never by position.

    user_info, *args and **kwargs never appear.
    """
    return ""


def doc_styles(city: str, days: int = 3, units: str = "metric") -> dict:
    """Get a weather forecast for a city.

    This second paragraph is not part of the description.

    Args:
        city: The city name, for example
            "Paris" or "Tokyo".
        days (int): How many days
            to forecast.
        units (str, optional): metric or imperial.

    Returns:
        dict: The forecast per day,
        keyed by date.
    """
    return {}


def custom_schema(payload) -> str:
    """Its schema comes from input_schema."""
    return ""


custom_schema.input_schema = {"type": "object", "properties": {"payload": {"type": "string", "maxLength": 5}}, "required": ["payload"]}
custom_schema.annotations = {"readOnlyHint": True, "title": "Custom"}
