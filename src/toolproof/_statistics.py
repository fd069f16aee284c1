"""Whether a rate or a change is real: intervals, gates, paired comparisons, sequential trials.

Pure functions over pass/fail counts, standard library only. Every result names its method and
confidence level so that a report can print them. ``docs/statistics.md`` explains them to
users; the tests check them against scipy and by simulation.

Counts of one case or one run are ``(trials, passes)`` pairs, as in ``evals.suite_stats``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

__all__ = [
    "CaseChange",
    "Comparison",
    "GateDecision",
    "Interval",
    "binomial_interval",
    "cases_needed",
    "compare_runs",
    "detectable_effect",
    "gate",
    "intra_case_correlation",
    "mean_interval",
    "sequential_verdict",
    "suite_rate_interval",
    "weighted_rate_interval",
]

Method = Literal["wilson", "clopper-pearson", "cluster-wilson", "student-t", "paired-wald"]
GateMode = Literal["advisory", "release"]
Change = Literal["regressed", "improved", "no evidence"]
Correction = Literal["bh", "holm"]

_NORMAL = NormalDist()
# Two outcomes of an exact test count as equally likely within this relative tolerance (the
# float sums of the null distribution are not exact); scipy's binomtest uses the same.
_TIES = 1 + 1e-7


@dataclass(frozen=True, slots=True)
class Interval:
    """An estimate with its confidence interval.

    Attributes:
        estimate: The observed value.
        low: Lower bound.
        high: Upper bound.
        level: Confidence level: at 0.95, intervals made this way contain the true value in
            at least about 95% of repeated runs.
        method: How the bounds were computed: ``wilson``, ``clopper-pearson``,
            ``cluster-wilson``, ``student-t`` or ``paired-wald``.
        n: Independent units the interval rests on: samples, or cases when trials are
            grouped in cases.
        effective_n: How many independent samples the data are worth (below the number of
            trials when trials of a case agree with each other).
    """

    estimate: float
    low: float
    high: float
    level: float
    method: Method
    n: int
    effective_n: float


def _check_level(value: float, name: str = "level") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        example = " (e.g. 0.95)" if name == "level" else ""
        raise ValueError(f"{name} must be a number between 0 and 1{example}, got {value!r}")
    return float(value)


def _check_counts(trials: int, passes: int, what: str = "") -> None:
    for name, value in (("trials", trials), ("passes", passes)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{what}{name} must be an integer, got {value!r}")
    if trials < 1:
        raise ValueError(f"{what}trials must be at least 1, got {trials}")
    if not 0 <= passes <= trials:
        raise ValueError(f"{what}passes must be between 0 and trials={trials}, got {passes}")


def _check_cases(
    cases: Sequence[tuple[int, int]] | Mapping[str, tuple[int, int]], what: str = "case "
) -> None:
    """Each case must be a ``(trials, passes)`` pair of counts."""
    pairs = list(cases.items()) if isinstance(cases, Mapping) else list(enumerate(cases))
    for key, pair in pairs:
        label = f"{what}{key!r}: "
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"{label}expected a (trials, passes) pair, got {pair!r}")
        _check_counts(pair[0], pair[1], label)


def _z(level: float) -> float:
    return _NORMAL.inv_cdf(0.5 + level / 2)


def _lbeta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast below this point
        return 1.0 - _betainc(b, a, 1.0 - x)
    front = math.exp(a * math.log(x) + b * math.log1p(-x) - _lbeta(a, b)) / a
    # 1 / (1 + d1 / (1 + d2 / (1 + ...))) by the modified Lentz method (DLMF 8.17.22).
    tiny = 1e-300
    f, c, d = 1.0, 1.0, 0.0
    for i in range(1, 100_000):
        m = i // 2
        if i % 2:
            coef = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        else:
            coef = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1.0 + coef * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + coef / c
        c = c if abs(c) > tiny else tiny
        f *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front / f


def _beta_quantile(q: float, a: float, b: float) -> float:
    """The x where I_x(a, b) = q: Newton's method, kept inside a shrinking bracket."""
    lo, hi, x = 0.0, 1.0, a / (a + b)
    log_beta = _lbeta(a, b)
    for _ in range(2000):
        f = _betainc(a, b, x) - q
        if f < 0:
            lo = x
        else:
            hi = x
        density = math.exp((a - 1) * math.log(x) + (b - 1) * math.log1p(-x) - log_beta)
        new = x - f / density if density > 0 else lo - 1.0
        if not lo < new < hi:
            new = (lo + hi) / 2
        if abs(new - x) <= 1e-15 * x or new in (lo, hi):
            return new
        x = new
    return x


