"""Layer 3: a scripted chat model checks the agent's orchestration, deterministically.

It does not prove that a real model picks the right tool; it proves that ToolAgent binds the
tools, runs the call, and sends the result back with the right call id.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from examples.langchain_agent.agent import TOOLS, ToolAgent, build_agent
from examples.langchain_agent.tools import build_tools
from toolproof.errors import ToolCrashed
from toolproof.integrations.langchain import ScriptedChatModel, capture_trace
from toolproof.testing import (
    Fault,
    ToolMock,
    assert_grounded,
    assert_no_tool_errors,
    assert_tool_called,
    assert_tool_not_called,
    call,
)


def test_one_tool_round_sends_the_result_back_with_the_call_id() -> None:
    model = ScriptedChatModel([call("multiply_numbers", a=12, b=8), "12 times 8 is 96."])
    agent = ToolAgent(model, build_tools())

    result = agent.run("What is 12 times 8?")

    assert result.final_response.content == "12 times 8 is 96."
    first, second = model.requests
    assert first.tool_names == ["get_leave_balance", "multiply_numbers"]
    assert [type(m) for m in first.messages] == [HumanMessage]
    question, decision, tool_message = second.messages
    assert question.content == "What is 12 times 8?"
    assert decision.tool_calls[0]["name"] == "multiply_numbers"
    assert decision.tool_calls[0]["args"] == {"a": 12, "b": 8}
    assert isinstance(tool_message, ToolMessage)
    assert tool_message.content == "96.0"
    assert tool_message.tool_call_id == decision.tool_calls[0]["id"]
    assert model.remaining == 0


def test_no_tool_needed_means_one_model_call() -> None:
    model = ScriptedChatModel(["Hello! I multiply numbers and look up annual leave."])
    result = ToolAgent(model, build_tools()).run("Hello")
    assert result.tool_messages == []
    assert result.final_response is result.decision
    assert len(model.requests) == 1


def test_an_unknown_employee_becomes_an_error_tool_message() -> None:
    model = ScriptedChatModel(
        [call("get_leave_balance", employee_id="E999"), "Employee E999 was not found."]
    )
    result = ToolAgent(model, build_tools()).run("Leave of E999?")

    (message,) = result.tool_messages
    assert message.status == "error"
    assert message.name == "get_leave_balance"
    assert message.tool_call_id == result.decision.tool_calls[0]["id"]
    assert message.content == "employee not found"
    assert model.requests[1].last is message


def test_the_trace_of_a_plain_langchain_run_feeds_toolproof_assertions() -> None:
    model = ScriptedChatModel(
        [call("get_leave_balance", employee_id="e001"), "Employee E001 has 5 days left."]
    )
    with capture_trace() as captured:
        ToolAgent(model, build_tools()).run("How much leave does E001 have?")

    trace = captured.trace
    assert trace.input == "How much leave does E001 have?"
    assert trace.output == "Employee E001 has 5 days left."
    assert_tool_called(trace, "get_leave_balance", employee_id="e001")
    assert_tool_not_called(trace, "multiply_numbers")
    assert_no_tool_errors(trace)
    assert_grounded(trace)
    (result,) = trace.tool_results
    assert result.content == "5" and result.value == 5


def test_mock_mode_runs_the_mock_inside_the_langchain_agent(run_agent) -> None:
    result = run_agent(
        build_agent(_model()),
        "How much leave does E003 have?",
        script=[call("get_leave_balance", employee_id="E003"), "E003 has 12 days."],
        mode="mock",
    )
    assert_tool_called(result, "get_leave_balance", employee_id="E003")
    (tool_result,) = result.trace.tool_results
    assert tool_result.mocked and tool_result.value == 12
    assert result.trace.tool_mode == "mock"


def test_fixtures_and_faults_apply_to_langchain_tool_calls(run_agent) -> None:
    mock = ToolMock()
    mock.add("get_leave_balance", {"employee_id": "E004"}, returns=3)
    result = run_agent(
        build_agent(_model()),
        "Leave of E004, and 2 times 3?",
        script=[
            [call("get_leave_balance", employee_id="E004"), call("multiply_numbers", a=2, b=3)],
            "E004 has 3 days; 2 times 3 is 6.",
        ],
        mocks=[mock],
        faults=[Fault.raises("multiply_numbers", ValueError("multiplication is down"))],
    )
    leave, product = result.trace.tool_results
    assert (leave.status, leave.content) == ("ok", "3")
    assert (product.status, product.error_type) == ("error", "ValueError")
    assert product.content == "multiplication is down"
    mock.verify()


def test_an_undeclared_exception_stops_the_run_with_its_partial_trace(run_agent) -> None:
    with pytest.raises(ToolCrashed) as caught:
        run_agent(
            build_agent(_model()),
            "2 times 3?",
            script=[call("multiply_numbers", a=2, b=3), "never reached"],
            faults=[Fault.raises("multiply_numbers", RuntimeError("database gone"))],
        )
    trace = caught.value.trace
    assert trace is not None and trace.stop_reason == "error"
    assert trace.error is not None and trace.error.tool_name == "multiply_numbers"
    assert trace.tool_names == ["multiply_numbers"]


def test_a_script_calling_an_unbound_tool_fails_naming_it() -> None:
    model = ScriptedChatModel([call("get_weather", city="Paris")])
    agent = ToolAgent(model, build_tools())
    with pytest.raises(Exception, match=r"get_weather.*not bound.*get_leave_balance"):
        agent.run("Weather in Paris?")


def test_a_script_with_arguments_the_schema_rejects_fails_naming_them() -> None:
    model = ScriptedChatModel([call("multiply_numbers", a="twelve", b=8)])
    with pytest.raises(Exception, match=r"multiply_numbers\(a='twelve', b=8\).*a: 'twelve'"):
        ToolAgent(model, build_tools()).run("twelve times eight?")


def test_scripted_ai_messages_are_accepted() -> None:
    scripted = AIMessage(
        "", tool_calls=[{"name": "multiply_numbers", "args": {"a": 1, "b": 2}, "id": "call-1"}]
    )
    model = ScriptedChatModel([scripted, "1 times 2 is 2."])
    result = ToolAgent(model, build_tools()).run("1 times 2?")
    assert result.tool_messages[0].tool_call_id == "call-1"
    assert TOOLS[1].name == "multiply_numbers"


def _model():
    from toolproof.testing import ScriptedModel

    return ScriptedModel([], name="unused")
