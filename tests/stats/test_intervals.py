"""Intervals on rates and means: equal to scipy's, and covering the truth as often as they claim."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from toolproof._statistics import (
    binomial_interval,
    mean_interval,
    suite_rate_interval,
)

LEVELS = [0.5, 0.9, 0.95, 0.99, 0.999]
SCIPY_METHOD = {"wilson": "wilson", "clopper-pearson": "exact"}


def _scipy_interval(passes: int, trials: int, level: float, method: str) -> tuple[float, float]:
    ci = stats.binomtest(passes, trials).proportion_ci(level, method=SCIPY_METHOD[method])
    return float(ci.low), float(ci.high)


@pytest.mark.parametrize("method", ["wilson", "clopper-pearson"])
@pytest.mark.parametrize("level", LEVELS)
def test_binomial_interval_equals_scipy_on_a_grid(method: str, level: float) -> None:
    for trials in [*range(1, 21), 99, 200, 1000]:
        for passes in range(trials + 1) if trials <= 20 else (0, 1, 7, trials // 2, trials):
            got = binomial_interval(passes, trials, level=level, method=method)  # type: ignore[arg-type]
            low, high = _scipy_interval(passes, trials, level, method)
            assert got.low == pytest.approx(low, abs=1e-9), (passes, trials)
            assert got.high == pytest.approx(high, abs=1e-9), (passes, trials)
            assert 0 <= got.low <= got.estimate <= got.high <= 1
            assert (got.level, got.method, got.n) == (level, method, trials)


@given(
    data=st.data(),
    trials=st.integers(1, 100_000),
    level=st.floats(0.5, 0.9999),
    method=st.sampled_from(["wilson", "clopper-pearson"]),
)
def test_binomial_interval_equals_scipy_for_generated_counts(
    data: st.DataObject, trials: int, level: float, method: str
) -> None:
    passes = data.draw(st.integers(0, trials))
    got = binomial_interval(passes, trials, level=level, method=method)  # type: ignore[arg-type]
    low, high = _scipy_interval(passes, trials, level, method)
    assert got.low == pytest.approx(low, abs=1e-9)
    assert got.high == pytest.approx(high, abs=1e-9)


def test_the_replay_gate_example_is_wilson() -> None:
    """8 failures in 200 samples: the Wilson interval is 2.0–7.7%; Clopper–Pearson 1.7–7.7%."""
    wilson = binomial_interval(8, 200)
    assert (round(wilson.low, 3), round(wilson.high, 3)) == (0.020, 0.077)
    exact = binomial_interval(8, 200, method="clopper-pearson")
    assert (round(exact.low, 3), round(exact.high, 3)) == (0.017, 0.077)


def _coverage(trials: int, grid: list[float], method: str, k: int = 1) -> list[float]:
    """P(the interval covers p**k) for each p, summed over every outcome: no simulation."""
    intervals = [
        binomial_interval(passes, trials, method=method)  # type: ignore[arg-type]
        for passes in range(trials + 1)
    ]
    return [
        sum(
            stats.binom.pmf(passes, trials, p)
            for passes, ci in enumerate(intervals)
            if ci.low**k <= p**k <= ci.high**k
        )
        for p in grid
    ]


@pytest.mark.parametrize("trials", [5, 20, 100])
def test_binomial_coverage(trials: int) -> None:
    grid = [i / 50 for i in range(1, 50)]
    exact = _coverage(trials, grid, "clopper-pearson")
    wilson = _coverage(trials, grid, "wilson")
    assert min(exact) >= 0.95 - 1e-9  # exact: never below the level
    assert sum(wilson) / len(wilson) >= 0.94  # Wilson: about the level on average
    assert min(wilson) >= 0.80  # and never far below (its known dips at the edges)


@pytest.mark.parametrize("k", [2, 4])
def test_powers_of_the_bounds_cover_pass_hat_k(k: int) -> None:
    grid = [i / 20 for i in range(1, 20)]
    assert min(_coverage(10, grid, "clopper-pearson", k)) >= 0.95 - 1e-9


@given(values=st.lists(st.floats(0, 1), min_size=2, max_size=300), level=st.floats(0.5, 0.999))
def test_mean_interval_equals_scipy_t_interval(values: list[float], level: float) -> None:
    got = mean_interval(values, level=level)
    assert got.estimate == pytest.approx(float(np.mean(values)), abs=1e-12)
    if len(set(values)) == 1:
        assert got.low == got.high == got.estimate
        return
    with warnings.catch_warnings():  # scipy warns about nearly equal values, and still answers
        warnings.simplefilter("ignore", RuntimeWarning)
        ci = stats.ttest_1samp(values, 0.0).confidence_interval(level)
    assert got.low == pytest.approx(max(0.0, float(ci.low)), abs=1e-9)
    assert got.high == pytest.approx(min(1.0, float(ci.high)), abs=1e-9)
    assert got.method == "student-t"


def test_mean_interval_of_one_value_is_the_bounds() -> None:
    got = mean_interval([0.3], bounds=(0.0, 5.0))
    assert (got.low, got.high, got.estimate) == (0.0, 5.0, 0.3)


def _cluster_oracle(cases: list[tuple[int, int]], level: float) -> tuple[float, float]:
    """The same interval built from numpy and scipy: sandwich standard error, t, Wilson."""
    rates = np.array([c / n for n, c in cases])
    m, total = len(cases), sum(n for n, _ in cases)
    p = rates.mean()
    variance = rates.var(ddof=1) / m
    n_eff = total if variance == 0 else min(total, p * (1 - p) / variance)
    z = stats.norm.ppf(0.5 + level / 2)
    n_eff *= (z / stats.t.ppf(0.5 + level / 2, m - 1)) ** 2
    center = (p + z * z / (2 * n_eff)) / (1 + z * z / n_eff)
    half = z / (1 + z * z / n_eff) * math.sqrt(p * (1 - p) / n_eff + z * z / (4 * n_eff**2))
    return max(0.0, center - half), min(1.0, center + half)


@given(
    cases=st.lists(
        st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))),
        min_size=2,
        max_size=80,
    ),
    level=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_suite_rate_interval_equals_its_scipy_construction(
    cases: list[tuple[int, int]], level: float
) -> None:
    got = suite_rate_interval(cases, level=level)
    low, high = _cluster_oracle(cases, level)
    assert got.low == pytest.approx(low, abs=1e-9)
    assert got.high == pytest.approx(high, abs=1e-9)
    assert got.n == len(cases)
    assert got.effective_n <= sum(n for n, _ in cases)


@given(
    trials=st.integers(2, 10),
    passes=st.lists(st.integers(0, 10), min_size=2, max_size=60),
)
def test_cluster_standard_error_is_the_sandwich_one(trials: int, passes: list[int]) -> None:
    """Equal trials per case: the spread of case rates is the trial-level cluster-robust SE."""
    cases = [(trials, min(c, trials)) for c in passes]
    y = np.concatenate([[1.0] * c + [0.0] * (trials - c) for _, c in cases])
    m, total = len(cases), len(y)
    residual_sums = np.array([sum(y[i * trials : (i + 1) * trials] - y.mean()) for i in range(m)])
    sandwich = (residual_sums**2).sum() / total**2 * m / (m - 1)  # CR1 for a mean
    rates = np.array([c / n for n, c in cases])
    assert rates.var(ddof=1) / m == pytest.approx(sandwich, rel=1e-9, abs=1e-15)


def test_many_trials_of_few_cases_do_not_look_like_many_samples() -> None:
    cases = [(500, 450), (500, 50)]  # two cases, 1,000 trials, rates 0.9 and 0.1
    naive = binomial_interval(500, 1000)
    clustered = suite_rate_interval(cases)
    assert naive.high - naive.low < 0.07
    assert clustered.high - clustered.low > 0.9
    assert clustered.effective_n < 1


def _simulate_coverage(
    rng: random.Random, rates: list[float], trials: int, runs: int
) -> tuple[float, float]:
    """Share of runs whose clustered / naive interval covers the mean of the case rates.

    The cases are drawn afresh each run from ``rates``: the suite is a sample of tasks.
    """
    covered = naive_covered = 0
    cases_per_run = 30
    for _ in range(runs):
        drawn = [rng.choice(rates) for _ in range(cases_per_run)]
        truth = sum(rates) / len(rates)
        cases = [(trials, sum(rng.random() < p for _ in range(trials))) for p in drawn]
        ci = suite_rate_interval(cases)
        covered += ci.low <= truth <= ci.high
        naive = binomial_interval(sum(c for _, c in cases), trials * cases_per_run)
        naive_covered += naive.low <= truth <= naive.high
    return covered / runs, naive_covered / runs


@pytest.mark.timeout(120)
def test_clustered_interval_covers_where_the_naive_one_does_not() -> None:
    rng = random.Random(20261203)
    mostly_stable = [1.0] * 40 + [0.0] * 30 + [0.95, 0.9, 0.5, 0.3, 0.1, 0.05] * 5
    covered, naive = _simulate_coverage(rng, mostly_stable, trials=10, runs=1000)
    assert covered >= 0.92, covered
    assert naive <= 0.75, naive  # ten trials of a case counted as ten samples


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: binomial_interval(3, 2), "passes must be between 0 and trials=2"),
        (lambda: binomial_interval(0, 0), "trials must be at least 1"),
        (lambda: binomial_interval(-1, 5), "passes must be between"),
        (lambda: binomial_interval(1, 5, level=1.0), "level must be a number between 0 and 1"),
        (lambda: binomial_interval(1, 5, level=95), "level must be a number between 0 and 1"),
        (lambda: binomial_interval(1, 5, method="wald"), "method must be 'wilson'"),  # type: ignore[arg-type]
        (lambda: suite_rate_interval([]), "at least one case"),
        (lambda: suite_rate_interval([(3, 1), (2, 5)]), "case 1: passes must be between"),
        (lambda: mean_interval([]), "at least one value"),
    ],
)
def test_bad_input_gets_one_clear_message(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]


@given(value=st.one_of(st.booleans(), st.floats(), st.text(max_size=3), st.none()))
def test_counts_must_be_integers(value: object) -> None:
    with pytest.raises(TypeError, match="trials must be an integer"):
        binomial_interval(1, value)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="passes must be an integer"):
        binomial_interval(value, 5)  # type: ignore[arg-type]


def test_a_suite_case_that_is_not_a_pair_is_named() -> None:
    with pytest.raises(TypeError, match=r"case 1: expected a \(trials, passes\) pair, got 5"):
        suite_rate_interval([(3, 1), 5])  # type: ignore[list-item]
