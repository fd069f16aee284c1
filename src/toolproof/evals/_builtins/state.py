"""The check of the final state of stateful mocks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from toolproof.evals._builtins._specs import Expected, ValueMatcher
from toolproof.evals._checks import CheckStatus, SessionRecord, check

if TYPE_CHECKING:
    from toolproof._matching import Matcher


def _describe(matchers: Mapping[str, Matcher]) -> str:
    return ", ".join(f"{p} {m.describe()}" for p, m in matchers.items())


@check(
    "state",
    spec=Annotated[
        dict[str, ValueMatcher],
        Field(min_length=1),
        Expected("a mapping of state path (dotted) to expected value or matcher spec", got="type"),
    ],
    describe=_describe,
)
def _state(record: SessionRecord, matchers: dict[str, Matcher]) -> tuple[CheckStatus, str]:
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
            failures.append(f"{path}: missing from the state (keys: {', '.join(map(str, state))})")
            continue
        reason = matcher(actual)
        if reason is not None:
            failures.append(f"{path}: {reason}")
    if failures:
        return "fail", "final state: " + "; ".join(failures)
    return "pass", "final state matches " + _describe(matchers)


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
