"""Assertions over a run's trace, with failure messages that show the run's tool calls.

Each helper takes a ``Trace``, a ``RunResult`` or an ``AgentRunError`` (its partial trace),
and hides its own frames from pytest tracebacks (``__tracebackhide__``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolproof._matching._objects import compare, format_call
from toolproof._messages import error_message
from toolproof._text import clip
from toolproof._trace import Trace
from toolproof.errors import UserError

if TYPE_CHECKING:
    from toolproof._agent import RunResult
    from toolproof.errors import AgentRunError

__all__ = [
    "assert_grounded",
    "assert_no_tool_errors",
    "assert_tool_called",
    "assert_tool_not_called",
    "assert_tool_order",
    "format_tool_calls",
]

TraceLike = Any  # Trace | RunResult | AgentRunError


def _trace(value: Trace | RunResult | AgentRunError) -> Trace:
    if isinstance(value, Trace):
        return value
    trace = getattr(value, "trace", None)
    if isinstance(trace, Trace):
        return trace
    raise UserError(
        f"expected a Trace, a RunResult or an AgentRunError with a trace, got {value!r}"
    )


def format_tool_calls(trace: Trace | RunResult | AgentRunError) -> str:
    """The run's tool calls, one per line, each with its outcome.

    Example output::

        Tool calls in this run (2):
          1. multiply_numbers(a=12, b=8) -> ok: 96.0
          2. get_leave_balance(employee_id='E999') -> error KeyError: employee not found
    """
    t = _trace(trace)
    pairs = list(t.calls_and_results())
    if not pairs:
        answer = f"; final answer: {_clip(t.output)}" if t.output is not None else ""
        return f"The run made no tool calls (stop_reason={t.stop_reason}{answer})."
    lines = [f"Tool calls in this run ({len(pairs)}):"]
    for number, (call, result) in enumerate(pairs, 1):
        if result is None:
            outcome = "not run"
        elif result.ok:
            outcome = f"ok: {_clip(result.content)}"
        else:
            outcome = f"error {result.error_type}: {_clip(error_message(result))}"
        lines.append(f"  {number}. {call.signature()} -> {outcome}")
    if t.stop_reason != "final":
        lines.append(f"The run stopped: {t.stop_reason} ({t.stop_detail or 'no detail'}).")
    return "\n".join(lines)


def _expected(arguments: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(arguments or {})
    merged.update(kwargs)
    return merged


def _mismatches(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    reasons = []
    for name, want in expected.items():
        if name not in actual:
            reasons.append(f"{name}: not passed")
            continue
        reason = compare(want, actual[name])
        if reason is not None:
            reasons.append(f"{name}: {reason}")
    return reasons


def assert_tool_called(
    trace: Trace | RunResult | AgentRunError,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    /,
    *,
    times: int | None = None,
    **kwargs: Any,
) -> None:
    """Assert that the run called ``name`` with arguments matching those given.

    Only the arguments you give are compared (others may have any value); values may be
    matchers (``ANY``, ``approx(...)``, a type, a predicate). Pass arguments as a dict when a
    tool parameter is named ``times``.

    Args:
        trace: The run (``Trace``, ``RunResult`` or ``AgentRunError``).
        name: The tool name.
        arguments: Expected arguments, as a mapping.
        times: Exactly how many matching calls there must be (default: at least one).
        **kwargs: Expected arguments, as keywords.

    Raises:
        AssertionError: No (or not ``times``) matching call; the message lists every call.

    Example:
        ```python
        assert_tool_called(result, "multiply_numbers", a=12, b=8)
        ```
    """
    __tracebackhide__ = True
    t = _trace(trace)
    expected = _expected(arguments, kwargs)
    calls = [c for c in t.tool_calls if c.name == name]
    matching = [c for c in calls if not _mismatches(expected, c.arguments)]
    wanted = format_call(name, expected) if expected else f"{name}(...)"
    if times is None and matching:
        return
    if times is not None and len(matching) == times:
        return
    if times is None:
        head = f"expected a call to {wanted}, but none matched."
    else:
        head = f"expected {times} call{'s' if times != 1 else ''} to {wanted}, got {len(matching)}."
    lines = [head]
    if calls and not matching:
        closest = min(calls, key=lambda c: len(_mismatches(expected, c.arguments)))
        lines.append(f"Closest call: {closest.signature()}")
        lines.extend(f"  ✗ {reason}" for reason in _mismatches(expected, closest.arguments))
    lines.append(format_tool_calls(t))
    raise AssertionError("\n".join(lines))


def assert_tool_not_called(
    trace: Trace | RunResult | AgentRunError,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    /,
    **kwargs: Any,
) -> None:
    """Assert that the run never called ``name`` (with matching arguments, if given).

    Raises:
        AssertionError: A matching call was made; the message lists every call.
    """
    __tracebackhide__ = True
    t = _trace(trace)
    expected = _expected(arguments, kwargs)
    matching = [
        c for c in t.tool_calls if c.name == name and not _mismatches(expected, c.arguments)
    ]
    if not matching:
        return
    wanted = format_call(name, expected) if expected else name
    count = len(matching)
    raise AssertionError(
        f"expected no call to {wanted}, but the run made {count}: "
        + ", ".join(c.signature() for c in matching)
        + ".\n"
        + format_tool_calls(t)
    )


def assert_tool_order(
    trace: Trace | RunResult | AgentRunError, names: Sequence[str], /, *, exact: bool = False
) -> None:
    """Assert that the run called the tools ``names`` in this order.

    Args:
        trace: The run.
        names: Tool names in the expected order.
        exact: The calls must be exactly ``names``; by default other calls may come
            before, between and after them.

    Raises:
        AssertionError: The order differs; the message shows both sequences.
    """
    __tracebackhide__ = True
    if isinstance(names, str):
        raise UserError("assert_tool_order expects a list of tool names, not one string")
    t = _trace(trace)
    actual = t.tool_names
    expected = list(names)
    if exact:
        if actual == expected:
            return
        head = f"expected exactly the calls {expected}, got {actual}."
    else:
        position = 0
        for called in actual:
            if position < len(expected) and called == expected[position]:
                position += 1
        if position == len(expected):
            return
        found = expected[:position]
        head = (
            f"expected the calls {expected} in this order, got {actual}; matched "
            f"{found} then found no {expected[position]!r} after them."
        )
    raise AssertionError(head + "\n" + format_tool_calls(t))


def assert_no_tool_errors(trace: Trace | RunResult | AgentRunError, /) -> None:
    """Assert that every tool call of the run succeeded.

    Raises:
        AssertionError: Lists the calls that returned an error result.
    """
    __tracebackhide__ = True
    t = _trace(trace)
    failed = [(c, r) for c, r in t.calls_and_results() if r is not None and not r.ok]
    if not failed:
        return
    listed = "\n".join(
        f"  - {c.signature()}: {r.error_type}: {_clip(error_message(r))}" for c, r in failed
    )
    raise AssertionError(
        f"{len(failed)} tool call{'s' if len(failed) != 1 else ''} returned an error:\n"
        f"{listed}\n{format_tool_calls(t)}"
    )


def assert_grounded(
    trace: Trace | RunResult | AgentRunError,
    /,
    *,
    evidence: Iterable[str] = (),
    check_small_numbers: bool = True,
) -> None:
    """Assert that every number and id in the final answer comes from the input or a tool.

    A live model can route correctly and still answer "I can also look up employee E1001"
    with no such employee anywhere, or "7 days" when the tool said 5: this flags such claims
    (the rules are in ``toolproof._grounding`` and ``docs/evals.md``).

    Args:
        trace: The run.
        evidence: Extra texts the answer may rely on.
        check_small_numbers: Check integers from 0 to 10 too (the default; a small number
            is also grounded by the length of a list in a tool result or in the answer);
            ``False`` skips them.

    Raises:
        AssertionError: The run has no final answer, or it mentions ungrounded values.
    """
    __tracebackhide__ = True
    from toolproof._grounding import check_grounding, trace_evidence

    t = _trace(trace)
    if t.output is None:
        raise AssertionError(
            f"the run has no final answer to check (stop_reason={t.stop_reason}: "
            f"{t.stop_detail or 'no detail'}).\n{format_tool_calls(t)}"
        )
    result = check_grounding(
        t.output, [*trace_evidence(t), *evidence], check_small_numbers=check_small_numbers
    )
    if result.ok:
        return
    claims = ", ".join(repr(c) for c in result.ungrounded)
    raise AssertionError(
        f"the final answer mentions {claims}, found in neither the input nor any tool "
        f"result:\n  answer: {_clip(t.output, 300)}\n{format_tool_calls(t)}"
    )


def _clip(text: str | None, limit: int = 120) -> str:
    if text is None:
        return "None"
    return repr(clip(text, limit))
