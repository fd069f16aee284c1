"""Gates with uncertainty: pass, fail or undecided, read from the interval, in both modes."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from toolproof._statistics import (
    GateDecision,
    binomial_interval,
    gate,
    suite_rate_interval,
)


def test_the_replay_example_is_undecided_and_says_how_many_samples_would_decide() -> None:
    """4.0% failures (8 of 200) against a 5% limit: 95% Wilson 2.0–7.7% straddles the limit."""
    interval = binomial_interval(8, 200)
    advisory = gate(interval, 0.05)
    release = gate(interval, 0.05, mode="release")
    assert (advisory.verdict, advisory.blocks, advisory.mode) == ("undecided", False, "advisory")
    assert (release.verdict, release.blocks) == ("undecided", True)
    assert advisory.bound is None
    assert advisory.needed == 1825  # 1.96² · 0.05 · 0.95 / 0.01², rounded up
    # At that size, with the rate unchanged, the whole interval is below the limit.
    at_needed = binomial_interval(73, 1825)
    assert at_needed.estimate == 0.04
    decided = gate(at_needed, 0.05, mode="release")
    assert (decided.verdict, decided.blocks, decided.bound) == ("pass", False, "high")


def _fractional_wilson(rate: float, n: float, level: float) -> tuple[float, float]:
    """Wilson's bounds for a rate held at ``n`` samples (scipy's normal quantile)."""
    z = stats.norm.ppf(0.5 + level / 2)
    center = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return center - half, center + half


@given(
    data=st.data(),
    trials=st.integers(1, 5000),
    limit=st.floats(0, 1),
    level=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
    mode=st.sampled_from(["advisory", "release"]),
    method=st.sampled_from(["wilson", "clopper-pearson"]),
)
def test_verdicts_follow_the_bounds_in_every_mode(
    data: st.DataObject, trials: int, limit: float, level: float, mode: str, method: str
) -> None:
    failures = data.draw(st.integers(0, trials))
    interval = binomial_interval(failures, trials, level=level, method=method)  # type: ignore[arg-type]
    decision = gate(interval, limit, mode=mode)  # type: ignore[arg-type]
    assert isinstance(decision, GateDecision)
    assert decision.interval is interval and decision.limit == limit
    if interval.low > limit:
        assert (decision.verdict, decision.bound, decision.blocks) == ("fail", "low", True)
    elif interval.high < limit:
        assert (decision.verdict, decision.bound, decision.blocks) == ("pass", "high", False)
    else:
        assert decision.verdict == "undecided" and decision.bound is None
        assert decision.blocks is (mode == "release")
    if decision.verdict != "undecided" or interval.estimate == limit:
        assert decision.needed is None
        return
    if limit < 1e-300 and decision.needed is None:
        return  # (the count, about z²/limit samples, is beyond any float: no count is given)
    assert decision.needed is not None and decision.needed > trials
    if method == "wilson" and 1e-9 < limit < 1 - 1e-9:  # (beyond: float rounding decides)
        # The rate held: the interval excludes the limit at `needed` samples, not one fewer.
        low, high = _fractional_wilson(interval.estimate, decision.needed, level)
        assert high < limit or low > limit
        if decision.needed - 1 > trials:
            low, high = _fractional_wilson(interval.estimate, decision.needed - 1, level)
            assert low <= limit + 1e-12 and high >= limit - 1e-12


def test_a_zero_limit_fails_on_any_failure_and_never_passes() -> None:
    assert gate(binomial_interval(1, 10_000), 0.0).verdict == "fail"
    none = gate(binomial_interval(0, 10_000), 0.0, mode="release")
    assert (none.verdict, none.blocks, none.needed) == ("undecided", True, None)


def _wrong_rate(limit: float, samples: int, mode: str, runs: int, rng: random.Random) -> float:
    """How often a run whose true failure rate is exactly the limit gets the wrong verdict."""
    wrong = 0
    for _ in range(runs):
        failures = sum(rng.random() < limit for _ in range(samples))
        verdict = gate(binomial_interval(failures, samples), limit, mode=mode).verdict  # type: ignore[arg-type]
        wrong += verdict == ("fail" if mode == "advisory" else "pass")
    return wrong / runs


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["advisory", "release"])
def test_a_run_at_the_limit_is_rarely_decided_the_wrong_way(mode: str) -> None:
    """At 95%: a run at the limit is wrongly failed (advisory) or passed (release) ≤ 2.5%."""
    rng = random.Random(7)
    assert _wrong_rate(0.05, 400, mode, 2000, rng) <= 0.04


def test_a_clustered_gate_counts_cases() -> None:
    # 40 cases × 5 trials; 4% of trials fail, all in two cases: the failures are not spread.
    cases = [(5, 4)] * 2 + [(5, 0)] * 38
    clustered = gate(suite_rate_interval(cases), 0.10, mode="release")
    naive = gate(binomial_interval(8, 200), 0.10, mode="release")
    assert naive.verdict == "pass"
    assert clustered.verdict == "undecided" and clustered.blocks
    assert clustered.interval.n == 40
    assert clustered.needed is not None and clustered.needed > 40


@pytest.mark.parametrize("limit", [-0.01, 1.01, math.nan, True, "0.05", None])
def test_a_bad_limit_is_named(limit: object) -> None:
    with pytest.raises(ValueError, match="limit must be a rate between 0 and 1"):
        gate(binomial_interval(1, 10), limit)  # type: ignore[arg-type]


def test_a_bad_mode_is_named() -> None:
    with pytest.raises(ValueError, match="mode must be 'advisory' or 'release', got 'strict'"):
        gate(binomial_interval(1, 10), 0.1, mode="strict")  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [1.8e-271, 1e-200, 1.4e-162, 1e-305])
def test_a_tiny_limit_still_gets_a_sample_count(limit: float) -> None:
    """The squared gap to a tiny limit underflows to 0; the count must not depend on it."""
    from toolproof._statistics import binomial_interval

    decision = gate(binomial_interval(0, 10), limit)
    assert decision.verdict == "undecided"
    assert decision.needed is not None and decision.needed > 1 / limit
