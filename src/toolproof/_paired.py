"""Paired comparison of two runs' reports: regressed, improved, or no evidence.

``toolproof runs compare``, ``toolproof run --model A --model B``, the viewer's comparison and
the pull-request comment all read two reports (eval reports: cases with their trial counts;
replay reports: samples graded pass, warn or fail), pair them by case id (trace id), and ask
:func:`toolproof._statistics.compare_runs` whether the new run is worse beyond noise. This
module turns reports into counts and the comparison into plain data and text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from toolproof._statistics import Comparison, compare_runs

__all__ = [
    "comparison_dict",
    "comparison_lines",
    "comparison_markdown",
    "paired",
    "report_counts",
]


def report_counts(report: Mapping[str, Any] | None) -> dict[str, tuple[int, int]]:
    """``{case id: (trials with a verdict, passes)}`` of an eval report's cases.

    For a replay report: ``{trace id: (1, 1 unless the sample failed)}``. Cases and samples
    without a verdict (skipped, errors, not run) are left out.
    """
    out: dict[str, tuple[int, int]] = {}
    if not isinstance(report, Mapping):
        return out
    cases = report.get("cases")
    for case in cases if isinstance(cases, list) else []:
        if not isinstance(case, Mapping) or not isinstance(case.get("id"), str):
            continue
        passes, failures = case.get("passes"), case.get("failures")
        if _count(passes) and _count(failures) and passes + failures >= 1:
            out[case["id"]] = (passes + failures, passes)
    results = report.get("results")
    for sample in results if isinstance(results, list) else []:
        if not isinstance(sample, Mapping) or not isinstance(sample.get("trace_id"), str):
            continue
        grade = sample.get("grade")
        if grade in ("pass", "warn", "fail"):
            out[sample["trace_id"]] = (1, 0 if grade == "fail" else 1)
    return out


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def paired(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    *,
    level: float = 0.95,
    correction: str = "bh",
) -> Comparison | None:
    """Compare two reports case by case; ``None`` when no case has a verdict in both."""
    before, after = report_counts(old), report_counts(new)
    if not set(before) & set(after):
        return None
    return compare_runs(before, after, level=level, correction=correction)  # type: ignore[arg-type]


def comparison_dict(comparison: Comparison) -> dict[str, Any]:
    """JSON-ready form: the verdict, its test, the effect with its interval, per-case changes."""
    effect = comparison.effect
    return {
        "change": comparison.change,
        "p_value": comparison.p_value,
        "test": comparison.test,
        "level": effect.level,
        "effect": {"estimate": effect.estimate, "low": effect.low, "high": effect.high},
        "detectable_effect": comparison.detectable_effect,
        "power": comparison.power,
        "correction": comparison.correction,
        "paired": len(comparison.cases),
        "unpaired": list(comparison.unpaired),
        "cases": [
            {
                "case": c.case,
                "change": c.change,
                "old": list(c.baseline),
                "new": list(c.candidate),
                "p_value": c.p_value,
                "adjusted_p": c.adjusted_p,
            }
            for c in comparison.cases
        ],
    }


def _points(value: float) -> str:
    return f"{100 * value:+.1f} points"


def _correction(name: str) -> str:
    return {"bh": "Benjamini-Hochberg", "holm": "Holm"}.get(name, name)


def comparison_lines(comparison: Comparison | Mapping[str, Any]) -> list[str]:
    """The comparison in sentences: verdict, effect with interval, what it could detect."""
    data = comparison_dict(comparison) if isinstance(comparison, Comparison) else comparison
    effect = data["effect"]
    level = f"{100 * data['level']:g}%"
    verdict = {
        "regressed": "regressed: the new run passes less than chance explains",
        "improved": "improved: the new run passes more than chance explains",
        "no evidence": "no evidence of a change: the difference is within the noise",
    }[data["change"]]
    mde = data["detectable_effect"]
    lines = [
        f"paired comparison of {data['paired']} cases: {verdict} "
        f"(p = {data['p_value']:.3g}, {data['test']}, {level})",
        f"change in pass rate: {_points(effect['estimate'])} "
        f"[{_points(effect['low'])}, {_points(effect['high'])}]; "
        f"these runs detect changes of {100 * mde:.1f} points or more "
        f"({100 * data['power']:g}% power)",
    ]
    listed = [c for c in data["cases"] if c["change"] != "no evidence"]
    if listed:
        lines.append(
            f"cases that changed beyond noise ({_correction(data['correction'])}-corrected): "
            + ", ".join(f"{c['case']} {c['change']}" for c in listed)
        )
    else:
        lines.append(
            f"no single case changed beyond noise ({_correction(data['correction'])}-corrected)"
        )
    if data["unpaired"]:
        lines.append(f"{len(data['unpaired'])} cases are in one run only (not compared)")
    return lines


def comparison_markdown(comparison: Comparison | Mapping[str, Any]) -> list[str]:
    """The comparison as Markdown lines: the sentences, and the cases that changed."""
    from toolproof._reporting import md_code, md_escape, md_table

    data = comparison_dict(comparison) if isinstance(comparison, Comparison) else comparison
    lines = [f"- {md_escape(line)}" for line in comparison_lines(data)]
    listed = [c for c in data["cases"] if c["change"] != "no evidence"]
    if listed:
        rows = [
            [
                md_code(c["case"]),
                md_escape(c["change"]),
                f"{c['old'][1]}/{c['old'][0]} → {c['new'][1]}/{c['new'][0]}",
                f"{c['adjusted_p']:.3g}",
            ]
            for c in listed
        ]
        lines += ["", md_table(["case", "change", "passed old → new", "adjusted p"], rows)]
    return lines


def exit_code(comparison: Comparison | None) -> int:
    """1 when the new run regressed beyond noise, else 0."""
    return 1 if comparison is not None and comparison.change == "regressed" else 0
