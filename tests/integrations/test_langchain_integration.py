"""LangChain / LangGraph integration, against the real libraries (no network)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import ToolException
from langchain_core.tools import tool as lc_tool

from toolproof import Toolset, Trace, tool
from toolproof.errors import ScriptExhausted, UnmockedToolCall
from toolproof.integrations.langchain import (
    LangChainAgent,
    ScriptedChatModel,
    ToolproofChatModel,
    TraceCapture,
    capture_trace,
    from_langchain,
    to_langchain,
    to_langchain_messages,
    to_toolproof_messages,
)
from toolproof.replay import Recorder, TraceStore, replay
from toolproof.testing import (
    ScriptedModel,
    ToolMock,
    assert_no_tool_errors,
    assert_tool_called,
    assert_tool_order,
    call,
)


@tool(errors=(KeyError,))
def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order's status.

    Args:
        order_id: The order id, such as A-1.
    """
    return {"order_id": order_id, "status": "shipped"}


@tool(side_effects=True)
def refund_order(order_id: str, amount: float) -> str:
    """Refund an order.

    Args:
        order_id: The order id.
        amount: The amount to refund.
    """
    raise AssertionError("the real refund must never run in these tests")


@lc_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@lc_tool
async def slow_echo(text: str, times: int = 1) -> str:
    """Echo a text, asynchronously."""
    await asyncio.sleep(0)
    return text * times


@lc_tool
def broken(x: int) -> int:
    """Always fails with a tool exception."""
    raise ToolException(f"cannot handle {x}")


# -- tools both ways -------------------------------------------------------------------------------


def test_a_langchain_tool_becomes_a_tool_with_its_schema() -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    converted = from_langchain(add)
    sent = convert_to_openai_tool(add)["function"]
    assert converted.name == "add"
    assert converted.description == sent["description"]
    assert converted.parameters == sent["parameters"]
    assert converted.definition.parameters == sent["parameters"]
    assert not converted.is_async
    assert converted(a=2, b=3) == 5


async def test_an_async_langchain_tool_becomes_an_async_tool() -> None:
    converted = from_langchain(slow_echo)
    assert converted.is_async
    result = await Toolset([converted]).execute(call("slow_echo", text="ab", times=2))
    assert (result.status, result.value) == ("ok", "abab")


async def test_converted_tools_validate_and_report_errors_to_the_model() -> None:
    toolset = Toolset([from_langchain(add), from_langchain(broken)])
    invalid = await toolset.execute(call("add", a="x", b=1))
    assert invalid.status == "error" and invalid.error_type == "ValidationError"
    assert "'a'" in invalid.content
    failed = await toolset.execute(call("broken", x=3))
    assert (failed.status, failed.error_type, failed.content) == (
        "error",
        "ToolError",
        "Error (ToolError): cannot handle 3",
    )


async def test_a_converted_tool_takes_a_mock_in_mock_mode() -> None:
    converted = from_langchain(add, side_effects=True)

    @converted.mock
    def _(a: int, b: int) -> int:
        return -1

    result = await Toolset([converted], mode="mock").execute(call("add", a=1, b=2))
    assert (result.value, result.mocked) == (-1, True)


def test_toolproof_tools_become_structured_tools_with_results_as_artifacts() -> None:
    (structured,) = to_langchain(lookup_order)
    assert structured.name == "lookup_order"
    assert structured.args_schema == lookup_order.parameters
    message = structured.invoke(
        {"type": "tool_call", "name": "lookup_order", "args": {"order_id": "A-1"}, "id": "c-1"}
    )
    assert isinstance(message, ToolMessage)
    assert message.tool_call_id == "c-1" and message.status == "success"
    assert json.loads(message.content) == {"order_id": "A-1", "status": "shipped"}
    assert message.artifact.value == {"order_id": "A-1", "status": "shipped"}


