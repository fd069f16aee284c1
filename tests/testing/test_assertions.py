"""Trace assertions: what they accept, and their failure messages, verbatim."""

from __future__ import annotations

import pytest

from toolproof import Agent, Toolset, tool
from toolproof.errors import AgentRunError, UserError
from toolproof.testing import (
    ANY,
    ScriptedModel,
    ToolMock,
    approx,
    assert_grounded,
    assert_no_tool_errors,
    assert_tool_called,
    assert_tool_not_called,
    assert_tool_order,
    call,
)
from toolproof.testing._assertions import format_tool_calls


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: First factor.
        b: Second factor.
    """
    return a * b


@tool(errors=(KeyError,))
def get_leave_balance(employee_id: str) -> int:
    """Look up remaining annual leave.

    Args:
        employee_id: Employee id such as E001.
    """
    return {"E001": 5}[employee_id]


@tool
def repeat(text: str, times: int) -> str:
    """Repeat a text.

    Args:
        text: The text.
        times: How often.
    """
    return text * times


TOOLS = [multiply_numbers, get_leave_balance, repeat]


def run(*script, tools=TOOLS, question="question"):
    return Agent(ScriptedModel(list(script)), tools, max_repeated_calls=None).run_sync(question)


@pytest.fixture(scope="module")
def result():
    return run(
        call("multiply_numbers", a=12, b=8),
        call("get_leave_balance", employee_id="E999"),
        call("get_leave_balance", employee_id="E001"),
        "12 x 8 = 96; E001 has 5 days; E999 does not exist.",
        question="12 x 8, and the leave of E999 and E001?",
    )


def test_passing_assertions(result):
    assert_tool_called(result, "multiply_numbers", a=12, b=8)
    assert_tool_called(result.trace, "multiply_numbers", a=approx(12.0), b=ANY)
    assert_tool_called(result, "get_leave_balance", times=2)
    assert_tool_called(result, "get_leave_balance", {"employee_id": "E001"}, times=1)
    assert_tool_called(result, "multiply_numbers", a=lambda v: v > 10)
    assert_tool_not_called(result, "repeat")
    assert_tool_not_called(result, "get_leave_balance", employee_id="E002")
    assert_tool_order(result, ["multiply_numbers", "get_leave_balance"])
    assert_tool_order(
        result, ["multiply_numbers", "get_leave_balance", "get_leave_balance"], exact=True
    )
    assert_grounded(result)


def test_tool_called_failure_shows_closest_call_and_all_calls(result):
    with pytest.raises(AssertionError) as info:
        assert_tool_called(result, "multiply_numbers", a=12, b=9)
    assert str(info.value) == (
        "expected a call to multiply_numbers(a=12, b=9), but none matched.\n"
        "Closest call: multiply_numbers(a=12, b=8)\n"
        "  ✗ b: expected 9, got 8\n"
        "Tool calls in this run (3):\n"
        "  1. multiply_numbers(a=12, b=8) -> ok: '96.0'\n"
        "  2. get_leave_balance(employee_id='E999') -> error KeyError: 'E999'\n"
        "  3. get_leave_balance(employee_id='E001') -> ok: '5'"
    )


def test_tool_called_times_and_missing_tool(result):
    with pytest.raises(AssertionError) as info:
        assert_tool_called(result, "get_leave_balance", times=1)
    assert str(info.value).splitlines()[0] == ("expected 1 call to get_leave_balance(...), got 2.")
    with pytest.raises(AssertionError) as info:
        assert_tool_called(result, "repeat", text="x")
    assert str(info.value).splitlines()[:2] == [
        "expected a call to repeat(text='x'), but none matched.",
        "Tool calls in this run (3):",
    ]


def test_a_parameter_named_times_goes_in_the_mapping():
    result = run(call("repeat", text="ab", times=3), "ababab")
    assert_tool_called(result, "repeat", {"times": 3}, text="ab")
    with pytest.raises(AssertionError, match=r"expected a call to repeat\(times=2\)"):
        assert_tool_called(result, "repeat", {"times": 2})


def test_tool_not_called_failure(result):
    with pytest.raises(AssertionError) as info:
        assert_tool_not_called(result, "get_leave_balance", employee_id="E999")
    assert str(info.value).splitlines()[0] == (
        "expected no call to get_leave_balance(employee_id='E999'), but the run made 1: "
        "get_leave_balance(employee_id='E999')."
    )


def test_tool_order_failures(result):
    with pytest.raises(AssertionError) as info:
        assert_tool_order(result, ["get_leave_balance", "multiply_numbers"])
    assert str(info.value).splitlines()[0] == (
        "expected the calls ['get_leave_balance', 'multiply_numbers'] in this order, got "
        "['multiply_numbers', 'get_leave_balance', 'get_leave_balance']; matched "
        "['get_leave_balance'] then found no 'multiply_numbers' after them."
    )
    with pytest.raises(AssertionError, match=r"^expected exactly the calls \['multiply_numbers'\]"):
        assert_tool_order(result, ["multiply_numbers"], exact=True)
    with pytest.raises(UserError, match="expects a list of tool names"):
        assert_tool_order(result, "multiply_numbers")


def test_no_tool_errors(result):
    with pytest.raises(AssertionError) as info:
        assert_no_tool_errors(result)
    assert str(info.value).splitlines()[:2] == [
        "1 tool call returned an error:",
        "  - get_leave_balance(employee_id='E999'): KeyError: 'E999'",
    ]
    assert_no_tool_errors(run(call("multiply_numbers", a=1, b=2), "2"))


def test_grounding_flags_an_invented_employee():
    invented = run(
        "Hello! I can multiply and add numbers, and look up leave, e.g. for employee E1001.",
        question="你好，请介绍一下自己",
    )
    with pytest.raises(AssertionError) as info:
        assert_grounded(invented)
    assert str(info.value) == (
        "the final answer mentions 'E1001', found in neither the input nor any tool result:\n"
        "  answer: 'Hello! I can multiply and add numbers, and look up leave, e.g. for employee "
        "E1001.'\n"
        "The run made no tool calls (stop_reason=final; final answer: 'Hello! I can multiply "
        "and add numbers, and look up leave, e.g. for employee E1001.')."
    )
    assert_grounded(invented, evidence=["known employees: E1001"])
    wrong_number = run(call("multiply_numbers", a=12, b=8), "12 x 8 = 98", question="12 x 8?")
    with pytest.raises(AssertionError, match="mentions '98'"):
        assert_grounded(wrong_number)


def test_helpers_accept_run_errors_and_reject_other_values():
    mock = ToolMock()
    agent = Agent(
        ScriptedModel([call("multiply_numbers", a=1, b=2), "x"]),
        Toolset(TOOLS, mode="mock", mocks=[mock]),
    )
    with pytest.raises(AgentRunError) as info:
        agent.run_sync("q")
    assert_tool_called(info.value, "multiply_numbers", a=1)
    assert format_tool_calls(info.value) == (
        "Tool calls in this run (1):\n"
        "  1. multiply_numbers(a=1, b=2) -> not run\n"
        "The run stopped: error (" + str(info.value) + ")."
    )
    with pytest.raises(AssertionError, match="the run has no final answer to check"):
        assert_grounded(info.value)
    with pytest.raises(UserError, match="expected a Trace, a RunResult or an AgentRunError"):
        assert_tool_called("not a trace", "x")
