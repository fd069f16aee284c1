"""The Agents SDK support agent, tested with toolproof: scripted model, mocks, traces."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Runner, set_trace_processors

from examples.openai_agents_agent.agent import INSTRUCTIONS, TOOLS, build_agent
from toolproof import Toolset
from toolproof.errors import UnmockedToolCall
from toolproof.integrations.openai_agents import (
    ScriptedAgentsModel,
    TraceProcessor,
    trace_from_result,
)
from toolproof.testing import (
    ToolMock,
    assert_grounded,
    assert_no_tool_errors,
    assert_tool_called,
    assert_tool_order,
    call,
)


@pytest.fixture
def processor() -> Iterator[TraceProcessor]:
    processor = TraceProcessor()
    set_trace_processors([processor])  # also removes the SDK's exporter: nothing leaves
    yield processor
    set_trace_processors([])


def test_the_tool_loop_sends_results_back_with_the_call_id(processor: TraceProcessor) -> None:
    model = ScriptedAgentsModel(
        [call("get_order", order_id="A-2"), "Order A-2 has shipped; its total is 12.5."]
    )
    result = _run(build_agent(model), "Where is my order A-2?")

    assert result.final_output == "Order A-2 has shipped; its total is 12.5."
    first, second = model.requests
    assert first.tool_names == ["get_order", "refund_order"]
    assert [m.role for m in first.messages] == ["system", "user"]
    assert first.messages[0].content == INSTRUCTIONS
    decision, output = second.messages[-2:]
    assert decision.tool_calls[0].name == "get_order"
    assert output.role == "tool" and output.tool_call_id == decision.tool_calls[0].id
    assert '"status": "shipped"' in (output.content or "")
    (trace,) = processor.traces
    assert_tool_called(trace, "get_order", order_id="A-2")
    assert_grounded(trace)
    assert trace.input == "Where is my order A-2?"


def test_a_refund_runs_the_mock_in_mock_mode(processor: TraceProcessor) -> None:
    tools = Toolset(TOOLS, mode="mock")
    model = ScriptedAgentsModel(
        [
            call("get_order", order_id="A-1"),
            call("refund_order", order_id="A-1", amount=30.0),
            "Refund of 30.00 for A-1 created.",
        ]
    )
    result = _run(build_agent(model, tools), "Refund order A-1, please.")

    trace = trace_from_result(result, tools=TOOLS)
    assert_tool_order(trace, ["get_order", "refund_order"])
    assert_no_tool_errors(trace)
    refund = trace.tool_results[1]
    assert refund.mocked and refund.content == "refund of 30.00 for A-1 created"
    assert trace.tool_mode == "mock"
    assert processor.traces[-1].tool_names == trace.tool_names


def test_fixtures_answer_and_are_verified(processor: TraceProcessor) -> None:
    mock = ToolMock()
    mock.add("refund_order", {"order_id": "A-1", "amount": 5.0}, returns="refund R-1")
    tools = Toolset(TOOLS, mode="mock", mocks=[mock])
    model = ScriptedAgentsModel([call("refund_order", order_id="A-1", amount=5.0), "Done: R-1."])
    _run(build_agent(model, tools), "Refund 5 on A-1.")
    mock.verify()
    assert processor.traces[-1].tool_results[0].content == "refund R-1"


def test_an_unknown_order_is_reported_to_the_model(processor: TraceProcessor) -> None:
    model = ScriptedAgentsModel([call("get_order", order_id="Z-9"), "Order Z-9 does not exist."])
    _run(build_agent(model), "Where is Z-9?")
    (result,) = processor.traces[-1].tool_results
    assert (result.status, result.error_type) == ("error", "KeyError")
    assert model.requests[1].last.content == "Error (KeyError): Z-9"


def test_a_side_effecting_tool_without_mock_is_refused(processor: TraceProcessor) -> None:
    tools = Toolset([TOOLS[0], _unmocked_refund()], mode="mock")
    model = ScriptedAgentsModel([call("refund_order", order_id="A-1", amount=1.0), "never"])
    with pytest.raises(Exception, match="refund_order") as caught:
        _run(build_agent(model, tools), "Refund 1 on A-1.")
    # The SDK wraps a tool's exception in its own UserError; toolproof's is the cause.
    assert isinstance(caught.value.__cause__, UnmockedToolCall)
    trace = processor.traces[-1]
    assert trace.stop_reason == "error"
    assert trace.tool_names == ["refund_order"] and model.remaining == 1


def _unmocked_refund():
    from toolproof import tool

    @tool(side_effects=True)
    def refund_order(order_id: str, amount: float) -> str:
        """Refund an order.

        Args:
            order_id: The order id.
            amount: The amount.
        """
        raise AssertionError("must not run")

    return refund_order


def _run(agent: Any, text: str) -> Any:
    # Runner.run_sync keeps an event loop open after the run; asyncio.run closes its own.
    return asyncio.run(Runner.run(agent, text))
