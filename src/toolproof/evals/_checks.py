"""Objective checks: the ``expect:`` keys of a suite, compiled once, run on every trial.

Each key of ``expect`` becomes one :class:`Check`. Compiling checks a spec completely (tool
names against the agent's tools, argument names against their schemas, regexes, JSON
Schemas, matcher specs) and records every problem with its line, so a bad suite fails
before anything runs. Running a check reads a :class:`SessionRecord` (the traces of one
trial) and returns a :class:`CheckResult` whose reason says what was expected and what
happened.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from toolproof._messages import ToolCall, ToolResult, Usage
from toolproof._text import clip
from toolproof._trace import Trace
from toolproof.errors import ConfigError
from toolproof.evals._yaml import DocPath, Problems, format_path
from toolproof.evals._yaml import describe_type as _type

if TYPE_CHECKING:
    from toolproof._tools import Tool
    from toolproof.evals._matching import ArgumentsMatcher, CallSpec, Matcher

__all__ = [
    "EXPECT_KEYS",
    "ORDER_MODES",
    "Check",
    "CheckResult",
    "CheckStatus",
    "SessionRecord",
    "compile_expect",
]

CheckStatus = Literal["pass", "fail", "skip", "inconclusive"]
CheckKind = Literal["objective", "judged"]

ORDER_MODES = ("strict", "in_order", "unordered", "subset", "superset")
ARG_MODES = ("exact", "subset", "superset", "ignore")
CALL_KEYS = {"name": "", "arguments": "", "mode": ""}
STOP_REASONS = ("final", "max_steps", "budget", "repeated_call", "cancelled", "error")

#: Every key ``expect:`` accepts, with what its value must be (shown in error messages).
EXPECT_KEYS: dict[str, str] = {
    "tools_called": "a list of tool names, or a mapping of tool name to a count or {min, max}",
    "tools_not_called": "a list of tool names",
    "order": f"one of {', '.join(ORDER_MODES)}",
    "calls": "a list of expected calls: {name, arguments, mode} (or a tool name)",
    "args": "a mapping of tool name to expected arguments (or a list of them)",
    "args_mode": f"one of {', '.join(ARG_MODES)}",
    "required_args": "a mapping of tool name to a list of argument names",
    "forbid_extra_args": "true, or a list of tool names",
    "final_contains": "a string or a list of strings",
    "final_not_contains": "a string or a list of strings",
    "final_regex": "a regular expression or a list of them",
    "final_equals": "a value or a matcher spec ({text: ...}, {regex: ...}...)",
    "final_json_schema": "a JSON Schema (mapping)",
    "grounded": "true, or {check_small_numbers: bool, include_system_prompt: bool}",
    "no_tool_errors": "true, or {allow: [tool names or error types]}",
    "stop_reason": f"one of {', '.join(STOP_REASONS)}, or a list of them",
    "max_steps": "a positive integer (model calls)",
    "max_tool_calls": "a non-negative integer",
    "max_tokens": "a positive integer (input + output tokens)",
    "max_cost": "a positive number (USD)",
    "max_latency_s": "a positive number of seconds",
    "state": "a mapping of state path (dotted) to expected value or matcher spec",
    # Retrieval quality (toolproof.evals._retrieval): ranking metrics and faithfulness.
    "retrieval": "{tool, relevant: [ids] or {id: grade}, k, id_path, min_recall, min_mrr...}",
    "retrieval_grounded": "a retrieval tool's name, or {tool, quotes, check_small_numbers...}",
    "faithfulness": "a retrieval tool's name, or {tool, max_hallucination_rate} (judged)",
}


@dataclass(slots=True)
class CheckResult:
    """The outcome of one check on one trial.

    Attributes:
        check: The check's name (the ``expect`` key, or ``judge`` for rubric lines).
        status: ``"pass"``, ``"fail"``, ``"skip"`` (could not apply, says why) or
            ``"inconclusive"`` (a judge could not decide).
        reason: What was expected and what happened, in a sentence a person can act on.
        kind: ``"objective"`` or ``"judged"``.
        turn: For a per-turn check of a multi-turn case, the 1-based turn.
        criterion: For judged checks, the rubric line.
        metrics: Figures the check measured (retrieval metrics, claim counts), which the
            reports aggregate per suite.
    """

    check: str
    status: CheckStatus
    reason: str
    kind: CheckKind = "objective"
    turn: int | None = None
    criterion: str | None = None
    metrics: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        """Whether the check passed."""
        return self.status == "pass"

    @property
    def label(self) -> str:
        """``check`` with its turn, for reports (``tools_called@turn2``)."""
        return self.check if self.turn is None else f"{self.check}@turn{self.turn}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data for reports."""
        out: dict[str, Any] = {
            "check": self.check,
            "kind": self.kind,
            "status": self.status,
            "reason": self.reason,
        }
        if self.turn is not None:
            out["turn"] = self.turn
        if self.criterion is not None:
            out["criterion"] = self.criterion
        if self.metrics is not None:
            out["metrics"] = self.metrics
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        """Read what :meth:`to_dict` wrote."""
        return cls(
            check=data["check"],
            status=data["status"],
            reason=data["reason"],
            kind=data.get("kind", "objective"),
            turn=data.get("turn"),
            criterion=data.get("criterion"),
            metrics=data.get("metrics"),
        )


