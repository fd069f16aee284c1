"""Layer 1: the tools are plain functions; test their logic without any model."""

from __future__ import annotations

import pytest

from examples.hr_assistant.tools import get_leave_balance, get_weather, multiply_numbers
from toolproof import ToolError


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [(12, 8, 96.0), (3.5, 7, 24.5), (0.0, 101, 0.0), (-2.5, 3.6, -9.0)],
)
def test_multiply_numbers(a, b, expected):
    result = multiply_numbers(a, b)
    assert result == pytest.approx(expected)


@pytest.mark.parametrize(
    ("employee_id", "days"),
    [("E001", 5), ("E002", 0), ("e003", 12), ("  E004 ", 3)],
)
def test_leave_balance_normalizes_ids(employee_id, days):
    assert get_leave_balance(employee_id) == days


@pytest.mark.parametrize(
    ("employee_id", "error", "message"),
    [("", ValueError, "employee_id must not be empty"), ("E999", KeyError, "employee not found")],
)
def test_leave_balance_business_errors(employee_id, error, message):
    with pytest.raises(error, match=message):
        get_leave_balance(employee_id)


def test_business_errors_are_declared_so_the_model_sees_them():
    # Declared errors become error results for the model instead of crashing the run.
    assert set(get_leave_balance.errors) == {ValueError, KeyError}


def test_weather_known_and_unknown_city():
    assert get_weather("北京") == {"city": "北京", "weather": "晴，25 度"}
    with pytest.raises(ToolError, match="no weather data for 火星"):
        get_weather("火星")
