"""Paired comparison of two runs: exact p-values, corrections, and what noise is called."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import toolproof._statistics as statistics_module
from toolproof._statistics import Comparison, _adjust, compare_runs

counts = st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n)))


@given(baseline=counts, candidate=counts)
def test_a_case_alone_gets_fishers_exact_p_value(
    baseline: tuple[int, int], candidate: tuple[int, int]
) -> None:
    (n_a, c_a), (n_b, c_b) = baseline, candidate
    result = compare_runs({"case": baseline}, {"case": candidate})
    expected = stats.fisher_exact([[c_a, n_a - c_a], [c_b, n_b - c_b]]).pvalue
    assert result.cases[0].p_value == pytest.approx(expected, abs=1e-9)
    # One case: the suite test is the same test.
    assert result.p_value == pytest.approx(expected, abs=1e-9)


@given(outcomes=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=400))
def test_one_trial_per_case_is_mcnemars_exact_test(outcomes: list[tuple[bool, bool]]) -> None:
    baseline = {str(i): (1, int(a)) for i, (a, _) in enumerate(outcomes)}
    candidate = {str(i): (1, int(b)) for i, (_, b) in enumerate(outcomes)}
    result = compare_runs(baseline, candidate)
    regressed = sum(a and not b for a, b in outcomes)
    improved = sum(b and not a for a, b in outcomes)
    discordant = regressed + improved
    expected = stats.binomtest(regressed, discordant, 0.5).pvalue if discordant else 1.0
    assert result.test == "mcnemar-exact"
    assert result.p_value == pytest.approx(expected, abs=1e-9)
    # A case with one trial per run is never evidence on its own.
    assert all(case.p_value == 1.0 and case.change == "no evidence" for case in result.cases)
    if result.change != "no evidence":
        assert result.change == ("regressed" if regressed > improved else "improved")


def _enumerated_p_value(rows: list[tuple[int, int, int, int]]) -> Fraction:
    """The exact test by its definition: every way each case's outcomes split between runs."""
    per_case = []
    for n_a, c_a, n_b, c_b in rows:
        pooled = [1] * (c_a + c_b) + [0] * (n_a + n_b - c_a - c_b)
        per_case.append(
            [
                sum(pooled[i] for i in chosen)
                for chosen in itertools.combinations(range(len(pooled)), n_b)
            ]
        )
    totals: dict[int, int] = {}
    for split in itertools.product(*per_case):
        totals[sum(split)] = totals.get(sum(split), 0) + 1
    everything = sum(totals.values())
    observed = totals[sum(row[3] for row in rows)]
    return Fraction(sum(count for count in totals.values() if count <= observed), everything)


small_case = st.tuples(st.integers(1, 3), st.integers(1, 3)).flatmap(
    lambda ns: st.tuples(
        st.just(ns[0]), st.integers(0, ns[0]), st.just(ns[1]), st.integers(0, ns[1])
    )
)


@given(rows=st.lists(small_case, min_size=1, max_size=3))
def test_the_suite_p_value_equals_full_enumeration(rows: list[tuple[int, int, int, int]]) -> None:
    baseline = {str(i): (n_a, c_a) for i, (n_a, c_a, _, _) in enumerate(rows)}
    candidate = {str(i): (n_b, c_b) for i, (_, _, n_b, c_b) in enumerate(rows)}
    result = compare_runs(baseline, candidate)
    assert result.p_value == pytest.approx(float(_enumerated_p_value(rows)), abs=1e-9)


@given(p_values=st.lists(st.floats(0, 1), min_size=1, max_size=60))
def test_benjamini_hochberg_equals_scipy(p_values: list[float]) -> None:
    expected = stats.false_discovery_control(p_values, method="bh")
    assert _adjust(p_values, "bh") == pytest.approx(list(expected), abs=1e-12)


@given(
    p_values=st.lists(st.floats(0, 1), min_size=1, max_size=60),
    alpha=st.sampled_from([0.01, 0.05, 0.1, 0.2]),
)
def test_holm_rejects_what_the_step_down_procedure_rejects(
    p_values: list[float], alpha: float
) -> None:
    m = len(p_values)
    ordered = sorted(range(m), key=p_values.__getitem__)
    rejected = set()
    for rank, i in enumerate(ordered):  # stop at the first p-value above its threshold
        if p_values[i] > alpha / (m - rank):
            break
        rejected.add(i)
    adjusted = _adjust(p_values, "holm")
    assert {i for i in range(m) if adjusted[i] <= alpha} == rejected
    assert all(p <= a <= 1 for p, a in zip(p_values, adjusted, strict=True))