def _t(level: float, df: float) -> float:
    """Student's t quantile: P(|T| <= t) = level with ``df`` degrees of freedom."""
    y = _beta_quantile(level, 0.5, df / 2)  # y = t^2 / (df + t^2)
    if y <= 0.5:
        return math.sqrt(df * y / (1.0 - y))
    x = _beta_quantile(1.0 - level, df / 2, 0.5)  # x = 1 - y, precise where y is near 1
    return math.sqrt(df * (1.0 - x) / x)


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    denom = 2 * (n + z * z)
    center = (2 * n * p + z * z) / denom
    half = z * math.sqrt(z * z + 4 * n * p * (1 - p)) / denom
    return (0.0 if p == 0 else max(0.0, center - half)), (
        1.0 if p == 1 else min(1.0, center + half)
    )


def binomial_interval(
    passes: int,
    trials: int,
    *,
    level: float = 0.95,
    method: Literal["wilson", "clopper-pearson"] = "wilson",
) -> Interval:
    """Confidence interval for a rate from independent trials (a case's pass rate, a failure rate).

    ``wilson`` (the default) inverts the score test: its coverage is close to the level on
    average and it never leaves [0, 1]. ``clopper-pearson`` inverts the exact binomial test: it
    covers at least the level for every true rate, and is wider. Both assume independent trials
    with one common rate. 8 failures in 200 samples: 4.0%, Wilson 2.0–7.7%, Clopper–Pearson
    1.7–7.7%. For a case's pass^k (all of ``k`` trials pass), raise both bounds to the power
    ``k``: the interval then covers the true pass^k as often.

    Args:
        passes: Trials that passed (or samples that failed, for a failure rate).
        trials: Trials run (at least 1).
        level: Confidence level, between 0 and 1.
        method: ``"wilson"`` or ``"clopper-pearson"``.

    Returns:
        The rate with its interval.

    Raises:
        ValueError: A count or the level is out of range, or the method is unknown.
    """
    _check_counts(trials, passes)
    level = _check_level(level)
    p = passes / trials
    if method == "wilson":
        low, high = _wilson(p, trials, _z(level))
    elif method == "clopper-pearson":
        alpha = 1 - level
        low = 0.0 if passes == 0 else _beta_quantile(alpha / 2, passes, trials - passes + 1)
        high = (
            1.0 if passes == trials else _beta_quantile(1 - alpha / 2, passes + 1, trials - passes)
        )
    else:
        raise ValueError(f"method must be 'wilson' or 'clopper-pearson', got {method!r}")
    return Interval(p, low, high, level, method, trials, trials)


def weighted_rate_interval(
    weights: Sequence[float], hits: Sequence[bool], *, level: float = 0.95
) -> Interval:
    """Wilson interval for a weighted rate (samples weighted by age, say).

    The weighted samples count as Kish's effective sample size, ``(sum w)^2 / sum w^2``: as
    many samples as equal weights would need for the same precision. With equal weights it
    is :func:`binomial_interval`'s Wilson interval.

    Args:
        weights: Each sample's weight (non-negative, some positive).
        hits: Whether each sample counts (failed, for a failure rate).
        level: Confidence level, between 0 and 1.

    Returns:
        The weighted rate with its interval (``n``: samples, ``effective_n``: their worth).

    Raises:
        ValueError: No positive weight, lengths differ, or the level out of range.
    """
    level = _check_level(level)
    if len(weights) != len(hits):
        raise ValueError(f"{len(weights)} weights for {len(hits)} samples")
    if any(not math.isfinite(w) or w < 0 for w in weights):
        raise ValueError("weights must be finite and non-negative")
    total = math.fsum(weights)
    if total <= 0:
        raise ValueError("a weighted rate needs a positive weight")
    p = math.fsum(w for w, hit in zip(weights, hits, strict=True) if hit) / total
    n_eff = total * total / math.fsum(w * w for w in weights)
    low, high = _wilson(p, n_eff, _z(level))
    return Interval(p, low, high, level, "wilson", len(weights), n_eff)


