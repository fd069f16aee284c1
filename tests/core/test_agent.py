"""The agent loop and its contracts: stop reasons, errors, parallel calls, approval, budgets."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from toolproof import (
    Agent,
    Approval,
    ApprovalRequest,
    Budget,
    Message,
    ModelSettings,
    RunResult,
    ToolCall,
    ToolError,
    Toolset,
    Trace,
    Usage,
    UserError,
    tool,
)
from toolproof._messages import NOT_RUN_ERRORS
from toolproof.errors import ModelFailed, ToolCrashed, UnmockedToolCall
from toolproof.events import (
    Event,
    ModelResponded,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolStarted,
)
from toolproof.models import Model, ModelResponse
from toolproof.testing import FunctionModel, RequestInfo, ScriptedModel, call

LEAVE = {"E001": 5, "E002": 0, "E003": 12, "E004": 3}


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


TOOLS = [multiply_numbers, get_leave_balance]


def make(script: list[Any], **options: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script)
    options.setdefault("system_prompt", "You are an HR assistant.")
    return Agent(model, options.pop("tools", TOOLS), **options), model


def test_the_hr_assistant_example() -> None:
    model = ScriptedModel([call("multiply_numbers", a=12, b=8), "12 x 8 = 96"])
    agent = Agent(model=model, tools=TOOLS, system_prompt="You are an HR assistant.", max_steps=5)
    result = agent.run_sync("What is 12 times 8?")
    assert result.output == "12 x 8 = 96" and result.stop_reason == "final"
    assert [(c.name, c.arguments) for c in result.trace.tool_calls] == [
        ("multiply_numbers", {"a": 12, "b": 8})
    ]
    assert result.trace.tool_results[0].status == "ok"
    assert len(model.requests) == 2


def test_second_request_carries_question_call_and_result_with_same_id() -> None:
    agent, model = make([call("multiply_numbers", a=12, b=8), "96"])
    agent.run_sync("12乘以8是多少")
    first, second = model.requests
    assert [m.role for m in first.messages] == ["system", "user"]
    assert first.tool_names == ["multiply_numbers", "get_leave_balance"]
    assert first.tools[0].parameters["required"] == ["a", "b"]
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool"]
    user, assistant, result = second.messages[1:]
    assert user.content == "12乘以8是多少"
    assert assistant.tool_calls[0].name == "multiply_numbers"
    assert result.content == "96.0"
    assert result.tool_call_id == assistant.tool_calls[0].id == "call_1"
    assert result.status == "ok" and result.name == "multiply_numbers"


def test_no_tool_path_calls_the_model_once() -> None:
    agent, model = make(["你好！我是 HR 助手。"])
    result = agent.run_sync("你好")
    assert result.output == "你好！我是 HR 助手。"
    assert len(model.requests) == 1 and result.trace.tool_calls == []


def test_declared_business_error_goes_back_to_the_model_and_the_run_continues() -> None:
    agent, model = make(
        [call("get_leave_balance", employee_id="E999"), "员工E999不存在，请核实员工编号。"]
    )
    result = agent.run_sync("查询员工E999的剩余年假")
    assert result.stop_reason == "final" and "E999" in (result.output or "")
    error = result.trace.tool_results[0]
    assert (error.status, error.error_type, error.content) == (
        "error",
        "KeyError",
        "Error (KeyError): employee not found",
    )
    tool_message = model.requests[1].messages[-1]
    assert tool_message.status == "error" and tool_message.tool_call_id == "call_1"
    assert tool_message.name == "get_leave_balance"
    assert tool_message.content == "Error (KeyError): employee not found"


def test_tool_error_and_value_error_are_results() -> None:
    @tool
    def lookup(key: str) -> str:
        """Look something up.

        Args:
            key: The key.
        """
        raise ToolError(f"no entry for {key}; try one of A, B")

    agent, _ = make(
        [call("lookup", key="Z"), call("get_leave_balance", employee_id=" "), "done"],
        tools=[lookup, get_leave_balance],
    )
    result = agent.run_sync("x")
    assert [(r.error_type, r.content) for r in result.trace.tool_results] == [
        ("ToolError", "Error (ToolError): no entry for Z; try one of A, B"),
        ("ValueError", "Error (ValueError): employee_id must not be empty"),
    ]


def test_undeclared_exception_is_a_bug_that_stops_the_run_with_the_partial_trace() -> None:
    @tool
    def broken(x: int) -> int:
        """Broken tool.

        Args:
            x: Input.
        """
        return {}[x]  # type: ignore[no-any-return]

    seen: list[Trace] = []
    agent, _ = make(
        [call("broken", x=1), "never"],
        tools=[broken],
        on_event=lambda e: seen.append(e.trace) if isinstance(e, RunFinished) else None,
    )
    with pytest.raises(ToolCrashed) as info:
        agent.run_sync("go")
    error = info.value
    assert error.tool_name == "broken" and error.step == 1
    assert isinstance(error.__cause__, KeyError)
    assert "tool 'broken' raised KeyError: 1 (a bug in the tool" in str(error)
    trace = error.trace
    assert trace is not None and trace.stop_reason == "error"
    assert trace.error is not None and (trace.error.type, trace.error.tool_name) == (
        "KeyError",
        "broken",
    )
    assert [c.name for c in trace.tool_calls] == ["broken"]
    assert seen == [trace]  # subscribers and recorders still get the trace
    assert Trace.from_json(trace.to_json()) == trace


def test_unknown_tool_lists_available_tools() -> None:
    agent, _ = make([call("add_numbers", a=1, b=2), "sorry"])
    result = agent.run_sync("1+2")
    r = result.trace.tool_results[0]
    assert (r.status, r.error_type) == ("error", "UnknownTool")
    assert r.content == (
        "Error (UnknownTool): Unknown tool 'add_numbers'. Available tools: multiply_numbers, "
        "get_leave_balance."
    )


def test_malformed_json_arguments_never_crash() -> None:
    bad = ToolCall.from_json_arguments("multiply_numbers", '{"a": 12, "b": ', id="c1")
    not_object = ToolCall.from_json_arguments("multiply_numbers", "[1, 2]", id="c2")
    agent, _ = make([Message.assistant(None, [bad, not_object]), "retry later"])
    result = agent.run_sync("x")
    first, second = result.trace.tool_results
    assert first.error_type == "InvalidArguments" and "not valid JSON" in first.content
    assert second.content == (
        "Error (InvalidArguments): Could not read the arguments for tool 'multiply_numbers': "
        "arguments must be a JSON object, got list. Send the arguments as one JSON object."
    )
    assert result.trace.tool_calls[0].arguments_json() == '{"a": 12, "b": '  # kept verbatim


def test_extra_arguments_are_rejected_by_name() -> None:
    agent, _ = make([call("multiply_numbers", a=12, b=8, options={"format": "json"}), "x"])
    result = agent.run_sync("x")
    r = result.trace.tool_results[0]
    assert r.error_type == "ValidationError"
    assert "unexpected argument 'options'" in r.content and "This tool accepts: a, b." in r.content


def test_wrong_types_are_reported() -> None:
    agent, _ = make([call("multiply_numbers", a="twelve", b=8), "x"])
    r = agent.run_sync("x").trace.tool_results[0]
    assert r.error_type == "ValidationError" and "'a': Input should be a valid number" in r.content


def test_max_steps_returns_an_unfinished_result_not_an_empty_answer() -> None:
    agent, model = make([call("multiply_numbers", a=1, b=i) for i in range(10)], max_steps=3)
    result = agent.run_sync("loop")
    assert result.stop_reason == "max_steps" and result.output is None and not result.ok
    assert result.stop_detail == (
        "stopped after 3 model calls without a final answer (max_steps=3); "
        "the last step called multiply_numbers(a=1, b=2)"
    )
    assert len(model.requests) == 3 and len(result.trace.tool_results) == 3
    assert str(result).startswith("[run stopped: max_steps]")


def test_repeated_identical_calls_are_detected() -> None:
    agent, _ = make([call("multiply_numbers", a=2, b=2)] * 5, max_repeated_calls=3)
    result = agent.run_sync("loop")
    assert result.stop_reason == "repeated_call"
    assert result.stop_detail == (
        "multiply_numbers(a=2, b=2) was requested 3 times in a row (max_repeated_calls=3)"
    )
    assert len(result.trace.tool_results) == 2  # the third identical call did not run
    # The unanswered call is not handed back as history (it would orphan a tool_calls message).
    assert result.messages[-1].role == "tool"


def test_repeat_detection_can_be_disabled_and_counts_repeats_in_a_row() -> None:
    script = [call("multiply_numbers", a=2, b=2), call("multiply_numbers", a=2, b=3)] * 2 + ["ok"]
    agent, _ = make(script, max_repeated_calls=3)  # A B A B: a cycle repeated twice, not 3x
    assert agent.run_sync("x").stop_reason == "final"
    agent, _ = make(script, max_repeated_calls=2)
    assert agent.run_sync("x").stop_reason == "repeated_call"
    agent, _ = make([call("multiply_numbers", a=2, b=2)] * 4 + ["ok"], max_repeated_calls=None)
    assert agent.run_sync("x").stop_reason == "final"


def test_parallel_calls_run_concurrently_and_results_keep_call_order() -> None:
    log: list[str] = []

    @tool
    async def slow(name: str, delay: float) -> str:
        """Wait, then echo.

        Args:
            name: Echoed back.
            delay: Seconds to wait.
        """
        log.append(f"start {name}")
        await asyncio.sleep(delay)
        log.append(f"end {name}")
        return name

    calls = [
        call("slow", name="a", delay=0.05),
        call("slow", name="b", delay=0.0),
        call("slow", name="c", delay=0.02),
    ]
    agent, model = make([calls, "done"], tools=[slow])
    result = agent.run_sync("go")
    assert log[:3] == ["start a", "start b", "start c"]  # all started before any finished
    results = result.trace.tool_results
    assert [r.content for r in results] == ["a", "b", "c"]
    assert (
        [r.call_id for r in results]
        == [c.id for c in result.trace.tool_calls]
        == ["call_1", "call_2", "call_3"]
    )
    assert [m.tool_call_id for m in model.requests[1].messages[-3:]] == [
        "call_1",
        "call_2",
        "call_3",
    ]


def test_one_crashing_parallel_call_keeps_the_others_results() -> None:
    @tool
    def fine(x: int) -> int:
        """Fine.

        Args:
            x: Input.
        """
        return x

    @tool
    def bad(x: int) -> int:
        """Bad.

        Args:
            x: Input.
        """
        raise RuntimeError("boom")

    agent, _ = make(
        [[call("fine", x=1), call("bad", x=2), call("fine", x=3)], "x"], tools=[fine, bad]
    )
    with pytest.raises(ToolCrashed) as info:
        agent.run_sync("go")
    assert info.value.trace is not None
    assert [r.content for r in info.value.trace.tool_results] == ["1", "3"]


def test_approval_approve_reject_edit_and_missing_approver() -> None:
    sent: list[str] = []

    @tool(side_effects=True, requires_approval=True)
    def send_message(channel: str, text: str) -> str:
        """Send a message.

        Args:
            channel: Where.
            text: What.
        """
        sent.append(f"{channel}:{text}")
        return "sent"

    decisions = iter(
        [
            Approval.approve(),
            Approval.reject("not during the freeze"),
            Approval.edit({"channel": "#ops", "text": "hi"}),
            True,
        ]
    )
    requests: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> Approval | bool:
        requests.append(request)
        return next(decisions)

    script = [call("send_message", channel="#a", text=str(i)) for i in range(4)] + ["done"]
    agent, _ = make(script, tools=[send_message], approver=approver, max_repeated_calls=None)
    result = agent.run_sync("send")
    statuses = [(r.status, r.content) for r in result.trace.tool_results]
    assert statuses == [
        ("ok", "sent"),
        ("error", "Error (Rejected): Tool 'send_message' was not run: not during the freeze."),
        ("ok", "sent"),
        ("ok", "sent"),
    ]
    assert sent == ["#a:0", "#ops:hi", "#a:3"]
    assert requests[0].tool.name == "send_message" and requests[0].arguments == {
        "channel": "#a",
        "text": "0",
    }

    agent, _ = make([call("send_message", channel="#a", text="x"), "done"], tools=[send_message])
    r = agent.run_sync("send").trace.tool_results[0]
    assert r.error_type == "Rejected" and "no approver is configured" in r.content


async def test_async_approver() -> None:
    @tool(requires_approval=True)
    def delete(id: str) -> str:
        """Delete.

        Args:
            id: What.
        """
        return "deleted"

    async def approver(request: ApprovalRequest) -> Approval:
        await asyncio.sleep(0)
        return Approval.reject()

    agent, _ = make([call("delete", id="1"), "ok"], tools=[delete], approver=approver)
    result = await agent.run("x")
    assert (
        result.trace.tool_results[0].content
        == "Error (Rejected): Tool 'delete' was not run: the user rejected this call."
    )


def test_budget_max_model_calls() -> None:
    agent, model = make(
        [call("multiply_numbers", a=1, b=i) for i in range(5)], budget=Budget(max_model_calls=2)
    )
    result = agent.run_sync("x")
    assert (
        result.stop_reason == "budget"
        and result.stop_detail == "model call limit reached (2 calls)"
    )
    assert len(model.requests) == 2


def test_budget_tokens_stops_before_running_more_tools() -> None:
    heavy = ModelResponse(
        Message.assistant(None, [call("multiply_numbers", a=1, b=2)]), Usage(900, 200, requests=1)
    )
    agent, _ = make([heavy, "x"], budget=Budget(max_tokens=1000))
    result = agent.run_sync("x")
    assert result.stop_reason == "budget"
    assert result.stop_detail == "token budget exceeded (1100 > 1000 tokens)"
    assert result.trace.tool_results == []  # tools that would never be answered did not run
    assert result.usage.total_tokens == 1100


def test_budget_cost_uses_the_price_table_with_cache_hits_priced_apart() -> None:
    from toolproof.models import Price

    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cached_tokens=400_000, requests=1)
    step = ModelResponse(Message.assistant(None, [call("multiply_numbers", a=1, b=2)]), usage)
    model = ScriptedModel([step, "x"], name="deepseek:deepseek-chat")
    agent = Agent(
        model,
        TOOLS,
        budget=Budget(max_cost=0.1),
        prices={"deepseek-chat": Price(0.28, 0.42, 0.028)},
    )
    result = agent.run_sync("x")
    expected = (600_000 * 0.28 + 400_000 * 0.028 + 100_000 * 0.42) / 1e6
    assert result.trace.steps[0].cost == pytest.approx(expected)
    assert result.stop_reason == "budget" and result.trace.cost == pytest.approx(expected)


@pytest.mark.timeout(60)
def test_budget_wall_clock_per_run() -> None:
    cancelled: list[bool] = []

    async def slow_model(messages: list[Message], info: RequestInfo) -> str:
        try:
            await asyncio.Event().wait()  # never answers: only the time limit ends the run
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "late"

    agent = Agent(FunctionModel(slow_model), TOOLS, budget=Budget(max_seconds=0.05))
    result = agent.run_sync("x")
    assert result.stop_reason == "budget" and result.stop_detail == "time limit reached (0.05 s)"
    assert cancelled == [True]  # the request was cancelled, not waited for


def test_tool_timeout_is_reported_to_the_model() -> None:
    @tool(timeout=0.02)
    async def hang(x: int) -> int:
        """Hang.

        Args:
            x: Input.
        """
        await asyncio.sleep(10)
        return x

    @tool
    def sync_hang(x: int) -> int:
        """Hang synchronously.

        Args:
            x: Input.
        """
        import time

        time.sleep(0.3)
        return x

    agent, _ = make(
        [[call("hang", x=1), call("sync_hang", x=2)], "gave up"],
        tools=[hang, sync_hang],
        tool_timeout=0.02,
    )
    result = agent.run_sync("x")
    assert [(r.error_type, r.content) for r in result.trace.tool_results] == [
        ("Timeout", "Error (Timeout): Tool 'hang' timed out after 0.02 s."),
        ("Timeout", "Error (Timeout): Tool 'sync_hang' timed out after 0.02 s."),
    ]
    assert result.stop_reason == "final"


async def test_cancellation_ends_with_cancelled_and_keeps_the_trace() -> None:
    started = asyncio.Event()
    finished: list[Trace] = []

    @tool
    async def wait_forever(x: int) -> int:
        """Wait.

        Args:
            x: Input.
        """
        started.set()
        await asyncio.sleep(60)
        return x

    def on_event(event: Event) -> None:
        if isinstance(event, RunFinished):
            finished.append(event.trace)

    agent, _ = make([call("wait_forever", x=1), "never"], tools=[wait_forever], on_event=on_event)
    task = asyncio.create_task(agent.run("x"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (trace,) = finished
    assert trace.stop_reason == "cancelled" and trace.stop_detail == "the run was cancelled"
    assert [c.name for c in trace.tool_calls] == ["wait_forever"] and trace.ended_at


def test_model_failure_stops_the_run_with_model_failed() -> None:
    agent, _ = make([call("multiply_numbers", a=1, b=2), ConnectionError("reset by peer")])
    with pytest.raises(ModelFailed) as info:
        agent.run_sync("x")
    assert str(info.value) == "model scripted failed at step 2: reset by peer"
    assert isinstance(info.value.__cause__, ConnectionError)
    trace = info.value.trace
    assert trace is not None and trace.stop_reason == "error" and len(trace.steps) == 1
    assert trace.error is not None and trace.error.type == "ConnectionError"


def test_scripted_model_says_where_its_script_ran_out() -> None:
    agent, _ = make([call("multiply_numbers", a=1, b=2)])
    with pytest.raises(ModelFailed) as info:
        agent.run_sync("x")
    assert str(info.value.__cause__) == (
        "ScriptedModel script ran out: request 2 asked for a response but the script has only 1. "
        "The last message it received was tool: '2.0'. Add a response to the script (a final "
        "text answer ends the run)."
    )


def test_scripted_model_rejects_unusable_items_up_front() -> None:
    with pytest.raises(UserError, match="script item 2: cannot use 42 as a model response"):
        ScriptedModel(["ok", 42])  # type: ignore[list-item]
    with pytest.raises(UserError, match="must have role 'assistant'"):
        ScriptedModel([Message.user("hi")])


def test_function_model_sees_messages_and_tools() -> None:
    def respond(messages: list[Message], info: RequestInfo) -> Any:
        if messages[-1].role == "tool":
            return f"result {messages[-1].content}"
        assert info.tool_names == ["multiply_numbers", "get_leave_balance"] and info.step == 1
        return call("multiply_numbers", a=3, b=4)

    model = FunctionModel(respond)
    result = Agent(model, TOOLS).run_sync("3*4")
    assert result.output == "result 12.0" and len(model.requests) == 2


def test_settings_are_sent_and_recorded() -> None:
    agent, model = make(["hi"], settings=ModelSettings(temperature=0.0, seed=7))
    result = agent.run_sync("x", settings=ModelSettings(max_tokens=50))
    assert model.requests[0].settings == ModelSettings(temperature=0.0, max_tokens=50, seed=7)
    assert result.trace.settings == {"temperature": 0.0, "max_tokens": 50, "seed": 7}


def test_final_answer_details_for_truncated_and_empty_answers() -> None:
    cut = ModelResponse(Message.assistant("12 x 8 is"), finish_reason="length")
    agent, _ = make([cut])
    result = agent.run_sync("x")
    assert result.stop_reason == "final"
    assert result.stop_detail == "the answer was cut off by the token limit (finish_reason=length)"
    agent, _ = make([Message.assistant(None)])
    assert agent.run_sync("x").stop_detail == "the model returned an empty answer"


def test_events_and_logging(caplog: pytest.LogCaptureFixture) -> None:
    events: list[Event] = []
    agent, _ = make([call("multiply_numbers", a=12, b=8), "96"], on_event=events.append)
    with caplog.at_level(logging.INFO, logger="toolproof"):
        agent.run_sync("x")
    kinds = [type(e) for e in events]
    assert kinds == [
        RunStarted,
        ModelResponded,
        ToolStarted,
        ToolFinished,
        ModelResponded,
        RunFinished,
    ]
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("[step 1] multiply_numbers(a=12, b=8) -> 96.0") for line in lines)


def test_a_failing_subscriber_never_breaks_the_run(caplog: pytest.LogCaptureFixture) -> None:
    def bad(event: Event) -> None:
        raise RuntimeError("subscriber bug")

    agent, _ = make(["hi"], on_event=bad)
    with caplog.at_level(logging.ERROR, logger="toolproof"):
        assert agent.run_sync("x").output == "hi"
    assert "event handler" in caplog.text


def test_recorder_receives_every_trace_and_its_failure_is_contained() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.traces: list[Trace] = []

        def record(self, trace: Trace) -> None:
            self.traces.append(trace)
            raise OSError("disk full")

    recorder = Recorder()
    agent, _ = make(["hi"], recorder=recorder)
    result = agent.run_sync("x")
    assert result.output == "hi" and recorder.traces == [result.trace]


def test_session_keeps_history_across_turns() -> None:
    agent, model = make(
        [call("get_leave_balance", employee_id="E001"), "5 days", "And E002 has 0."]
    )
    chat = agent.session()
    chat.run_sync("E001 leave?")
    second = chat.run_sync("and E002?")
    assert second.output == "And E002 has 0."
    roles = [m.role for m in model.requests[2].messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert len(chat.traces) == 2 and chat.traces[1].history[0].content == "E001 leave?"
    assert [m.content for m in chat.history if m.role == "user"] == ["E001 leave?", "and E002?"]


def test_override_swaps_model_and_tools_in_context() -> None:
    agent, _ = make(["original"])
    with agent.override(model=ScriptedModel(["overridden"])):
        assert agent.run_sync("x").output == "overridden"
    assert agent.run_sync("x").output == "original"


def test_run_sync_inside_a_loop_is_a_clear_error() -> None:
    agent, _ = make(["hi"])

    async def inner() -> None:
        agent.run_sync("x")

    with pytest.raises(
        UserError, match=r"cannot be called from a running event loop; use `await \.\.\.run\(\)`"
    ):
        asyncio.run(inner())


def test_bad_agent_configuration() -> None:
    with pytest.raises(UserError, match="max_steps"):
        Agent(ScriptedModel([]), max_steps=0)
    with pytest.raises(UserError, match="needs a Model"):
        Agent(object())  # type: ignore[arg-type]
    with pytest.raises(UserError, match="two tools are named 'multiply_numbers'"):
        Agent(ScriptedModel([]), [multiply_numbers, multiply_numbers])
    with pytest.raises(UserError, match="must be a string"):
        Agent(ScriptedModel([])).run_sync(42)  # type: ignore[arg-type]


def test_mock_mode_uses_mocks_and_refuses_side_effects_without_one() -> None:
    sent: list[str] = []

    @tool(side_effects=True)
    def slack_send_message(text: str) -> str:
        """Send to Slack.

        Args:
            text: Message.
        """
        sent.append(text)
        return "sent"

    @tool
    def search(query: str) -> str:
        """Search.

        Args:
            query: Query.
        """
        return "real result"

    @search.mock
    def _(query: str) -> str:
        return "mock result"

    tools = Toolset([slack_send_message, search], mode="mock")
    agent = Agent(ScriptedModel([call("search", query="q"), "x"]), tools)
    result = agent.run_sync("x")
    assert (
        result.trace.tool_results[0].content == "mock result"
        and result.trace.tool_results[0].mocked
    )
    assert result.trace.tool_mode == "mock"

    agent = Agent(ScriptedModel([call("slack_send_message", text="hi"), "x"]), tools)
    with pytest.raises(UnmockedToolCall) as info:
        agent.run_sync("x")
    assert info.value.tool_name == "slack_send_message" and sent == []
    assert "tool 'slack_send_message' has side effects and no mock" in str(info.value)

    allowed = tools.with_mode(
        "mock", overrides={"slack_send_message": "real"}, mocks={"search": lambda query: "mapped"}
    )
    result = Agent(
        ScriptedModel([[call("slack_send_message", text="hi"), call("search", query="q")], "x"]),
        allowed,
    ).run_sync("x")
    assert sent == ["hi"] and [r.content for r in result.trace.tool_results] == ["sent", "mapped"]


def test_toolset_rejects_unknown_names_in_overrides_and_mocks() -> None:
    with pytest.raises(
        UserError,
        match="overrides names unknown tool 'nope'; tools: get_leave_balance, multiply_numbers",
    ):
        Toolset(TOOLS, overrides={"nope": "real"})
    with pytest.raises(UserError, match="mocks names unknown tool 'nope'"):
        Toolset(TOOLS, mocks={"nope": lambda: 1})
    with pytest.raises(UserError, match="tool mode must be 'real' or 'mock'"):
        Toolset(TOOLS, mode="fake")  # type: ignore[arg-type]


def test_plain_functions_become_tools_and_return_values_are_rendered() -> None:
    from dataclasses import dataclass

    @dataclass
    class Flight:
        number: str
        seats: int

    def find_flight(number: str) -> Flight:
        """Find a flight.

        Args:
            number: Flight number.
        """
        return Flight(number, 3)

    agent = Agent(ScriptedModel([call("find_flight", number="CA1"), "x"]), [find_flight])
    result = agent.run_sync("x").trace.tool_results[0]
    assert result.value == {"number": "CA1", "seats": 3}
    assert json.loads(result.content) == {"number": "CA1", "seats": 3}


def test_model_seam_accepts_a_custom_model() -> None:
    class Echo(Model):
        name = "echo"

        async def request(self, messages: Any, tools: Any, settings: Any) -> ModelResponse:
            return ModelResponse(Message.assistant(messages[-1].content.upper()))

    result: RunResult = Agent(Echo()).run_sync("hello")
    assert result.output == "HELLO" and result.trace.model == "echo"


@pytest.mark.parametrize("mocked", [False, True])
def test_a_results_ran_says_whether_the_tools_code_ran_for_every_way_a_call_ends(
    mocked: bool,
) -> None:
    """Refused calls (unknown, unreadable, invalid, rejected) did not happen; the rest did."""
    ran: list[int] = []

    @tool(side_effects=True, requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount.

        Args:
            amount: In euros.
        """
        ran.append(amount)
        if amount < 0:
            raise ToolError("negative")
        return f"paid {amount}"

    def approver(request: ApprovalRequest) -> Approval:
        return Approval.reject("no") if request.arguments["amount"] == 13 else Approval.approve()

    calls = [
        call("refund", amount=1),  # no such tool
        ToolCall.from_json_arguments("pay", '{"amount": '),  # unreadable arguments
        call("pay", amount="many"),  # arguments that fail the schema
        call("pay", amount=13),  # rejected by the approver
        call("pay", amount=5),  # runs
        call("pay", amount=-1),  # runs and fails
        call("pay", amount=5),  # a side-effecting repeat: answered with the earlier result
    ]
    toolset = Toolset([pay], mode="mock", mocks={"pay": lambda amount: ran.append(amount) or "ok"})
    agent, _ = make(
        [[c.with_id(f"c{i}") for i, c in enumerate(calls)], "done"],
        tools=toolset if mocked else [pay],
        approver=approver,
        max_repeated_calls=None,
    )
    results = agent.run_sync("pay").trace.tool_results
    assert [r.ran for r in results] == [False, False, False, False, True, True, False]
    assert results[-1].error_type == "AlreadyRan"
    assert ran == [5, -1]
    assert all(r.error_type in NOT_RUN_ERRORS for r in results if not r.ran)