def test_invalid_arguments_become_an_error_tool_message() -> None:
    (structured,) = to_langchain(lookup_order)
    message = structured.invoke(
        {"type": "tool_call", "name": "lookup_order", "args": {"order": "A-1"}, "id": "c-2"}
    )
    assert message.status == "error"
    assert "missing required argument 'order_id'" in message.content
    assert "unexpected argument 'order'" in message.content


def test_mock_mode_refuses_a_side_effecting_tool_inside_a_langchain_agent() -> None:
    toolset = Toolset([lookup_order, refund_order], mode="mock")
    model = ScriptedChatModel([call("refund_order", order_id="A-1", amount=10.0), "refunded"])
    agent = create_agent(model, to_langchain(toolset))
    with capture_trace() as captured, pytest.raises(UnmockedToolCall, match="refund_order"):
        agent.invoke({"messages": [HumanMessage("refund A-1")]})
    trace = captured.trace
    assert trace.stop_reason == "error"
    assert trace.error is not None and trace.error.type == "UnmockedToolCall"
    assert trace.tool_names == ["refund_order"]


def test_fixture_mocks_answer_inside_create_agent() -> None:
    mock = ToolMock()
    mock.add("lookup_order", {"order_id": "A-1"}, returns={"status": "delivered"})
    mock.add("refund_order", {"order_id": "A-1", "amount": 10.0}, returns="refund R-7 created")
    toolset = Toolset([lookup_order, refund_order], mode="mock", mocks=[mock])
    model = ScriptedChatModel(
        [
            call("lookup_order", order_id="A-1"),
            call("refund_order", order_id="A-1", amount=10.0),
            "Refund R-7 created for A-1.",
        ]
    )
    agent = create_agent(model, to_langchain(toolset))
    capture = TraceCapture()
    agent.invoke({"messages": [HumanMessage("refund A-1")]}, config={"callbacks": [capture]})
    trace = capture.trace
    assert_tool_order(trace, ["lookup_order", "refund_order"])
    assert_tool_called(trace, "refund_order", order_id="A-1", amount=10.0)
    assert_no_tool_errors(trace)
    assert [r.mocked for r in trace.tool_results] == [True, True]
    assert trace.tool_results[0].value == {"status": "delivered"}
    assert trace.tool_mode == "mock"
    assert trace.output == "Refund R-7 created for A-1."
    mock.verify()


# -- the scripted chat model -----------------------------------------------------------------------


def test_bind_tools_is_supported_and_requests_are_recorded() -> None:
    model = ScriptedChatModel([call("add", a=1, b=2), "3"])
    bound = model.bind_tools([add, lookup_order], tool_choice="any")
    first = bound.invoke("1 + 2?")
    assert isinstance(first, AIMessage)
    assert first.tool_calls == [
        {"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1", "type": "tool_call"}
    ]
    assert first.usage_metadata is not None and first.usage_metadata["total_tokens"] > 0
    (request,) = model.requests
    assert request.tool_names == ["add", "lookup_order"]
    assert request.tool_choice == "any"
    assert request.last.content == "1 + 2?"


def test_the_second_request_holds_the_tool_message_with_the_same_call_id() -> None:
    model = ScriptedChatModel([call("add", a=1, b=2), "1 + 2 = 3"])
    agent = create_agent(model, [add])
    agent.invoke({"messages": [HumanMessage("1 + 2?")]})
    question, decision, answer = model.requests[1].messages
    assert question.content == "1 + 2?"
    assert isinstance(answer, ToolMessage)
    assert (answer.tool_call_id, answer.content) == (decision.tool_calls[0]["id"], "3")


async def test_ainvoke_and_astream_answer_from_the_script() -> None:
    model = ScriptedChatModel(
        ["a fairly long answer, streamed in several chunks", call("add", a=1, b=2)]
    )
    bound = model.bind_tools([add])
    chunks = [chunk async for chunk in bound.astream("hi")]
    assert len(chunks) > 2
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert total.content == "a fairly long answer, streamed in several chunks"
    message = await bound.ainvoke("again")
    assert message.tool_calls[0]["args"] == {"a": 1, "b": 2}


