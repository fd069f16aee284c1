"""No input keeps a run busy: calculator and grounding work is bounded, runs have a time limit."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _work import growth
from toolproof import Agent, Budget, Memory, Message, _calculator, tool
from toolproof._calculator import calculator, evaluate
from toolproof._grounding import check_grounding, extract_claims
from toolproof._run import DEFAULT_MAX_SECONDS
from toolproof.errors import ToolError, UserError
from toolproof.events import Event, RunFinished
from toolproof.testing import FunctionModel, RequestInfo, ScriptedModel, call

# -- the calculator ---------------------------------------------------------------------------

EXPENSIVE = [
    "round(1, -10**7)",  # took 9-27 s
    "round(1, 10**7)",
    "round(2.5, -10**9)",
    "round(10**1000, -10**1000)",
    "10**10**10",
    "2**9999999",
    "9**9**9**9",
    "(10**1000)**(10**1000)",
    "(10**1200)*(10**1200)",
    "(10**1200)*(10**1200)*(10**1200)",
    "2**4095*2**4095",
    "(2**4095)//(1/10**300)",
    "(10**1000)/3",
    "sqrt(10**1200)",
    "exp(10**1000)",
    "1e999",
    "1.0000001**(10**1000)",
    "(-1)**(10**1000)+1**(10**1000)",
    "(" * 249 + "1" + ")" * 249,
    "-" * 499 + "1",
    "1" * 500,
    "+".join(["9" * 20] * 24),
    "max(" + ",".join(["10**1200"] * 60) + ")",
    "'x'*10**10",
    "1<<10**9",
    "pow(2, 10**9, 7)",
    "factorial(10**6)",
    "int('1'*5000)",
]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("expression", EXPENSIVE)
def test_expensive_expressions_are_refused_or_cheap(expression: str) -> None:
    outcome = _outcome(expression)  # every operation it ran had operands of bounded size
    if isinstance(outcome, ToolError):
        assert str(outcome)
    else:
        assert abs(outcome) < 10**1300


def _outcome(expression: str) -> int | float | ToolError:
    """The result or refusal; fails if an operation ran on operands whose cost is unbounded.

    Each arithmetic operation and function the calculator runs is wrapped to record its
    operands: the work of one operation grows with the digits of its integers (and with
    ``round``'s digits), so bounded operands and a bounded count of operations bound the work,
    however busy the machine.
    """
    ran: list[tuple[str, tuple[Any, ...]]] = []

    def counted(name: str, operation: Callable[..., Any]) -> Callable[..., Any]:
        def run(*arguments: Any) -> Any:
            ran.append((name, arguments))
            return operation(*arguments)

        return run

    binary = {op: counted(op.__name__, f) for op, f in _calculator._BINARY.items()}
    functions = {name: counted(name, f) for name, f in _calculator._FUNCTIONS.items()}
    with (
        mock.patch.dict(_calculator._BINARY, binary),
        mock.patch.dict(_calculator._FUNCTIONS, functions),
    ):
        try:
            outcome: int | float | ToolError = evaluate(expression)
        except ToolError as exc:
            outcome = exc
    assert len(ran) <= _calculator.MAX_NODES
    for name, arguments in ran:
        assert _bounded(name, arguments), (expression, name, [_size(a) for a in arguments])
    return outcome


def _size(value: Any) -> int:
    return value.bit_length() if isinstance(value, int) else 64


def _bounded(name: str, arguments: tuple[Any, ...]) -> bool:
    """Whether one operation's cost is bounded: integers of at most 4,096 bits, no more."""
    if any(_size(a) > _calculator.MAX_INT_BITS for a in arguments):
        return False
    if name == "Mult" and all(isinstance(a, int) for a in arguments):
        return sum(map(_size, arguments)) <= _calculator.MAX_INT_BITS + 1
    if name == "Pow":
        base, exponent = arguments
        if abs(base) <= 1:
            return True
        if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
            return (base.bit_length() - 1) * exponent <= _calculator.MAX_INT_BITS
        return abs(exponent) <= _calculator.MAX_EXPONENT
    if name == "round" and len(arguments) == 2 and isinstance(arguments[1], int):
        return abs(arguments[1]) <= _calculator.MAX_ROUND_DIGITS  # (other digits: TypeError)
    return True


def test_round_names_the_digits_it_accepts() -> None:
    with pytest.raises(ToolError, match=r"round\(x, n\) takes n between -1300 and 1300"):
        evaluate("round(1, -10**7)")
    with pytest.raises(ToolError, match="got a number of about 1000 digits"):
        evaluate("round(1, 10**1000)")
    assert evaluate("round(123456, -3)") == 123000
    assert evaluate("round(10**1000, -999)") == 10**1000


def test_powers_within_the_size_limit_are_computed() -> None:
    assert evaluate("2**3000") == 2**3000
    assert evaluate("2**4095") == 2**4095
    with pytest.raises(ToolError, match="the result is too large"):
        evaluate("2**4096")


def test_the_model_sees_the_refusal_and_the_run_goes_on() -> None:
    model = ScriptedModel([call("calculator", expression="round(1, -10**7)"), "ok"])
    result = Agent(model, [calculator]).run_sync("x")
    assert result.output == "ok"
    (tool_result,) = result.trace.tool_results
    assert tool_result.status == "error" and "round(x, n)" in tool_result.content


_ATOMS = ["10**1000", "2", "-3", "1e300", "0.5", "pi", "e", "(10**1200)", "4095", "-(2**4095)"]
_FUNCTIONS = ["round", "abs", "min", "max", "sqrt", "floor", "ceil", "log", "exp", "sin"]


def _expressions() -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        binary = st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "//", "%", "**"]), inner)
        unary = st.tuples(st.sampled_from(_FUNCTIONS), inner, st.none() | inner)
        return st.one_of(
            binary.map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
            unary.map(lambda t: f"{t[0]}({t[1]}{'' if t[2] is None else ',' + t[2]})"),
        )

    return st.recursive(st.sampled_from(_ATOMS), extend, max_leaves=12)