def _run(rng: random.Random, rates: list[float], trials: int) -> dict[str, tuple[int, int]]:
    return {
        str(i): (trials, sum(rng.random() < p for _ in range(trials))) for i, p in enumerate(rates)
    }


MIXES = {
    "uniform": lambda rng: rng.random(),
    "mostly stable": lambda rng: rng.choice([1.0, 1.0, 1.0, 0.0, 0.0, rng.random()]),
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mix", sorted(MIXES))
@pytest.mark.parametrize("trials", [1, 3, 5])
def test_two_runs_of_the_same_configuration_are_rarely_called_different(
    mix: str, trials: int
) -> None:
    rng = random.Random(f"{mix}-{trials}")
    regressed = improved = any_case = 0
    runs = 150
    for _ in range(runs):
        rates = [MIXES[mix](rng) for _ in range(60)]
        result = compare_runs(_run(rng, rates, trials), _run(rng, rates, trials))
        regressed += result.change == "regressed"
        improved += result.change == "improved"
        any_case += bool(result.regressed or result.improved)
    # At 95% each direction is at most 2.5% in expectation; 150 runs leave room for noise.
    assert regressed <= 0.06 * runs and improved <= 0.06 * runs
    assert any_case <= 0.08 * runs


@pytest.mark.timeout(300)
def test_a_ten_point_drop_on_200_cases_with_3_trials_is_detected() -> None:
    rng = random.Random(10)
    detected = 0
    runs = 60
    for _ in range(runs):
        rates = [rng.random() for _ in range(200)]
        dropped = [max(0.0, p - 0.1) if p >= 0.1 else 0.0 for p in rates]
        shortfall = 0.1 - (sum(rates) - sum(dropped)) / 200  # cases below 0.1 dropped less
        dropped = [max(0.0, p - shortfall / 0.9) for p in dropped]
        result = compare_runs(_run(rng, rates, 3), _run(rng, dropped, 3))
        detected += result.change == "regressed"
        assert result.change != "improved"
    assert detected >= 0.8 * runs


def test_noise_between_two_runs_of_one_model_is_not_a_regression() -> None:
    """1,000 coin-flip cases, one trial each: hundreds flip each way, and that is noise."""
    rng = random.Random(366)
    rates = [0.5] * 1000
    baseline, candidate = _run(rng, rates, 1), _run(rng, rates, 1)
    flipped_down = sum(baseline[c][1] > candidate[c][1] for c in baseline)
    flipped_up = sum(baseline[c][1] < candidate[c][1] for c in baseline)
    assert flipped_down > 200 and flipped_up > 200
    result = compare_runs(baseline, candidate)
    assert result.change == "no evidence"
    assert result.regressed == () and result.improved == ()
    assert result.effect.low < 0 < result.effect.high
    assert result.detectable_effect < 0.1


def test_a_real_regression_is_called_and_its_cases_listed() -> None:
    # Five of forty cases go from 8 of 8 to 0 of 8; twenty others stay flaky at 3 of 5.
    baseline = {f"c{i}": (8, 8) for i in range(20)} | {f"s{i}": (5, 3) for i in range(20)}
    candidate = {f"c{i}": (8, 0) for i in range(5)} | {f"c{i}": (8, 8) for i in range(5, 20)}
    candidate |= {f"s{i}": (5, 3) for i in range(20)}
    result = compare_runs(baseline, candidate)
    assert result.change == "regressed" and result.p_value < 1e-4
    assert [c.case for c in result.regressed] == [f"c{i}" for i in range(5)]
    assert result.effect.high < 0 and result.effect.estimate == pytest.approx(-5 / 40)
    mirrored = compare_runs(candidate, baseline, correction="holm")
    assert mirrored.change == "improved"
    assert [c.case for c in mirrored.improved] == [f"c{i}" for i in range(5)]


def test_five_trials_per_run_cannot_single_out_a_case_among_forty() -> None:
    """A case from 5 of 5 to 0 of 5 has p = 2/252 alone: not enough after the correction."""
    baseline = {f"c{i}": (5, 5) for i in range(40)}
    candidate = {f"c{i}": (5, 0) for i in range(5)} | {f"c{i}": (5, 5) for i in range(5, 40)}
    result = compare_runs(baseline, candidate)
    assert result.cases[0].p_value == pytest.approx(2 / 252)
    assert result.regressed == ()
    assert result.change == "regressed"  # the suite test pools the cases


@given(
    outcomes=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300),
    level=st.sampled_from([0.9, 0.95, 0.99]),
)
def test_effect_interval_is_agresti_mins_for_one_trial_per_case(
    outcomes: list[tuple[bool, bool]], level: float
) -> None:
    baseline = {str(i): (1, int(a)) for i, (a, _) in enumerate(outcomes)}
    candidate = {str(i): (1, int(b)) for i, (_, b) in enumerate(outcomes)}
    effect = compare_runs(baseline, candidate, level=level).effect
    n = len(outcomes)
    b = sum(a and not c for a, c in outcomes)  # regressed
    c = sum(d and not a for a, d in outcomes)  # improved
    z = stats.norm.ppf(0.5 + level / 2)
    diff = (c - b) / (n + 2)
    sd = math.sqrt((b + c + 1) - (c - b) ** 2 / (n + 2)) / (n + 2)
    assert effect.low == pytest.approx(max(-1, diff - z * sd), abs=1e-9)
    assert effect.high == pytest.approx(min(1, diff + z * sd), abs=1e-9)
    assert effect.estimate == pytest.approx((c - b) / n)


