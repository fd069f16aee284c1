"""``toolproof plan``: how many cases and trials a comparison needs to see a drop.

"To see a 10-point drop with 80% power, how many cases do I need with 1, 3 or 5 trials?"
The pass rate and the intra-case correlation (how much the trials of one case agree) come
from ``--rate`` and ``--icc``, or from a past run (``--from RUN``); ``--cases N`` turns the
question around: the smallest drop N cases detect. Exit codes: 0, or 2 for a bad option.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]

EPILOG = """\
examples:
  toolproof plan --drop 0.10                       # cases needed for a 10-point drop
  toolproof plan --drop 0.05 --power 0.9 --from latest
  toolproof plan --cases 50 --trials 4 --rate 0.42 --icc 0.4   # what 50 cases x 4 detect
"""


def register(subparsers: Any) -> None:
    """Add the ``plan`` command."""
    from toolproof.cli._options import add_confidence_argument, positive_int, rate

    parser = subparsers.add_parser(
        "plan",
        help="how many cases and trials a comparison needs to see a drop of pass rate",
        description=(
            "Plan a comparison of two runs: the cases needed to detect a drop of pass rate\n"
            "(--drop) with the given power, or the drop a number of cases detects (--cases)."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--drop", type=rate, metavar="D", help="the drop to detect (0.10: 10 points)"
    )
    parser.add_argument(
        "--cases", type=positive_int, metavar="N", help="the cases you have: what drop they detect"
    )
    parser.add_argument(
        "--trials",
        type=positive_int,
        action="append",
        metavar="K",
        help="trials per case in each run (repeatable; default 1, 3 and 5)",
    )
    parser.add_argument("--power", type=rate, default=0.8, help="chance of detecting it (0.8)")
    add_confidence_argument(parser)
    parser.add_argument("--rate", type=rate, metavar="R", help="the baseline's pass rate (0.5)")
    parser.add_argument(
        "--icc",
        type=rate,
        metavar="X",
        help="intra-case correlation: 0 every case alike, near 1 each case always passes or "
        "always fails (default 0, or the run's)",
    )
    parser.add_argument(
        "--from",
        dest="run",
        metavar="RUN",
        help="take the pass rate, intra-case correlation and cases from a past run "
        "(a run id, latest, latest~1, or a run log folder)",
    )
    parser.add_argument("--log-dir", metavar="PATH", help="where the run logs are")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.set_defaults(handler=_plan)


def _plan(args: argparse.Namespace) -> int:
    import json
    import math

    from toolproof._paired import report_counts
    from toolproof._statistics import cases_needed, detectable_effect, intra_case_correlation
    from toolproof.errors import UserError

    if args.drop is None and args.cases is None and args.run is None:
        raise UserError("say what to plan: --drop D (cases needed) or --cases N (drop detected)")
    rate, icc, cases, source = args.rate, args.icc, args.cases, None
    trials = args.trials
    if args.run is not None:
        from toolproof._runlog import load_run

        run = load_run(args.run, args.log_dir)
        counts = list(report_counts(run.report if run.info.kind == "run" else None).values())
        if len(counts) < 2:
            raise UserError(
                f"run {run.info.id} has fewer than two eval cases with a verdict: nothing to "
                "plan from (give --rate and --icc)"
            )
        source = run.info.id
        rate = rate if rate is not None else sum(p / t for t, p in counts) / len(counts)
        if icc is None:
            try:
                icc = intra_case_correlation(counts)
            except ValueError:  # one trial per case: the spread within cases is unknown
                icc = 0.0
        cases = cases if cases is not None else len(counts)
        trials = trials or [min(t for t, _ in counts)]
    rate = 0.5 if rate is None else rate
    icc = min(0.0 if icc is None else icc, 0.99)
    trials = trials or [1, 3, 5]
    if not 0 < rate < 1:
        raise UserError(f"the pass rate must be strictly between 0 and 1 to drop, got {rate:g}")
    if args.drop is not None and args.drop > rate:
        raise UserError(f"--drop {args.drop:g} is larger than the pass rate {rate:g}")
    level, power = args.confidence, args.power
    if not 0 < power < 1:
        raise UserError(f"--power must be between 0 and 1, got {power:g}")
    rows: list[dict[str, Any]] = []
    for k in trials:
        row: dict[str, Any] = {"trials": k}
        if args.drop is not None and args.drop > 0:
            row["cases_needed"] = cases_needed(
                args.drop, k, rate=rate, icc=icc, level=level, power=power
            )
        if cases is not None:
            drop = detectable_effect(cases, k, rate=rate, icc=icc, level=level, power=power)
            row["detectable_drop"] = None if math.isinf(drop) else drop
        rows.append(row)
    plan = {
        "drop": args.drop,
        "cases": cases,
        "rate": rate,
        "icc": icc,
        "level": level,
        "power": power,
        "from": source,
        "rows": rows,
    }
    if args.json:
        print(json.dumps(plan, indent=1))
        return 0
    for line in plan_lines(plan):
        print(line)
    return 0


def plan_lines(plan: dict[str, Any]) -> list[str]:
    """The plan in sentences, one per number of trials."""
    lines = []
    origin = f" (from run {plan['from']})" if plan["from"] else ""
    lines.append(
        f"pass rate {plan['rate']:.3f}, intra-case correlation {plan['icc']:.2f}{origin}; "
        f"{100 * plan['level']:g}% confidence, {100 * plan['power']:g}% power; paired "
        "comparison of two runs of the same cases"
    )
    for row in plan["rows"]:
        k = row["trials"]
        each = f"{k} trial{'s' if k > 1 else ''} per case"
        if "cases_needed" in row:
            lines.append(
                f"{each}: {row['cases_needed']} cases to detect a drop of "
                f"{100 * plan['drop']:g} points"
            )
        if "detectable_drop" in row:
            drop = row["detectable_drop"]
            seen = "not even a drop to zero" if drop is None else f"{100 * drop:.1f} points"
            lines.append(f"{each}: {plan['cases']} cases detect drops of {seen}")
    return lines
