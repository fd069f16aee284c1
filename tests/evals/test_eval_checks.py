"""Objective checks: each passes and fails on real agent runs, with a reason a person can use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from evalagents import TOOLS, Orders, build_agent

from toolproof import Message, Toolset
from toolproof.evals import CheckResult
from toolproof.evals._checks import EXPECT_KEYS, Check, SessionRecord, compile_expect
from toolproof.evals._yaml import Locator, Problems
from toolproof.models import ModelResponse, Usage
from toolproof.testing import ScriptedModel, call

TOOLS_BY_NAME = {t.name: t for t in TOOLS}


def compile_checks(expect: dict[str, Any]) -> list[Check]:
    problems = Problems(Locator(Path("t.yaml")))
    checks = compile_expect(expect, tools=TOOLS_BY_NAME, problems=problems, path=("expect",))
    assert not problems, problems.formatted()
    return checks


def problems_of(expect: dict[str, Any]) -> list[str]:
    problems = Problems(Locator(Path("t.yaml")))
    compile_expect(expect, tools=TOOLS_BY_NAME, problems=problems, path=("expect",))
    return [p.split(": ", 1)[1] for p in problems.formatted()]


def run(
    *script: Any, turns: tuple[str, ...] = ("question",), mocks: list[Any] | None = None
) -> SessionRecord:
    agent = build_agent(ScriptedModel(script), Toolset(TOOLS, mode="mock", mocks=mocks))
    session = agent.session()
    for text in turns:
        session.run_sync(text)
    return SessionRecord(session.traces, mocks or [])


def check(expect: dict[str, Any], record: SessionRecord) -> CheckResult:
    checks = compile_checks(expect)
    assert len(checks) == 1, [c.name for c in checks]
    return checks[0](record)


MULTIPLY = run(call("multiply_numbers", a=12, b=8), "12 x 8 = 96")
LEAVE = run(
    call("get_leave_balance", employee_id="E001"),
    "E001 has 5 days left.",
    turns=("How much leave does E001 have?",),
)


def test_tools_called_and_counts() -> None:
    assert (
        check({"tools_called": ["multiply_numbers"]}, MULTIPLY).reason
        == "called multiply_numbers x1"
    )
    result = check({"tools_called": ["multiply_numbers", "search_docs"]}, LEAVE)
    assert result.status == "fail"
    assert result.reason == (
        "multiply_numbers called 0 times, expected at least 1 time; search_docs called 0 times, "
        "expected at least 1 time (calls made: get_leave_balance(employee_id='E001'))"
    )
    twice = run([call("search_docs", query="a"), call("search_docs", query="b")], "found")
    assert check({"tools_called": {"search_docs": 2}}, twice).passed
    result = check({"tools_called": {"search_docs": {"max": 1}}}, twice)
    assert result.reason.startswith("search_docs called 2 times, expected between 0 and 1 times")
    assert check({"tools_called": {"search_docs": {"min": 1, "max": 3}}}, twice).passed


def test_tools_not_called() -> None:
    result = check({"tools_not_called": ["get_leave_balance", "search_docs"]}, LEAVE)
    assert (result.status, result.reason) == (
        "fail",
        "expected no calls to get_leave_balance, but the agent called "
        "get_leave_balance(employee_id='E001')",
    )
    assert check({"tools_not_called": "search_docs"}, LEAVE).passed


def test_order_over_tools_called() -> None:
    record = run(call("search_docs", query="x"), call("multiply_numbers", a=1, b=2), "done")
    in_order = {"tools_called": ["search_docs", "multiply_numbers"], "order": "in_order"}
    assert all(c(record).passed for c in compile_checks(in_order))
    reversed_order = {"tools_called": ["multiply_numbers", "search_docs"], "order": "strict"}
    order = compile_checks(reversed_order)[1](record)
    assert order.check == "order" and order.status == "fail"
    assert order.reason.startswith("expected calls [multiply_numbers, search_docs] (strict): ")
    assert "(calls made: search_docs(query='x'), multiply_numbers(a=1, b=2))" in order.reason


def test_calls_with_arguments_and_modes() -> None:
    record = run(call("search_docs", query="Leave policy", top_k=50), "done")
    expect = {
        "calls": [
            {
                "name": "search_docs",
                "arguments": {"query": {"text": "leave policy"}, "top_k": {"max": 20}},
            }
        ]
    }
    result = check(expect, record)
    assert result.status == "fail"
    assert "argument 'top_k': expected a number <= 20, got 50" in result.reason
    exact = {
        "calls": [
            {"name": "search_docs", "arguments": {"query": {"regex": "^Leave"}}, "mode": "exact"}
        ]
    }
    assert "unexpected argument 'top_k'" in check(exact, record).reason
    assert check({"calls": ["search_docs"], "order": "strict"}, record).passed


def test_args_shorthand_with_matchers() -> None:
    assert check(
        {"args": {"multiply_numbers": {"a": 12, "b": {"one_of": [8, 9]}}}}, MULTIPLY
    ).passed
    result = check({"args": {"multiply_numbers": {"a": 12, "b": 9}}}, MULTIPLY)
    assert result.reason == (
        "no call matched multiply_numbers(a=12, b=9, ...): multiply_numbers(a=12, b=8): "
        "argument 'b': expected 9, got 8"
    )
    result = check({"args": {"search_docs": {"query": {"type": "string"}}}}, MULTIPLY)
    assert result.reason.startswith(
        "expected a call search_docs(query=type(string), ...), but search_docs was not called"
    )
    both = run([call("multiply_numbers", a=1, b=2), call("multiply_numbers", a=3, b=4)], "2 and 12")
    several = {"args": {"multiply_numbers": [{"a": 1}, {"a": 3, "b": {"range": [4, 5]}}]}}
    assert check(several, both).passed
    exact = {"args": {"multiply_numbers": {"a": 12}}, "args_mode": "exact"}
    assert check(exact, MULTIPLY).reason == (
        "no call matched multiply_numbers(a=12): multiply_numbers(a=12, b=8): unexpected "
        "argument 'b' = 8 (mode 'exact' allows only: a)"
    )


def test_required_and_extra_arguments() -> None:
    record = run(call("search_docs", top_k=3, color="red"), "nothing found")
    required = check({"required_args": {"search_docs": ["query"]}}, record)
    assert required.reason == (
        "required arguments missing: search_docs(top_k=3, color='red') lacks query"
    )
    extra = check({"forbid_extra_args": True}, record)
    assert extra.reason == (
        "extra arguments: search_docs(top_k=3, color='red') passes 'color', not in the schema of "
        "search_docs (allowed: query, top_k)"
    )
    assert check({"forbid_extra_args": ["multiply_numbers"]}, record).passed
    assert check({"required_args": {"multiply_numbers": ["a"]}}, record).reason == (
        "no calls of multiply_numbers to check"
    )


def test_final_answer_checks() -> None:
    assert check({"final_contains": ["96", "12"]}, MULTIPLY).passed
    result = check({"final_contains": "97"}, MULTIPLY)
    assert result.reason == "expected the final answer to contain '97'; it was '12 x 8 = 96'"
    result = check({"final_not_contains": ["96"]}, MULTIPLY)
    assert result.reason == "expected the final answer not to contain '96'; it was '12 x 8 = 96'"
    assert check({"final_regex": r"=\s*96$"}, MULTIPLY).passed
    assert check({"final_regex": ["^12", "x"]}, MULTIPLY).passed
    assert check({"final_equals": {"text": "12 X 8 = 96!"}}, MULTIPLY).passed
    result = check({"final_equals": "96"}, MULTIPLY)
    assert result.status == "fail" and result.reason.startswith("final answer: expected")
    schema = {
        "type": "object",
        "properties": {"days": {"type": "integer"}},
        "required": ["days"],
    }
    good = run('```json\n{"days": 5}\n```')
    assert check({"final_json_schema": schema}, good).passed
    bad = run('{"days": "five"}')
    assert check({"final_json_schema": schema}, bad).reason == (
        "the final answer does not fit the schema: at days: 'five' is not of type 'integer'"
    )
    assert check({"final_json_schema": schema}, MULTIPLY).reason.startswith(
        "the final answer is not JSON"
    )


def test_grounding_catches_invented_ids() -> None:
    invented = run(
        call("get_leave_balance", employee_id="E001"),
        "E1001 has 5 days left.",
        turns=("How much leave does E001 have?",),
    )
    result = check({"grounded": True}, invented)
    assert result.reason == (
        "the final answer states 'E1001', found in no input or tool result (invented?): "
        "'E1001 has 5 days left.'"
    )
    # Small numbers are checked by default now (the 5 comes from the tool).
    assert check({"grounded": True}, LEAVE).reason == (
        "every number and id in the answer is grounded (E001, 5)"
    )
    assert check({"grounded": {"check_small_numbers": False}}, LEAVE).reason == (
        "every number and id in the answer is grounded (E001)"
    )
    seven = run(
        call("get_leave_balance", employee_id="E001"),
        "E001 has 7 days left.",
        turns=("How much leave does E001 have?",),
    )
    assert check({"grounded": True}, seven).reason == (
        "the final answer states '7', found in no input or tool result (invented?): "
        "'E001 has 7 days left.'"
    )


def test_tool_errors_with_an_allowed_list() -> None:
    record = run(call("get_leave_balance", employee_id="E999"), "E999 not found.")
    result = check({"no_tool_errors": True}, record)
    assert (result.status, result.reason) == (
        "fail",
        "tool errors: get_leave_balance(employee_id='E999') -> KeyError: 'E999'",
    )
    assert check({"no_tool_errors": {"allow": ["get_leave_balance"]}}, record).passed
    assert check({"no_tool_errors": {"allow": ["KeyError"]}}, record).passed


def test_stop_reason_and_limits() -> None:
    assert check({"stop_reason": "final"}, MULTIPLY).passed
    looping = run(*[call("search_docs", query=str(i)) for i in range(12)])
    result = check({"stop_reason": ["final"]}, looping)
    assert result.reason.startswith(
        "expected the run to stop with final, it stopped with max_steps"
    )
    assert check({"max_steps": 2}, MULTIPLY).passed
    assert check({"max_steps": 1}, MULTIPLY).reason == "model calls was 2, expected at most 1"
    assert check({"max_tool_calls": 0}, MULTIPLY).reason == "tool calls was 1, expected at most 0"
    tokens = MULTIPLY.usage.total_tokens
    assert check({"max_tokens": tokens}, MULTIPLY).passed
    assert check({"max_tokens": 1}, MULTIPLY).reason == f"tokens was {tokens}, expected at most 1"
    assert check({"max_latency_s": 60}, MULTIPLY).passed
    unknown = check({"max_cost": 0.01}, MULTIPLY)
    assert (unknown.status, unknown.reason) == (
        "skip",
        "cost (USD) unknown (no price for model 'scripted'?)",
    )
    priced = build_agent(
        ScriptedModel(
            [ModelResponse(Message.assistant("hi"), Usage(1_000_000, 0, requests=1))],
            name="gpt-4o-mini",
        )
    )
    record = SessionRecord([priced.run_sync("q").trace])
    assert check({"max_cost": 0.10}, record).reason == "cost (USD) was 0.15, expected at most 0.1"


def test_final_state_of_stateful_mocks() -> None:
    orders = Orders()
    record = run(call("cancel_order", order_id="A1"), "Cancelled.", mocks=[orders])
    expect = {"state": {"orders.A1.status": "cancelled", "cancelled": ["A1"]}}
    assert check(expect, record).passed
    result = check({"state": {"orders.A1.status": "paid", "refunds": []}}, record)
    assert result.reason == (
        'final state: orders.A1.status: expected "paid", got "cancelled"; refunds: missing from '
        "the state (keys: orders, cancelled)"
    )
    assert check({"state": {"cancelled": {"type": "array"}}}, record).passed
    assert check({"state": {"cancelled.0": "A1"}}, record).passed
    assert check({"state": {"x": 1}}, MULTIPLY).reason.startswith(
        "expected stateful mocks to check, but the trial has none"
    )


def test_per_turn_checks_read_their_own_turn() -> None:
    record = run(
        call("get_leave_balance", employee_id="E001"),
        "5 days.",
        call("get_leave_balance", employee_id="E003"),
        "12 days.",
        turns=("E001?", "And E003?"),
    )
    problems = Problems(Locator(Path("t.yaml")))
    [second] = compile_expect(
        {"final_contains": "12"}, tools=TOOLS_BY_NAME, problems=problems, path=("t",), turn=2
    )
    assert second(record).passed and second(record).label == "final_contains@turn2"
    [third] = compile_expect(
        {"final_contains": "x"}, tools=TOOLS_BY_NAME, problems=problems, path=("t",), turn=3
    )
    assert third(record).reason == "turn 3 did not run (the session stopped after 2 turns)"
    whole = check({"tools_called": {"get_leave_balance": 2}}, record)
    assert whole.passed and record.output == "12 days."


@pytest.mark.parametrize(
    ("expect", "problem"),
    [
        (
            {"tools_called": "multiply_numbers", "order": "strict"},
            "order needs the expected sequence: give 'tools_called' as a list, or 'calls'",
        ),
        (
            {"required_args": {"search_docs": ["q"]}},
            "search_docs has no argument 'q'; its arguments are: query, top_k",
        ),
        (
            {"calls": [{"name": "search_docs", "args": {}}]},
            "unknown key 'args' (did you mean 'arguments'?); allowed: name, arguments, mode",
        ),
        (
            {"calls": [{"name": "search_docs", "arguments": {}, "mode": "loose"}]},
            "argument mode must be one of exact, subset, superset, ignore, got 'loose'",
        ),
        (
            {"no_tool_errors": {"except": ["x"]}},
            "expected true, or {allow: [tool names or error types]}",
        ),
        (
            {"stop_reason": "done"},
            "unknown stop reason 'done'; allowed: final, max_steps, budget, repeated_call, "
            "cancelled, error",
        ),
        ({"max_steps": 0}, "expected a positive integer (model calls), got 0"),
        (
            {"state": {"a": {"range": "x"}}},
            'expect.state.a.range: must be [low, high] (null for an open end), got "x"',
        ),
        (
            {"tools_called": {"search_docs": {"min": 3, "max": 1}}},
            "expected a call count (an integer) or {min: N, max: M} with 0 <= min <= max, "
            "got {'min': 3, 'max': 1}",
        ),
        (
            {"final_json_schema": {"type": "nope"}},
            "invalid JSON Schema: 'nope' is not valid under any of the given schemas",
        ),
        (
            {"grounded": {"strict": True}},
            "unknown option 'strict'; allowed: check_small_numbers, include_system_prompt",
        ),
        ({"args_mode": "exact"}, "args_mode applies to 'args', which is not set"),
        (
            {"tool_called": []},
            "unknown key 'tool_called' (did you mean 'tools_called'?); allowed: "
            + ", ".join(EXPECT_KEYS),
        ),
    ],
)
def test_bad_specs_are_problems(expect: dict[str, Any], problem: str) -> None:
    assert problem in problems_of(expect)[0]
