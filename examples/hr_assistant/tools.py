"""The HR assistant's tools: plain typed functions made into tools with ``@tool``."""

from __future__ import annotations

from toolproof import ToolError, tool

LEAVE = {"E001": 5, "E002": 0, "E003": 12, "E004": 3}

WEATHER = {"北京": "晴，25 度", "上海": "小雨，22 度", "广州": "多云，28 度"}


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@tool(errors=(ValueError, KeyError))
def get_leave_balance(employee_id: str) -> int:
    """Look up an employee's remaining annual leave, in days.

    Args:
        employee_id: Employee id such as E001 (case-insensitive).
    """
    key = employee_id.strip().upper()
    if not key:
        raise ValueError("employee_id must not be empty")
    if key not in LEAVE:
        raise KeyError("employee not found")
    return LEAVE[key]


@tool
def get_weather(city: str) -> dict[str, str]:
    """Get the current weather of a city. Use it only when the user asks about weather.

    Args:
        city: City name, for example 北京.
    """
    if city not in WEATHER:
        raise ToolError(f"no weather data for {city}; known cities: {', '.join(WEATHER)}")
    return {"city": city, "weather": WEATHER[city]}


@get_weather.mock
def _mock_weather(city: str) -> dict[str, str]:
    return {"city": city, "weather": "晴，20 度"}