def suite_rate_interval(cases: Sequence[tuple[int, int]], *, level: float = 0.95) -> Interval:
    """Confidence interval for a suite's pass rate when trials are grouped in cases.

    The estimate is the mean of the cases' pass rates. Trials of one case are not independent
    (a case that fails once tends to fail again), so the interval counts cases, not trials:
    the standard error is the cluster-robust one (the spread of the cases' rates over the
    square root of their number), turned into an effective sample size and a Wilson interval
    with a small-sample correction (Korn & Graubard, 1998). It assumes the cases are a sample
    of the tasks you care about; with one case the interval is [0, 1]. Many trials of few
    cases give a wide interval, as they should.

    Args:
        cases: Each case's ``(trials, passes)``; pass ``(trials, failures)`` for a failure rate.
        level: Confidence level, between 0 and 1.

    Returns:
        The suite's rate with its interval (``n``: cases, ``effective_n``: what they are worth).

    Raises:
        ValueError: No cases, a count or the level out of range.
    """
    level = _check_level(level)
    if not cases:
        raise ValueError("a suite's pass rate needs at least one case, got none")
    _check_cases(cases)
    m = len(cases)
    rates = [passes / trials for trials, passes in cases]
    p = math.fsum(rates) / m
    if m == 1:
        return Interval(p, 0.0, 1.0, level, "cluster-wilson", 1, 0.0)
    total = sum(trials for trials, _ in cases)
    variance = math.fsum((r - p) ** 2 for r in rates) / (m - 1) / m  # of the mean
    n_eff = total if variance == 0 else min(total, p * (1 - p) / variance)
    z = _z(level)
    n_eff *= (z / _t(level, m - 1)) ** 2
    low, high = _wilson(p, n_eff, z)
    return Interval(p, low, high, level, "cluster-wilson", m, n_eff)


def mean_interval(
    values: Sequence[float], *, level: float = 0.95, bounds: tuple[float, float] = (0.0, 1.0)
) -> Interval:
    """Confidence interval for the mean of a bounded score over cases (a retrieval metric).

    Student's t interval over independent values (one per case), clipped to ``bounds``. It
    assumes the cases are a sample of the tasks you care about and that the mean is roughly
    normal (many cases, or values that are not all at one bound). When every value is the
    same the interval has no width; with one value it is ``bounds``.

    Args:
        values: One value per case.
        level: Confidence level, between 0 and 1.
        bounds: The smallest and largest value the score can take.

    Returns:
        The mean with its interval.

    Raises:
        ValueError: No values, or the level out of range.
    """
    level = _check_level(level)
    m = len(values)
    if m == 0:
        raise ValueError("a mean needs at least one value, got none")
    if m > 1 and min(values) == max(values):  # no spread: the mean is the value itself
        return Interval(values[0], values[0], values[0], level, "student-t", m, m)
    mean = math.fsum(values) / m
    if m == 1:
        return Interval(mean, bounds[0], bounds[1], level, "student-t", 1, 1)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (m - 1))
    half = _t(level, m - 1) * sd / math.sqrt(m)
    low, high = max(bounds[0], mean - half), min(bounds[1], mean + half)
    return Interval(mean, low, high, level, "student-t", m, m)


@dataclass(frozen=True, slots=True)
class GateDecision:
    """A gate's verdict on a rate that must stay at or below a limit.

    Attributes:
        verdict: ``pass`` (the whole interval is below the limit), ``fail`` (the whole interval
            is above it) or ``undecided`` (the limit is inside the interval: too few samples).
        blocks: Whether the gate stops the run: on ``fail``, and on ``undecided`` in release
            mode.
        mode: ``advisory`` or ``release``.
        limit: The highest acceptable rate.
        interval: The rate's interval the verdict was read from.
        bound: The bound that decided (``high`` for a pass, ``low`` for a fail), else None.
        needed: When undecided: about how many units (``interval.n``'s unit) would decide if
            the observed rate held; None when decided, or when the rate equals the limit.
    """

    verdict: Literal["pass", "fail", "undecided"]
    blocks: bool
    mode: GateMode
    limit: float
    interval: Interval
    bound: Literal["low", "high"] | None
    needed: int | None


