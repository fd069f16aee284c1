"""Checks of how the run went: tool errors, how it stopped, and its limits."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from toolproof._messages import error_message
from toolproof.evals._builtins._schemas import TEXTS
from toolproof.evals._checks import (
    STOP_REASONS,
    Check,
    CheckContext,
    CheckStatus,
    SessionRecord,
    accepts,
    answer_text,
    check,
    number_value,
    string_list,
)

_LIMITS = {
    "max_steps": "a positive integer (model calls)",
    "max_tool_calls": "a non-negative integer",
    "max_tokens": "a positive integer (input + output tokens)",
    "max_cost": "a positive number (USD)",
    "max_latency_s": "a positive number of seconds",
}


@check.compiler(
    "no_tool_errors",
    accepts="true, or {allow: [tool names or error types]}",
    schema={
        "anyOf": [
            {"type": "boolean"},
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["allow"],
                "properties": {"allow": TEXTS},
            },
        ]
    },
)
def _no_tool_errors(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    allow: list[str] = []
    if value is False:
        return None
    if isinstance(value, Mapping):
        if set(value) != {"allow"}:
            ctx.problems.add(
                ctx.at("no_tool_errors"), "expected true, or {allow: [tool names or error types]}"
            )
            return None
        items = string_list(ctx, value["allow"], "no_tool_errors")
        if items is None:
            return None
        allow = items
    elif value is not True:
        ctx.problems.add(
            ctx.at("no_tool_errors"), f"expected {accepts('no_tool_errors')}, got {value!r}"
        )
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        from toolproof.server._conversation import results_unseen

        unseen = results_unseen(record.traces)
        if unseen is not None:  # never a pass it could not see
            return "inconclusive", f"not checked: {unseen}"
        bad = []
        for call, result in record.calls_and_results():
            if result is None or result.ok:
                continue
            if result.name in allow or (result.error_type or "") in allow:
                continue
            message = answer_text(error_message(result), 120)
            bad.append(f"{call.signature()} -> {result.error_type}: {message}")
        if bad:
            suffix = f" (allowed: {', '.join(allow)})" if allow else ""
            return "fail", "tool errors: " + "; ".join(bad) + suffix
        return "pass", "no tool returned an error" + (
            f" outside {', '.join(allow)}" if allow else ""
        )

    scope = f" except {', '.join(allow)}" if allow else ""
    return Check("no_tool_errors", f"no tool errors{scope}", evaluate)


@check.compiler(
    "stop_reason",
    accepts=f"one of {', '.join(STOP_REASONS)}, or a list of them",
    schema={
        "anyOf": [
            {"enum": list(STOP_REASONS)},
            {"type": "array", "items": {"enum": list(STOP_REASONS)}},
        ]
    },
)
def _stop_reason(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    reasons = string_list(ctx, value, "stop_reason")
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
) -> Callable[[CheckContext, Any, Mapping[str, Any]], Check | None]:
    def build(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
        minimum = 0 if key == "max_tool_calls" else (1 if integer else 1e-12)
        limit = number_value(ctx, value, key, integer=integer, minimum=minimum)
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


for _key, _what, _read, _integer in (
    ("max_steps", "model calls", lambda r: r.steps, True),
    ("max_tool_calls", "tool calls", lambda r: len(r.tool_calls), True),
    ("max_tokens", "tokens", lambda r: r.usage.total_tokens, True),
    ("max_cost", "cost (USD)", lambda r: r.cost, False),
    ("max_latency_s", "run time (s)", lambda r: r.duration_ms / 1000, False),
):
    _minimum = 0 if _key == "max_tool_calls" else None
    _schema: dict[str, Any] = (
        {"type": "integer", "minimum": _minimum if _minimum is not None else 1}
        if _integer
        else {"type": "number", "exclusiveMinimum": 0}
    )
    check.compiler(_key, accepts=_LIMITS[_key], schema=_schema)(
        _limit(_key, _what, _read, integer=_integer)
    )
