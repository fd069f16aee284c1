"""The built-in calculator and the grounding check."""

from __future__ import annotations

import pytest

from toolproof import Agent, ToolError, calculator
from toolproof._calculator import evaluate
from toolproof._grounding import check_grounding, extract_claims, trace_evidence
from toolproof.testing import ScriptedModel, call


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("1 + 2 * 3", 7),
        ("(123 * 45) / 3", 1845.0),
        ("2 ^ 10", 1024),
        ("-3 // 2", -2),
        ("7 % 4", 3),
        ("sqrt(16) + abs(-2)", 6.0),
        ("max(1, 5, 3)", 5),
        ("round(pi, 2)", 3.14),
        ("12 × 8", 96),
    ],
)
def test_arithmetic(expression: str, value: float) -> None:
    assert evaluate(expression) == value


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("9**9**9", "the result is too large"),
        ("2**100000", "the result is too large"),
        ("10.0**400", "the result is too large"),
        ("1/0", "division by zero"),
        ("__import__('os').system('id')", "unsupported element"),
        ("(1).__class__", "unsupported element"),
        ("x + 1", "unsupported element 'x'"),
        ("1 +", "not a valid arithmetic expression"),
        ("", "the expression is empty"),
        ("1+" * 5000 + "1", "longer than 500 characters"),
        ("+".join(["1"] * 150), "more than 200 parts"),
        ("(-8) ** 0.5", "not a real number"),
    ],
)
@pytest.mark.timeout(30)  # they return in microseconds; a hang is caught, not waited for
def test_unsafe_or_huge_expressions_fail_fast(expression: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        evaluate(expression)


def test_calculator_is_a_tool_whose_errors_reach_the_model() -> None:
    agent = Agent(
        ScriptedModel([call("calculator", expression="9**9**9"), "too big"]), [calculator]
    )
    result = agent.run_sync("x").trace.tool_results[0]
    assert (result.status, result.error_type, result.content) == (
        "error",
        "ToolError",
        "Error (ToolError): the result is too large",
    )
    assert calculator.parameters["required"] == ["expression"]


def test_grounding_flags_invented_ids_and_numbers() -> None:
    result = check_grounding(
        "员工E1001的剩余年假为15天，E001有5天。", ["查询员工E001的剩余年假", "5"]
    )
    assert result.ungrounded == ["E1001", "15"] and not result.ok
    assert check_grounding("12乘以8等于96。", ["12乘以8是多少", "96.0"]).ok
    assert check_grounding(
        "Total: 1,250.5 USD for ord-123", ['{"price": 1250.5, "id": "ORD-123"}']
    ).ok


def test_small_numbers_are_checked_by_default_and_skipped_when_asked() -> None:
    # The old default skipped 0-10, so "3 flights" passed against anything; now the count
    # must come from somewhere (here: nowhere), unless small numbers are switched off.
    assert check_grounding("I found 3 flights.", ["flights: [...]"]).ungrounded == ["3"]
    assert check_grounding("I found 3 flights.", ["flights"], check_small_numbers=False).ok
    ids, numbers = extract_claims("v2.0 costs 3.5 and -4 and 1,000")
    assert ids == ["v2.0"] and numbers == ["3.5", "-4", "1,000"]


def test_trace_evidence_includes_input_results_and_prompt() -> None:
    from toolproof import tool

    @tool
    def lookup(employee_id: str) -> int:
        """Look up.

        Args:
            employee_id: Id.
        """
        return 5

    agent = Agent(
        ScriptedModel([call("lookup", employee_id="E001"), "E001 has 5 days, E1001 has 12."]),
        [lookup],
        system_prompt="Today is 2026-11-29.",
    )
    trace = agent.run_sync("E001?").trace
    evidence = trace_evidence(trace)
    assert evidence[0] == "E001?" and "5" in evidence and "Today is 2026-11-29." in evidence
    assert check_grounding(trace.output or "", evidence).ungrounded == ["E1001", "12"]
