"""Retrieval quality per suite: the figures of the retrieval checks, aggregated for reports.

The checks of :mod:`toolproof.evals._retrieval` store their figures in
``CheckResult.metrics``; :func:`quality_summary` averages them per suite (macro, and micro
recall / precision) and :func:`quality_lines` words them for the console and Markdown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from toolproof._stats_text import show
from toolproof.rag._metrics import METRICS, RankingScores, summarize

if TYPE_CHECKING:
    from toolproof.evals._checks import CheckResult

__all__ = ["CHECKS", "VERDICTS", "quality_lines", "quality_summary"]

#: The verdicts the faithfulness judge gives each claim (counted per suite).
VERDICTS = ("supported", "contradicted", "not_found")

#: The checks whose figures are aggregated (registered by toolproof.evals._retrieval).
CHECKS = ("retrieval", "retrieval_grounded", "faithfulness")


# -- aggregates ---------------------------------------------------------------------------------


class _Suited(Protocol):
    @property
    def suite(self) -> str: ...


class _Checked(Protocol):
    @property
    def checks(self) -> Sequence[CheckResult]: ...


class _CaseResult(Protocol):
    # What the aggregates read of a case's result (toolproof.evals._results.CaseResult).
    @property
    def case(self) -> _Suited: ...

    @property
    def trials(self) -> Sequence[_Checked]: ...


def quality_summary(cases: Sequence[_CaseResult], *, level: float = 0.95) -> list[dict[str, Any]]:
    """Per suite: retrieval metrics (macro and micro), grounding and faithfulness figures.

    Every trial of every case counts once (a case with three trials is three queries).
    Suites without retrieval checks are left out. Intervals are at ``level``.
    """
    suites: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for case in cases:
        for trial in case.trials:
            for result in trial.checks:
                if result.metrics is not None and result.check in CHECKS:
                    per = suites.setdefault(case.case.suite, {})
                    per.setdefault(result.check, []).append(result.metrics)
    return quality_of(suites, level=level)


def quality_of(
    suites: dict[str, dict[str, list[dict[str, Any]]]], *, level: float = 0.95
) -> list[dict[str, Any]]:
    """:func:`quality_summary` of the metrics already gathered: suite -> check -> metrics.

    Only checks named in :data:`CHECKS` are gathered, in the order of the cases, their
    trials and their checks. Each retrieval metric's mean over queries comes with its
    interval at ``level`` (``intervals``: Student's t over the queries, within 0..1).
    """
    out: list[dict[str, Any]] = []
    for suite, found in suites.items():
        entry: dict[str, Any] = {"suite": suite}
        if "retrieval" in found:
            groups: dict[tuple[str, Any], list[RankingScores]] = {}
            for m in found["retrieval"]:
                fields: dict[str, Any] = {f: m.get(f) for f in RankingScores.__slots__}
                scores = RankingScores(**fields)
                groups.setdefault((str(m.get("tool")), m.get("k")), []).append(scores)
            entry["retrieval"] = [
                {
                    "tool": tool,
                    "k": k,
                    **summarize(items).to_dict(),
                    "intervals": _metric_intervals(items, level),
                }
                for (tool, k), items in groups.items()
            ]
        if "retrieval_grounded" in found:
            items = found["retrieval_grounded"]
            graded = [m for m in items if "claims" in m]
            entry["grounding"] = {
                "answers": len(graded),
                "ungrounded_answers": sum(1 for m in graded if m["ungrounded"]),
                "claims": sum(m["claims"] for m in graded),
                "ungrounded_claims": sum(m["ungrounded"] for m in graded),
            }
        if "faithfulness" in found:
            items = found["faithfulness"]
            claims = sum(m["claims"] for m in items)
            unsupported = sum(m["contradicted"] + m["not_found"] for m in items)
            rates = [m["hallucination_rate"] for m in items if m["hallucination_rate"] is not None]
            entry["faithfulness"] = {
                "answers": len(items),
                "claims": claims,
                **{v: sum(m[v] for m in items) for v in VERDICTS},
                "hallucination_rate": unsupported / claims if claims else None,
                "macro_hallucination_rate": math.fsum(rates) / len(rates) if rates else None,
            }
        out.append(entry)
    return out


def _metric_intervals(items: Sequence[RankingScores], level: float) -> dict[str, Any]:
    """Each metric's mean over the queries that define it, with its interval."""
    from toolproof._statistics import mean_interval
    from toolproof._stats_text import interval_dict

    out: dict[str, Any] = {}
    for name in METRICS:
        values = [v for v in (getattr(s, name) for s in items) if v is not None]
        if values:
            out[name] = interval_dict(mean_interval(values, level=level))
    return out


def figure(value: float, interval: Mapping[str, Any] | None) -> str:
    """``"0.750 [0.612, 0.888]"`` with the interval, ``"0.750"`` without."""
    return f"{value:.3f}" if interval is None else show(interval)


def quality_lines(quality: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per suite figure, for the console and the Markdown report."""
    lines: list[str] = []
    for entry in quality:
        suite = entry["suite"]
        for item in entry.get("retrieval", []):
            cut = f"@{item['k']}" if item["k"] is not None else ""
            macro = item["macro"]
            bounds = item.get("intervals") or {}
            figures = ", ".join(
                f"{name}{cut} {figure(macro[name], bounds.get(name))}"
                for name in METRICS
                if macro.get(name) is not None
            )
            micro = item["micro"]
            if micro["recall"] is not None:
                figures += f"; micro recall{cut} {micro['recall']:.3f}"
            undefined = f", {item['undefined']} without relevant ids" if item["undefined"] else ""
            lines.append(
                f"{suite}: retrieval ({item['tool']}, {item['queries']} queries{undefined}): "
                f"{figures or 'no labelled query'}"
            )
        grounding = entry.get("grounding")
        if grounding:
            grounded = grounding["answers"] - grounding["ungrounded_answers"]
            lines.append(
                f"{suite}: grounded in retrieval: {grounded}/{grounding['answers']} answers "
                f"({grounding['ungrounded_claims']} of "
                f"{grounding['claims']} facts not in the retrieved chunks)"
            )
        faith = entry.get("faithfulness")
        if faith:
            rate = faith["hallucination_rate"]
            shown = f"{rate:.3f}" if rate is not None else "-"
            lines.append(
                f"{suite}: faithfulness (judged): {faith['answers']} answers, {faith['claims']} "
                f"claims: {faith['supported']} supported, {faith['contradicted']} contradicted, "
                f"{faith['not_found']} not found; hallucination rate {shown}"
            )
    return lines