@pytest.mark.timeout(300)
def test_effect_interval_covers_the_true_change() -> None:
    rng = random.Random(95)
    covered = 0
    runs = 300
    for _ in range(runs):
        rates = [rng.choice([1.0, 0.0, rng.random()]) for _ in range(80)]
        shifted = [p * 0.8 for p in rates]
        truth = (sum(shifted) - sum(rates)) / 80
        effect = compare_runs(_run(rng, rates, 3), _run(rng, shifted, 3)).effect
        covered += effect.low <= truth <= effect.high
    assert covered >= 0.91 * runs


def test_cases_in_one_run_only_are_listed_not_compared() -> None:
    result = compare_runs({"a": (3, 3), "b": (3, 0)}, {"b": (3, 0), "c": (2, 1)})
    assert [c.case for c in result.cases] == ["b"]
    assert result.unpaired == ("a", "c")
    empty = compare_runs({"a": (1, 1)}, {"b": (1, 1)})
    assert isinstance(empty, Comparison)
    assert (empty.change, empty.p_value, empty.cases, empty.effect.n) == ("no evidence", 1.0, (), 0)
    assert empty.effect.low == -1.0 or empty.effect.low < 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"baseline": {"a": (2, 3)}}, "case 'a': passes must be between 0 and trials=2"),
        ({"candidate": {"a": (0, 0)}}, "case 'a': trials must be at least 1"),
        ({"level": 1.5}, "level must be a number between 0 and 1"),
        ({"power": 0}, "power must be a number between 0 and 1"),
        ({"correction": "bonferroni"}, "correction must be 'bh' or 'holm'"),
    ],
)
def test_bad_input_gets_one_clear_message(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"baseline": {"a": (2, 1)}, "candidate": {"a": (2, 1)}}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        compare_runs(**arguments)  # type: ignore[arg-type]


def test_detectable_effect_shrinks_with_more_cases() -> None:
    rng = random.Random(3)
    rates = [rng.random() for _ in range(400)]
    small = compare_runs(_run(rng, rates[:100], 3), _run(rng, rates[:100], 3))
    large = compare_runs(_run(rng, rates, 3), _run(rng, rates, 3))
    assert large.detectable_effect < small.detectable_effect
    assert math.isclose(large.detectable_effect, small.detectable_effect / 2, rel_tol=0.25)


@pytest.mark.timeout(60)
def test_a_very_large_run_gets_the_normal_approximation_in_linear_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(20000)
    rates = [rng.random() for _ in range(20_000)]
    result = compare_runs(_run(rng, rates, 3), _run(rng, rates, 3))
    assert result.test == "mantel-haenszel"
    assert len(result.cases) == 20_000
    # Where both can be computed, the approximation is close to the exact p-value.
    rows = [(3, rng.randint(0, 3), 3, rng.randint(0, 3)) for _ in range(2000)]
    approximate, excess, exact = statistics_module._paired_test(rows)
    assert not exact
    monkeypatch.setattr(statistics_module, "_EXACT_WORK", 10**9)
    p_exact, excess_exact, exact = statistics_module._paired_test(rows)
    assert exact and excess == excess_exact
    assert approximate == pytest.approx(p_exact, abs=0.01)


@pytest.mark.parametrize("value", [3, (3,), (3, 1, 1), "31", None, {"trials": 3}])
def test_a_case_that_is_not_a_pair_of_counts_is_named(value: object) -> None:
    with pytest.raises(TypeError, match=r"candidate case 'x': expected a \(trials, passes\) pair"):
        compare_runs({"x": (3, 1)}, {"x": value})  # type: ignore[dict-item]
