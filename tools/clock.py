"""Example Mirobody tool written as a coroutine.

async def tools run on the tool host's event loop; plain functions run in a
thread pool, so neither kind blocks the other.
"""
import asyncio
import datetime
import zoneinfo


async def current_time(timezone: str = "UTC") -> dict:
    """Give the current date and time in an IANA time zone.

    Use it before reasoning about "today", "yesterday" or the time of day of
    a measurement, because the model itself does not know the current time.

    Args:
        timezone: An IANA time zone name, for example "Europe/Paris" or
            "America/New_York".

    Returns:
        The ISO 8601 timestamp, the weekday and the UTC offset.
    """
    try:
        tz = zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return {"success": False, "error": "unknown time zone %r; use an IANA name such as Europe/Paris" % timezone}
    await asyncio.sleep(0)  # a real async tool would await I/O here
    now = datetime.datetime.now(tz)
    return {"now": now.isoformat(timespec="seconds"), "weekday": now.strftime("%A"), "utc_offset": now.strftime("%z")}


# MCP Apps: hosts that support them show this page (clock_app.py) with the result.
current_time.meta = {"ui": {"resourceUri": "ui://clock/now.html"}}
