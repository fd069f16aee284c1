"""Conformance with BFCL's AST checker: 1,990 recorded verdicts (``tests/data/conformance``).

Every case of ``bfcl_cases.jsonl`` is fed to :func:`toolproof.evals.match_bfcl` and must get
BFCL's own verdict. The only allowed disagreements are listed in ``DELIBERATE_DIFFERENCES``
with their reason (and in ``docs/matching.md``); any other disagreement fails the test, and so
does a listed difference that stops being one.
"""

from __future__ import annotations

import collections
import json
import re
from typing import Any

import pytest

from _shared import shared_path
from toolproof import ToolCall
from toolproof.evals import match_bfcl

#: case_id -> why toolproof deliberately disagrees with BFCL's checker. Empty: the two agree on
#: every recorded case. (toolproof's one deliberate departure from BFCL, pairing parallel
#: calls by maximum matching instead of greedily, never changes a verdict in this sample:
#: its README records no case where greedy pairing rejects a valid permutation.)
DELIBERATE_DIFFERENCES: dict[str, str] = {}

#: For single-call entries, what the first reason must say for each BFCL error type: the
#: reasons name the failing rule the way a person would look for it.
REASON_FOR_ERROR = {
    "simple_function_checker:wrong_count": r"^expected 1 call, got 0$",
    "multiple_function_checker:wrong_count": r"^expected 1 call, got 0$",
    "simple_function_checker:wrong_func_name": r"^expected call \S+\(.*\) was not made",
    "simple_function_checker:missing_required": r"missing argument '\w+' \(expected ",
    "simple_function_checker:missing_optional": r"missing argument '\w+' \(expected ",
    "simple_function_checker:unexpected_param": r"unexpected argument '\w+' = .* \(mode 'exact'",
    "type_error:simple": (
        r"argument '\w+': expected (a|an) (string|integer|number|boolean|array|object)"
    ),
    "value_error:string": (
        r"argument '\w+': expected (one of )?\".*\" ignoring case and the characters"
    ),
    "value_error:others": r"argument '\w+': expected .*, got ",
    "value_error:list/tuple": r"argument '\w+(\[\d+\])*': expected .*, got ",
    "value_error:dict_key": (
        r"argument '\w+': expected one of .*|argument '\w+\.\w+': unexpected key"
    ),
}


@pytest.fixture(scope="module")
def cases() -> list[dict[str, Any]]:
    path = shared_path("conformance", "bfcl_cases.jsonl")
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def ours(case: dict[str, Any], calls: Any = None) -> Any:
    return match_bfcl(
        case["functions"],
        case["possible_answer"],
        case["candidate"] if calls is None else calls,
        # BFCL expects dotted names with underscores from native function-calling models.
        underscore_names=case["bfcl_model_name"].endswith("-FC"),
    )


def test_the_material_is_complete(cases: list[dict[str, Any]]) -> None:
    assert len(cases) == 1990
    verdicts = collections.Counter(case["bfcl_verdict"] for case in cases)
    assert verdicts == {True: 639, False: 1351}


def test_agrees_with_bfcl_on_every_case_but_the_listed_ones(
    cases: list[dict[str, Any]],
) -> None:
    disagreements = {}
    for case in cases:
        verdict = ours(case)
        if verdict.ok != case["bfcl_verdict"]:
            disagreements[case["case_id"]] = (case["bfcl_verdict"], verdict.reasons[:2])
    unexpected = {k: v for k, v in disagreements.items() if k not in DELIBERATE_DIFFERENCES}
    assert not unexpected, f"{len(unexpected)} undocumented disagreements: {unexpected}"
    assert set(disagreements) == set(DELIBERATE_DIFFERENCES)


def test_every_variant_agrees(cases: list[dict[str, Any]]) -> None:
    per_variant: dict[str, collections.Counter[bool]] = collections.defaultdict(collections.Counter)
    for case in cases:
        per_variant[case["variant"]][ours(case).ok == case["bfcl_verdict"]] += 1
    assert len(per_variant) >= 30
    assert {variant: counts[False] for variant, counts in per_variant.items()} == dict.fromkeys(
        per_variant, 0
    )


def test_other_call_forms_give_the_same_verdicts(cases: list[dict[str, Any]]) -> None:
    for case in cases[::7]:
        flat = case["candidate_tool_calls"]
        openai = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for i, c in enumerate(flat)
        ]
        tool_calls = [ToolCall(c["name"], c["arguments"], id=str(i)) for i, c in enumerate(flat)]
        for calls in (flat, openai, tool_calls):
            assert ours(case, calls).ok == case["bfcl_verdict"], case["case_id"]


def test_rejections_explain_themselves(cases: list[dict[str, Any]]) -> None:
    checked = 0
    for case in cases:
        verdict = ours(case)
        if verdict.ok:
            assert verdict.reasons == []
            continue
        assert verdict.reasons, case["case_id"]
        if case["category"] not in ("simple_python", "multiple"):
            continue
        pattern = REASON_FOR_ERROR[case["bfcl_error_type"]]
        assert re.search(pattern, verdict.reasons[0]), (case["case_id"], verdict.reasons[0])
        checked += 1
    assert checked > 400
