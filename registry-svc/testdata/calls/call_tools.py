"""Fixture: calls, results, timeouts and host failures (registry-svc/design.md "Calling")."""
import asyncio
import datetime
import decimal
import os
import time
from typing import Optional


def echo(text: str) -> str:
    """Return text."""
    return text


def add(a: int, b: int = 2) -> dict:
    """Add two numbers."""
    return {"sum": a + b}


def as_list() -> list:
    """A list result."""
    return [1, "two", 3.5]


def nothing() -> None:
    """Returns nothing."""
    return None


def soft_fail() -> dict:
    """A tool-level failure."""
    return {"success": False, "error": "the thing is broken"}


def explode(message: str = "boom") -> str:
    """Raises."""
    raise ValueError(message)


def odd_values() -> dict:
    """datetime, Decimal and bytes."""
    return {
        "when": datetime.datetime(2024, 5, 17, 8, 30, tzinfo=datetime.timezone.utc),
        "day": datetime.date(2024, 5, 17),
        "price": decimal.Decimal("12.50"),
        "count": decimal.Decimal("3"),
        "raw": b"hi",
        "blob": b"\xff\x00",
        "nan": float("nan"),
    }


def talk(text: str) -> str:
    """print() goes to the log."""
    print("printed:", text)
    return "said " + text


def whoami(user_info: dict, note: Optional[str] = None) -> dict:
    """Return the injected user info."""
    return {"user_info": user_info, "note": note}


def sleep_sync(seconds: float) -> str:
    """Sleep in a thread."""
    print("sleeping %g" % seconds, flush=True)
    time.sleep(seconds)
    return "slept"


async def sleep_async(seconds: float) -> str:
    """Sleep on the event loop."""
    await asyncio.sleep(seconds)
    return "slept"


async def block_loop(seconds: float) -> str:
    """Blocks the event loop (a broken async tool)."""
    time.sleep(seconds)
    return "blocked"


def pid() -> int:
    """The host's process id."""
    return os.getpid()


def health_summary(user_info: dict) -> str:
    """Gated on health data."""
    return "health data for " + user_info["user_id"]


health_summary.requires_data = "health"


def crash_once(marker: str) -> str:
    """Kills its host the first time (marker file absent), then succeeds."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return "recovered"


def crash_once_idempotent(marker: str) -> str:
    """Same, but marked idempotent: the registry may retry it once."""
    return crash_once(marker)


crash_once_idempotent.annotations = {"idempotentHint": True}
