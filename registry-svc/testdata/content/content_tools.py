"""Fixture: MCP content blocks and progress through the mirobody helpers."""
import asyncio
import time

import mirobody
from mirobody import Image  # an imported class is not a tool


def image() -> object:
    """One image block from bytes."""
    return Image(b"\x89PNG", "image/png")


def audio_b64() -> object:
    """One audio block from a base64 str."""
    return mirobody.Audio("UklGRg==")


def resource_text() -> object:
    """An embedded text resource."""
    return mirobody.EmbeddedResource("test://r", text="hello", mime_type="text/plain")


def resource_blob() -> object:
    """An embedded binary resource."""
    return mirobody.EmbeddedResource("test://b", blob=b"\x00\x01")


def link() -> object:
    """A resource link."""
    return mirobody.ResourceLink("file:///a.csv", "a.csv", mime_type="text/csv", description="The data.")


def mixed() -> object:
    """Text, an image, a resource, a JSON value, with structured content."""
    return mirobody.Content(["Look:", Image(b"\x01", "image/gif"), mirobody.EmbeddedResource("test://m", text="{}"), {"n": 1}],
                            structured=[1, 2])


def failed_content() -> object:
    """A tool error made of several blocks."""
    return mirobody.Content(["no chart", Image(b"\x02")], is_error=True)


def bad_block() -> object:
    """Builds an invalid block: the tool fails."""
    return mirobody.EmbeddedResource("test://x")


def bad_structured() -> object:
    """Structured content that is not an object."""
    return mirobody.Content(["x"], structured="nope")


def steps(n: int = 3) -> str:
    """Reports n progress steps from a thread."""
    sent = [mirobody.progress(i, n, "step %d" % i) for i in range(1, n + 1)]
    return "sent %s" % all(sent)


async def steps_async(n: int = 3) -> str:
    """Reports n progress steps from a coroutine."""
    sent = []
    for i in range(1, n + 1):
        sent.append(mirobody.progress(i * 10))
        await asyncio.sleep(0)
    return "sent %s" % all(sent)


def bad_progress() -> str:
    """Reports a progress that is not a number."""
    mirobody.progress("half")
    return "unreachable"


def trace_parent() -> str:
    """Returns the call's traceparent, as a tool would send it on."""
    return mirobody.traceparent() or "none"


def sleepy(seconds: float = 0.05) -> str:
    """Sleeps, so that the call has a measurable run."""
    time.sleep(seconds)
    return "slept"