@pytest.mark.timeout(300)
@settings(max_examples=200)
@given(_expressions())
def test_generated_expressions_end_fast_with_a_number_or_a_tool_error(expression: str) -> None:
    outcome = _outcome(expression)  # with operands of bounded size in every operation
    assert isinstance(outcome, (int, float, ToolError))


@pytest.mark.timeout(300)
@settings(max_examples=150)
@given(st.text(alphabet=st.sampled_from("0123456789.e+-*/%()^,x _roundpw"), max_size=600))
def test_any_text_ends_fast_with_a_number_or_a_tool_error(expression: str) -> None:
    outcome = _outcome(expression)  # with operands of bounded size in every operation
    assert isinstance(outcome, (int, float, ToolError))


# -- the run's time limit ---------------------------------------------------------------------


@tool
async def wait_forever(reason: str) -> str:
    """Never answers.

    Args:
        reason: Why.
    """
    await asyncio.Event().wait()
    return reason


async def hung_model(messages: list[Message], info: RequestInfo) -> str:
    await asyncio.Event().wait()
    return "never"


def test_every_run_has_a_finite_time_limit_by_default() -> None:
    assert DEFAULT_MAX_SECONDS == 600
    assert Budget().max_seconds == DEFAULT_MAX_SECONDS
    assert Budget(max_tokens=10).max_seconds == DEFAULT_MAX_SECONDS
    assert Agent(ScriptedModel(["x"])).budget.max_seconds == DEFAULT_MAX_SECONDS


@pytest.mark.timeout(60)
def test_a_hung_async_tool_ends_the_run_by_the_time_limit_with_its_trace() -> None:
    finished: list[Event] = []
    model = ScriptedModel([call("wait_forever", reason="r"), "never reached"])
    agent = Agent(model, [wait_forever], budget=Budget(max_seconds=0.3), on_event=finished.append)
    result = agent.run_sync("x")  # the tool never answers: only the limit ends the run
    assert result.stop_reason == "budget" and result.output is None
    assert result.stop_detail == "time limit reached (0.3 s) while running wait_forever(reason='r')"
    assert [c.name for c in result.trace.tool_calls] == ["wait_forever"]
    assert result.trace.steps[0].tool_results == []
    assert any(isinstance(e, RunFinished) and e.trace is result.trace for e in finished)


def test_parallel_calls_that_finished_stay_in_the_trace() -> None:
    @tool
    async def quick(x: int) -> int:
        """Answer at once.

        Args:
            x: The value.
        """
        return x

    model = ScriptedModel(
        [[call("quick", x=1), call("wait_forever", reason="r"), call("quick", x=2)]]
    )
    agent = Agent(model, [quick, wait_forever], budget=Budget(max_seconds=0.3))
    result = agent.run_sync("x")
    assert result.stop_reason == "budget"
    assert "while running quick(x=1), wait_forever(reason='r'), quick(x=2)" in (
        result.stop_detail or ""
    )
    assert [r.content for r in result.trace.steps[0].tool_results] == ["1", "2"]


