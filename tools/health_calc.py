"""Example Mirobody tools: plain module-level functions.

Every public function defined in a file of a tool folder becomes an MCP tool.
Its input schema comes from the type hints and its description from the
docstring; no registration code is needed.
"""
from typing import Literal, Optional


def body_mass_index(weight: float, height: float, units: Literal["metric", "imperial"] = "metric") -> dict:
    """Compute the body mass index (BMI) and its WHO category.

    Use it when someone gives their weight and height and asks whether their
    weight is in a healthy range.

    Args:
        weight: Body weight, in kilograms (metric) or pounds (imperial).
        height: Body height, in centimetres (metric) or inches (imperial).
        units: Which units weight and height are in.

    Returns:
        The BMI rounded to one decimal and the WHO adult category.
    """
    if weight <= 0 or height <= 0:
        return {"success": False, "error": "weight and height must be positive"}
    if units == "imperial":
        bmi = 703 * weight / (height * height)
    else:
        bmi = weight / ((height / 100) ** 2)
    if bmi < 18.5:
        category = "underweight"
    elif bmi < 25:
        category = "healthy weight"
    elif bmi < 30:
        category = "overweight"
    else:
        category = "obesity"
    return {"bmi": round(bmi, 1), "category": category}


def heart_rate_zones(age: int, resting_heart_rate: Optional[int] = None) -> dict:
    """Estimate the five training heart-rate zones for an adult.

    Without a resting heart rate the zones are percentages of the estimated
    maximum (220 - age); with one, the Karvonen (heart-rate reserve) method is
    used, which fits trained people better.

    Args:
        age: Age in years (18-100).
        resting_heart_rate (int): Resting heart rate in beats per minute,
            measured in the morning before getting up.

    Returns:
        The maximum heart rate, the method used and each zone's bpm range.
    """
    if not 18 <= age <= 100:
        return {"success": False, "error": "age must be between 18 and 100"}
    max_hr = 220 - age
    bands = [(1, 0.50, 0.60), (2, 0.60, 0.70), (3, 0.70, 0.80), (4, 0.80, 0.90), (5, 0.90, 1.00)]
    if resting_heart_rate:
        reserve = max_hr - resting_heart_rate
        zones = [{"zone": z, "low": round(resting_heart_rate + lo * reserve), "high": round(resting_heart_rate + hi * reserve)} for z, lo, hi in bands]
        method = "karvonen"
    else:
        zones = [{"zone": z, "low": round(lo * max_hr), "high": round(hi * max_hr)} for z, lo, hi in bands]
        method = "percent of maximum"
    return {"max_heart_rate": max_hr, "method": method, "zones": zones}
