"""Cost, latency and tokens of an eval run, per case and per suite, the agent and the judge apart.

Every figure is computed from the trials as the JSON report holds them (``trials[].duration_ms``,
``agent_ms``, ``usage``, ``cost`` and ``judge``), so a run finished now and a run read back from
its run log are measured the same way, and compared case by case:

- per case and per suite: p50, p95 and max over trials of the agent's latency, tokens and
  cost, and of the judge's;
- against a baseline run: the suite's p95 agent latency and its cost per case, with gates
  ("p95 latency more than 20% worse", "cost per case up more than 10%") over the cases both
  runs have; the mean per-case change comes with its Student-t interval
  (``toolproof._statistics.mean_interval``);
- before a run, an estimate of its cost from the last run's recorded cost per trial, and
  after it, how far off the estimate was.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CostGates",
    "baseline_cases",
    "case_costs",
    "case_entries",
    "case_properties",
    "compare_costs",
    "cost_lines",
    "estimate_cost",
    "gate_settings",
    "parse_increase",
    "run_costs",
    "strictest",
    "suite_costs",
]


@dataclass(frozen=True, slots=True)
class CostGates:
    """Limits relative to a baseline run, as fractions (0.2 = 20% worse fails).

    Attributes:
        p95_latency: Most the suite's p95 agent latency may grow.
        cost_per_case: Most the cost per case (agent and judge) may grow.
    """

    p95_latency: float | None = None
    cost_per_case: float | None = None


def parse_increase(text: str, option: str) -> float:
    """``"20%"`` or ``"0.2"`` as the fraction 0.2.

    Raises:
        UserError: Not a number, or negative.
    """
    from toolproof.errors import UserError

    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UserError(f"{option}: expected a percentage such as 20%, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise UserError(f"{option}: expected a percentage of 0% or more, got {text!r}")
    return value


def gate_settings(value: Any) -> CostGates:
    """The ``cost_gates:`` of a suite: ``{p95_latency: 20%, cost_per_case: 10%}``.

    Raises:
        ValueError: Not a mapping of those keys to percentages of 0% or more.
    """
    from toolproof.errors import UserError

    keys = ("p95_latency", "cost_per_case")
    if not isinstance(value, Mapping) or not value or set(value) - set(keys):
        raise ValueError(
            "expected {p95_latency: 20%, cost_per_case: 10%} (either or both: how much each "
            "may grow over the baseline run)"
        )
    found: dict[str, float] = {}
    for key, limit in value.items():
        try:
            found[key] = parse_increase(str(limit), key)
        except UserError as exc:
            raise ValueError(str(exc)) from None
    return CostGates(**found)


def strictest(gates: Iterable[CostGates | None]) -> CostGates | None:
    """One gate of each kind: the smallest limit any of ``gates`` sets."""
    chosen = [g for g in gates if g is not None]
    if not chosen:
        return None
    latency = [g.p95_latency for g in chosen if g.p95_latency is not None]
    cost = [g.cost_per_case for g in chosen if g.cost_per_case is not None]
    return CostGates(min(latency) if latency else None, min(cost) if cost else None)


# -- figures ------------------------------------------------------------------------------------


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank quantile of sorted values (a value that was measured)."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def spread(values: Iterable[float]) -> dict[str, float] | None:
    """``{p50, p95, max}`` of the values (``None`` without values)."""
    ordered = sorted(values)
    if not ordered:
        return None
    return {
        "p50": _quantile(ordered, 0.5),
        "p95": _quantile(ordered, 0.95),
        "max": ordered[-1],
    }


def _tokens(usage: Any) -> int:
    if not isinstance(usage, Mapping):
        return 0
    return int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)


def _ran(trials: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [t for t in trials if isinstance(t, Mapping) and t.get("status") in ("pass", "fail")]


def _ran_of(case: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The trials of a case entry that ran (errors left out)."""
    return _ran(case.get("trials") or [])


