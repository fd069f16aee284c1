"""Sequential trials: stop when the verdict is known, and agree with running every trial."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolproof._statistics import binomial_interval, sequential_verdict


def _stop(
    outcomes: list[bool], min_passes: int, level: float | None, peek: bool = False
) -> tuple[str, int]:
    """Run trials one by one until a verdict: (verdict, trials used).

    ``peek``: instead of the confidence sequence, stop as soon as a fixed-sample Wilson
    interval excludes the threshold (the repeated looking this module avoids).
    """
    max_trials = len(outcomes)
    passes = 0
    for trials, passed in enumerate(outcomes, 1):
        passes += passed
        verdict = sequential_verdict(
            passes,
            trials,
            max_trials=max_trials,
            min_passes=min_passes,
            level=None if peek else level,
        )
        if peek and verdict == "continue":
            interval = binomial_interval(passes, trials)
            theta = min_passes / max_trials
            if interval.low > theta or interval.high < theta:
                verdict = "pass" if interval.low > theta else "fail"
        if verdict != "continue":
            return verdict, trials
    raise AssertionError("no verdict after the last trial")


@pytest.mark.parametrize("max_trials", range(1, 11))
def test_exact_stops_agree_with_the_full_run_for_every_sequence(max_trials: int) -> None:
    """Every sequence of outcomes, every rule "m of n": the early verdict is the full one."""
    for min_passes in range(1, max_trials + 1):
        for outcomes in itertools.product([True, False], repeat=max_trials):
            verdict, used = _stop(list(outcomes), min_passes, None)
            assert verdict == ("pass" if sum(outcomes) >= min_passes else "fail")
            if min_passes == max_trials and not all(outcomes):
                assert used == outcomes.index(False) + 1  # "all pass" stops at the first failure


def test_the_start_and_the_cap() -> None:
    assert sequential_verdict(0, 0, max_trials=5, min_passes=5) == "continue"
    assert sequential_verdict(4, 5, max_trials=5, min_passes=4) == "pass"
    assert sequential_verdict(3, 5, max_trials=5, min_passes=4) == "fail"
    assert sequential_verdict(3, 3, max_trials=5, min_passes=5) == "continue"
    # 8 passes in a row show a rate above one half at 95%: stop long before the 50th trial.
    assert sequential_verdict(7, 7, max_trials=100, min_passes=50) == "continue"
    assert sequential_verdict(8, 8, max_trials=100, min_passes=50) == "pass"
    assert sequential_verdict(0, 8, max_trials=100, min_passes=50) == "fail"
    assert sequential_verdict(8, 8, max_trials=100, min_passes=50, level=None) == "continue"


@pytest.mark.timeout(300)
def test_looking_after_every_trial_does_not_inflate_errors() -> None:
    """A case exactly at the threshold: the confidence sequence rarely stops before the cap."""
    rng = random.Random(11)
    runs, max_trials = 300, 300
    early = peeked_early = 0
    for _ in range(runs):
        outcomes = [rng.random() < 0.5 for _ in range(max_trials)]
        # Stops before the exact stops could happen are the confident ones.
        early += _stop(outcomes, 150, 0.95)[1] < 150
        peeked_early += _stop(outcomes, 150, 0.95, peek=True)[1] < 150
    assert early <= 0.05 * runs  # Ville's inequality: at most 5%, however often we look
    assert peeked_early >= 0.2 * runs  # a fixed-sample interval checked each time: far more


def _realistic_rate(rng: random.Random) -> float:
    """Most cases nearly always pass or nearly always fail; some in between."""
    draw = rng.random()
    if draw < 0.45:
        return rng.uniform(0.95, 1.0)
    if draw < 0.70:
        return rng.uniform(0.0, 0.05)
    return rng.uniform(0.05, 0.95)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("max_trials", "min_passes"), [(5, 5), (10, 8), (20, 10), (50, 40)])
def test_early_verdicts_agree_and_save_trials_on_a_realistic_mix(
    max_trials: int, min_passes: int
) -> None:
    rng = random.Random(max_trials * 100 + min_passes)
    cases = 1500
    agree = used = 0
    for _ in range(cases):
        rate = _realistic_rate(rng)
        outcomes = [rng.random() < rate for _ in range(max_trials)]
        verdict, trials = _stop(outcomes, min_passes, 0.95)
        agree += verdict == ("pass" if sum(outcomes) >= min_passes else "fail")
        used += trials
    assert agree >= 0.95 * cases
    assert used <= 0.70 * cases * max_trials


@given(
    max_trials=st.integers(1, 200),
    data=st.data(),
    level=st.one_of(st.none(), st.floats(0.5, 0.999)),
)
def test_a_verdict_once_reached_does_not_change(
    max_trials: int, data: st.DataObject, level: float | None
) -> None:
    """Exact stops are final: more passes never turn a pass into a fail, and vice versa."""
    min_passes = data.draw(st.integers(1, max_trials))
    trials = data.draw(st.integers(0, max_trials))
    passes = data.draw(st.integers(0, trials))
    verdict = sequential_verdict(
        passes, trials, max_trials=max_trials, min_passes=min_passes, level=level
    )
    if passes >= min_passes:
        assert verdict == "pass"
    elif passes + max_trials - trials < min_passes:
        assert verdict == "fail"
    elif trials == max_trials:
        raise AssertionError("the cap always decides")
    if verdict == "pass" and passes < min_passes:  # a confident pass: the rate is above
        assert passes / trials > min_passes / max_trials
    if verdict == "fail" and passes + max_trials - trials >= min_passes:
        assert passes / trials < min_passes / max_trials


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"passes": 3, "trials": 2}, "got passes=3, trials=2"),
        ({"passes": -1}, "got passes=-1, trials=2"),
        ({"trials": 11}, r"need 0 <= passes <= trials <= max_trials=10"),
        ({"min_passes": 0}, "min_passes must be between 1 and max_trials=10, got 0"),
        ({"min_passes": 11}, "min_passes must be between 1 and max_trials=10, got 11"),
        ({"passes": 1, "trials": 0}, "got passes=1, trials=0"),
        ({"level": 1.0}, "level must be a number between 0 and 1"),
        ({"max_trials": 0, "min_passes": 0}, "min_passes must be between 1 and max_trials=0"),
    ],
)
def test_bad_input_gets_one_clear_message(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"passes": 1, "trials": 2, "max_trials": 10, "min_passes": 5}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        sequential_verdict(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["passes", "trials", "max_trials", "min_passes"])
def test_counts_must_be_integers(name: str) -> None:
    arguments: dict[str, object] = {"passes": 1, "trials": 2, "max_trials": 10, "min_passes": 5}
    arguments[name] = 2.0
    with pytest.raises((TypeError, ValueError), match=name):
        sequential_verdict(**arguments)  # type: ignore[arg-type]


def test_the_confident_stop_uses_the_stated_level() -> None:
    # 5 of 5 at a one-half threshold: evidence (1/6) / (1/32) = 5.33 ≥ 1/0.2 but < 1/0.05.
    assert math.isclose(math.exp(-math.log(6) + 5 * math.log(2)), 32 / 6)
    assert sequential_verdict(5, 5, max_trials=100, min_passes=50, level=0.8) == "pass"
    assert sequential_verdict(5, 5, max_trials=100, min_passes=50, level=0.95) == "continue"