@dataclass(slots=True)
class SessionRecord:
    """What the checks of one trial read: the trace of each turn, and the trial's mocks.

    Attributes:
        traces: One trace per user turn, in order.
        mocks: The mock providers of the trial (stateful mocks expose ``state``).
    """

    traces: list[Trace]
    mocks: list[Any] = field(default_factory=list)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call of every turn, in order."""
        return [call for trace in self.traces for call in trace.tool_calls]

    def calls_and_results(self) -> list[tuple[ToolCall, ToolResult | None]]:
        """Each tool call with its result (``None`` when the run stopped before it ran)."""
        return [pair for trace in self.traces for pair in trace.calls_and_results()]

    @property
    def output(self) -> str | None:
        """The final answer of the last turn."""
        return self.traces[-1].output if self.traces else None

    @property
    def stop_reason(self) -> str:
        """How the last turn ended."""
        return self.traces[-1].stop_reason if self.traces else "error"

    @property
    def steps(self) -> int:
        """Model calls over all turns."""
        return sum(len(trace.steps) for trace in self.traces)

    @property
    def usage(self) -> Usage:
        """Tokens over all turns."""
        total = Usage()
        for trace in self.traces:
            total = total + trace.usage
        return total

    @property
    def cost(self) -> float | None:
        """Cost over all turns, or ``None`` when a turn's cost is unknown."""
        costs = [trace.cost for trace in self.traces]
        if not costs or any(c is None for c in costs):
            return None
        return sum(c for c in costs if c is not None)

    @property
    def duration_ms(self) -> float:
        """Wall time over all turns."""
        return sum(trace.duration_ms for trace in self.traces)

    def state(self) -> dict[str, Any] | None:
        """The merged ``state`` of the trial's stateful mocks (``None`` when there are none)."""
        found = False
        merged: dict[str, Any] = {}
        for mock in self.mocks:
            state = getattr(mock, "state", None)
            if isinstance(state, dict):
                found = True
                merged.update(state)
        return merged if found else None


Evaluator = Callable[
    [SessionRecord], tuple[CheckStatus, str] | tuple[CheckStatus, str, dict[str, Any]]
]
#: A judged check's grader: ``(judge model, record, metadata, cache, inconclusive)`` ->
#: ``(result, whether the judge model was called)``; the runner awaits it with the judge.
Grader = Callable[..., Awaitable[tuple["CheckResult", bool]]]


@dataclass(frozen=True, slots=True)
class Check:
    """One compiled objective check.

    Attributes:
        name: The ``expect`` key it comes from.
        describe: What it expects, in words (shown with ``--list``).
        evaluate: Computes the status and reason from a session record.
        turn: For per-turn checks, the 1-based turn it reads.
        grade: For a judged check, its grader (the runner calls it with the judge model
            after the objective checks; ``evaluate`` is not called).
    """

    name: str
    describe: str
    evaluate: Evaluator
    turn: int | None = None
    grade: Grader | None = None

    def __call__(self, record: SessionRecord) -> CheckResult:
        """Run the check on the whole session, or on its turn for per-turn checks."""
        if self.turn is not None:
            if len(record.traces) < self.turn:
                return CheckResult(
                    self.name,
                    "fail",
                    f"turn {self.turn} did not run (the session stopped after "
                    f"{len(record.traces)} turns)",
                    turn=self.turn,
                )
            record = SessionRecord([record.traces[self.turn - 1]], record.mocks)
        outcome: tuple[Any, ...] = self.evaluate(record)
        status, reason = outcome[0], outcome[1]
        metrics = outcome[2] if len(outcome) > 2 else None  # (status, reason, figures)
        return CheckResult(self.name, status, reason, turn=self.turn, metrics=metrics)