def gate(interval: Interval, limit: float, *, mode: GateMode = "advisory") -> GateDecision:
    """Decide whether a rate (failures, usually) is within its limit, given its uncertainty.

    The verdict is read from the interval, so it matches what a report prints: ``fail`` when
    even the low bound exceeds the limit, ``pass`` when even the high bound is below it,
    ``undecided`` otherwise. At level 0.95, a run whose true rate is within the limit is
    wrongly failed at most about 2.5% of the time, and one above it wrongly passed as rarely.
    ``advisory`` (the default, for pull requests and monitoring) blocks only on ``fail``:
    noise never blocks. ``release`` blocks unless ``pass``: a release must show it is within
    the limit. ``needed`` is computed by the score test for Wilson-type intervals and by
    shrinking the width as one over the square root of the units for the others.

    Args:
        interval: The rate's interval (e.g. ``binomial_interval(failures, samples)``).
        limit: The highest acceptable rate, between 0 and 1.
        mode: ``"advisory"`` or ``"release"``.

    Returns:
        The decision.

    Raises:
        ValueError: The limit is out of range or the mode unknown.
    """
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 <= limit <= 1:
        raise ValueError(f"limit must be a rate between 0 and 1 (e.g. 0.05), got {limit!r}")
    if mode not in ("advisory", "release"):
        raise ValueError(f"mode must be 'advisory' or 'release', got {mode!r}")
    rate, n = interval.estimate, interval.n
    needed: int | None = None
    bound: Literal["low", "high"] | None = None
    if interval.low > limit:
        verdict: Literal["pass", "fail", "undecided"] = "fail"
        bound = "low"
    elif interval.high < limit:
        verdict, bound = "pass", "high"
    else:
        verdict = "undecided"
        if rate != limit and n > 0:
            if interval.method in ("wilson", "clopper-pearson", "cluster-wilson"):
                z = _z(interval.level)  # where the score test at the same rate rejects
                gap = abs(rate - limit)  # (divided once at a time: its square underflows)
                samples = z * z * (1 - limit) * (limit / gap) / gap
                units = samples * n / interval.effective_n if interval.effective_n else math.inf
            else:
                half = interval.high - rate if rate < limit else rate - interval.low
                units = n * (half / abs(rate - limit)) ** 2
            needed = max(n + 1, math.floor(units) + 1) if math.isfinite(units) else None
    blocks = verdict == "fail" or (verdict == "undecided" and mode == "release")
    return GateDecision(verdict, blocks, mode, float(limit), interval, bound, needed)


# Above this much work (additions of the exact null distribution), or with a case of more
# trials than this, the suite test uses the normal approximation: many cases make it exact
# enough, and the work stays linear in the number of cases.
_EXACT_WORK = 3_000_000
_EXACT_TRIALS = 5_000


