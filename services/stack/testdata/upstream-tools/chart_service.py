"""A tools file written the way upstream Mirobody writes them (see
TestComingFromMirobody): a Service class, inputSchema and meta set on its
methods, {"success": ..., "data": ...} results and _enabled."""

import os

PIE_SCHEMA = {
    "type": "object",
    "properties": {
        "data": {"type": "array", "items": {"type": "object"}, "description": "The slices."},
        "title": {"type": "string"},
    },
    "required": ["data"],
}


class ChartService:
    """Charts, as upstream's chart service declares them."""

    def __init__(self):
        self.name = "chart"

    async def generate_pie_chart(self, data, title: str = "", user_info=None):
        """Generate a pie chart."""
        return {"success": True, "data": {"points": len(data), "title": title, "user": user_info["user_id"]}}

    def fail_chart(self, reason: str):
        """Fails the way upstream tools fail."""
        return {"success": False, "error": reason}

    def stream_words(self, n: int = 2):
        """Yields text chunks."""
        for i in range(n):
            yield "w%d " % i


ChartService.generate_pie_chart.inputSchema = PIE_SCHEMA
ChartService.generate_pie_chart.meta = {"openai/outputTemplate": "ui://widget/chart.html"}


class WeatherService:
    """Enabled only with its API key, like upstream's paid services."""

    @staticmethod
    def _enabled() -> bool:
        return bool(os.environ.get("WEATHER_API_KEY"))

    def weather(self, city: str) -> str:
        """Never listed in the test."""
        return city
