"""The figures of ``toolproof._statistics`` in eval reports: intervals, the eval gate, planning.

One home for how a run's statistics are configured (:class:`StatsOptions`: the suites'
``statistics:`` key, overridden by ``--confidence``, ``--interval``, ``--max-failure-rate``
and ``--gate-mode``), computed from pass/fail counts, and written as plain data and text.
The reports (console, JSON, Markdown, JUnit, HTML) print what these functions return.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from toolproof._statistics import (
    GateDecision,
    Interval,
    binomial_interval,
    detectable_effect,
    gate,
    intra_case_correlation,
    mean_interval,
    suite_rate_interval,
)
from toolproof._stats_text import interval_dict, level_text
from toolproof.errors import UserError

__all__ = [
    "EXIT_UNDECIDED",
    "IntervalMethod",
    "StatsOptions",
    "case_interval",
    "case_statistics",
    "eval_gate",
    "resolve_options",
    "suite_statistics",
]

IntervalMethod = Literal["wilson", "clopper-pearson"]
GateMode = Literal["advisory", "release"]

#: Exit code of ``toolproof run`` and ``toolproof replay`` when a gate in release mode cannot
#: decide: the limit is inside the failure rate's interval (too few samples).
EXIT_UNDECIDED = 6


@dataclass(frozen=True, slots=True)
class StatsOptions:
    """How a run's rates get their intervals and how its gate decides.

    Attributes:
        level: Confidence level of every interval, gate and comparison.
        method: Interval of a case's pass rate (and a replay's failure rate): ``wilson`` or
            ``clopper-pearson``. A suite's rate is always clustered by case.
        max_failure_rate: The eval gate's limit on the blocking cases' failure rate; ``None``:
            no rate gate (a blocking case that fails fails the run).
        gate_mode: ``advisory`` (block only when the rate is clearly above the limit) or
            ``release`` (block unless it is clearly below).
    """

    level: float = 0.95
    method: IntervalMethod = "wilson"
    max_failure_rate: float | None = None
    gate_mode: GateMode = "advisory"

    def describe(self) -> str:
        """``"95% Wilson intervals"``: the method and level, as reports name them."""
        name = {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson"}[self.method]
        return f"{level_text(self.level)} {name} intervals"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "confidence": self.level,
            "interval": self.method,
            "max_failure_rate": self.max_failure_rate,
            "gate_mode": self.gate_mode,
        }


def resolve_options(
    settings: Iterable[tuple[str, Mapping[str, Any] | None]] = (),
    *,
    level: float | None = None,
    method: str | None = None,
    max_failure_rate: float | None = None,
    gate_mode: str | None = None,
) -> StatsOptions:
    """The run's options: the suites' ``statistics:`` settings, then the command line's.

    The suites' values were checked when they loaded, the command line's by its parser.

    Args:
        settings: ``(suite name, its statistics mapping or None)`` for each suite of the run.
        level: ``--confidence``.
        method: ``--interval``.
        max_failure_rate: ``--max-failure-rate``.
        gate_mode: ``--gate-mode``.

    Raises:
        UserError: Two suites set one key to different values (pass the option on the
            command line to choose).
    """
    flags = {
        "confidence": level,
        "interval": method,
        "max_failure_rate": max_failure_rate,
        "gate_mode": gate_mode,
    }
    chosen: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for suite, mapping in settings:
        for key, value in (mapping or {}).items():
            if value is None or flags.get(key) is not None:  # the command line decides
                continue
            if key in chosen and chosen[key] != value:
                raise UserError(
                    f"suites {origin[key]!r} and {suite!r} set statistics.{key} to "
                    f"{chosen[key]!r} and {value!r}; make them agree, or choose one on the "
                    f"command line (--{key.replace('_', '-')})"
                )
            chosen[key], origin[key] = value, suite
    names = {"confidence": "level", "interval": "method"}
    given = {key: value for key, value in flags.items() if value is not None}
    values = {names.get(key, key): value for key, value in {**chosen, **given}.items()}
    return replace(StatsOptions(), **values)


# -- intervals ----------------------------------------------------------------------------------


def case_interval(passes: int, trials: int, options: StatsOptions) -> Interval:
    """A case's pass rate over its trials with a verdict, with its interval."""
    return binomial_interval(passes, trials, level=options.level, method=options.method)