# -- compiling ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Context:
    #: The agent's tools; ``None`` when they are unknown (the factory failed to load), in
    #: which case every other problem is still reported and tool names are not checked.
    tools: Mapping[str, Tool[..., Any]] | None
    problems: Problems
    path: DocPath
    key_paths: Mapping[str, DocPath] = field(default_factory=dict)

    def at(self, *keys: Any) -> DocPath:
        """The document path of an entry (keys start with the ``expect`` key)."""
        base = self.key_paths.get(keys[0], self.path) if keys else self.path
        return (*base, *keys)

    def tool(self, name: Any, *keys: Any) -> bool:
        """Whether ``name`` is one of the agent's tools (records a problem if not)."""
        if isinstance(name, str) and (self.tools is None or name in self.tools):
            return True
        known = sorted(self.tools or ())
        hint = ""
        if isinstance(name, str):
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
        self.problems.add(
            self.at(*keys),
            f"unknown tool {name!r}{hint}; the agent's tools are: {', '.join(known) or '(none)'}",
        )
        return False

    def knows(self, name: Any) -> bool:
        """Whether ``name`` may be a tool (without recording anything)."""
        return isinstance(name, str) and (self.tools is None or name in self.tools)

    def params(self, tool: str) -> list[str]:
        if self.tools is None:
            return []
        properties = self.tools[tool].parameters.get("properties", {})
        return list(properties) if isinstance(properties, dict) else []


def compile_expect(
    expect: Any,
    *,
    tools: Mapping[str, Tool[..., Any]] | None,
    problems: Problems,
    path: DocPath,
    turn: int | None = None,
    key_paths: Mapping[str, DocPath] | None = None,
) -> list[Check]:
    """Compile an ``expect:`` mapping into checks, recording every problem.

    Args:
        expect: The mapping as written in the suite.
        tools: The agent's tools by name (expectations may only name these).
        problems: Where problems go (each with file and line).
        path: The mapping's path in the document.
        key_paths: For a merged mapping (suite defaults under a case's own keys), the
            path of the mapping each key was written in, so problems point at that line.
        turn: For a turn's own ``expect``, the 1-based turn.

    Returns:
        The checks, in the order of ``EXPECT_KEYS``; bad entries are left out.
    """
    if expect is None:
        return []
    if not isinstance(expect, Mapping):
        problems.add(path, f"expected a mapping of checks, got {_type(expect)}")
        return []
    ctx = _Context(tools, problems, path, key_paths or {})
    for key in expect:
        if key not in EXPECT_KEYS:
            _unknown_key(ctx, key, EXPECT_KEYS)
    checks: list[Check] = []
    for key in EXPECT_KEYS:
        if key not in expect or key in ("args_mode",):
            continue
        builder = _BUILDERS[key]
        check = builder(ctx, expect[key], expect)
        if check is not None:
            checks.append(dataclasses.replace(check, turn=turn) if turn is not None else check)
    if "args_mode" in expect and "args" not in expect:
        problems.add(ctx.at("args_mode"), "args_mode applies to 'args', which is not set")
    elif "args_mode" in expect and expect["args_mode"] not in ARG_MODES:
        problems.add(
            ctx.at("args_mode"),
            f"expected one of {', '.join(ARG_MODES)}, got {expect['args_mode']!r}",
        )
    if (
        "order" in expect
        and "calls" not in expect
        and not isinstance(expect.get("tools_called"), list)
    ):
        problems.add(
            ctx.at("order"),
            "order needs the expected sequence: give 'tools_called' as a list, or 'calls'",
        )
    return checks


