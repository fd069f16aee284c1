"""Layer 4: a real model must route correctly and not invent anything.

Skipped unless run with ``--toolproof-live`` (or ``TOOLPROOF_LIVE=1``) and
``DEEPSEEK_API_KEY`` set::

    DEEPSEEK_API_KEY=... pytest examples/hr_assistant --toolproof-live -k live

A live run can route all three questions correctly and still answer "I can also add
numbers ... for example employee E1001": the grounding check catches that kind of answer.
"""

from __future__ import annotations

import pytest

from examples.hr_assistant.agent import build_agent
from toolproof.testing import (
    assert_grounded,
    assert_tool_called,
    assert_tool_not_called,
    assert_tool_order,
)

MODEL = "deepseek:deepseek-chat"
pytestmark = pytest.mark.live_model(MODEL)


def test_multiplication_routes_to_the_multiply_tool(live_model, run_agent):
    result = run_agent(build_agent(live_model), "What is 12 times 8?")
    assert_tool_called(result, "multiply_numbers", a=12, b=8)
    assert "96" in (result.output or "")
    assert_grounded(result)


def test_leave_question_routes_to_the_leave_tool(live_model, run_agent):
    result = run_agent(build_agent(live_model), "How much annual leave does E001 have left?")
    assert_tool_order(result, ["get_leave_balance"])
    assert_tool_called(result, "get_leave_balance", employee_id=lambda v: v.upper() == "E001")
    assert "5" in (result.output or "")
    assert_grounded(result)


def test_greeting_calls_no_tool_and_invents_nothing(live_model, run_agent):
    result = run_agent(build_agent(live_model), "Hello, what can you do?")
    assert result.trace.tool_calls == []
    assert_tool_not_called(result, "multiply_numbers")
    assert_grounded(result)
