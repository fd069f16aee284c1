"""StatefulMock state across calls, fault injection, and the agent-level mock switch."""

from __future__ import annotations

import asyncio

import pytest

from toolproof import Agent, Message, ToolError, Toolset, tool
from toolproof.errors import ToolCrashed, UnmockedToolCall, UserError
from toolproof.testing import (
    Fault,
    FunctionModel,
    RequestInfo,
    ScriptedModel,
    StatefulMock,
    ToolMock,
    call,
    mock_tools,
    with_faults,
)


@tool(errors=(KeyError,))
def get_order(order_id: str) -> dict[str, str]:
    """Get an order.

    Args:
        order_id: The order id.
    """
    raise AssertionError("real database")


@tool(side_effects=True)
def cancel_order(order_id: str, reason: str = "customer request") -> str:
    """Cancel an order.

    Args:
        order_id: The order id.
        reason: Why.
    """
    raise AssertionError("real cancellation")


@tool
def get_weather(city: str) -> dict[str, str]:
    """Get the weather.

    Args:
        city: The city.
    """
    return {"city": city, "weather": "real sunshine"}


@get_weather.mock
def _weather(city: str) -> dict[str, str]:
    return {"city": city, "weather": "mocked rain"}


TOOLS = [get_order, cancel_order, get_weather]


class Orders(StatefulMock):
    initial_state = {"orders": {"A1": {"status": "paid"}, "A2": {"status": "shipped"}}}

    @StatefulMock.handles("get_order")
    def get(self, order_id: str) -> dict[str, str]:
        return dict(self.state["orders"][order_id])

    @StatefulMock.handles("cancel_order")
    def cancel(self, order_id: str, reason: str = "customer request") -> str:
        order = self.state["orders"].get(order_id)
        if order is None:
            raise ToolError(f"order {order_id} does not exist")
        if order["status"] == "shipped":
            raise ToolError(f"order {order_id} has shipped and cannot be cancelled")
        order["status"] = "cancelled"
        order["reason"] = reason
        return f"order {order_id} cancelled"


def reporting_model(plan):
    """A model that calls the planned tools one by one, then reports every result it saw."""

    def respond(messages: list[Message], info: RequestInfo):
        if info.step <= len(plan):
            return plan[info.step - 1]
        seen = [f"{m.name}: {m.status}: {m.content}" for m in messages if m.role == "tool"]
        return "Report: " + " | ".join(seen)

    return FunctionModel(respond)


# -- stateful mocks ------------------------------------------------------------------------


def test_stateful_mock_state_changes_across_calls_and_is_asserted_after_the_run():
    orders = Orders()
    agent = Agent(
        reporting_model(
            [
                call("get_order", order_id="A1"),
                call("cancel_order", order_id="A1"),
                call("cancel_order", order_id="A2", reason="late"),
                call("get_order", order_id="A1"),
            ]
        ),
        Toolset(TOOLS, mode="mock", mocks=[orders]),
    )
    result = agent.run_sync("cancel my orders")
    assert orders.state == {
        "orders": {
            "A1": {"status": "cancelled", "reason": "customer request"},
            "A2": {"status": "shipped"},
        }
    }
    statuses = [(r.name, r.status) for r in result.trace.tool_results]
    assert statuses == [
        ("get_order", "ok"),
        ("cancel_order", "ok"),
        ("cancel_order", "error"),
        ("get_order", "ok"),
    ]
    assert result.trace.tool_results[3].value == {
        "status": "cancelled",
        "reason": "customer request",
    }
    assert "order A2 has shipped and cannot be cancelled" in result.output
    assert orders.count("cancel_order") == 2
    assert orders.calls[2].arguments == {"order_id": "A2", "reason": "late"}


def test_each_instance_gets_its_own_copy_of_the_initial_state_and_reset_restores_it():
    first, second = Orders(), Orders()
    first.state["orders"]["A1"]["status"] = "changed"
    assert second.state["orders"]["A1"]["status"] == "paid"
    assert Orders.initial_state["orders"]["A1"]["status"] == "paid"
    first.reset()
    assert first.state["orders"]["A1"]["status"] == "paid"
    custom = Orders(state={"orders": {}})
    assert custom.state == {"orders": {}}