def case_statistics(passes: int, trials: int, options: StatsOptions) -> dict[str, Any] | None:
    """A case's intervals for reports: its pass rate and its pass^k (``k`` = its trials).

    The pass^k interval is the pass rate's with both bounds raised to the power ``k``: it
    covers the case's true pass^k (the chance that ``k`` fresh trials all pass) as often as
    the pass rate's covers its rate; its estimate is the pass rate to the power ``k``.
    ``None`` when no trial has a verdict.
    """
    if trials < 1:
        return None
    rate = case_interval(passes, trials, options)
    k = trials
    hat = Interval(
        rate.estimate**k,
        rate.low**k,
        rate.high**k,
        rate.level,
        rate.method,
        rate.n,
        rate.effective_n,
    )
    return {"pass_rate": interval_dict(rate), "pass_hat_k": {"k": k, **interval_dict(hat)}}


def suite_statistics(
    cases: Sequence[tuple[int, int]],
    options: StatsOptions,
    *,
    pass_hat: Sequence[float] = (),
    k: int | None = None,
) -> dict[str, Any]:
    """A suite's intervals: its pass rate (trials clustered within cases) and mean pass^k.

    Also the smallest drop of pass rate a paired comparison with a rerun of the same design
    would detect with 80% power (``detectable_drop``), when the pass rate is strictly
    between 0 and 1.

    Args:
        cases: Each case's ``(trials, passes)`` (cases with a verdict, scripted ones left out).
        options: Level and method.
        pass_hat: Each case's pass^k, for the mean's interval.
        k: The ``k`` of ``pass_hat``.
    """
    out: dict[str, Any] = {"options": options.to_dict()}
    if not cases:
        return out
    rate = suite_rate_interval(cases, level=options.level)
    out["pass_rate"] = interval_dict(rate)
    if pass_hat and k is not None:
        out["pass_hat_k"] = {"k": k, **interval_dict(mean_interval(pass_hat, level=options.level))}
    trials = min(t for t, _ in cases)
    if 0 < rate.estimate < 1:
        try:
            icc = intra_case_correlation(cases)
        except ValueError:
            icc = 0.0
        icc = min(icc, 0.99)
        drop = detectable_effect(
            len(cases), trials, rate=rate.estimate, icc=icc, level=options.level, power=0.8
        )
        out["detectable_drop"] = {
            "drop": None if math.isinf(drop) else drop,
            "cases": len(cases),
            "trials": trials,
            "power": 0.8,
            "icc": icc,
        }
    return out


def drop_line(entry: Mapping[str, Any] | None) -> str | None:
    """``"a rerun would detect a drop of 24 points (50 cases × 1 trial, 80% power)"``."""
    if not entry:
        return None
    drop = entry["drop"]
    design = f"{entry['cases']} cases × {entry['trials']} trial{'s' if entry['trials'] > 1 else ''}"
    power = f"{100 * entry['power']:g}% power"
    if drop is None:
        return f"a comparison with a rerun could not detect even a drop to zero ({design})"
    return (
        f"a comparison with a rerun detects drops of {100 * drop:.0f} points or more "
        f"({design}, {power}; toolproof plan for more)"
    )


# -- the gate -----------------------------------------------------------------------------------


def eval_gate(cases: Sequence[tuple[int, int]], options: StatsOptions) -> GateDecision | None:
    """The eval gate on the blocking cases' failure rate, or ``None`` without a limit.

    Args:
        cases: Each blocking case's ``(trials, failures)`` over its trials with a verdict.
        options: The limit, mode and level.
    """
    if options.max_failure_rate is None or not cases:
        return None
    interval = suite_rate_interval(cases, level=options.level)
    return gate(interval, options.max_failure_rate, mode=options.gate_mode)
