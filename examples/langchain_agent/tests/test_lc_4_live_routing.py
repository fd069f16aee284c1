"""Layer 4: a real model must route each question to the right tool, and invent nothing.

Skipped unless run with ``--toolproof-live`` (or ``TOOLPROOF_LIVE=1``) and
``DEEPSEEK_API_KEY`` set::

    DEEPSEEK_API_KEY=... pytest examples/langchain_agent --toolproof-live -k live

The ToolAgent talks to the real model through LangChain's chat-model interface.
"""

from __future__ import annotations

import pytest

from examples.langchain_agent.agent import build_agent
from toolproof.testing import assert_grounded, assert_tool_called, assert_tool_order

MODEL = "deepseek:deepseek-chat"
pytestmark = pytest.mark.live_model(MODEL)


def test_multiplication_routes_to_the_multiply_tool(live_model, run_agent):
    result = run_agent(build_agent(live_model), "What is 12 times 8?")
    assert_tool_called(result, "multiply_numbers", a=12, b=8)
    assert "96" in (result.output or "")
    assert_grounded(result)


def test_leave_question_routes_to_the_leave_tool(live_model, run_agent):
    result = run_agent(build_agent(live_model), "How much annual leave does employee E001 have?")
    assert_tool_order(result, ["get_leave_balance"])
    assert_tool_called(result, "get_leave_balance", employee_id=lambda v: v.upper() == "E001")
    assert "5" in (result.output or "")
    assert_grounded(result)


def test_greeting_calls_no_tool_and_invents_nothing(live_model, run_agent):
    result = run_agent(build_agent(live_model), "Hello, please introduce yourself.")
    assert result.trace.tool_calls == []
    assert_grounded(result)
