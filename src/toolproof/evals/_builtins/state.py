"""The check of the final state of stateful mocks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolproof._matching import Matcher

from toolproof._yaml import describe_type as _type
from toolproof.evals._checks import (
    Check,
    CheckContext,
    CheckStatus,
    SessionRecord,
    accepts,
    check,
    value_matcher,
)


@check.compiler(
    "state",
    accepts="a mapping of state path (dotted) to expected value or matcher spec",
    schema={"type": "object", "minProperties": 1},
)
def _state(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    if not isinstance(value, Mapping) or not value:
        ctx.problems.add(ctx.at("state"), f"expected {accepts('state')}, got {_type(value)}")
        return None
    matchers: dict[str, Matcher] = {}
    for key, spec in value.items():
        if not isinstance(key, str):
            ctx.problems.add(ctx.at("state", key), f"state paths are strings, got {key!r}")
            continue
        matcher = value_matcher(ctx, spec, ctx.at("state", key))
        if matcher is not None:
            matchers[key] = matcher
    if len(matchers) != len(value):
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        from toolproof.server._conversation import results_unseen

        unseen = results_unseen(record.traces)
        if unseen is not None:  # the suite's mocks never answered the agent's tools
            return "inconclusive", f"not checked: {unseen}"
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