def _paired_test(cases: Sequence[tuple[int, int, int, int]]) -> tuple[float, float, bool]:
    """Two-sided p-value, signed excess of candidate passes, and whether the p-value is exact.

    Under "nothing changed", a case's passes are spread over its baseline and candidate
    trials at random: the candidate's share is hypergeometric, and the suite's total is the
    sum of independent ones (the exact Cochran–Mantel–Haenszel test). The p-value adds the
    probabilities of every total no more likely than the one observed. Past the work budget:
    the Mantel–Haenszel normal approximation, with continuity correction.
    """
    mixed = [row for row in cases if 0 < row[1] + row[3] < row[0] + row[2]]
    excess = variance = 0.0
    work, length = 0, 1
    for n_a, c_a, n_b, c_b in mixed:
        n, t = n_a + n_b, c_a + c_b
        excess += c_b - t * n_b / n
        variance += n_a * n_b * t * (n - t) / (n * n * (n - 1))
        support = min(t, n_b) - max(0, t - n_a) + 1
        work += length * support
        length += support - 1
        if n > _EXACT_TRIALS:
            work = _EXACT_WORK + 1
    if work > _EXACT_WORK:
        z = max(0.0, abs(excess) - 0.5) / math.sqrt(variance)
        return math.erfc(z / math.sqrt(2)), excess, False
    dist, observed = [1.0], 0
    for n_a, c_a, n_b, c_b in mixed:
        t = c_a + c_b
        lo, hi = max(0, t - n_a), min(t, n_b)
        total = math.comb(n_a + n_b, t)
        weights = [math.comb(n_b, x) * math.comb(n_a, t - x) / total for x in range(lo, hi + 1)]
        observed += c_b - lo
        new = [0.0] * (len(dist) + hi - lo)
        for j, w in enumerate(weights):
            for i, p in enumerate(dist):
                new[i + j] += p * w
        dist = new
    cut = dist[observed] * _TIES
    return min(1.0, math.fsum(p for p in dist if p <= cut)), excess, True


def _adjust(p_values: Sequence[float], correction: Correction) -> list[float]:
    """Holm (family-wise) or Benjamini–Hochberg (false discovery rate) adjusted p-values."""
    m = len(p_values)
    order = sorted(range(m), key=p_values.__getitem__)
    adjusted = [1.0] * m
    if correction == "holm":
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (m - rank) * p_values[i]))
            adjusted[i] = running
    else:
        running = 1.0
        for rank in range(m - 1, -1, -1):
            i = order[rank]
            running = min(running, m / (rank + 1) * p_values[i])
            adjusted[i] = running
    return adjusted


@dataclass(frozen=True, slots=True)
class CaseChange:
    """One case in a comparison of two runs.

    Attributes:
        case: The case's id.
        baseline: ``(trials, passes)`` in the baseline run.
        candidate: ``(trials, passes)`` in the candidate run.
        p_value: Fisher's exact test, two-sided (normal approximation past 5,000 trials).
        adjusted_p: The p-value after the correction across cases.
        change: ``regressed``, ``improved`` or ``no evidence``.
    """

    case: str
    baseline: tuple[int, int]
    candidate: tuple[int, int]
    p_value: float
    adjusted_p: float
    change: Change


@dataclass(frozen=True, slots=True)
class Comparison:
    """Whether a candidate run is worse or better than a baseline run of the same cases.

    Attributes:
        change: The suite's verdict: ``regressed``, ``improved`` or ``no evidence``.
        p_value: The suite test's two-sided p-value.
        test: ``mcnemar-exact`` (one trial per case in both runs), ``stratified-exact``, or
            ``mantel-haenszel`` (its normal approximation, for very large runs).
        effect: Candidate minus baseline pass rate (mean over cases) with its interval.
        detectable_effect: The smallest change this design detects with probability ``power``.
        power: The power ``detectable_effect`` is computed for.
        correction: ``bh`` or ``holm``: how case p-values were adjusted.
        cases: The paired cases, in the baseline's order.
        unpaired: Ids in only one run (not compared).
    """

    change: Change
    p_value: float
    test: Literal["mcnemar-exact", "stratified-exact", "mantel-haenszel"]
    effect: Interval
    detectable_effect: float
    power: float
    correction: Correction
    cases: tuple[CaseChange, ...]
    unpaired: tuple[str, ...]

    @property
    def regressed(self) -> tuple[CaseChange, ...]:
        """The cases that got worse, beyond noise."""
        return tuple(c for c in self.cases if c.change == "regressed")

    @property
    def improved(self) -> tuple[CaseChange, ...]:
        """The cases that got better, beyond noise."""
        return tuple(c for c in self.cases if c.change == "improved")


def _direction(significant: bool, excess: float) -> Change:
    if not significant or excess == 0:
        return "no evidence"
    return "regressed" if excess < 0 else "improved"