def test_sync_stream_merges_tool_call_chunks() -> None:
    model = ScriptedChatModel([[call("add", a=1, b=2), call("add", a=3, b=4)]])
    chunks = list(model.bind_tools([add]).stream("two sums"))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert [c["args"] for c in total.tool_calls] == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]


def test_a_script_that_runs_out_says_so() -> None:
    model = ScriptedChatModel(["only one"])
    model.invoke("first")
    with pytest.raises(ScriptExhausted, match="ran out"):
        model.invoke("second")


def test_a_call_without_bound_tools_is_refused() -> None:
    model = ScriptedChatModel([call("add", a=1, b=2)])
    with pytest.raises(Exception, match=r"not bound.*bind_tools"):
        model.invoke("1 + 2?")


def test_sync_invoke_inside_an_event_loop_is_refused_with_advice() -> None:
    model = ScriptedChatModel(["hi"])

    async def inside() -> None:
        model.invoke("hello")

    with pytest.raises(Exception, match="ainvoke"):
        asyncio.run(inside())


def test_any_toolproof_model_can_back_the_chat_model() -> None:
    from toolproof.testing import FunctionModel

    def respond(messages: list[Any], info: Any) -> str:
        return f"{len(messages)} messages, tools: {info.tool_names}"

    chat = ToolproofChatModel(backend=FunctionModel(respond))
    answer = chat.bind_tools([add]).invoke([("system", "be brief"), ("human", "hi")])
    assert answer.content == "2 messages, tools: ['add']"


def test_messages_round_trip_between_langchain_and_toolproof() -> None:
    original = [
        ("system", "s"),
        HumanMessage("q"),
        AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1}, "id": "x"}]),
        ToolMessage("1", tool_call_id="x", name="add", status="error"),
        AIMessage("done"),
    ]
    from langchain_core.messages import convert_to_messages

    lc = convert_to_messages(original)
    back = to_langchain_messages(to_toolproof_messages(lc))
    assert [type(m) for m in back] == [type(m) for m in lc]
    assert back[2].tool_calls[0]["args"] == {"a": 1}
    assert back[3].status == "error" and back[3].tool_call_id == "x"


# -- trace capture, checks, recorder and replay ----------------------------------------------------


def _order_agent(model: Any, tools: Any = None) -> LangChainAgent:
    return LangChainAgent(
        lambda chat, lc_tools: create_agent(chat, lc_tools, system_prompt="You handle orders."),
        model,
        [lookup_order] if tools is None else tools,
        name="orders",
    )


def test_a_create_agent_run_is_a_trace_that_round_trips() -> None:
    agent = _order_agent(ScriptedModel([call("lookup_order", order_id="A-1"), "A-1 has shipped."]))
    result = agent.run_sync("Where is A-1?", metadata={"case": "x"})
    trace = result.trace
    assert result.output == "A-1 has shipped." and result.ok
    assert trace.input == "Where is A-1?"
    assert trace.metadata == {"case": "x", "agent": "orders"}
    assert [t.name for t in trace.tools] == ["lookup_order"]
    assert len(trace.steps) == 2 and trace.usage.requests == 2
    assert trace.steps[0].tool_results[0].call_id == trace.tool_calls[0].id
    assert Trace.from_json(trace.to_json()) == trace
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]


def test_a_session_carries_history_into_the_next_turn() -> None:
    model = ScriptedModel(["Hello!", "You said hi before."])
    session = _order_agent(model).session()
    session.run_sync("hi")
    session.run_sync("what did I say?")
    second = model.requests[1]
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "user"]
    assert session.traces[1].history[0].content == "hi"