def _figures(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    agent_costs = [t.get("cost") for t in trials]
    known = [float(c) for c in agent_costs if isinstance(c, (int, float))]
    judges: list[Mapping[str, Any]] = [_judge(t) for t in trials]
    judge_costs: list[float] = [
        float(j["cost"]) for j in judges if isinstance(j.get("cost"), (int, float))
    ]
    judged = [j for j in judges if int((j.get("usage") or {}).get("requests") or 0)]
    out: dict[str, Any] = {
        "trials": len(trials),
        "agent": {
            "latency_s": spread(_latencies(trials)),
            "tokens": spread(_tokens(t.get("usage")) for t in trials),
            "cost": spread(known) if known and len(known) == len(trials) else None,
            "cost_total": math.fsum(known) if known else None,
        },
        "judge": None,
    }
    if judged:
        out["judge"] = {
            "latency_s": spread(float(j.get("duration_ms") or 0) / 1000 for j in judged),
            "tokens": spread(_tokens(j.get("usage")) for j in judged),
            "cost": spread(judge_costs) if len(judge_costs) == len(judged) else None,
            "cost_total": math.fsum(judge_costs) if judge_costs else None,
        }
    return out


def _judge(trial: Mapping[str, Any]) -> Mapping[str, Any]:
    judge = trial.get("judge")
    return judge if isinstance(judge, Mapping) else {}


def case_costs(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A case's figures over its trials that ran (errors left out); ``None`` when none ran."""
    ran = _ran(trials)
    return _figures(ran) if ran else None


def _total(figures: Mapping[str, Any]) -> float | None:
    agent = figures["agent"]["cost_total"]
    judge = (figures.get("judge") or {}).get("cost_total")
    if agent is None and judge is None:
        return None
    return (agent or 0.0) + (judge or 0.0)


def suite_costs(cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per suite: the figures over every trial of its cases, and the cost per case.

    ``cases`` are the JSON report's case entries (``suite``, ``trials``).
    """
    by_suite: dict[str, list[Mapping[str, Any]]] = {}
    for case in cases:
        by_suite.setdefault(str(case.get("suite")), []).append(case)
    out = []
    for suite, entries in by_suite.items():
        trials = [t for case in entries for t in _ran_of(case)]
        if not trials:
            continue
        figures = _figures(trials)
        ran = sum(1 for case in entries if _ran_of(case))
        total = _total(figures)
        out.append(
            {
                "suite": suite,
                "cases": ran,
                **figures,
                "cost_total": total,
                "cost_per_case": None if total is None else total / ran,
            }
        )
    return out


# -- against a baseline -------------------------------------------------------------------------


def _key(case: Mapping[str, Any]) -> str:
    return f"{case.get('suite')}::{case.get('name')}"


def _case_cost(trials: Sequence[Mapping[str, Any]]) -> float | None:
    """Mean cost of a trial (agent and judge), or ``None`` when a cost is unknown."""
    costs = []
    for trial in trials:
        agent = trial.get("cost")
        if not isinstance(agent, (int, float)):
            return None
        judge = (trial.get("judge") or {}).get("cost")
        costs.append(agent + (judge if isinstance(judge, (int, float)) else 0.0))
    return math.fsum(costs) / len(costs) if costs else None


def _latencies(trials: Iterable[Mapping[str, Any]]) -> list[float]:
    return [float(t.get("agent_ms") or t.get("duration_ms") or 0) / 1000 for t in trials]


def compare_costs(
    current: Sequence[Mapping[str, Any]],
    baseline: Sequence[Mapping[str, Any]],
    gates: CostGates | None = None,
) -> dict[str, Any]:
    """Cost and latency of ``current`` against ``baseline``, over the cases both ran.

    Args:
        current: This run's case entries (as the JSON report holds them).
        baseline: The baseline run's case entries.
        gates: Limits on the growth of the p95 latency and the cost per case.

    Returns:
        ``{cases, p95_latency_s: {baseline, current, change}, cost_per_case: {baseline,
        current, change, interval?}, gates: [{name, limit, change, passed, message}]}``;
        a change is a fraction (0.25 = 25% more), ``None`` when it cannot be measured.
    """
    before = {_key(c): _ran_of(c) for c in baseline}
    pairs = [(before[_key(c)], _ran_of(c)) for c in current if before.get(_key(c)) and _ran_of(c)]
    old_p95 = _p95(x for old, _ in pairs for x in _latencies(old))
    new_p95 = _p95(x for _, new in pairs for x in _latencies(new))
    latency = {"baseline": old_p95, "current": new_p95, "change": _change(old_p95, new_p95)}
    cost = _cost_change([(_case_cost(old), _case_cost(new)) for old, new in pairs])
    result: dict[str, Any] = {
        "cases": len(pairs),
        "p95_latency_s": latency,
        "cost_per_case": cost,
        "gates": [],
    }
    if gates is not None:
        for name, label, limit, measured in (
            ("p95_latency", "p95 latency", gates.p95_latency, latency),
            ("cost_per_case", "cost per case", gates.cost_per_case, cost),
        ):
            if limit is None:
                continue
            result["gates"].append(_gate(name, label, limit, measured["change"], len(pairs)))
    return result


def _p95(values: Iterable[float]) -> float | None:
    found = spread(values)
    return None if found is None else found["p95"]


def _cost_change(costs: Sequence[tuple[float | None, float | None]]) -> dict[str, Any]:
    """The mean cost per case of both runs, and the mean per-case change with its interval."""
    from toolproof._statistics import mean_interval

    known = [(a, b) for a, b in costs if a is not None and b is not None]
    if not known or len(known) != len(costs):
        return {"baseline": None, "current": None, "change": None}
    old_mean = math.fsum(a for a, _ in known) / len(known)
    new_mean = math.fsum(b for _, b in known) / len(known)
    cost: dict[str, Any] = {
        "baseline": old_mean,
        "current": new_mean,
        "change": _change(old_mean, new_mean),
    }
    changes = [b / a - 1 for a, b in known if a > 0]
    if len(changes) >= 2:
        interval = mean_interval(changes, bounds=(-1.0, math.inf))
        cost["per_case_change"] = {
            "mean": round(interval.estimate, 6),
            "low": round(interval.low, 6),
            "high": None if math.isinf(interval.high) else round(interval.high, 6),
            "level": interval.level,
            "method": interval.method,
        }
    return cost


def _change(old: float | None, new: float | None) -> float | None:
    if old is None or new is None or old <= 0:
        return None
    return round(new / old - 1, 6)


def _gate(name: str, label: str, limit: float, change: float | None, cases: int) -> dict[str, Any]:
    if change is None:
        why = "no case of the baseline to compare with" if not cases else "not measured"
        return {
            "name": name,
            "limit": limit,
            "change": None,
            "passed": False,
            "message": f"{label}: cannot compare with the baseline ({why})",
        }
    passed = change <= limit
    verb = "up" if change >= 0 else "down"
    return {
        "name": name,
        "limit": limit,
        "change": change,
        "passed": passed,
        "message": f"{label} {verb} {abs(change):.0%} against the baseline "
        f"({'within' if passed else 'more than'} the {limit:.0%} allowed)",
    }


# -- before a run -------------------------------------------------------------------------------


def estimate_cost(
    planned: Sequence[tuple[str, int]], baseline: Sequence[Mapping[str, Any]]
) -> float | None:
    """What a run of ``planned`` (``suite::name``, trials) will cost, from a baseline's trials.

    A case the baseline ran costs its mean per trial there; a case it did not, the mean over
    every trial of the baseline. ``None`` when the baseline has no cost to go by.
    """
    per_case = {_key(c): _case_cost(_ran_of(c)) for c in baseline}
    known = [v for v in per_case.values() if v is not None]
    if not known:
        return None
    default = math.fsum(known) / len(known)
    total = 0.0
    for key, trials in planned:
        found = per_case.get(key)
        total += (default if found is None else found) * trials
    return total


def case_entries(cases: Iterable[Any]) -> list[dict[str, Any]]:
    """The case results of a run as the JSON report's case entries (suite, name, trials)."""
    return [
        {"suite": c.case.suite, "name": c.case.name, "trials": [t.head() for t in c.trials]}
        for c in cases
    ]


def baseline_cases(baseline: str | Any, directory: Any = None) -> list[dict[str, Any]]:
    """The case entries of a baseline: a run log (id, prefix, ``latest``, path) or a report.

    Raises:
        UserError: No such run, or it has no eval report.
    """
    from toolproof._runlog import load_run
    from toolproof.errors import UserError

    if isinstance(baseline, Mapping):
        report: Any = baseline
        name = "the baseline report"
    else:
        run = load_run(str(baseline), directory, kind="run")
        report, name = run.report, f"run {run.info.id}"
    if not isinstance(report, Mapping) or report.get("format") != "toolproof-eval-report":
        raise UserError(f"baseline: {name} has no eval report to compare with")
    cases = report.get("cases")
    return [c for c in cases if isinstance(c, dict)] if isinstance(cases, list) else []


def run_costs(
    cases: Sequence[Mapping[str, Any]],
    baseline: Sequence[Mapping[str, Any]] | None,
    gates: CostGates | None,
    estimate: float | None,
) -> dict[str, Any]:
    """The ``costs`` of a run's summary: per suite, against the baseline, and the estimate."""
    suites = suite_costs(cases)
    out: dict[str, Any] = {"suites": suites, "comparison": None, "estimate": None}
    if baseline is not None:
        out["comparison"] = compare_costs(cases, baseline, gates)
    if estimate is not None:
        totals = [s["cost_total"] for s in suites if s["cost_total"] is not None]
        actual = math.fsum(totals) if totals else None
        out["estimate"] = {
            "cost": estimate,
            "actual": actual,
            "error": None if actual is None or not actual else round(estimate / actual - 1, 6),
        }
    return out


# -- rendering ----------------------------------------------------------------------------------


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4g}"


def _spread_text(figures: Mapping[str, Any] | None, key: str, unit: str) -> str:
    found = None if figures is None else figures.get(key)
    if not found:
        return "-"
    if unit == "$":
        return f"{_money(found['p50'])}/{_money(found['p95'])}/{_money(found['max'])}"
    if unit == "s":
        from toolproof._html import secs

        return "/".join(secs(found[k]) for k in ("p50", "p95", "max"))
    return f"{found['p50']:g}/{found['p95']:g}/{found['max']:g}"


def cost_lines(costs: Mapping[str, Any] | None) -> list[str]:
    """Plain lines for the console and the Markdown report (p50/p95/max over trials)."""
    if not costs:
        return []
    lines = []
    for suite in costs.get("suites") or []:
        parts = [
            f"{suite['suite']}: agent latency {_spread_text(suite['agent'], 'latency_s', 's')}",
            f"tokens {_spread_text(suite['agent'], 'tokens', '')}",
        ]
        if suite["agent"]["cost"] is not None:
            parts.append(f"cost {_spread_text(suite['agent'], 'cost', '$')}")
        judge = suite.get("judge")
        if judge:
            parts.append(
                f"judge latency {_spread_text(judge, 'latency_s', 's')}, "
                f"tokens {_spread_text(judge, 'tokens', '')}"
                + (f", cost {_spread_text(judge, 'cost', '$')}" if judge["cost"] else "")
            )
        if suite["cost_per_case"] is not None:
            parts.append(f"{_money(suite['cost_per_case'])} per case")
        lines.append(" · ".join(parts) + " (p50/p95/max)")
    comparison = costs.get("comparison")
    if comparison:
        latency, cost = comparison["p95_latency_s"], comparison["cost_per_case"]
        parts = [f"against the baseline ({comparison['cases']} cases in both)"]
        if latency["change"] is not None:
            parts.append(
                f"p95 latency {latency['baseline']:.3g} s -> {latency['current']:.3g} s "
                f"({latency['change']:+.0%})"
            )
        if cost["change"] is not None:
            parts.append(
                f"cost per case {_money(cost['baseline'])} -> {_money(cost['current'])} "
                f"({cost['change']:+.0%})"
            )
        lines.append(": ".join(parts[:1]) + (": " + ", ".join(parts[1:]) if parts[1:] else ""))
        for gate in comparison["gates"]:
            lines.append(("PASS " if gate["passed"] else "FAIL ") + gate["message"])
    estimate = costs.get("estimate")
    if estimate:
        line = f"estimated {_money(estimate['cost'])}, cost {_money(estimate['actual'])}"
        if estimate["error"] is not None:
            line += f" (the estimate was off by {estimate['error']:+.0%})"
        lines.append(line)
    return lines


def case_properties(figures: Mapping[str, Any] | None) -> dict[str, str]:
    """A case's figures as JUnit ``<property>`` pairs (``agent.latency_s.p95``...)."""
    out: dict[str, str] = {}
    if not figures:
        return out
    for who in ("agent", "judge"):
        part = figures.get(who)
        if not part:
            continue
        for key in ("latency_s", "tokens", "cost"):
            found = part.get(key)
            if found:
                for stat in ("p50", "p95", "max"):
                    out[f"{who}.{key}.{stat}"] = f"{found[stat]:g}"
    return out
