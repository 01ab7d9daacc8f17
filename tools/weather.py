"""Example Mirobody tool class that is only enabled when configured.

Every class whose name ends in "Service" is instantiated once with no
arguments; its public methods become tools. A static _enabled() returning
False removes the whole class, which suits tools that need an API key.
"""
import json
import os
import urllib.parse
import urllib.request
from typing import Literal


class WeatherService:
    """Current weather from OpenWeatherMap (set OPENWEATHER_API_KEY and list it in TOOL_ENV to enable)."""

    @staticmethod
    def _enabled() -> bool:
        return bool(os.environ.get("OPENWEATHER_API_KEY"))

    def __init__(self):
        self._key = os.environ["OPENWEATHER_API_KEY"]

    def current_weather(self, city: str, units: Literal["metric", "imperial"] = "metric") -> dict:
        """Get the current weather for a city.

        Use it when advice depends on the weather, for example outdoor
        exercise, heat or pollen.

        Args:
            city: City name, optionally with a country code, for example
                "Lyon,FR".
            units: metric (Celsius, m/s) or imperial (Fahrenheit, mph).

        Returns:
            The temperature, feels-like temperature, humidity and conditions.
        """
        query = urllib.parse.urlencode({"q": city, "units": units, "appid": self._key})
        with urllib.request.urlopen("https://api.openweathermap.org/data/2.5/weather?" + query, timeout=10) as resp:
            data = json.load(resp)
        return {
            "city": data.get("name", city),
            "temperature": data["main"]["temp"],
            "feels_like": data["main"]["feels_like"],
            "humidity": data["main"]["humidity"],
            "conditions": ", ".join(w["description"] for w in data.get("weather", [])),
        }
