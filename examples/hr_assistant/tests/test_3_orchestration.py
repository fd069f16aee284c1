"""Layer 3: a scripted model checks our orchestration, deterministically.

The scripted model does not prove that a real model picks the right tool; it proves that
the agent offers the tools, runs the call, and sends the result back with the right id.
"""

from __future__ import annotations

from examples.hr_assistant.agent import SYSTEM_PROMPT, TOOLS, build_agent
from toolproof import Toolset
from toolproof.testing import (
    Fault,
    StatefulMock,
    assert_grounded,
    assert_no_tool_errors,
    assert_tool_called,
    assert_tool_not_called,
    call,
)


def test_tool_loop_sends_the_result_back_with_the_call_id(scripted_model, run_agent):
    model = scripted_model([call("multiply_numbers", a=12, b=8), "12 times 8 is 96."])
    result = run_agent(build_agent(model), "What is 12 times 8?")

    assert result.output == "12 times 8 is 96."
    assert_tool_called(result, "multiply_numbers", a=12, b=8)
    assert_no_tool_errors(result)
    assert_grounded(result)
    assert len(model.requests) == 2
    first, second = model.requests
    # The tools were offered to the model, and the prompt was sent.
    assert first.tool_names == [t.name for t in TOOLS]
    assert [m.role for m in first.messages] == ["system", "user"]
    assert first.messages[0].content == SYSTEM_PROMPT
    # The second request: question, the assistant's call, the tool result with the same id.
    question, decision, tool_message = second.messages[1:]
    assert question.content == "What is 12 times 8?"
    assert decision.tool_calls[0].name == "multiply_numbers"
    assert decision.tool_calls[0].arguments == {"a": 12, "b": 8}
    assert tool_message.role == "tool"
    assert tool_message.content == "96.0"
    assert tool_message.tool_call_id == decision.tool_calls[0].id == "call_1"
    assert tool_message.status == "ok"


def test_unknown_employee_becomes_an_error_result_not_a_crash(scripted_model, run_agent):
    model = scripted_model(
        [
            call("get_leave_balance", employee_id="E999"),
            "There is no employee E999 in the HR system; please check the employee id.",
        ]
    )
    result = run_agent(build_agent(model), "How much annual leave does employee E999 have?")

    assert result.stop_reason == "final"
    tool_message = model.requests[1].messages[-1]
    assert tool_message.status == "error"
    assert tool_message.name == "get_leave_balance"
    assert tool_message.tool_call_id == model.requests[1].messages[-2].tool_calls[0].id
    assert "employee not found" in (tool_message.content or "")
    assert_grounded(result)


def test_greeting_calls_no_tool_and_asks_the_model_once(scripted_model, run_agent):
    model = scripted_model(
        ["Hello! I am the HR assistant: I can multiply numbers and look up annual leave."]
    )
    result = run_agent(build_agent(model), "Hello, what can you do?")

    assert len(model.requests) == 1
    assert result.trace.tool_calls == []
    assert_tool_not_called(result, "multiply_numbers")
    assert_grounded(result)


def test_leave_lookup_answers_from_fixtures(scripted_model, tool_mock, run_agent):
    # The HR system is mocked by fixtures: no real lookup, and every fixture must be used.
    tool_mock.add("get_leave_balance", {"employee_id": "E001"}, returns=5)
    tool_mock.add("get_leave_balance", {"employee_id": "E002"}, returns=0)
    model = scripted_model(
        [
            [
                call("get_leave_balance", employee_id="E001"),
                call("get_leave_balance", employee_id="E002"),
            ],
            "E001 has 5 days left; E002 has no annual leave left (0 days).",
        ]
    )
    result = run_agent(
        build_agent(model),
        "How many days of annual leave do E001 and E002 each have?",
        mocks=[tool_mock],
    )
    assert [r.value for r in result.trace.tool_results] == [5, 0]
    assert all(r.mocked for r in result.trace.tool_results)
    assert tool_mock.count("get_leave_balance") == 2
    assert_grounded(result)


class LeaveLedger(StatefulMock):
    """A stateful HR system: the same lookup answers differently after a booking."""

    initial_state = {"balances": {"E001": 5}}

    @StatefulMock.handles("get_leave_balance")
    def balance(self, employee_id: str) -> int:
        return int(self.state["balances"][employee_id.strip().upper()])


def test_hr_system_outage_degrades_gracefully(scripted_model, run_agent):
    ledger = LeaveLedger()
    model = scripted_model(
        [
            call("get_leave_balance", employee_id="E001"),
            call("get_leave_balance", employee_id="E001"),
            "The first lookup failed (the HR system did not answer); "
            "on retry, E001 has 5 days of annual leave left.",
        ]
    )
    result = run_agent(
        build_agent(model, Toolset(TOOLS, mode="mock")),
        "How many days of annual leave does employee E001 have left?",
        mocks=[ledger],
        faults=[Fault.raises("get_leave_balance", KeyError("HR system unavailable"), on_call=1)],
    )
    first, second = result.trace.tool_results
    assert (first.status, first.content) == ("error", "Error (KeyError): HR system unavailable")
    assert (second.status, second.value) == ("ok", 5)
    assert result.stop_reason == "final"
    assert "failed" in (result.output or "")
    assert ledger.count("get_leave_balance") == 1