def _paired_effect(
    rows: Sequence[tuple[int, int, int, int]], level: float
) -> tuple[Interval, float]:
    """The mean rate difference over cases with its adjusted Wald interval, and its error.

    A pseudo-case of each sign with weight one half and one unchanged shift the estimate the
    bounds are centred on (Agresti & Min's interval for one trial per case).
    """
    diffs = [c_b / n_b - c_a / n_a for n_a, c_a, n_b, c_b in rows]
    m = len(diffs)
    weight = m + 2
    shifted = math.fsum(diffs) / weight
    variance = (math.fsum(d * d for d in diffs) + 1) / weight - shifted**2
    se = math.sqrt(variance / weight)
    half = _z(level) * se
    mean = math.fsum(diffs) / m if m else 0.0
    effect = Interval(
        mean, max(-1.0, shifted - half), min(1.0, shifted + half), level, "paired-wald", m, m
    )
    return effect, se


def compare_runs(
    baseline: Mapping[str, tuple[int, int]],
    candidate: Mapping[str, tuple[int, int]],
    *,
    level: float = 0.95,
    power: float = 0.8,
    correction: Correction = "bh",
) -> Comparison:
    """Compare two runs of the same cases, paired by case id: did the candidate get worse?

    The suite's verdict comes from an exact test conditional on each case's total passes:
    if nothing changed, a case's passes fall on its baseline and candidate trials at random
    (the exact Cochran–Mantel–Haenszel test; with one trial per case it is McNemar's exact
    test). Runs too large to enumerate in about a second (some thousand cases with several
    trials) get its normal approximation, ``mantel-haenszel``. It assumes the trials of a case
    are independent given the case, and makes no assumption about how rates differ between
    cases. At level 0.95 two runs of the same configuration are called ``regressed`` or
    ``improved`` at most 5% of the time (2.5% each way when both have the same trials per case).

    Each case is also tested alone (Fisher's exact test) and the p-values adjusted across
    cases: ``bh`` (Benjamini–Hochberg, the default) keeps the expected share of noise among
    the listed cases under 1 - level, and lists nothing in 95% of runs when nothing changed;
    ``holm`` keeps the chance of listing any unchanged case under 1 - level. A case alone
    cannot show a change with one trial per run (its p-value is always 1), nor with three
    (at best 0.1): the suite test pools the cases.

    ``effect`` is an adjusted Wald interval over the cases' rate differences (a pseudo-case
    of each sign with weight one half and one unchanged: Agresti & Min's interval for one
    trial per case). ``detectable_effect`` is (z of the level + z of the power) standard
    errors of that interval.

    Args:
        baseline: ``{case id: (trials, passes)}`` of the run compared against.
        candidate: ``{case id: (trials, passes)}`` of the new run.
        level: Confidence level, between 0 and 1.
        power: Power for ``detectable_effect``, between 0 and 1.
        correction: ``"bh"`` or ``"holm"``.

    Returns:
        The comparison.

    Raises:
        ValueError: A count, the level or the power is out of range, or the correction unknown.
    """
    level, power = _check_level(level), _check_level(power, "power")
    if correction not in ("bh", "holm"):
        raise ValueError(f"correction must be 'bh' or 'holm', got {correction!r}")
    _check_cases(baseline, "baseline case ")
    _check_cases(candidate, "candidate case ")
    paired = [case for case in baseline if case in candidate]
    unpaired = sorted({*baseline, *candidate} - set(paired))
    rows = [(*baseline[case], *candidate[case]) for case in paired]
    alpha = 1 - level
    single = [_paired_test([row]) for row in rows]
    adjusted = _adjust([p for p, _, _ in single], correction)
    changes = tuple(
        CaseChange(case, baseline[case], candidate[case], p, adj, _direction(adj <= alpha, ex))
        for case, (p, ex, _), adj in zip(paired, single, adjusted, strict=True)
    )
    p_value, excess, exact = _paired_test(rows)
    effect, se = _paired_effect(rows, level)
    single_trials = all(row[0] == row[2] == 1 for row in rows)
    return Comparison(
        change=_direction(p_value <= alpha, excess),
        p_value=p_value,
        test=("mcnemar-exact" if single_trials else "stratified-exact")
        if exact
        else "mantel-haenszel",
        effect=effect,
        detectable_effect=min(1.0, (_z(level) + _NORMAL.inv_cdf(power)) * se),
        power=power,
        correction=correction,
        cases=changes,
        unpaired=tuple(unpaired),
    )