def test_the_recorder_stores_langchain_runs_for_replay(tmp_path: Any) -> None:
    path = tmp_path / "traces.db"
    recorder = Recorder(str(path))
    agent = _order_agent(ScriptedModel([call("lookup_order", order_id="A-1"), "A-1 shipped."]))
    agent.recorder = recorder
    result = agent.run_sync("Where is A-1?")
    assert recorder.close()
    store = TraceStore(str(path))
    try:
        stored = store.get(result.trace.id)
    finally:
        store.close()
    assert stored.tool_names == ["lookup_order"]
    assert stored.output == "A-1 shipped."
    report = replay(str(path), mode="tools", tools=[lookup_order])
    assert report.exit_code == 0, report.render_text()


@pytest.mark.timeout(300)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    arguments=st.dictionaries(
        st.text(max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=5), inner, max_size=3)
            ),
            max_leaves=8,
        ),
        max_size=4,
    )
)
def test_hostile_arguments_never_crash_a_converted_tool(arguments: dict[str, Any]) -> None:
    (structured,) = to_langchain(lookup_order)
    message = structured.invoke(
        {"type": "tool_call", "name": "lookup_order", "args": arguments, "id": "h"}
    )
    assert isinstance(message, ToolMessage)
    if message.status == "error":
        assert message.content.startswith(
            "Error (ValidationError): Invalid arguments for tool 'lookup_order'"
        )
    else:
        assert set(arguments) == {"order_id"} and isinstance(arguments["order_id"], str)


def test_a_hand_built_langgraph_with_a_tool_node_is_captured() -> None:
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    lc_tools = to_langchain(Toolset([lookup_order], mode="mock", mocks={"lookup_order": _lost}))
    model = ScriptedChatModel([call("lookup_order", order_id="A-9"), "A-9 is lost."])
    bound = model.bind_tools(lc_tools)

    def assistant(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("assistant", assistant)
    graph.add_node("tools", ToolNode(lc_tools))
    graph.add_edge(START, "assistant")
    graph.add_conditional_edges("assistant", tools_condition)
    graph.add_edge("tools", "assistant")
    app = graph.compile()
    assert END == "__end__"

    with capture_trace(tags=["graph"]) as captured:
        app.invoke({"messages": [HumanMessage("Where is A-9?")]})
    trace = captured.trace
    assert trace.tags == ["graph"]
    assert trace.output == "A-9 is lost."
    (result,) = trace.tool_results
    assert result.mocked and result.value == {"order_id": "A-9", "status": "lost"}
    assert result.call_id == trace.tool_calls[0].id


def _lost(order_id: str) -> dict[str, str]:
    return {"order_id": order_id, "status": "lost"}


async def test_parallel_calls_in_create_agent_keep_call_order() -> None:
    @tool
    async def slow_lookup(order_id: str, delay: float) -> str:
        """Look an order up slowly.

        Args:
            order_id: The order id.
            delay: Seconds to wait.
        """
        await asyncio.sleep(delay)
        return f"{order_id} ok"

    model = ScriptedChatModel(
        [
            [
                call("slow_lookup", order_id="A", delay=0.05),
                call("slow_lookup", order_id="B", delay=0.0),
            ],
            "both ok",
        ]
    )
    agent = create_agent(model, to_langchain(slow_lookup))
    with capture_trace() as captured:
        await agent.ainvoke({"messages": [HumanMessage("A and B?")]})
    trace = captured.trace
    assert [r.content for r in trace.tool_results] == ["A ok", "B ok"]
    assert [r.call_id for r in trace.tool_results] == [c.id for c in trace.tool_calls]
    tool_messages = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert {m.tool_call_id for m in tool_messages} == {c.id for c in trace.tool_calls}


_EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["chat_start", "llm_end", "llm_error", "tool_start", "tool_end",
                         "tool_error", "chain_error"]),
        st.integers(0, 3),  # which run id
        st.sampled_from(["add", "lookup_order", "", "x" * 300]),
        st.one_of(st.none(), st.text(max_size=20), st.dictionaries(st.text(max_size=4),
                                                                    st.integers(), max_size=3)),
    ),
    max_size=25,
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(events=_EVENTS)
def test_any_order_of_callbacks_still_gives_a_valid_trace(events: list[Any]) -> None:
    """Callbacks out of order, unknown run ids, odd payloads: the trace is always valid."""
    import uuid

    from langchain_core.outputs import ChatGeneration, LLMResult

    capture = TraceCapture()
    ids = [uuid.UUID(int=i + 1) for i in range(4)]
    for kind, which, name, payload in events:
        run_id = ids[which]
        if kind == "chat_start":
            capture.on_chat_model_start(
                {"name": name},
                [[HumanMessage(str(payload))]],
                run_id=run_id,
                invocation_params={"tools": [{"type": "function", "function": {"name": name}}]},
            )
        elif kind == "llm_end":
            calls = (
                [
                    {
                        "name": name,
                        "args": payload if isinstance(payload, dict) else {},
                        "id": f"c{which}",
                    }
                ]
                if name
                else []
            )
            message = AIMessage(str(payload or ""), tool_calls=calls)
            result = LLMResult(generations=[[ChatGeneration(message=message)]])
            capture.on_llm_end(result, run_id=run_id)
        elif kind == "llm_error":
            capture.on_llm_error(ValueError(str(payload)), run_id=run_id)
        elif kind == "tool_start":
            capture.on_tool_start(
                {"name": name},
                str(payload),
                run_id=run_id,
                inputs=payload if isinstance(payload, dict) else None,
                tool_call_id=f"c{which}" if which % 2 else None,
            )
        elif kind == "tool_end":
            output = ToolMessage(str(payload), tool_call_id=f"c{which}") if which % 2 else payload
            capture.on_tool_end(output, run_id=run_id)
        elif kind == "tool_error":
            capture.on_tool_error(KeyError(str(payload)), run_id=run_id)
        else:
            capture.on_chain_error(RuntimeError("stop"), run_id=run_id)
    trace = capture.trace
    assert Trace.from_json(trace.to_json()) == trace
    assert trace.stop_reason in ("final", "max_steps", "cancelled", "error")
    if trace.stop_reason == "cancelled":  # only a conversation cut after a model asked for tools
        assert trace.error is None and trace.steps and trace.steps[-1].response.tool_calls
    for step in trace.steps:
        assert {r.call_id for r in step.tool_results} <= {c.id for c in step.response.tool_calls}
    results = [id(r) for r in trace.tool_results]
    assert len(results) == len(set(results)), "a tool result is attached to two calls"


