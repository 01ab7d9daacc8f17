"""Tools written the way upstream Mirobody writes them."""

import base64
import os

CHART_SCHEMA = {
    "type": "object",
    "properties": {
        "data": {"type": "array", "items": {"type": "object"}},
        "title": {"type": "string"},
    },
    "required": ["data"],
}

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==")


class ChartService:
    """Upstream's shape: a Service class whose methods carry inputSchema and meta."""

    @staticmethod
    def _enabled() -> bool:
        return True

    async def generate_pie_chart(self, data, title="", user_info=None):
        """Generate a pie chart."""
        return {"success": True, "data": {"points": len(data), "title": title, "user": (user_info or {}).get("user_id")}}

    def fail_chart(self, reason: str = "no data"):
        """Fails the upstream way."""
        return {"success": False, "error": reason}

    def chart_png(self):
        """Returns PNG bytes."""
        return PNG

    def chart_list(self):
        """Data that is a list."""
        return {"success": True, "data": [1, 2]}


ChartService.generate_pie_chart.inputSchema = CHART_SCHEMA
ChartService.generate_pie_chart.meta = {"openai/outputTemplate": "ui://widget/chart.html"}


class PaidService:
    """Disabled without its key, as upstream's API-key services are."""

    @staticmethod
    def _enabled() -> bool:
        return bool(os.environ.get("PAID_API_KEY"))

    def paid_lookup(self, q: str) -> str:
        """Never listed."""
        return q


def stream_words(n: int = 3):
    """A generator of text chunks."""
    for i in range(n):
        yield "w%d " % i


async def stream_rows(n: int = 2):
    """An async generator of rows."""
    for i in range(n):
        yield {"row": i}


def endless():
    """A generator that never stops."""
    while True:
        yield "x" * 65536


def raw_wav() -> bytes:
    """WAV bytes."""
    return b"RIFF\x24\x00\x00\x00WAVEfmt "


def raw_pdf() -> bytes:
    """PDF bytes."""
    return b"%PDF-1.4\n%\xe2\xe3"


def raw_binary() -> bytes:
    """Bytes of no known type."""
    return b"\x00\x01\xfe\xff"


def raw_text() -> bytes:
    """UTF-8 bytes."""
    return "héllo".encode("utf-8")


def custom_fn(a, b=2):
    """A function with its own schema."""
    return {"success": True, "data": a + b}


custom_fn.inputSchema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a"]}