def sequential_verdict(
    passes: int, trials: int, *, max_trials: int, min_passes: int, level: float | None = 0.95
) -> Literal["continue", "pass", "fail"]:
    """After each trial (or wave of trials): stop with a case's verdict, or run another.

    The rule is "at least ``min_passes`` of ``max_trials`` pass" (``min_passes ==
    max_trials`` is pass^k's "all pass"). Two stops, checked in order:

    - exact: the verdict is already certain, whatever the remaining trials do (``pass`` at
      ``min_passes`` passes, ``fail`` once too few trials remain; "all pass" stops at the
      first failure). These never change the full run's verdict.
    - confident (unless ``level`` is None): the case's true rate is above, or below,
      ``min_passes / max_trials`` at the given level, by a confidence sequence valid however
      often it is checked (Robbins' mixture of likelihood ratios over a uniform prior, with
      Ville's inequality): the chance of ever stopping on the wrong side of that rate is at
      most 1 - level. The full run's verdict can still differ when the true rate is close
      to the threshold; ``docs/statistics.md`` gives the measured agreement.

    Args:
        passes: Trials passed so far.
        trials: Trials run so far.
        max_trials: The most trials the case may run.
        min_passes: Passes the case needs out of ``max_trials``.
        level: Confidence level of the confident stop, or None for exact stops only.

    Returns:
        ``"continue"``, ``"pass"`` or ``"fail"``.

    Raises:
        ValueError: A count or the level is out of range.
    """
    named = {"max_trials": max_trials, "min_passes": min_passes, "trials": trials, "passes": passes}
    for name, value in named.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an integer, got {value!r}")
    if not 1 <= min_passes <= max_trials:
        raise ValueError(
            f"min_passes must be between 1 and max_trials={max_trials}, got {min_passes}"
        )
    if not 0 <= passes <= trials <= max_trials:
        raise ValueError(
            f"need 0 <= passes <= trials <= max_trials={max_trials}, "
            f"got passes={passes}, trials={trials}"
        )
    if level is not None:
        _check_level(level)
    if passes >= min_passes:
        return "pass"
    if passes + max_trials - trials < min_passes:
        return "fail"
    theta = min_passes / max_trials
    if level is None or trials == 0 or theta == 1:
        return "continue"
    fails = trials - passes
    evidence = _lbeta(passes + 1, fails + 1) - passes * math.log(theta) - fails * math.log1p(-theta)
    if evidence >= -math.log(1 - level):
        return "pass" if passes > theta * trials else "fail"
    return "continue"


def _check_design(trials: int, rate: float, icc: float, level: float, power: float) -> float:
    """Validate a design's assumptions; return z of the level plus z of the power."""
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    _check_level(rate, "rate")
    if isinstance(icc, bool) or not isinstance(icc, (int, float)) or not 0 <= icc < 1:
        raise ValueError(f"icc must be at least 0 and below 1, got {icc!r}")
    return _z(_check_level(level)) + _NORMAL.inv_cdf(_check_level(power, "power"))


def _drop_variance(drop: float, trials: int, rate: float, icc: float) -> float:
    """Variance of a case's rate difference when the suite's pass rate falls by ``drop``."""
    between = icc * rate * (1 - rate)  # the spread of the cases' own rates
    share = (rate - drop) / rate  # every case keeps this share of its rate
    within = rate * (1 - rate) - between + (rate - drop) * (1 - rate + drop) - share**2 * between
    return within / trials + (1 - share) ** 2 * between


