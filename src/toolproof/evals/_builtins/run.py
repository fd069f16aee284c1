"""Checks of how the run went: tool errors, how it stopped, and its limits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from toolproof._filemodel import FileModel
from toolproof._messages import error_message
from toolproof.evals._builtins._specs import Expected, Texts, one_or_many, switch
from toolproof.evals._checks import STOP_REASONS, CheckStatus, SessionRecord, answer_text, check

_NO_TOOL_ERRORS = "true, or {allow: [tool names or error types]}"


class ToolErrors(FileModel):
    """Tool errors that do not fail the check, by tool name or error type."""

    unknown_keys: ClassVar[Callable[[list[Any], list[str]], str] | None] = lambda keys, allowed: (
        f"expected {_NO_TOOL_ERRORS}"
    )
    missing: ClassVar[dict[str, str]] = {"allow": f"expected {_NO_TOOL_ERRORS}"}

    allow: Texts


@check(
    "no_tool_errors",
    spec=Annotated[
        ToolErrors | None,
        BeforeValidator(
            switch(lambda: ToolErrors.model_construct(allow=[]), _NO_TOOL_ERRORS),
            json_schema_input_type=bool | ToolErrors,
        ),
    ],
    accepts=_NO_TOOL_ERRORS,
    describe=lambda v: "no tool errors" + (f" except {', '.join(v.allow)}" if v.allow else ""),
)
def _no_tool_errors(record: SessionRecord, value: ToolErrors) -> tuple[CheckStatus, str]:
    from toolproof.server._conversation import results_unseen

    allow = value.allow
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
    return "pass", "no tool returned an error" + (f" outside {', '.join(allow)}" if allow else "")


StopReason = Literal["final", "max_steps", "budget", "repeated_call", "cancelled", "error"]


def _stop_reasons(reasons: list[str]) -> list[str]:
    from toolproof._filemodel import problem

    bad = [r for r in reasons if r not in STOP_REASONS]
    if bad:
        raise problem(
            f"unknown stop reason {', '.join(map(repr, bad))}; allowed: {', '.join(STOP_REASONS)}"
        )
    return reasons


@check(
    "stop_reason",
    spec=Annotated[
        list[str],
        one_or_many("a string or a list of strings", StopReason),
        AfterValidator(_stop_reasons),
    ],
    accepts=f"one of {', '.join(STOP_REASONS)}, or a list of them",
    describe=lambda reasons: f"stops with {' or '.join(reasons)}",
)
def _stop_reason(record: SessionRecord, reasons: list[str]) -> tuple[CheckStatus, str]:
    actual = record.stop_reason
    if actual not in reasons:
        detail = record.traces[-1].stop_detail if record.traces else None
        return "fail", (
            f"expected the run to stop with {' or '.join(reasons)}, it stopped with "
            f"{actual}" + (f" ({detail})" if detail else "")
        )
    return "pass", f"stopped with {actual}"


def _limit(
    key: str, what: str, read: Callable[[SessionRecord], float | None], words: str, **bounds: float
) -> None:
    integer = "ge" in bounds  # counts; the others (cost, seconds) are real numbers
    kind = int if integer else float
    spec = Annotated[kind, Field(**bounds), Expected(words)]  # type: ignore[valid-type]

    def shown(limit: float) -> str:
        return f"{limit:g}"

    def limit_check(record: SessionRecord, limit: float) -> tuple[CheckStatus, str]:
        actual = read(record)
        if actual is None:
            return "skip", f"{what} unknown (no price for model {record.traces[-1].model!r}?)"
        text = f"{actual:.6f}".rstrip("0").rstrip(".") if not integer else str(int(actual))
        if actual > limit:
            return "fail", f"{what} was {text}, expected at most {shown(limit)}"
        return "pass", f"{what} {text} <= {shown(limit)}"

    check(key, spec=spec, describe=lambda limit: f"{what} <= {shown(limit)}")(limit_check)


_limit("max_steps", "model calls", lambda r: r.steps, "a positive integer (model calls)", ge=1)
_limit("max_tool_calls", "tool calls", lambda r: len(r.tool_calls), "a non-negative integer", ge=0)
_limit(
    "max_tokens",
    "tokens",
    lambda r: r.usage.total_tokens,
    "a positive integer (input + output tokens)",
    ge=1,
)
_limit("max_cost", "cost (USD)", lambda r: r.cost, "a positive number (USD)", gt=0)
_limit(
    "max_latency_s",
    "run time (s)",
    lambda r: r.duration_ms / 1000,
    "a positive number of seconds",
    gt=0,
)
