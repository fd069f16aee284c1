"""Plain data of a run comparison's case and of a ranking's scores: every field, by its name.

The JSON of ``toolproof runs compare`` and the retrieval reports hold each of these values
field for field, in the declared order, and nothing else; generated values of every field
(missing counts, undefined metrics, any key text) come back through ``json`` unchanged.
"""

from __future__ import annotations

import json
from dataclasses import fields

from hypothesis import given
from hypothesis import strategies as st

from toolproof._runlog import CHANGE_CLASSES, CaseChange
from toolproof.rag import score_ranking

COUNTS = st.none() | st.integers(min_value=0, max_value=10**6)
VERDICTS = st.none() | st.sampled_from(["pass", "fail", "error", "warn", "skipped"])


@given(
    st.text(),
    st.sampled_from(CHANGE_CLASSES),
    VERDICTS,
    VERDICTS,
    COUNTS,
    COUNTS,
    COUNTS,
    COUNTS,
)
def test_a_case_change_is_written_field_for_field(
    key: str,
    change: str,
    old: str | None,
    new: str | None,
    old_passed: int | None,
    old_trials: int | None,
    new_passed: int | None,
    new_trials: int | None,
) -> None:
    case = CaseChange(key, change, old, new, old_passed, old_trials, new_passed, new_trials)
    data = case.to_dict()
    assert list(data) == [f.name for f in fields(CaseChange)]
    assert data == {f.name: getattr(case, f.name) for f in fields(CaseChange)}
    assert CaseChange(**json.loads(json.dumps(data))) == case


@given(
    st.lists(st.integers(min_value=0, max_value=30), max_size=20),
    st.sets(st.integers(min_value=0, max_value=30), max_size=10),
    st.none() | st.integers(min_value=1, max_value=25),
)
def test_ranking_scores_are_written_field_for_field(
    ranking: list[int], relevant: set[int], k: int | None
) -> None:
    scores = score_ranking(ranking, relevant, k)
    data = scores.to_dict()
    names = [f.name for f in fields(scores)]
    assert list(data) == names
    assert names[:4] == ["k", "retrieved", "relevant", "hits"]
    assert data == {name: getattr(scores, name) for name in names}
    assert json.loads(json.dumps(data)) == data
    if not relevant:
        assert all(data[name] is None for name in names[4:])  # nothing relevant: undefined