@pytest.mark.timeout(60)
def test_a_hung_model_ends_the_run_by_the_time_limit() -> None:
    agent = Agent(FunctionModel(hung_model), budget=Budget(max_seconds=0.3))
    result = agent.run_sync("x")  # the model never answers: only the limit ends the run
    assert (result.stop_reason, result.stop_detail) == ("budget", "time limit reached (0.3 s)")
    assert result.trace.duration_ms >= 250 and result.trace.stop_reason == "budget"


def test_the_limit_counts_real_time_across_steps() -> None:
    @tool
    async def nap(seconds: float) -> str:
        """Sleep.

        Args:
            seconds: How long.
        """
        await asyncio.sleep(seconds)
        return "rested"

    # Each step fits in the limit; together they do not.
    model = ScriptedModel([call("nap", seconds=0.15 + i / 1000) for i in range(20)])
    result = Agent(model, [nap], budget=Budget(max_seconds=0.5), max_steps=20).run_sync("x")
    assert result.stop_reason == "budget"
    assert 1 < len(result.trace.steps) < 10
    assert result.trace.tool_results[0].content == "rested"


def test_a_hung_summarizer_is_stopped_by_the_time_limit() -> None:
    memory = Memory(max_tokens=60, summarizer=FunctionModel(hung_model))
    history = [m for i in range(20) for m in (Message.user(f"q{i} " * 30), Message.assistant("a"))]
    agent = Agent(ScriptedModel(["x"]), memory=memory, budget=Budget(max_seconds=0.3))
    result = agent.run_sync("now", history=history)
    assert result.stop_reason == "budget"
    assert result.stop_detail == "time limit reached (0.3 s) while preparing memory"


def test_the_limit_is_set_per_run_and_none_opts_out() -> None:
    agent = Agent(FunctionModel(hung_model))  # the agent keeps the 600 s default
    result = agent.run_sync("x", budget=Budget(max_seconds=0.2))
    assert result.stop_detail == "time limit reached (0.2 s)"

    async def slowish(messages: list[Message], info: RequestInfo) -> str:
        await asyncio.sleep(0.3)
        return "done"

    unlimited = Agent(FunctionModel(slowish), budget=Budget(max_seconds=None))
    assert unlimited.run_sync("x").output == "done"
    limited = Agent(FunctionModel(slowish), budget=Budget(max_seconds=0.05))
    assert limited.run_sync("x", budget=Budget(max_seconds=None)).output == "done"
    session = limited.session()
    assert session.run_sync("x", budget=Budget(max_seconds=5)).output == "done"


@pytest.mark.parametrize("seconds", [0, -1, float("nan")])
def test_a_time_limit_must_be_positive(seconds: float) -> None:
    with pytest.raises(UserError, match=r"Budget\(max_seconds=...\) must be a positive number"):
        Budget(max_seconds=seconds)


# -- grounding checks read untrusted text (answers, tool results) ------------------------------

_OLD_ID = re.compile(
    r"(?<![\w])(?=[\w./-]*[A-Za-z])(?=[\w./-]*\d)[A-Za-z0-9][\w./-]*[A-Za-z0-9](?![\w])", re.ASCII
)


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from("aZ19_.-/ ,é员\nth"), max_size=30))
def test_ids_are_found_as_the_earlier_pattern_found_them(text: str) -> None:
    # Except ordinals and number-word compounds (10th, 24-hour), which are numbers now.
    numeric = re.compile(r"\d+(?:\.\d+)?(?:st|nd|rd|th|(?:-[a-z]{3,})+)", re.ASCII)
    ids, numbers = extract_claims(text, check_small_numbers=True)
    assert ids == [m.group(0) for m in _OLD_ID.finditer(text) if not numeric.fullmatch(m.group(0))]
    masked = _OLD_ID.sub(" ", text)
    assert all(n in masked or numeric.fullmatch(n) for n in numbers)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("unit", ["a-", "1-", "a.", "a1/", "ab_", "9,999,"])
def test_grounding_is_linear_in_the_text(unit: str) -> None:
    def check(text: str) -> None:
        check_grounding(text, [text, "E1001 and 12"])

    # "a-" * 16,000 took 9 s with the earlier pattern. Ten times the text may take at most
    # 40 times the CPU time (quadratic work takes 100 times).
    ratio = growth(check, unit * 5_000, unit * 50_000)
    assert ratio < 40, ratio
