"""Tools that log and ask their caller, for registry-svc/internal/pyhost's tests."""

import asyncio
import logging

import mirobody

LOG = logging.getLogger("asking")


def chatty() -> str:
    """Logs through Python logging and mirobody.log."""
    LOG.debug("debug line")
    LOG.info("info line")
    sent = mirobody.log("notice", "notice line", data={"n": 1})
    LOG.error("error line")
    return "sent %s" % sent


async def chatty_async() -> str:
    """Logs from an async tool."""
    LOG.info("async info")
    await asyncio.sleep(0)
    LOG.warning("async warning")
    return "done"


def greet() -> str:
    """Asks for a name, then for a colour."""
    name = mirobody.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    colour = mirobody.elicit("Your colour?", {"type": "object", "properties": {"colour": {"type": "string"}}})
    return "%s likes %s" % (name["content"]["name"], colour["content"]["colour"])


async def summarise(text: str) -> str:
    """Asks the caller's model, from an async tool."""
    r = mirobody.sample("Summarise: " + text, max_tokens=50, key="summary")
    return "summary: " + r["content"]["text"]


def maybe_ask() -> str:
    """Carries on without an answer when the client cannot elicit."""
    try:
        mirobody.elicit("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    except mirobody.CapabilityUnavailable as e:
        return "no " + e.capability
    return "asked"


def must_sample() -> str:
    """Needs sampling and does not handle its absence."""
    try:
        mirobody.sample("hi")
    except Exception:
        return "an Exception handler must not swallow the pause"
    return "sampled"


def noted() -> str:
    """Logs, asks, logs: a run again with the answer repeats the first record."""
    LOG.info("before")
    mirobody.progress(1, 2)
    mirobody.elicit("Ok?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}, key="ok")
    LOG.info("after")
    return "noted"
