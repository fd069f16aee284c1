"""Planning: how many cases and trials detect a change, and the intra-case correlation."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, stats

from toolproof._statistics import (
    cases_needed,
    compare_runs,
    detectable_effect,
    intra_case_correlation,
)


def _variance(drop: float, trials: int, rate: float, icc: float) -> float:
    """Var(case rate difference), by the law of total variance over beta-like case rates."""
    var_p = icc * rate * (1 - rate)
    share = (rate - drop) / rate
    mean_pq = rate * (1 - rate) - var_p  # E[p(1-p)]
    after = (rate - drop) * (1 - rate + drop) - share**2 * var_p  # E[p'(1-p')], p' = share·p
    return (mean_pq + after) / trials + (1 - share) ** 2 * var_p


@given(
    cases=st.integers(2, 5000),
    trials=st.integers(1, 20),
    rate=st.floats(0.05, 0.99),
    icc=st.floats(0, 0.95),
    level=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
    power=st.sampled_from([0.5, 0.8, 0.9]),
)
def test_detectable_effect_solves_the_power_equation(
    cases: int, trials: int, rate: float, icc: float, level: float, power: float
) -> None:
    """The drop where a continuity-corrected z-test reaches ``power`` (solved by scipy)."""
    z = stats.norm.ppf(0.5 + level / 2) + stats.norm.ppf(power)

    def short(drop: float) -> float:
        se = math.sqrt(_variance(drop, trials, rate, icc) / cases)
        return drop - z * se - 1 / (cases * trials)

    got = detectable_effect(cases, trials, rate=rate, icc=icc, level=level, power=power)
    if short(rate) < 0:
        assert got == math.inf
        return
    assert got == pytest.approx(optimize.brentq(short, 0, rate, xtol=1e-14), abs=1e-9)


def test_a_design_too_small_for_any_drop_says_infinity() -> None:
    assert detectable_effect(1, 1) == math.inf
    assert detectable_effect(1, 1, rate=0.9, icc=0.9) == math.inf


@given(
    data=st.data(),
    trials=st.integers(1, 10),
    rate=st.floats(0.05, 0.99),
    icc=st.floats(0, 0.9),
)
def test_cases_needed_is_the_smallest_design_that_detects_the_effect(
    data: st.DataObject, trials: int, rate: float, icc: float
) -> None:
    effect = data.draw(st.floats(0.01, rate))
    cases = cases_needed(effect, trials, rate=rate, icc=icc)
    assert detectable_effect(cases, trials, rate=rate, icc=icc) <= effect + 1e-9
    if cases > 1:
        assert detectable_effect(cases - 1, trials, rate=rate, icc=icc) > effect - 1e-9


def test_a_ten_point_drop_with_three_trials() -> None:
    """The planning question in the docs, worked by hand (z 0.975 + z 0.8 = 2.8016).

    Rate 0.5, icc 0: variance (0.25 + 0.4 · 0.6) / 3 = 0.1633, c = 2.8016 · √0.1633 = 1.1323,
    √n = (c + √(c² + 4 · 0.1 / 3)) / (2 · 0.1) = 11.61: 134.8 cases.
    """
    assert cases_needed(0.10, 3) == 135
    # τ-bench airline gpt-4o: rate 0.42, icc 0.40. Spread of the rates 0.0974, kept share
    # 0.7619: within 0.3072, variance 0.3072 / 3 + 0.2381² · 0.0974 = 0.1079 -> 91.3 cases.
    assert cases_needed(0.10, 3, rate=0.42, icc=0.4) == 92
    assert cases_needed(0.10, 1, rate=0.42, icc=0.4) == 266  # variance 0.3127 -> 265.1


def _beta_binomial_run(
    rng: random.Random, rates: list[float], trials: int
) -> dict[str, tuple[int, int]]:
    return {
        str(i): (trials, sum(rng.random() < p for _ in range(trials))) for i, p in enumerate(rates)
    }


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("rate", "icc", "trials"), [(0.5, 0.3, 3), (0.8, 0.5, 3)])
def test_the_planned_design_detects_the_drop_about_as_often_as_promised(
    rate: float, icc: float, trials: int
) -> None:
    """Plan for a 10-point drop at 80% power, then simulate that design: about 80%."""
    rng = random.Random(f"{rate}-{icc}-{trials}")
    cases = cases_needed(0.10, trials, rate=rate, icc=icc)
    spread = 1 / icc - 1  # beta(a, b) with a + b = 1/icc - 1 has intra-case correlation icc
    detected = 0
    runs = 150
    for _ in range(runs):
        rates = [rng.betavariate(rate * spread, (1 - rate) * spread) for _ in range(cases)]
        dropped = [p * (1 - 0.10 / rate) for p in rates]  # every case keeps the same share
        result = compare_runs(
            _beta_binomial_run(rng, rates, trials), _beta_binomial_run(rng, dropped, trials)
        )
        detected += result.change == "regressed"
    assert 0.70 * runs <= detected <= 0.92 * runs


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
        (lambda: cases_needed(0.3, 3, rate=0.2), "effect must be at most the pass rate 0.2"),
        (lambda: cases_needed(0.1, 0), "trials must be a positive integer, got 0"),
        (lambda: intra_case_correlation([(3, 1)]), "needs two cases"),
        (lambda: intra_case_correlation([(1, 1), (1, 0)]), "needs two cases and a case with two"),
    ],
)
def test_bad_input_gets_one_clear_message(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]
