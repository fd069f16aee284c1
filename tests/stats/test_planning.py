"""Planning: how many cases and trials detect a change, and the intra-case correlation."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from toolproof._statistics import (
    cases_needed,
    compare_runs,
    detectable_effect,
    intra_case_correlation,
)


@given(
    cases=st.integers(1, 5000),
    trials=st.integers(1, 20),
    rate=st.floats(0.01, 0.99),
    icc=st.floats(0, 0.95),
    level=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
    power=st.sampled_from([0.5, 0.8, 0.9]),
)
def test_detectable_effect_is_the_normal_approximation(
    cases: int, trials: int, rate: float, icc: float, level: float, power: float
) -> None:
    got = detectable_effect(cases, trials, rate=rate, icc=icc, level=level, power=power)
    se = math.sqrt(2 * rate * (1 - rate) * (1 - icc) / (cases * trials))
    expected = (stats.norm.ppf(0.5 + level / 2) + stats.norm.ppf(power)) * se
    assert got == pytest.approx(expected, rel=1e-12)


@given(
    effect=st.floats(0.01, 0.5),
    trials=st.integers(1, 10),
    rate=st.floats(0.05, 0.95),
    icc=st.floats(0, 0.9),
)
def test_cases_needed_is_the_smallest_design_that_detects_the_effect(
    effect: float, trials: int, rate: float, icc: float
) -> None:
    cases = cases_needed(effect, trials, rate=rate, icc=icc)
    assert detectable_effect(cases, trials, rate=rate, icc=icc) <= effect * (1 + 1e-9)
    if cases > 1:
        assert detectable_effect(cases - 1, trials, rate=rate, icc=icc) > effect


def test_a_ten_point_drop_with_three_trials() -> None:
    """The planning question in the docs: (z 0.975 + z 0.8)² = 7.8489, times the variance."""
    assert cases_needed(0.10, 3) == 131  # 7.8489 · 2 · 0.25 / (3 · 0.01) = 130.8: rate 0.5, icc 0
    # τ-bench airline gpt-4o: rate 0.42, icc 0.40 -> 7.8489 · 2 · 0.2436 · 0.6 / 0.03 = 76.5
    assert cases_needed(0.10, 3, rate=0.42, icc=0.4) == 77
    assert cases_needed(0.10, 1, rate=0.42, icc=0.4) == 230  # three times as many, one trial


def _beta_binomial_run(
    rng: random.Random, rates: list[float], trials: int
) -> dict[str, tuple[int, int]]:
    return {
        str(i): (trials, sum(rng.random() < p for _ in range(trials))) for i, p in enumerate(rates)
    }


@pytest.mark.timeout(300)
def test_the_planned_design_detects_the_effect_about_as_often_as_promised() -> None:
    """Plan for a 10-point drop at 80% power, then simulate that design: about 80%."""
    rng = random.Random(80)
    icc, rate, trials = 0.3, 0.5, 3
    cases = cases_needed(0.10, trials, rate=rate, icc=icc)
    spread = 1 / icc - 1  # beta(a, b) with a + b = 1/icc - 1 has intra-case correlation icc
    detected = 0
    runs = 120
    for _ in range(runs):
        rates = [rng.betavariate(rate * spread, (1 - rate) * spread) for _ in range(cases)]
        dropped = [p * 0.8 for p in rates]  # 10 points off a mean of 0.5
        result = compare_runs(
            _beta_binomial_run(rng, rates, trials), _beta_binomial_run(rng, dropped, trials)
        )
        detected += result.change == "regressed"
    assert 0.65 * runs <= detected <= 0.95 * runs


@pytest.mark.parametrize("icc", [0.1, 0.4, 0.7])
def test_intra_case_correlation_recovers_the_simulated_one(icc: float) -> None:
    rng = random.Random(int(icc * 10))
    spread = 1 / icc - 1
    rates = [rng.betavariate(0.4 * spread, 0.6 * spread) for _ in range(3000)]
    cases = [(5, sum(rng.random() < p for _ in range(5))) for p in rates]
    assert intra_case_correlation(cases) == pytest.approx(icc, abs=0.05)


def test_intra_case_correlation_at_the_extremes() -> None:
    assert intra_case_correlation([(4, 4), (4, 0), (4, 4), (4, 0)]) == 1.0
    assert intra_case_correlation([(4, 4), (4, 4)]) == 0.0  # no variance at all
    assert intra_case_correlation([(4, 2), (4, 2), (4, 2)]) == 0.0  # less spread than chance


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: detectable_effect(0, 3), "cases must be a positive integer, got 0"),
        (lambda: detectable_effect(10, 3, rate=1.0), "rate must be a number between 0 and 1"),
        (lambda: detectable_effect(10, 3, icc=1.0), "icc must be at least 0 and below 1"),
        (lambda: detectable_effect(10, 3, power=1.0), "power must be a number between 0 and 1"),
        (lambda: cases_needed(0.0, 3), "effect must be a number between 0 and 1"),
        (lambda: cases_needed(0.1, 0), "trials must be a positive integer, got 0"),
        (lambda: intra_case_correlation([(3, 1)]), "needs two cases"),
        (lambda: intra_case_correlation([(1, 1), (1, 0)]), "needs two cases and a case with two"),
    ],
)
def test_bad_input_gets_one_clear_message(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]