def _unknown_key(ctx: _Context, key: Any, allowed: Mapping[str, str] | Sequence[str]) -> None:
    names = list(allowed)
    close = difflib.get_close_matches(str(key), names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    ctx.problems.add(ctx.at(key), f"unknown key {key!r}{hint}; allowed: {', '.join(names)}")


def _names(ctx: _Context, value: Any, key: str) -> list[str] | None:
    """A list of tool names (a single name is accepted); problems recorded."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        ctx.problems.add(ctx.at(key), f"expected a list of tool names, got {_type(value)}")
        return None
    ok = [ctx.tool(name, key, index) for index, name in enumerate(value)]
    return value if all(ok) else None


def _strings(ctx: _Context, value: Any, key: str) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    ctx.problems.add(ctx.at(key), f"expected a string or a list of strings, got {_type(value)}")
    return None


def _number(ctx: _Context, value: Any, key: str, *, integer: bool, minimum: float) -> float | None:
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or value < minimum:
        ctx.problems.add(ctx.at(key), f"expected {EXPECT_KEYS[key]}, got {value!r}")
        return None
    return float(value)


def _matcher(ctx: _Context, spec: Any, path: DocPath) -> Matcher | None:
    from toolproof.evals._matching import compile_value_matcher

    try:
        return compile_value_matcher(spec, where=format_path(path))
    except ConfigError as exc:
        for problem in exc.problems or [str(exc)]:
            ctx.problems.add((), problem, line=ctx.problems.locator.line(path))
        return None


# -- call listings in reasons -------------------------------------------------------------------


def _calls_text(calls: Sequence[ToolCall], limit: int = 6) -> str:
    if not calls:
        return "no tool calls"
    shown = [call.signature() for call in calls[:limit]]
    more = f" and {len(calls) - limit} more" if len(calls) > limit else ""
    return ", ".join(shown) + more


def _times(n: int) -> str:
    return "1 time" if n == 1 else f"{n} times"


def _clip(text: str | None, limit: int = 200) -> str:
    if text is None:
        return "(no final answer)"
    return repr(clip(text, limit))


# -- the checks ---------------------------------------------------------------------------------


def _tools_called(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    bounds: dict[str, tuple[int, int | None]] = {}
    if isinstance(value, (list, str)):
        names = _names(ctx, value, "tools_called")
        if names is None:
            return None
        for name in names:
            bounds[name] = (1, None)
    elif isinstance(value, Mapping):
        for name, count in value.items():
            if not ctx.tool(name, "tools_called", name):
                continue
            parsed = _count(ctx, count, ("tools_called", name))
            if parsed is not None:
                bounds[name] = parsed
        if len(bounds) != len(value):
            return None
    else:
        ctx.problems.add(ctx.at("tools_called"), f"expected {EXPECT_KEYS['tools_called']}")
        return None

    def describe_bound(low: int, high: int | None) -> str:
        if high is None:
            return f"at least {_times(low)}"
        if low == high:
            return f"exactly {_times(low)}"
        return f"between {low} and {high} times"

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        calls = record.tool_calls
        counts: dict[str, int] = {}
        for call in calls:
            counts[call.name] = counts.get(call.name, 0) + 1
        failures = []
        for name, (low, high) in bounds.items():
            n = counts.get(name, 0)
            if n < low or (high is not None and n > high):
                failures.append(f"{name} called {_times(n)}, expected {describe_bound(low, high)}")
        if failures:
            return "fail", "; ".join(failures) + f" (calls made: {_calls_text(calls)})"
        made = ", ".join(f"{name} x{counts.get(name, 0)}" for name in bounds)
        return "pass", f"called {made}"

    describe = ", ".join(f"{n} {describe_bound(*b)}" for n, b in bounds.items())
    return Check("tools_called", describe, evaluate)


def _count(ctx: _Context, value: Any, path: tuple[Any, ...]) -> tuple[int, int | None] | None:
    def is_count(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    if is_count(value):
        return int(value), int(value)
    if isinstance(value, Mapping) and value and set(value) <= {"min", "max"}:
        low = value.get("min", 1 if "max" not in value else 0)
        high = value.get("max")
        if is_count(low) and (high is None or (is_count(high) and high >= low)):
            return int(low), None if high is None else int(high)
    ctx.problems.add(
        ctx.at(*path),
        f"expected a call count (an integer) or {{min: N, max: M}} with 0 <= min <= max, "
        f"got {value!r}",
    )
    return None


def _tools_not_called(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    names = _names(ctx, value, "tools_not_called")
    if names is None:
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        calls = record.tool_calls
        bad = [name for name in names if any(c.name == name for c in calls)]
        if bad:
            offending = [c for c in calls if c.name in bad]
            return "fail", (
                f"expected no calls to {', '.join(bad)}, but the agent called "
                f"{_calls_text(offending)}"
            )
        return "pass", f"none of {', '.join(names)} was called"

    return Check("tools_not_called", f"never calls {', '.join(names)}", evaluate)


def _order(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    if value not in ORDER_MODES:
        ctx.problems.add(
            ctx.at("order"), f"expected one of {', '.join(ORDER_MODES)}, got {value!r}"
        )
        return None
    if "calls" in expect:
        return None  # `calls` reads `order` itself
    names = expect.get("tools_called")
    if not isinstance(names, list) or not all(ctx.knows(n) for n in names):
        return None
    from toolproof.evals._matching import CallSpec

    return _sequence_check("order", [CallSpec(name) for name in names], str(value))


def _calls(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    from toolproof.evals._matching import CallSpec

    if not isinstance(value, list) or not value:
        ctx.problems.add(ctx.at("calls"), f"expected {EXPECT_KEYS['calls']}, got {_type(value)}")
        return None
    mode_default = expect.get("args_mode", "subset")
    expected: list[CallSpec] = []
    ok = True
    for index, item in enumerate(value):
        where = ctx.at("calls", index)
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, Mapping):
            ctx.problems.add(where, f"expected {{name, arguments, mode}}, got {_type(item)}")
            ok = False
            continue
        for key in item:
            if key not in CALL_KEYS:
                close = difflib.get_close_matches(str(key), list(CALL_KEYS), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                ctx.problems.add(
                    (*where, key),
                    f"unknown key {key!r}{hint}; allowed: {', '.join(CALL_KEYS)}",
                )
                ok = False
        name = item.get("name")
        if name is None:
            ctx.problems.add(where, "missing 'name': the expected tool")
            ok = False
            continue
        if not ctx.tool(name, "calls", index, "name"):
            ok = False
            continue
        mode = item.get("mode", mode_default)
        if "arguments" not in item:
            if "mode" in item and mode not in ARG_MODES:
                ctx.problems.add(
                    (*where, "mode"), f"expected one of {', '.join(ARG_MODES)}, got {mode!r}"
                )
                ok = False
            expected.append(CallSpec(name))
            continue
        matcher = _arguments(ctx, name, item["arguments"], (*where, "arguments"), mode)
        if matcher is None:
            ok = False
            continue
        expected.append(CallSpec(name, matcher))
    if not ok:
        return None
    return _sequence_check("calls", expected, str(expect.get("order", "subset")))


def _arguments(
    ctx: _Context, tool: str, args: Any, path: DocPath, mode: Any
) -> ArgumentsMatcher | None:
    """Compile one expected-arguments mapping: known argument names, valid specs and mode."""
    from toolproof.evals._matching import compile_arguments

    if mode not in ARG_MODES:
        ctx.problems.add(path, f"argument mode must be one of {', '.join(ARG_MODES)}, got {mode!r}")
        return None
    if not isinstance(args, Mapping):
        ctx.problems.add(path, f"expected a mapping of argument name to value, got {_type(args)}")
        return None
    params = ctx.params(tool)
    ok = True
    for name in args:
        if ctx.tools is not None and name not in params:
            close = difflib.get_close_matches(str(name), params, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            ctx.problems.add(
                (*path, name),
                f"{tool} has no argument {name!r}{hint}; its arguments are: "
                f"{', '.join(params) or '(none)'}",
            )
            ok = False
    if not ok:
        return None
    try:
        return compile_arguments(args, mode=mode, where=format_path(path))
    except ConfigError as exc:
        for problem in exc.problems or [str(exc)]:
            ctx.problems.add((), problem, line=ctx.problems.locator.line(path))
        return None


def _sequence_check(name: str, expected: list[CallSpec], mode: str) -> Check:
    from toolproof.evals._matching import OrderMatcher

    matcher = OrderMatcher(expected, mode)
    want = ", ".join(spec.describe() for spec in expected)

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        calls = record.tool_calls
        reasons = matcher(calls)
        if reasons:
            return "fail", (
                f"expected calls [{want}] ({mode}): {'; '.join(reasons)} "
                f"(calls made: {_calls_text(calls, limit=10)})"
            )
        return "pass", f"calls match [{want}] ({mode})"

    return Check(name, f"calls [{want}] ({mode})", evaluate)


def _args(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    if not isinstance(value, Mapping) or not value:
        ctx.problems.add(ctx.at("args"), f"expected {EXPECT_KEYS['args']}, got {_type(value)}")
        return None
    mode = expect.get("args_mode", "subset")
    if mode not in ARG_MODES:
        return None
    expected: list[tuple[str, ArgumentsMatcher]] = []
    ok = True
    for tool, specs in value.items():
        if not ctx.tool(tool, "args", tool):
            ok = False
            continue
        items = specs if isinstance(specs, list) else [specs]
        for index, spec in enumerate(items):
            path = ctx.at("args", tool, index) if isinstance(specs, list) else ctx.at("args", tool)
            matcher = _arguments(ctx, tool, spec, path, mode)
            if matcher is None:
                ok = False
                continue
            expected.append((tool, matcher))
    if not ok:
        return None

    described = {id(m): f"{tool}({m.describe()})" for tool, m in expected}

    def describe(tool: str, matcher: ArgumentsMatcher) -> str:
        return described[id(matcher)]

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        calls = record.tool_calls
        failures = []
        for tool, matcher in expected:
            candidates = [c for c in calls if c.name == tool]
            if not candidates:
                failures.append(
                    f"expected a call {describe(tool, matcher)}, but {tool} was not called "
                    f"(calls made: {_calls_text(calls)})"
                )
                continue
            mismatches = []
            for call in candidates:
                if call.arguments_error is not None:
                    mismatches.append(f"{call.signature()}: arguments could not be read")
                    continue
                reasons = matcher(call.arguments)
                if not reasons:
                    break
                mismatches.append(f"{call.signature()}: {'; '.join(reasons)}")
            else:
                more = f" (and {len(mismatches) - 3} more)" if len(mismatches) > 3 else ""
                failures.append(
                    f"no call matched {describe(tool, matcher)}: "
                    + " | ".join(mismatches[:3])
                    + more
                )
        if failures:
            return "fail", "; ".join(failures)
        return "pass", passed

    summary = ", ".join(described.values())
    passed = "matched " + summary
    return Check("args", summary, evaluate)


def _required_args(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    if not isinstance(value, Mapping) or not value:
        ctx.problems.add(
            ctx.at("required_args"), f"expected {EXPECT_KEYS['required_args']}, got {_type(value)}"
        )
        return None
    required: dict[str, list[str]] = {}
    ok = True
    for tool, names in value.items():
        if not ctx.tool(tool, "required_args", tool):
            ok = False
            continue
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            ctx.problems.add(
                ctx.at("required_args", tool),
                f"expected a list of argument names, got {_type(names)}",
            )
            ok = False
            continue
        params = ctx.params(tool)
        for index, name in enumerate(names):
            if ctx.tools is not None and name not in params:
                ctx.problems.add(
                    ctx.at("required_args", tool, index),
                    f"{tool} has no argument {name!r}; its arguments are: "
                    f"{', '.join(params) or '(none)'}",
                )
                ok = False
        required[tool] = names
    if not ok:
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        failures = []
        checked = 0
        for call in record.tool_calls:
            names = required.get(call.name)
            if names is None:
                continue
            checked += 1
            missing = [n for n in names if n not in call.arguments]
            if missing:
                failures.append(f"{call.signature()} lacks {', '.join(missing)}")
        if failures:
            return "fail", "required arguments missing: " + "; ".join(failures)
        if not checked:
            return "pass", f"no calls of {', '.join(required)} to check"
        return (
            "pass",
            f"all {checked} calls of {', '.join(required)} carry their required arguments",
        )

    describe = "; ".join(f"{t} needs {', '.join(n)}" for t, n in required.items())
    return Check("required_args", describe, evaluate)


def _forbid_extra_args(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    if value is False:
        return None
    if value is True:
        tools = list(ctx.tools or ())
    else:
        names = _names(ctx, value, "forbid_extra_args")
        if names is None:
            return None
        tools = names
    allowed = {tool: set(ctx.params(tool)) for tool in tools}

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        failures = []
        for call in record.tool_calls:
            if call.name not in allowed:
                continue
            extra = [k for k in call.arguments if k not in allowed[call.name]]
            if extra:
                known = ", ".join(sorted(allowed[call.name])) or "(none)"
                failures.append(
                    f"{call.signature()} passes {', '.join(map(repr, extra))}, not in the "
                    f"schema of {call.name} (allowed: {known})"
                )
        if failures:
            return "fail", "extra arguments: " + "; ".join(failures)
        return "pass", "no call passed arguments outside its tool's schema"

    scope = "any tool" if value is True else ", ".join(tools)
    return Check("forbid_extra_args", f"no undeclared arguments for {scope}", evaluate)


def _final_contains(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    texts = _strings(ctx, value, "final_contains")
    if texts is None:
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        output = record.output or ""
        missing = [t for t in texts if t not in output]
        if missing or record.output is None:
            return "fail", (
                f"expected the final answer to contain {', '.join(map(repr, missing or texts))}; "
                f"it was {_clip(record.output)}"
            )
        return "pass", f"the final answer contains {', '.join(map(repr, texts))}"

    return Check("final_contains", f"answer contains {', '.join(map(repr, texts))}", evaluate)


def _final_not_contains(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    texts = _strings(ctx, value, "final_not_contains")
    if texts is None:
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        output = record.output or ""
        found = [t for t in texts if t in output]
        if found:
            return "fail", (
                f"expected the final answer not to contain {', '.join(map(repr, found))}; "
                f"it was {_clip(record.output)}"
            )
        return "pass", f"the final answer contains none of {', '.join(map(repr, texts))}"

    return Check("final_not_contains", f"answer avoids {', '.join(map(repr, texts))}", evaluate)


def _final_regex(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    patterns = _strings(ctx, value, "final_regex")
    if patterns is None:
        return None
    compiled = []
    for index, pattern in enumerate(patterns):
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            path = (
                ctx.at("final_regex", index) if isinstance(value, list) else ctx.at("final_regex")
            )
            ctx.problems.add(path, f"invalid regular expression {pattern!r}: {exc}")
    if len(compiled) != len(patterns):
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        output = record.output or ""
        missing = [p.pattern for p in compiled if not p.search(output)]
        if missing or record.output is None:
            return "fail", (
                f"expected the final answer to match {', '.join(map(repr, missing or patterns))}; "
                f"it was {_clip(record.output)}"
            )
        return "pass", f"the final answer matches {', '.join(map(repr, patterns))}"

    return Check("final_regex", f"answer matches {', '.join(map(repr, patterns))}", evaluate)


def _final_equals(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    matcher = _matcher(ctx, value, ctx.at("final_equals"))
    if matcher is None:
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        if record.output is None:
            return "fail", f"expected a final answer {matcher.describe()}; the run gave none"
        reason = matcher(record.output)
        if reason is not None:
            return "fail", f"final answer: {reason}"
        return "pass", f"the final answer is {matcher.describe()}"

    return Check("final_equals", f"answer {matcher.describe()}", evaluate)


def _final_json_schema(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    if not isinstance(value, Mapping):
        ctx.problems.add(
            ctx.at("final_json_schema"), f"expected a JSON Schema mapping, got {_type(value)}"
        )
        return None
    import jsonschema

    try:
        schema = dict(value)
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        ctx.problems.add(ctx.at("final_json_schema"), f"invalid JSON Schema: {exc.message}")
        return None
    validator = validator_class(schema)

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        if record.output is None:
            return "fail", "expected a JSON final answer; the run gave none"
        try:
            data = json.loads(_strip_fence(record.output))
        except ValueError as exc:
            return "fail", f"the final answer is not JSON ({exc}): {_clip(record.output)}"
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            shown = []
            for error in errors[:3]:
                where = "/".join(str(p) for p in error.absolute_path) or "(root)"
                shown.append(f"at {where}: {error.message}")
            return "fail", "the final answer does not fit the schema: " + "; ".join(shown)
        return "pass", "the final answer is JSON that fits the schema"

    return Check("final_json_schema", "answer is JSON fitting the schema", evaluate)


def _strip_fence(text: str) -> str:
    stripped = text.strip()
    match = re.fullmatch(r"```(?:json)?\s*\n?(.*?)\n?```", stripped, re.DOTALL)
    return match.group(1) if match else stripped


def _grounded(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    options = {"check_small_numbers": True, "include_system_prompt": True}
    if value is False:
        return None
    if isinstance(value, Mapping):
        for key, option in value.items():
            if key not in options:
                ctx.problems.add(
                    ctx.at("grounded", key),
                    f"unknown option {key!r}; allowed: {', '.join(options)}",
                )
                return None
            if not isinstance(option, bool):
                ctx.problems.add(ctx.at("grounded", key), f"expected true or false, got {option!r}")
                return None
            options[key] = option
    elif value is not True:
        ctx.problems.add(ctx.at("grounded"), f"expected {EXPECT_KEYS['grounded']}, got {value!r}")
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        from toolproof._grounding import check_grounding, trace_evidence

        if record.output is None:
            return "skip", "no final answer to check"
        evidence: list[str] = []
        for trace in record.traces:
            evidence.extend(
                trace_evidence(trace, include_system_prompt=options["include_system_prompt"])
            )
        result = check_grounding(
            record.output, evidence, check_small_numbers=options["check_small_numbers"]
        )
        if result.ungrounded:
            return "fail", (
                f"the final answer states {', '.join(map(repr, result.ungrounded))}, found in no "
                f"input or tool result (invented?): {_clip(record.output)}"
            )
        if not result.checked:
            return "pass", "the final answer states no numbers or ids"
        return (
            "pass",
            f"every number and id in the answer is grounded ({', '.join(result.checked)})",
        )

    return Check("grounded", "numbers and ids in the answer come from inputs or tools", evaluate)


def _no_tool_errors(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    allow: list[str] = []
    if value is False:
        return None
    if isinstance(value, Mapping):
        if set(value) != {"allow"}:
            ctx.problems.add(
                ctx.at("no_tool_errors"), "expected true, or {allow: [tool names or error types]}"
            )
            return None
        items = _strings(ctx, value["allow"], "no_tool_errors")
        if items is None:
            return None
        allow = items
    elif value is not True:
        ctx.problems.add(
            ctx.at("no_tool_errors"), f"expected {EXPECT_KEYS['no_tool_errors']}, got {value!r}"
        )
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        bad = []
        for call, result in record.calls_and_results():
            if result is None or result.ok:
                continue
            if result.name in allow or (result.error_type or "") in allow:
                continue
            bad.append(f"{call.signature()} -> {result.error_type}: {_clip(result.content, 120)}")
        if bad:
            suffix = f" (allowed: {', '.join(allow)})" if allow else ""
            return "fail", "tool errors: " + "; ".join(bad) + suffix
        return "pass", "no tool returned an error" + (
            f" outside {', '.join(allow)}" if allow else ""
        )

    scope = f" except {', '.join(allow)}" if allow else ""
    return Check("no_tool_errors", f"no tool errors{scope}", evaluate)


def _stop_reason(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    reasons = _strings(ctx, value, "stop_reason")
    if reasons is None:
        return None
    bad = [r for r in reasons if r not in STOP_REASONS]
    if bad:
        ctx.problems.add(
            ctx.at("stop_reason"),
            f"unknown stop reason {', '.join(map(repr, bad))}; allowed: {', '.join(STOP_REASONS)}",
        )
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        actual = record.stop_reason
        if actual not in reasons:
            detail = record.traces[-1].stop_detail if record.traces else None
            return "fail", (
                f"expected the run to stop with {' or '.join(reasons)}, it stopped with "
                f"{actual}" + (f" ({detail})" if detail else "")
            )
        return "pass", f"stopped with {actual}"

    return Check("stop_reason", f"stops with {' or '.join(reasons)}", evaluate)


def _limit(
    key: str, what: str, read: Callable[[SessionRecord], float | None], *, integer: bool
) -> Callable[[_Context, Any, Mapping[str, Any]], Check | None]:
    def build(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
        minimum = 0 if key == "max_tool_calls" else (1 if integer else 1e-12)
        limit = _number(ctx, value, key, integer=integer, minimum=minimum)
        if limit is None:
            return None
        shown = f"{limit:g}"

        def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
            actual = read(record)
            if actual is None:
                return "skip", f"{what} unknown (no price for model {record.traces[-1].model!r}?)"
            text = f"{actual:.6f}".rstrip("0").rstrip(".") if not integer else str(int(actual))
            if actual > limit:
                return "fail", f"{what} was {text}, expected at most {shown}"
            return "pass", f"{what} {text} <= {shown}"

        return Check(key, f"{what} <= {shown}", evaluate)

    return build


_BUILDERS: dict[str, Callable[[_Context, Any, Mapping[str, Any]], Check | None]] = {
    "tools_called": _tools_called,
    "tools_not_called": _tools_not_called,
    "order": _order,
    "calls": _calls,
    "args": _args,
    "required_args": _required_args,
    "forbid_extra_args": _forbid_extra_args,
    "final_contains": _final_contains,
    "final_not_contains": _final_not_contains,
    "final_regex": _final_regex,
    "final_equals": _final_equals,
    "final_json_schema": _final_json_schema,
    "grounded": _grounded,
    "no_tool_errors": _no_tool_errors,
    "stop_reason": _stop_reason,
    "max_steps": _limit("max_steps", "model calls", lambda r: r.steps, integer=True),
    "max_tool_calls": _limit(
        "max_tool_calls", "tool calls", lambda r: len(r.tool_calls), integer=True
    ),
    "max_tokens": _limit("max_tokens", "tokens", lambda r: r.usage.total_tokens, integer=True),
    "max_cost": _limit("max_cost", "cost (USD)", lambda r: r.cost, integer=False),
    "max_latency_s": _limit(
        "max_latency_s", "run time (s)", lambda r: r.duration_ms / 1000, integer=False
    ),
}


def _state(ctx: _Context, value: Any, expect: Mapping[str, Any]) -> Check | None:
    if not isinstance(value, Mapping) or not value:
        ctx.problems.add(ctx.at("state"), f"expected {EXPECT_KEYS['state']}, got {_type(value)}")
        return None
    matchers: dict[str, Matcher] = {}
    for key, spec in value.items():
        if not isinstance(key, str):
            ctx.problems.add(ctx.at("state", key), f"state paths are strings, got {key!r}")
            continue
        matcher = _matcher(ctx, spec, ctx.at("state", key))
        if matcher is not None:
            matchers[key] = matcher
    if len(matchers) != len(value):
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        state = record.state()
        if state is None:
            return "fail", (
                "expected stateful mocks to check, but the trial has none (declare them with "
                "'mocks:' in the suite)"
            )
        failures = []
        for path, matcher in matchers.items():
            found, actual = _lookup(state, path)
            if not found:
                failures.append(
                    f"{path}: missing from the state (keys: {', '.join(map(str, state))})"
                )
                continue
            reason = matcher(actual)
            if reason is not None:
                failures.append(f"{path}: {reason}")
        if failures:
            return "fail", "final state: " + "; ".join(failures)
        return "pass", "final state matches " + ", ".join(
            f"{p} {m.describe()}" for p, m in matchers.items()
        )

    return Check("state", ", ".join(f"{p} {m.describe()}" for p, m in matchers.items()), evaluate)


_BUILDERS["state"] = _state

# Retrieval quality checks live in their own module (it imports the names above).
from toolproof.evals._retrieval import BUILDERS as _RETRIEVAL_BUILDERS  # noqa: E402

_BUILDERS.update(_RETRIEVAL_BUILDERS)


def _lookup(state: Any, path: str) -> tuple[bool, Any]:
    """Follow a dotted path through mappings and lists (``tickets.PROJ-1.status``)."""
    if isinstance(state, Mapping) and path in state:
        return True, state[path]
    current = state
    for part in path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif (
            isinstance(current, list)
            and part.lstrip("-").isdigit()
            and -len(current) <= int(part) < len(current)
        ):
            current = current[int(part)]
        else:
            return False, None
    return True, current
