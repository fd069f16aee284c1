"""Do the statistics say what they claim? A simulation study, and τ-bench's real runs.

Synthetic runs from fixed random streams (every figure is reproducible) check the promises of
``toolproof._statistics``:

- A/A: two runs of the same configuration are called "regressed" in at most 2.5% (and
  "different" in at most 5%) of comparisons at the 95% level, for several mixes of case pass
  rates and 1, 3 or 5 trials per case; beside them, what a plain diff of the two runs reports.
- Power: a 10-point drop planted on 200 cases × 3 trials is detected in at least 80% of
  comparisons; beside it, an unpaired test on the pooled trials.
- Sequential trials: stopping when the verdict is known agrees with running every trial in at
  least 95% of cases while running at least 30% fewer trials; beside it, stopping when a
  fixed-sample interval first excludes the threshold.
- Planning: the cases the planner asks for, and the power they reach in simulation.
- τ-bench airline (gpt-4o, 50 tasks × 4 trials, recorded by its authors): each task's interval,
  the suite's, and a paired comparison between halves of the same runs (an A/A on real data).

    python bench/bench_stats.py            # about 15 min on a quiet 2-core machine
    python bench/bench_stats.py --quick    # a fifth of the simulations
    python bench/bench_stats.py --only tau --only planning
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from toolproof._statistics import (  # noqa: E402
    binomial_interval,
    cases_needed,
    compare_runs,
    detectable_effect,
    intra_case_correlation,
    mean_interval,
    sequential_verdict,
    suite_rate_interval,
)
from toolproof.evals import pass_hat_k  # noqa: E402

TAU = ROOT / "tests" / "data" / "datasets" / "tau-bench-airline-gpt4o" / "gpt-4o-airline.json"
Rates = Callable[[random.Random], float]
Run = dict[str, tuple[int, int]]


def tau_trials() -> dict[str, list[bool]]:
    outcomes: dict[str, list[bool]] = collections.defaultdict(list)
    for run in sorted(json.loads(TAU.read_text()), key=lambda run: run["trial"]):
        outcomes[str(run["task_id"])].append(run["reward"] == 1)  # τ-bench's success rule
    return dict(outcomes)


TAU_RATES = [sum(t) / len(t) for t in tau_trials().values()]

MIXES: dict[str, Rates] = {
    # any rate is as likely as any other
    "uniform": lambda rng: rng.random(),
    # most cases nearly always pass or nearly always fail, some in between
    "realistic": lambda rng: (
        rng.uniform(0.95, 1.0)
        if (u := rng.random()) < 0.45
        else rng.uniform(0.0, 0.05)
        if u < 0.70
        else rng.uniform(0.05, 0.95)
    ),
    # the task pass rates of τ-bench airline gpt-4o (c/4 per task), drawn with replacement
    "τ-bench": lambda rng: rng.choice(TAU_RATES),
}


def simulate(rng: random.Random, rates: list[float], trials: int) -> Run:
    return {
        str(i): (trials, sum(rng.random() < p for _ in range(trials))) for i, p in enumerate(rates)
    }


def unpaired_p(a: Run, b: Run) -> tuple[float, float]:
    """Two-proportion z-test on the pooled trials, ignoring cases (two-sided p, difference)."""
    n_a, c_a = sum(n for n, _ in a.values()), sum(c for _, c in a.values())
    n_b, c_b = sum(n for n, _ in b.values()), sum(c for _, c in b.values())
    pooled = (c_a + c_b) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    diff = c_b / n_b - c_a / n_a
    return (math.erfc(abs(diff) / se / math.sqrt(2)) if se else 1.0), diff


def table(headers: list[str], rows: list[list[object]]) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    print()


def pct(count: float, total: float) -> str:
    return f"{100 * count / total:.1f}%"


def aa_study(runs: int, cases: int) -> None:
    print(f"## A/A: two runs of the same configuration, {cases} cases, {runs} comparisons each\n")
    rows = []
    for (name, mix), trials in itertools.product(MIXES.items(), (1, 3, 5)):
        rng = random.Random(f"aa-{name}-{trials}")
        regressed = improved = listed = unpaired = 0
        diffed: list[int] = []
        mde: list[float] = []
        tests: set[str] = set()
        for _ in range(runs):
            rates = [mix(rng) for _ in range(cases)]
            a, b = simulate(rng, rates, trials), simulate(rng, rates, trials)
            result = compare_runs(a, b)
            regressed += result.change == "regressed"
            improved += result.change == "improved"
            listed += bool(result.regressed or result.improved)
            unpaired += unpaired_p(a, b)[0] <= 0.05
            diffed.append(sum(a[c][1] != b[c][1] for c in a))
            mde.append(result.detectable_effect)
            tests.add(result.test)
        rows.append(
            [
                name,
                trials,
                pct(regressed, runs),
                pct(improved, runs),
                pct(listed, runs),
                f"{statistics.mean(diffed):.0f}",
                pct(unpaired, runs),
                f"{100 * statistics.median(mde):.1f} pts",
                ", ".join(sorted(tests)),
            ]
        )
    table(
        [
            "mix",
            "trials",
            "'regressed'",
            "'improved'",
            "any case listed",
            "cases a plain diff flags",
            "unpaired test p≤0.05",
            "detectable (80%)",
            "test",
        ],
        rows,
    )


def drop(rng: random.Random, rates: list[float], pattern: str, points: float) -> list[float]:
    """Plant a drop of ``points`` in the mean pass rate."""
    if pattern == "every case alike":
        scale = 1 - points * len(rates) / sum(rates)
        return [p * scale for p in rates]
    # a few cases break: random cases go to 0 until the mean has dropped by `points`
    dropped, lost = list(rates), 0.0
    for i in rng.sample(range(len(rates)), len(rates)):
        if lost >= points * len(rates):
            break
        take = min(dropped[i], points * len(rates) - lost)
        dropped[i] -= take
        lost += take
    return dropped


def power_study(runs: int, cases: int, trials: int) -> None:
    print(f"## Planted drops: {cases} cases × {trials} trials, {runs} comparisons per row\n")
    rows = []
    for points, (name, mix), pattern in itertools.product(
        (0.10, 0.05), MIXES.items(), ("every case alike", "a few cases break")
    ):
        rng = random.Random(f"power-{name}-{pattern}-{points}")
        detected = unpaired = wrong = 0
        mde: list[float] = []
        for _ in range(runs):
            rates = [mix(rng) for _ in range(cases)]
            a = simulate(rng, rates, trials)
            b = simulate(rng, drop(rng, rates, pattern, points), trials)
            result = compare_runs(a, b)
            detected += result.change == "regressed"
            wrong += result.change == "improved"
            p, diff = unpaired_p(a, b)
            unpaired += p <= 0.05 and diff < 0
            mde.append(result.detectable_effect)
        rows.append(
            [
                f"{points * 100:.0f} pts",
                name,
                pattern,
                pct(detected, runs),
                pct(wrong, runs),
                pct(unpaired, runs),
                f"{100 * statistics.median(mde):.1f} pts",
            ]
        )
    table(
        [
            "drop",
            "mix",
            "pattern",
            "detected",
            "'improved'",
            "unpaired test",
            "detectable (80%), median",
        ],
        rows,
    )


def run_case(outcomes: list[bool], min_passes: int, how: str) -> tuple[str, int]:
    """Trials one by one until a verdict: exact stops, + confidence sequence, or peeking."""
    max_trials, passes = len(outcomes), 0
    theta = min_passes / max_trials
    for trials, passed in enumerate(outcomes, 1):
        passes += passed
        level = 0.95 if how == "sequential" else None
        verdict = sequential_verdict(
            passes, trials, max_trials=max_trials, min_passes=min_passes, level=level
        )
        if how == "peeking" and verdict == "continue":
            ci = binomial_interval(passes, trials)
            if ci.low > theta or ci.high < theta:
                verdict = "pass" if ci.low > theta else "fail"
        if verdict != "continue":
            return verdict, trials
    raise AssertionError("the cap always decides")


def sequential_study(cases: int) -> None:
    print(f"## Sequential trials: {cases} simulated cases per row\n")
    rows = []
    rules = [(5, 5), (10, 8), (20, 10), (20, 16), (50, 25), (50, 40), (100, 50)]
    for name in ("realistic", "τ-bench", "uniform", "near the threshold"):
        for max_trials, min_passes in rules:
            rng = random.Random(f"seq-{name}-{max_trials}-{min_passes}")
            theta = min_passes / max_trials
            outcomes = []
            for _ in range(cases):
                if name == "near the threshold":  # every case within 0.1 of the rule's rate
                    rate = min(1.0, max(0.0, theta + rng.uniform(-0.1, 0.1)))
                else:
                    rate = MIXES[name](rng)
                outcomes.append([rng.random() < rate for _ in range(max_trials)])
            row: list[object] = [name, f"{min_passes} of {max_trials}"]
            for how in ("exact", "sequential", "peeking"):
                agree = used = 0
                for case in outcomes:
                    verdict, trials = run_case(case, min_passes, how)
                    agree += verdict == ("pass" if sum(case) >= min_passes else "fail")
                    used += trials
                row += [pct(agree, cases), pct(cases * max_trials - used, cases * max_trials)]
            rows.append(row)
    table(
        [
            "mix",
            "rule",
            "exact stops: agree",
            "saved",
            "+ confidence sequence: agree",
            "saved",
            "peeking: agree",
            "saved",
        ],
        rows,
    )


def planning_study(runs: int) -> None:
    print("## Planning: cases needed for 80% power at the 95% level (paired comparison)\n")
    rows = []
    for effect, (rate, icc) in itertools.product((0.05, 0.10, 0.20), ((0.5, 0.0), (0.42, 0.4))):
        rows.append(
            [
                f"{effect:.0%}",
                rate,
                icc,
                *(cases_needed(effect, t, rate=rate, icc=icc) for t in (1, 3, 5)),
            ]
        )
    table(["drop", "rate", "icc", "1 trial", "3 trials", "5 trials"], rows)
    print(f"Simulated power at the planned design ({runs} comparisons, beta-distributed rates):\n")
    rows = []
    for (rate, icc, trials), power in itertools.product(
        ((0.5, 0.3, 3), (0.42, 0.4, 1), (0.42, 0.4, 5), (0.8, 0.5, 3)), (0.8, 0.9)
    ):
        cases = cases_needed(0.10, trials, rate=rate, icc=icc, power=power)
        spread = 1 / icc - 1
        rng = random.Random(f"plan-{rate}-{icc}-{trials}-{power}")
        detected = 0
        for _ in range(runs):
            rates = [rng.betavariate(rate * spread, (1 - rate) * spread) for _ in range(cases)]
            scale = 1 - 0.10 / rate  # every case loses the same share of its rate
            result = compare_runs(
                simulate(rng, rates, trials), simulate(rng, [p * scale for p in rates], trials)
            )
            detected += result.change == "regressed"
        rows.append([rate, icc, trials, f"{power:.0%}", cases, pct(detected, runs)])
    table(["rate", "icc", "trials", "planned power", "cases planned", "detected"], rows)


def fmt(ci: object) -> str:
    return f"{ci.estimate:.3f} [{ci.low:.3f}, {ci.high:.3f}]"  # type: ignore[attr-defined]


def tau_study() -> None:
    trials = tau_trials()
    print("## τ-bench airline, gpt-4o: 50 tasks × 4 recorded trials\n")
    by_count = collections.Counter(sum(t) for t in trials.values())
    rows = []
    for passes in range(5):
        ci = binomial_interval(passes, 4)
        tasks = sorted((k for k, t in trials.items() if sum(t) == passes), key=int)
        rows.append(
            [f"{passes} of 4", by_count[passes], f"{ci.low:.2f}–{ci.high:.2f}", " ".join(tasks)]
        )
    table(["passed", "tasks", "95% Wilson interval", "task ids"], rows)
    cases = [(len(t), sum(t)) for t in trials.values()]
    suite = suite_rate_interval(cases)
    naive = binomial_interval(sum(c for _, c in cases), sum(n for n, _ in cases))
    rows = [
        ["pass rate, trials as independent (Wilson, 200)", fmt(naive)],
        [f"pass rate, clustered by task (worth {suite.effective_n:.0f} samples)", fmt(suite)],
    ]
    for k in (1, 2, 4):
        values = [pass_hat_k(n, c, k) for n, c in cases]
        rows.append([f"pass^{k}, mean over tasks (t interval)", fmt(mean_interval(values))])
    rows.append(["intra-case correlation", f"{intra_case_correlation(cases):.2f}"])
    table(["figure", "estimate [95% interval]"], rows)
    print("Paired comparison of two halves of the same recordings (an A/A on real data):\n")
    rows = []
    for first in itertools.combinations(range(4), 2):
        second = tuple(i for i in range(4) if i not in first)
        a = {k: (2, sum(t[i] for i in first)) for k, t in trials.items()}
        b = {k: (2, sum(t[i] for i in second)) for k, t in trials.items()}
        r = compare_runs(a, b)
        rows.append(
            [
                f"trials {first} vs {second}",
                r.change,
                f"{r.p_value:.3f}",
                fmt(r.effect),
                f"{100 * r.detectable_effect:.1f} pts",
                len(r.regressed) + len(r.improved),
            ]
        )
    for i, j in itertools.combinations(range(4), 2):
        a = {k: (1, int(t[i])) for k, t in trials.items()}
        b = {k: (1, int(t[j])) for k, t in trials.items()}
        r = compare_runs(a, b)
        flips = sum(a[k][1] != b[k][1] for k in a)
        rows.append(
            [
                f"trial {i} vs trial {j} ({flips} tasks flip)",
                r.change,
                f"{r.p_value:.3f}",
                fmt(r.effect),
                f"{100 * r.detectable_effect:.1f} pts",
                len(r.regressed) + len(r.improved),
            ]
        )
    table(["comparison", "verdict", "p", "effect [95%]", "detectable (80%)", "cases listed"], rows)
    rate, icc = suite.estimate, intra_case_correlation(cases)
    print(
        f"With these figures (rate {rate:.2f}, icc {icc:.2f}), 50 tasks detect "
        + ", ".join(
            f"{100 * detectable_effect(50, t, rate=rate, icc=icc):.1f} points with {t} trial"
            + ("s" if t > 1 else "")
            for t in (1, 4, 10)
        )
        + " (80% power); a 10-point drop needs "
        + ", ".join(f"{cases_needed(0.10, t, rate=rate, icc=icc)} tasks × {t}" for t in (1, 3, 5))
        + ".\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fifth of the simulations")
    parser.add_argument(
        "--only",
        action="append",
        choices=["tau", "aa", "power", "sequential", "planning"],
        help="run only this part (repeatable)",
    )
    args = parser.parse_args()
    scale = 5 if args.quick else 1
    started = time.perf_counter()
    parts = {
        "tau": tau_study,
        "aa": lambda: aa_study(runs=1000 // scale, cases=200),
        "power": lambda: power_study(runs=500 // scale, cases=200, trials=3),
        "sequential": lambda: sequential_study(cases=5000 // scale),
        "planning": lambda: planning_study(runs=300 // scale),
    }
    for name in args.only or parts:
        parts[name]()
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