def detectable_effect(
    cases: int,
    trials: int,
    *,
    rate: float = 0.5,
    icc: float = 0.0,
    level: float = 0.95,
    power: float = 0.8,
) -> float:
    """The smallest drop of pass rate a paired comparison detects with the given power.

    For two runs of ``cases`` cases with ``trials`` trials each per case, compared case by
    case (as :func:`compare_runs` does): the normal approximation with a continuity
    correction, as the exact test behaves. Assumptions: the baseline's pass rate is
    ``rate``; ``icc`` (intra-case correlation, see :func:`intra_case_correlation`) is the share
    of the outcomes' variance that lies between cases (0: every case alike; near 1: each case
    always passes or always fails); every case loses the same share of its pass rate (a case
    that never passes cannot drop). A paired comparison is blind to how cases differ, so only
    the noise within cases counts: cases and trials nearly trade one for one. For a rise,
    plan with the failure rate (``1 - rate``).

    Args:
        cases: Cases in each run.
        trials: Trials of each case in each run.
        rate: The baseline's pass rate, between 0 and 1.
        icc: Intra-case correlation, at least 0 and below 1.
        level: Confidence level of the comparison.
        power: Probability of detecting the drop.

    Returns:
        The detectable drop in pass rate (0.1 is 10 points); infinity when even a drop to
        zero would not be detected.

    Raises:
        ValueError: An argument is out of range.
    """
    z = _check_design(trials, rate, icc, level, power)
    if isinstance(cases, bool) or not isinstance(cases, int) or cases < 1:
        raise ValueError(f"cases must be a positive integer, got {cases!r}")

    def short(drop: float) -> float:  # below zero: the drop is not detected often enough
        noise = z * math.sqrt(_drop_variance(drop, trials, rate, icc) / cases)
        return drop - noise - 1 / (cases * trials)

    if short(rate) < 0:
        return math.inf
    lo, hi = 0.0, rate
    while hi - lo > 1e-12:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if short(mid) < 0 else (lo, mid)
    return hi


def cases_needed(
    effect: float,
    trials: int,
    *,
    rate: float = 0.5,
    icc: float = 0.0,
    level: float = 0.95,
    power: float = 0.8,
) -> int:
    """How many cases a paired comparison needs to detect a drop of ``effect``.

    The inverse of :func:`detectable_effect`, with the same assumptions: the smallest number
    of cases, each run ``trials`` times in both runs, that detects a drop of ``effect`` (0.1
    for 10 points) from a pass rate of ``rate`` with probability ``power``.

    Args:
        effect: The drop to detect, above 0 and at most ``rate``.
        trials: Trials of each case in each run.
        rate: The baseline's pass rate.
        icc: Intra-case correlation.
        level: Confidence level of the comparison.
        power: Probability of detecting the drop.

    Returns:
        The number of cases.

    Raises:
        ValueError: An argument is out of range.
    """
    z = _check_design(trials, rate, icc, level, power)
    _check_level(effect, "effect")
    if effect > rate:
        raise ValueError(f"effect must be at most the pass rate {rate}: got a drop of {effect}")
    c = z * math.sqrt(_drop_variance(effect, trials, rate, icc))
    # effect = c / sqrt(n) + 1 / (n * trials), solved for sqrt(n)
    root = (c + math.sqrt(c * c + 4 * effect / trials)) / (2 * effect)
    return max(1, math.ceil(root * root - 1e-9))


def intra_case_correlation(cases: Sequence[tuple[int, int]]) -> float:
    """How much trials of one case agree: the share of variance that lies between cases.

    The one-way analysis-of-variance estimator for binary outcomes, clipped to [0, 1]: 0 when
    cases differ no more than coin flips would, 1 when every case always passes or always
    fails. Use a past run's value as ``icc`` when planning with :func:`cases_needed`.

    Args:
        cases: Each case's ``(trials, passes)``; at least two cases and one case with two
            trials or more.

    Returns:
        The estimate (0 when every trial had the same outcome).

    Raises:
        ValueError: Too few cases or trials, or a count out of range.
    """
    _check_cases(cases)
    m, total = len(cases), sum(trials for trials, _ in cases)
    if m < 2 or total <= m:
        raise ValueError("the intra-case correlation needs two cases and a case with two trials")
    mean = sum(passes for _, passes in cases) / total
    between = math.fsum(t * (c / t - mean) ** 2 for t, c in cases) / (m - 1)
    within = math.fsum(c * (1 - c / t) for t, c in cases) / (total - m)
    n0 = (total - sum(t * t for t, _ in cases) / total) / (m - 1)
    denominator = between + (n0 - 1) * within
    return 0.0 if denominator == 0 else min(1.0, max(0.0, (between - within) / denominator))