def test_handlers_and_unhandled_tools():
    orders = Orders()
    assert Orders.handled_tools() == {"get_order": "get", "cancel_order": "cancel"}
    assert orders.mock_for(get_weather) is None
    # A side-effect tool nobody mocks still refuses to run for real.
    agent = Agent(
        ScriptedModel([call("cancel_order", order_id="A1"), "x"]),
        Toolset(TOOLS, mode="mock", mocks=[StatefulMock()]),
    )
    with pytest.raises(UnmockedToolCall, match="tool 'cancel_order' has side effects"):
        agent.run_sync("cancel")


def test_async_handlers_and_subclass_overrides():
    class SlowOrders(Orders):
        @StatefulMock.handles("get_order")
        async def get_async(self, order_id: str) -> dict[str, str]:
            await asyncio.sleep(0)
            return {"status": "from async handler"}

    orders = SlowOrders()
    assert SlowOrders.handled_tools() == {"cancel_order": "cancel", "get_order": "get_async"}
    agent = Agent(
        ScriptedModel([call("get_order", order_id="A1"), "done"]),
        Toolset(TOOLS, mode="mock", mocks=[orders]),
    )
    result = agent.run_sync("q")
    assert result.trace.tool_results[0].value == {"status": "from async handler"}


def test_handles_misuse():
    with pytest.raises(UserError, match="needs the tool's name"):
        StatefulMock.handles(lambda self: None)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="both handle tool 'get_order'"):

        class Twice(StatefulMock):
            @StatefulMock.handles("get_order")
            def a(self, order_id: str) -> dict[str, str]:
                return {}

            @StatefulMock.handles("get_order")
            def b(self, order_id: str) -> dict[str, str]:
                return {}


# -- faults --------------------------------------------------------------------------------


def test_raises_a_declared_error_on_the_nth_call_only_and_the_run_continues():
    orders = Orders()
    toolset = with_faults(
        Toolset(TOOLS, mode="mock", mocks=[orders]), Fault.raises("get_order", on_call=2)
    )
    agent = Agent(
        reporting_model([call("get_order", order_id="A1")] * 3),
        toolset,
        max_repeated_calls=None,
    )
    result = agent.run_sync("check A1 three times")
    assert [r.status for r in result.trace.tool_results] == ["ok", "error", "ok"]
    failed = result.trace.tool_results[1]
    assert (failed.error_type, failed.content) == (
        "KeyError",
        "Error (KeyError): injected failure in tool 'get_order'",
    )
    assert result.stop_reason == "final"
    assert (
        "get_order: error: Error (KeyError): injected failure in tool 'get_order'" in result.output
    )
    assert orders.count("get_order") == 2  # the faulted call never reached the mock


def test_fault_filters_by_arguments_and_counts_matching_calls_only():
    toolset = with_faults(
        Toolset(TOOLS, mode="mock"),
        Fault.raises("get_weather", ToolError("radar offline"), when={"city": "上海"}, on_call=[2]),
    )
    agent = Agent(
        reporting_model(
            [
                call("get_weather", city="上海"),
                call("get_weather", city="北京"),
                call("get_weather", city="上海"),
            ]
        ),
        toolset,
    )
    result = agent.run_sync("weather")
    assert [(r.status, r.content) for r in result.trace.tool_results] == [
        ("ok", '{"city": "上海", "weather": "mocked rain"}'),
        ("ok", '{"city": "北京", "weather": "mocked rain"}'),
        ("error", "Error (ToolError): radar offline"),
    ]


def test_malformed_output_reaches_the_model_and_the_run_finishes():
    toolset = with_faults(Toolset(TOOLS, mode="mock"), Fault.malformed("get_weather"))
    agent = Agent(reporting_model([call("get_weather", city="北京")]), toolset)
    result = agent.run_sync("weather?")
    (res,) = result.trace.tool_results
    assert (res.status, res.content, res.mocked) == (
        "ok",
        "<html><body><h1>502 Bad Gateway</h1></body></html>",
        True,
    )
    assert result.stop_reason == "final"
    assert "502 Bad Gateway" in result.output
    malformed = with_faults(Toolset(TOOLS), Fault.malformed("get_weather", {"temp": None}))
    res = Agent(reporting_model([call("get_weather", city="x")]), malformed).run_sync("q")
    assert res.trace.tool_results[0].value == {"temp": None}


@pytest.mark.timeout(60)  # waiting out the hour-long limit fails here
def test_timeout_with_a_time_limit_becomes_a_timeout_result_without_waiting():
    toolset = with_faults(Toolset(TOOLS, mode="mock"), Fault.timeout("get_weather"))
    agent = Agent(reporting_model([call("get_weather", city="北京")]), toolset, tool_timeout=3600)
    result = agent.run_sync("weather?")
    (res,) = result.trace.tool_results
    assert (res.status, res.error_type, res.content) == (
        "error",
        "Timeout",
        "Error (Timeout): Tool 'get_weather' timed out after 3600 s.",
    )
    assert "timed out" in result.output


