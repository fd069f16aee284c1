"""Layer 1: the tools' business logic, as plain functions (no model, no framework)."""

from __future__ import annotations

import pytest

from examples.langchain_agent.tools import get_leave_balance, multiply_numbers


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [(12, 8, 96.0), (3.5, 7, 24.5), (0.0, 101, 0.0), (-2.5, 3.6, -9.0)],
)
def test_multiply_numbers(a: float, b: float, expected: float) -> None:
    result = multiply_numbers(a, b)
    assert result == pytest.approx(expected)
    assert isinstance(result, float)


@pytest.mark.parametrize("employee_id", ["E001", "e001", "  E001 "])
def test_leave_lookup_normalizes_the_id(employee_id: str) -> None:
    assert get_leave_balance(employee_id) == 5


def test_empty_id_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        get_leave_balance("  ")


def test_unknown_employee_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="employee not found"):
        get_leave_balance("E999")
