"""Conformance with agentevals' trajectory match evaluator: 3,232 recorded verdicts.

``agentevals_cases.jsonl`` (``tests/data/conformance``) holds 202 trajectory pairs, each judged
by ``agentevals==0.0.9`` under 4 trajectory modes x 4 argument modes. Every verdict is
recomputed with :func:`toolproof.evals.match_trajectory` configured to the same rule (see
``convert``) and must agree, except the deliberate differences listed below with their reason
(also in ``docs/matching.md``). Any other disagreement fails, and so does a listed difference
that stops being one.
"""

from __future__ import annotations

import collections
import json
from typing import Any

import pytest

from _shared import shared_path
from toolproof import Message, ToolCall
from toolproof.evals import match_trajectory

TRAJECTORY_MODES = ("strict", "unordered", "subset", "superset")
ARGS_MODES = ("exact", "ignore", "subset", "superset")

# agentevals names subset/superset from the *actual* trajectory's side and, except in its own
# "subset" trajectory mode (where it swaps the arguments of its matcher), from the actual
# arguments' side too; toolproof names them from the *expectation's* side. So the names flip:
_FLIP = {"exact": "exact", "ignore": "ignore", "subset": "superset", "superset": "subset"}
_SAME = {mode: mode for mode in ARGS_MODES}


def convert(trajectory_mode: str) -> list[tuple[str, dict[str, str]]]:
    """agentevals' trajectory mode -> the toolproof (order, argument-mode map) checks that
    express the same rule; all of them must pass."""
    if trajectory_mode == "strict":
        return [("strict", _FLIP)]
    if trajectory_mode == "superset":  # actual ⊇ reference: every expected call was made
        return [("subset", _FLIP)]
    if trajectory_mode == "subset":  # actual ⊆ reference: every actual call was expected
        return [("superset", _SAME)]
    # unordered = superset(actual, reference) and superset(reference, actual): both directions
    return [("subset", _FLIP), ("superset", _SAME)]


BOOL_IS_NOT_A_NUMBER = (
    "toolproof compares arguments as JSON values, where true is not 1; agentevals uses Python "
    "equality, where True == 1 (1 == 1.0 holds in both)"
)
GREEDY_PAIRING = (
    "agentevals pairs calls greedily (first unused candidate) and misses the valid pairing of "
    "f{x:1} and f{x:1,y:2} with their partners; toolproof pairs by maximum bipartite matching"
)

#: (case_id, agentevals trajectory mode, agentevals args mode) -> why toolproof disagrees.
DELIBERATE_DIFFERENCES: dict[tuple[str, str, str], str] = {
    **{
        ("synthetic_edge::bool_vs_int_arg", trajectory, args): BOOL_IS_NOT_A_NUMBER
        for trajectory in TRAJECTORY_MODES
        for args in ("exact", "subset", "superset")
    },
    **{
        ("synthetic_edge::greedy_superset_args", trajectory, args): GREEDY_PAIRING
        for trajectory, args in [
            ("unordered", "subset"),
            ("unordered", "superset"),
            ("subset", "subset"),
            ("superset", "superset"),
        ]
    },
    **{
        ("synthetic_edge::greedy_subset_args", trajectory, args): GREEDY_PAIRING
        for trajectory, args in [
            ("unordered", "subset"),
            ("unordered", "superset"),
            ("subset", "superset"),
            ("superset", "subset"),
        ]
    },
}


@pytest.fixture(scope="module")
def cases() -> list[dict[str, Any]]:
    path = shared_path("conformance", "agentevals_cases.jsonl")
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def ours(
    case: dict[str, Any],
    trajectory_mode: str,
    args_mode: str,
    actual: list[Any] | None = None,
) -> bool:
    overrides = case["tool_args_match_overrides"] or {}
    ok = True
    for order, names in convert(trajectory_mode):
        by_tool = {
            tool: names[value] if isinstance(value, str) else value
            for tool, value in overrides.items()
        }
        verdict = match_trajectory(
            case["expected"],
            case["actual"] if actual is None else actual,
            order=order,  # type: ignore[arg-type]
            args=names[args_mode],  # type: ignore[arg-type]
            args_by_tool=by_tool or None,
        )
        ok = ok and verdict.ok
        assert verdict.ok == (verdict.reasons == [])
    return ok


def test_the_material_is_complete(cases: list[dict[str, Any]]) -> None:
    assert len(cases) == 202
    verdicts = [
        case["verdicts"][t][a] for case in cases for t in TRAJECTORY_MODES for a in ARGS_MODES
    ]
    assert len(verdicts) == 3232


def test_agrees_with_agentevals_on_every_verdict_but_the_listed_ones(
    cases: list[dict[str, Any]],
) -> None:
    disagreements = {}
    for case in cases:
        for trajectory in TRAJECTORY_MODES:
            for args in ARGS_MODES:
                recorded = case["verdicts"][trajectory][args]
                if ours(case, trajectory, args) != recorded:
                    disagreements[case["case_id"], trajectory, args] = recorded
    unexpected = {k: v for k, v in disagreements.items() if k not in DELIBERATE_DIFFERENCES}
    assert not unexpected, f"{len(unexpected)} undocumented disagreements: {unexpected}"
    assert set(disagreements) == set(DELIBERATE_DIFFERENCES)
    assert len(disagreements) == 20  # 3,212 of 3,232 verdicts agree


def test_every_mode_combination_agrees_outside_the_documented_cases(
    cases: list[dict[str, Any]],
) -> None:
    agree: collections.Counter[tuple[str, str]] = collections.Counter()
    for case in cases:
        for trajectory in TRAJECTORY_MODES:
            for args in ARGS_MODES:
                if (case["case_id"], trajectory, args) in DELIBERATE_DIFFERENCES:
                    continue
                agree[trajectory, args] += (
                    ours(case, trajectory, args) == (case["verdicts"][trajectory][args])
                )
    documented = collections.Counter((t, a) for _, t, a in DELIBERATE_DIFFERENCES)
    assert {key: agree[key] + documented[key] for key in agree} == {
        (t, a): 202 for t in TRAJECTORY_MODES for a in ARGS_MODES
    }


def test_the_greedy_cases_have_a_valid_pairing(cases: list[dict[str, Any]]) -> None:
    by_id = {case["case_id"]: case for case in cases}
    for case_id, trajectory, args in DELIBERATE_DIFFERENCES:
        case = by_id[case_id]
        if "greedy" in case_id:
            assert case["verdicts"][trajectory][args] is False
            assert ours(case, trajectory, args) is True
        else:
            assert case["verdicts"][trajectory][args] is True
            assert ours(case, trajectory, args) is False


def test_message_objects_give_the_same_verdicts(cases: list[dict[str, Any]]) -> None:
    def to_messages(raw: list[dict[str, Any]]) -> list[Message]:
        out = []
        for m in raw:
            calls = [
                ToolCall.from_json_arguments(
                    c["function"]["name"], c["function"]["arguments"], c.get("id", "")
                )
                for c in m.get("tool_calls") or ()
            ]
            out.append(Message(role=m["role"], content=m.get("content"), tool_calls=calls))
        return out

    for case in cases[::5]:
        actual = to_messages(case["actual"])
        for trajectory in TRAJECTORY_MODES:
            assert ours(case, trajectory, "exact", actual) == ours(case, trajectory, "exact")