@pytest.mark.timeout(60)
def test_hanging_timeout_is_cut_off_by_the_tool_limit():
    @tool(timeout=0.05)
    async def slow_lookup(key: str) -> str:
        """Look up slowly.

        Args:
            key: The key.
        """
        return key

    # the fault hangs for an hour: only the tool's 0.05 s limit ends the call
    toolset = with_faults(Toolset([slow_lookup]), Fault.timeout("slow_lookup", seconds=3600))
    agent = Agent(reporting_model([call("slow_lookup", key="k")]), toolset)
    result = agent.run_sync("q")
    assert (
        result.trace.tool_results[0].content
        == "Error (Timeout): Tool 'slow_lookup' timed out after 0.05 s."
    )


def test_timeout_without_any_limit_stops_the_run_and_says_how_to_fix_it():
    toolset = with_faults(Toolset(TOOLS, mode="mock"), Fault.timeout("get_weather"))
    agent = Agent(reporting_model([call("get_weather", city="北京")]), toolset)
    with pytest.raises(ToolCrashed) as info:
        agent.run_sync("q")
    assert "injected timeout in tool 'get_weather' (Fault.timeout)" in str(info.value)
    assert "@tool(timeout=...) or Agent(tool_timeout=...)" in str(info.value)
    assert info.value.trace is not None and info.value.trace.stop_reason == "error"


def test_faults_apply_over_fixture_mocks_and_real_tools():
    mock = ToolMock()
    mock.add("get_order", None, returns={"status": "paid"})
    toolset = with_faults(
        Toolset(TOOLS, mode="mock", mocks=[mock]),
        Fault.raises("get_order", KeyError("db down"), on_call=1),
    )
    result = Agent(
        reporting_model([call("get_order", order_id="A1")] * 2), toolset, max_repeated_calls=None
    ).run_sync("q")
    assert [r.content for r in result.trace.tool_results] == [
        "Error (KeyError): db down",
        '{"status": "paid"}',
    ]
    assert mock.count("get_order") == 1
    # Real mode: calls the fault does not select run the real function.
    real = with_faults(Toolset(TOOLS), Fault.raises("get_weather", on_call=2))
    result = Agent(
        reporting_model([call("get_weather", city="x")] * 2), real, max_repeated_calls=None
    ).run_sync("q")
    assert [r.status for r in result.trace.tool_results] == ["ok", "error"]
    assert result.trace.tool_results[0].value["weather"] == "real sunshine"
    assert result.trace.tool_results[1].error_type == "ToolError"


def test_fault_validation_and_description():
    with pytest.raises(UserError, match="fault names unknown tool 'nope'"):
        with_faults(Toolset(TOOLS), Fault.raises("nope"))
    with pytest.raises(UserError, match="on_call must be a call number"):
        Fault.raises("get_order", on_call=0)
    with pytest.raises(UserError, match="needs an exception"):
        Fault.raises("get_order", "boom")  # type: ignore[arg-type]
    assert Fault.raises("get_order", KeyError, on_call=[2, 3]).describe() == (
        "raises KeyError on get_order (calls 2, 3)"
    )
    assert Fault.timeout("get_weather", when={"city": "x"}).describe() == (
        "timeout on get_weather when get_weather(city='x')"
    )


def test_mock_tools_switches_an_agent_to_mocks_inside_the_block_only():
    orders = Orders()
    agent = Agent(
        reporting_model([call("cancel_order", order_id="A1"), call("get_weather", city="x")]),
        TOOLS,
    )
    with mock_tools(agent, orders, faults=[Fault.malformed("get_weather", "garbage")]) as tools:
        assert tools.mode == "mock"
        result = agent.run_sync("cancel A1 then weather")
    assert orders.state["orders"]["A1"]["status"] == "cancelled"
    assert [r.content for r in result.trace.tool_results] == ["order A1 cancelled", "garbage"]
    assert agent.toolset.mode == "real"
    weather_agent = Agent(reporting_model([call("get_weather", city="x")]), TOOLS)
    with mock_tools(weather_agent, {"get_weather": lambda city: {"from": "mapping"}}):
        result = weather_agent.run_sync("again")
    assert result.trace.tool_results[0].value == {"from": "mapping"}