def test_call_ids_repeated_across_steps_keep_each_result_with_its_call() -> None:
    """Some local servers number calls from zero in every response."""
    model = ScriptedChatModel(
        [
            call("add", a=1, b=2).with_id("call_0"),
            call("add", a=3, b=4).with_id("call_0"),
            "3 and 7",
        ]
    )
    with capture_trace() as captured:
        create_agent(model, [add]).invoke({"messages": [HumanMessage("1+2, then 3+4")]})
    trace = captured.trace
    assert [[r.content for r in s.tool_results] for s in trace.steps] == [["3"], ["7"], []]
    assert trace.output == "3 and 7"


@pytest.mark.timeout(120)
def test_the_wall_clock_budget_ends_a_hung_langchain_run_with_its_trace() -> None:
    from toolproof import Budget

    @tool
    async def wait_forever(order_id: str) -> str:
        """Never answers.

        Args:
            order_id: The order.
        """
        await asyncio.sleep(3600)
        return "never"

    agent = LangChainAgent(
        lambda chat, lc_tools: create_agent(chat, lc_tools),
        ScriptedModel([call("wait_forever", order_id="A-1"), "done"]),
        [wait_forever],
    )
    result = agent.run_sync("Where is A-1?", budget=Budget(max_seconds=0.3))
    assert result.stop_reason == "budget" and result.output is None
    assert "max_seconds=0.3" in (result.trace.stop_detail or "")
    assert [c.name for c in result.trace.tool_calls] == ["wait_forever"]
