"""Trial statistics: pass@k, pass^k, classes, and τ-bench's published figures."""

from __future__ import annotations

import collections
import itertools
import json
import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _shared import shared_path
from toolproof.evals import (
    case_stats,
    classify,
    pass_at_k,
    pass_hat_k,
    suite_stats,
)
from toolproof.evals._stats import CaseStats, SuiteStats


def test_reproduces_tau_bench_airline_pass_hat_k() -> None:
    """τ-bench's leaderboard row for gpt-4o on airline: pass^1..4 = .420 .273 .220 .200."""
    runs = json.loads(
        shared_path("datasets", "tau-bench-airline-gpt4o", "gpt-4o-airline.json").read_text()
    )
    assert len(runs) == 200
    outcomes: dict[int, list[bool]] = collections.defaultdict(list)
    for run in runs:
        outcomes[run["task_id"]].append(run["reward"] == 1)  # τ-bench's success rule
    assert len(outcomes) == 50
    assert {len(trials) for trials in outcomes.values()} == {4}

    suite = suite_stats((len(trials), sum(trials)) for trials in outcomes.values())
    assert [round(suite.pass_hat[k], 3) for k in (1, 2, 3, 4)] == [0.420, 0.273, 0.220, 0.200]
    assert suite.pass_hat[2] == pytest.approx(0.2733333333333333)
    assert (suite.cases, suite.trials, suite.passed) == (50, 200, 84)
    assert suite.pass_rate == pytest.approx(0.42)
    assert suite.stable_pass + suite.stable_fail + suite.flaky == 50
    assert suite.stable_pass == round(suite.pass_hat[4] * 50)  # pass^n counts stable passes
    # pass@k climbs where pass^k falls: the gap is the agent's inconsistency.
    assert all(suite.pass_at[k] < suite.pass_at[k + 1] for k in (1, 2, 3))
    assert all(suite.pass_hat[k] > suite.pass_hat[k + 1] for k in (1, 2, 3))


def test_formulas_on_a_small_case() -> None:
    # 4 trials, 2 passes: of the 6 pairs of trials, 1 has two passes and 5 have at least one.
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)
    assert pass_hat_k(4, 2, 1) == pass_at_k(4, 2, 1) == 0.5
    assert pass_hat_k(4, 3, 3) == pytest.approx(1 / 4)
    assert pass_at_k(10, 1, 5) == pytest.approx(0.5)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_estimators_equal_exhaustive_subset_counts(n: int) -> None:
    for c in range(n + 1):
        trials = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(trials, k))
            all_pass = Fraction(sum(all(s) for s in subsets), len(subsets))
            any_pass = Fraction(sum(any(s) for s in subsets), len(subsets))
            assert pass_hat_k(n, c, k) == pytest.approx(float(all_pass), abs=1e-15)
            assert pass_at_k(n, c, k) == pytest.approx(float(any_pass), abs=1e-15)


def test_edge_cases() -> None:
    # c = 0: nothing passes, however many trials are drawn.
    assert [pass_at_k(5, 0, k) for k in (1, 5)] == [0.0, 0.0]
    assert [pass_hat_k(5, 0, k) for k in (1, 5)] == [0.0, 0.0]
    # c = n: everything passes.
    assert [pass_at_k(5, 5, k) for k in (1, 5)] == [1.0, 1.0]
    assert [pass_hat_k(5, 5, k) for k in (1, 5)] == [1.0, 1.0]
    # k = n: pass^n is "all passed", pass@n is "any passed".
    assert pass_hat_k(3, 2, 3) == 0.0
    assert pass_at_k(3, 1, 3) == 1.0
    # n - c < k: every draw of k contains a pass.
    assert pass_at_k(4, 3, 2) == 1.0


def test_k_larger_than_n_is_an_error_that_says_what_to_do() -> None:
    with pytest.raises(ValueError) as info:
        pass_hat_k(3, 3, 4)
    assert str(info.value) == (
        "k must be between 1 and the number of trials n=3, got k=4: estimating pass@4 or "
        "pass^4 needs at least 4 trials (run with trials >= 4)"
    )
    with pytest.raises(ValueError, match="k must be between 1"):
        pass_at_k(3, 1, 0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 0, 1), "n (the number of trials) must be at least 1, got 0"),
        ((3, 4, 1), "c (the number of passing trials) must be between 0 and n=3, got 4"),
        ((3, -1, 1), "c (the number of passing trials) must be between 0 and n=3, got -1"),
    ],
)
def test_out_of_range_counts(args: tuple[int, int, int], message: str) -> None:
    with pytest.raises(ValueError) as info:
        pass_at_k(*args)
    assert str(info.value) == message


def test_counts_must_be_integers() -> None:
    with pytest.raises(TypeError, match=r"k must be an integer, got 1\.5"):
        pass_hat_k(3, 1, 1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="c must be an integer, got True"):
        classify(3, True)


def test_classify() -> None:
    assert classify(3, 3) == "stable_pass"
    assert classify(3, 0) == "stable_fail"
    assert classify(3, 1) == "flaky"
    assert classify(1, 1) == "stable_pass"
    with pytest.raises(ValueError, match="must be at least 1"):
        classify(0, 0)


def test_case_stats_and_json_form() -> None:
    stats = case_stats(3, 2)
    assert stats == CaseStats(
        n=3,
        c=2,
        pass_rate=2 / 3,
        pass_at={1: 2 / 3, 2: 1.0, 3: 1.0},
        pass_hat={1: 2 / 3, 2: 1 / 3, 3: 0.0},
        classification="flaky",
    )
    assert json.loads(json.dumps(stats.to_dict())) == {
        "n": 3,
        "c": 2,
        "pass_rate": 2 / 3,
        "pass_at_k": {"1": 2 / 3, "2": 1.0, "3": 1.0},
        "pass_hat_k": {"1": 2 / 3, "2": 1 / 3, "3": 0.0},
        "classification": "flaky",
    }


def test_suite_stats_means_and_mixed_trial_counts() -> None:
    suite = suite_stats([(4, 4), case_stats(4, 2), (3, 0)])
    assert (suite.cases, suite.trials, suite.passed) == (3, 11, 6)
    assert sorted(suite.pass_hat) == [1, 2, 3]  # up to the smallest n, so every case counts
    assert suite.pass_hat[2] == pytest.approx((1 + 1 / 6 + 0) / 3)
    assert suite.pass_at[1] == pytest.approx((1 + 0.5 + 0) / 3)
    assert (suite.stable_pass, suite.flaky, suite.stable_fail) == (1, 1, 1)
    assert suite.to_dict()["pass_hat_k"]["2"] == suite.pass_hat[2]
    assert suite_stats([]) == SuiteStats(cases=0, trials=0, passed=0, pass_rate=0.0)


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_estimator_properties(nc: tuple[int, int]) -> None:
    n, c = nc
    hats = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    ats = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert hats[0] == ats[0] == pytest.approx(c / n)
    assert all(0.0 <= h <= a <= 1.0 for h, a in zip(hats, ats, strict=True))
    assert all(x >= y for x, y in itertools.pairwise(hats))  # all-pass gets harder with k
    assert all(x <= y for x, y in itertools.pairwise(ats))  # any-pass gets easier with k
    assert hats[-1] == (1.0 if c == n else 0.0)
    assert ats[-1] == (1.0 if c > 0 else 0.0)
    assert math.isclose(pass_hat_k(n, c, 1) + pass_hat_k(n, n - c, 1), 1.0)
