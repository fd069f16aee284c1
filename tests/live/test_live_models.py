"""Live tests against the real providers.

Skipped unless run with ``--toolproof-live`` (or ``TOOLPROOF_LIVE=1``) and the provider's key
set (``DEEPSEEK_API_KEY``, ``OPENAI_API_KEY``)::

    TOOLPROOF_LIVE=1 DEEPSEEK_API_KEY=... pytest tests/live -q
"""

from __future__ import annotations

import pytest

from toolproof import Agent, tool
from toolproof.models import Model


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers. Use it for every multiplication.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@tool
def get_leave_balance(employee_id: str) -> int:
    """Get an employee's remaining annual leave, in days.

    Args:
        employee_id: The employee id, such as E001.
    """
    return {"E001": 12, "E002": 5}[employee_id]


SYSTEM = "You are an HR assistant. Always use a tool for arithmetic and for employee data."


def check_multiplication(model: Model) -> None:
    result = Agent(model, [multiply_numbers], system_prompt=SYSTEM).run_sync(
        "What is 12 times 8? Use the tool."
    )
    assert result.ok, result.stop_detail
    assert [c.signature() for c in result.trace.tool_calls][:1] in (
        ["multiply_numbers(a=12, b=8)"],
        ["multiply_numbers(a=12.0, b=8.0)"],
        ["multiply_numbers(a=8, b=12)"],
    )
    assert "96" in (result.output or "")
    usage = result.trace.usage
    assert usage.requests == 2
    assert not usage.estimated
    assert usage.input_tokens > 0


@pytest.mark.live_model("deepseek:deepseek-chat")
def test_deepseek_chat_calls_a_tool(live_model: Model) -> None:
    check_multiplication(live_model)


@pytest.mark.live_model("deepseek:deepseek-chat", stream=True)
def test_deepseek_chat_streamed(live_model: Model) -> None:
    check_multiplication(live_model)


@pytest.mark.live_model("deepseek:deepseek-reasoner")
def test_deepseek_reasoner_sends_reasoning_back_within_the_turn(live_model: Model) -> None:
    """Thinking mode with tools answers 400 if this turn's reasoning_content is not sent back."""
    agent = Agent(live_model, [get_leave_balance, multiply_numbers], system_prompt=SYSTEM)
    session = agent.session()
    first = session.run_sync("How many leave days does E001 have left? Then multiply it by 2.")
    assert first.ok, first.stop_detail
    assert any(step.response.reasoning for step in first.trace.steps)
    assert "24" in (first.output or "")
    second = session.run_sync("And E002?")  # earlier turns' reasoning is not sent
    assert second.ok, second.stop_detail
    assert "5" in (second.output or "")
    assert second.trace.cost is not None and second.trace.cost > 0


@pytest.mark.live_model("deepseek:deepseek-chat?protocol=text")
def test_text_tool_protocol_with_deepseek(live_model: Model) -> None:
    check_multiplication(live_model)


@pytest.mark.live_model("openai:gpt-4o-mini")
def test_openai_parallel_calls(live_model: Model) -> None:
    agent = Agent(live_model, [get_leave_balance], system_prompt=SYSTEM)
    result = agent.run_sync("Leave days left for E001 and for E002? Look both up at once.")
    assert result.ok, result.stop_detail
    assert sorted(c.arguments["employee_id"] for c in result.trace.tool_calls) == ["E001", "E002"]
    assert "12" in (result.output or "") and "5" in (result.output or "")
