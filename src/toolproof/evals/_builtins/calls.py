"""Checks of the tool calls: which tools, how often, in what order, with what arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolproof._filemodel import did_you_mean, unknown_key_message
from toolproof._yaml import DocPath, format_path
from toolproof.errors import ConfigError

if TYPE_CHECKING:
    from toolproof._matching import ArgumentsMatcher, CallSpec

from toolproof._yaml import describe_type as _type
from toolproof.evals._builtins._schemas import CALL, COUNT, NAME, NAMES
from toolproof.evals._checks import (
    ARG_MODES,
    CALL_KEYS,
    ORDER_MODES,
    Check,
    CheckContext,
    CheckStatus,
    SessionRecord,
    accepts,
    calls_listing,
    check,
    times_text,
    tool_names,
)


@check.compiler(
    "tools_called",
    accepts="a list of tool names, or a mapping of tool name to a count or {min, max}",
    schema={"anyOf": [NAME, NAMES, {"type": "object", "additionalProperties": COUNT}]},
)
def _tools_called(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    bounds: dict[str, tuple[int, int | None]] = {}
    if isinstance(value, (list, str)):
        names = tool_names(ctx, value, "tools_called")
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
        ctx.problems.add(ctx.at("tools_called"), f"expected {accepts('tools_called')}")
        return None

    def describe_bound(low: int, high: int | None) -> str:
        if high is None:
            return f"at least {times_text(low)}"
        if low == high:
            return f"exactly {times_text(low)}"
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
                failures.append(
                    f"{name} called {times_text(n)}, expected {describe_bound(low, high)}"
                )
        if failures:
            return "fail", "; ".join(failures) + f" (calls made: {calls_listing(calls)})"
        made = ", ".join(f"{name} x{counts.get(name, 0)}" for name in bounds)
        return "pass", f"called {made}"

    describe = ", ".join(f"{n} {describe_bound(*b)}" for n, b in bounds.items())
    return Check("tools_called", describe, evaluate)


def _count(ctx: CheckContext, value: Any, path: tuple[Any, ...]) -> tuple[int, int | None] | None:
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


@check.compiler("tools_not_called", accepts="a list of tool names", schema={"anyOf": [NAME, NAMES]})
def _tools_not_called(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    names = tool_names(ctx, value, "tools_not_called")
    if names is None:
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        calls = record.tool_calls
        bad = [name for name in names if any(c.name == name for c in calls)]
        if bad:
            offending = [c for c in calls if c.name in bad]
            return "fail", (
                f"expected no calls to {', '.join(bad)}, but the agent called "
                f"{calls_listing(offending)}"
            )
        return "pass", f"none of {', '.join(names)} was called"

    return Check("tools_not_called", f"never calls {', '.join(names)}", evaluate)


@check.compiler(
    "order", accepts=f"one of {', '.join(ORDER_MODES)}", schema={"enum": list(ORDER_MODES)}
)
def _order(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
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
    from toolproof._matching import CallSpec

    return _sequence_check("order", [CallSpec(name) for name in names], str(value))


@check.compiler(
    "calls",
    accepts="a list of expected calls: {name, arguments, mode} (or a tool name)",
    schema={"type": "array", "minItems": 1, "items": {"anyOf": [NAME, CALL]}},
)
def _calls(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    from toolproof._matching import CallSpec

    if not isinstance(value, list) or not value:
        ctx.problems.add(ctx.at("calls"), f"expected {accepts('calls')}, got {_type(value)}")
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
                ctx.problems.add((*where, key), unknown_key_message(key, CALL_KEYS))
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
    ctx: CheckContext, tool: str, args: Any, path: DocPath, mode: Any
) -> ArgumentsMatcher | None:
    """Compile one expected-arguments mapping: known argument names, valid specs and mode."""
    from toolproof._matching import compile_arguments

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
            ctx.problems.add(
                (*path, name),
                f"{tool} has no argument {name!r}{did_you_mean(name, params)}; its arguments are: "
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
    from toolproof._matching import OrderMatcher

    matcher = OrderMatcher(expected, mode)
    want = ", ".join(spec.describe() for spec in expected)

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        calls = record.tool_calls
        reasons = matcher(calls)
        if reasons:
            return "fail", (
                f"expected calls [{want}] ({mode}): {'; '.join(reasons)} "
                f"(calls made: {calls_listing(calls, limit=10)})"
            )
        return "pass", f"calls match [{want}] ({mode})"

    return Check(name, f"calls [{want}] ({mode})", evaluate)


@check.compiler(
    "args",
    accepts="a mapping of tool name to expected arguments (or a list of them)",
    schema={
        "type": "object",
        "minProperties": 1,
        "additionalProperties": {
            "anyOf": [{"type": "object"}, {"type": "array", "items": {"type": "object"}}]
        },
    },
)
def _args(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    if not isinstance(value, Mapping) or not value:
        ctx.problems.add(ctx.at("args"), f"expected {accepts('args')}, got {_type(value)}")
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
                    f"(calls made: {calls_listing(calls)})"
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


@check.compiler(
    "args_mode", accepts=f"one of {', '.join(ARG_MODES)}", schema={"enum": list(ARG_MODES)}
)
def _args_mode(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    """``args_mode`` modifies ``args``; :func:`compile_expect` checks it with ``args``."""
    return None


@check.compiler(
    "required_args",
    accepts="a mapping of tool name to a list of argument names",
    schema={
        "type": "object",
        "minProperties": 1,
        "additionalProperties": {"anyOf": [NAME, NAMES]},
    },
)
def _required_args(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    if not isinstance(value, Mapping) or not value:
        ctx.problems.add(
            ctx.at("required_args"), f"expected {accepts('required_args')}, got {_type(value)}"
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


@check.compiler(
    "forbid_extra_args",
    accepts="true, or a list of tool names",
    schema={"anyOf": [{"type": "boolean"}, NAME, NAMES]},
)
def _forbid_extra_args(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    if value is False:
        return None
    if value is True:
        tools = list(ctx.tools or ())
    else:
        names = tool_names(ctx, value, "forbid_extra_args")
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
