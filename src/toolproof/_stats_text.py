"""Statistics figures as plain data and sentences: intervals, gate decisions.

Every report that prints a figure of :mod:`toolproof._statistics` (eval and replay reports,
``toolproof runs compare``, the viewer) words it here, so an interval or a gate reads the
same everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolproof._statistics import GateDecision, Interval

__all__ = ["gate_dict", "gate_line", "interval_dict", "level_text", "show"]


def level_text(level: float) -> str:
    """``"95%"``."""
    return f"{100 * level:g}%"


def interval_dict(interval: Interval) -> dict[str, Any]:
    """JSON-ready form: ``{estimate, low, high, level, method, n, effective_n}``."""
    return {
        "estimate": interval.estimate,
        "low": interval.low,
        "high": interval.high,
        "level": interval.level,
        "method": interval.method,
        "n": interval.n,
        "effective_n": round(interval.effective_n, 3),
    }


def show(interval: Interval | Mapping[str, Any], digits: int = 3) -> str:
    """``"0.700 [0.397, 0.892]"``: the estimate and its bounds."""
    if isinstance(interval, Interval):
        estimate, low, high = interval.estimate, interval.low, interval.high
    else:
        estimate, low, high = interval["estimate"], interval["low"], interval["high"]
    return f"{estimate:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def gate_dict(decision: GateDecision) -> dict[str, Any]:
    """JSON-ready form of a gate's decision."""
    return {
        "verdict": decision.verdict,
        "blocks": decision.blocks,
        "mode": decision.mode,
        "limit": decision.limit,
        "bound": decision.bound,
        "needed": decision.needed,
        "failure_rate": interval_dict(decision.interval),
    }


def gate_line(decision: GateDecision | Mapping[str, Any], unit: str = "samples") -> str:
    """One sentence: the verdict, which bound decided it, or how many samples would."""
    data = gate_dict(decision) if isinstance(decision, GateDecision) else decision
    rate = data["failure_rate"]
    limit = f"{100 * data['limit']:.1f}%"
    shown = (
        f"failure rate {100 * rate['estimate']:.1f}% "
        f"[{100 * rate['low']:.1f}%, {100 * rate['high']:.1f}%] ({level_text(rate['level'])})"
    )
    mode = data["mode"]
    if data["verdict"] == "pass":
        return f"gate ({mode}) passed: {shown}; its high bound is below {limit}"
    if data["verdict"] == "fail":
        return f"gate ({mode}) failed: {shown}; its low bound is above {limit}"
    needed = data["needed"]
    more = f"; about {needed} {unit} would decide" if needed else ""
    consequence = "blocks in release mode" if data["blocks"] else "does not block in advisory mode"
    return f"gate ({mode}) undecided: {shown} contains the limit {limit} ({consequence}){more}"
