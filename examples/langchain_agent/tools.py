"""The agent's tools: plain functions first, then registered as LangChain tools.

Keeping the business logic in plain functions lets it be tested without any framework;
``build_tools()`` is the adapter layer the model sees (names, descriptions, schemas).
"""

from __future__ import annotations

from langchain_core.tools import StructuredTool

LEAVE_BALANCES = {"E001": 5, "E002": 0, "E003": 12, "E004": 3}


def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers and return the product."""
    return float(a * b)


def get_leave_balance(employee_id: str) -> int:
    """Look up an employee's remaining annual leave, in days, by employee id (such as E001)."""
    if not employee_id or not employee_id.strip():
        raise ValueError("employee_id must not be empty")
    normalized_employee_id = employee_id.strip().upper()
    if normalized_employee_id not in LEAVE_BALANCES:
        raise KeyError("employee not found")
    return LEAVE_BALANCES[normalized_employee_id]


def build_tools() -> list[StructuredTool]:
    """The functions as LangChain tools (name, description and schema come from them)."""
    return [
        StructuredTool.from_function(func=get_leave_balance),
        StructuredTool.from_function(func=multiply_numbers),
    ]
