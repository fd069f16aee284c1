"""Results of an eval run: per trial, per case, and for the whole run.

Trials produce :class:`TrialResult` (each check's result and reason; the traces are streamed
to disk for the JSON report and kept in memory only on request). A case's trials become a
:class:`CaseResult` through its pass rule; infrastructure errors never count as failures of
the agent. :class:`EvalReport` holds every case and computes the summary and exit code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from toolproof._messages import Usage
from toolproof._stats_text import gate_dict
from toolproof.evals._checks import CheckResult
from toolproof.evals._costs import case_costs
from toolproof.evals._stats import CaseStats, SuiteStats, case_stats, suite_stats
from toolproof.evals._stats_report import (
    EXIT_UNDECIDED,
    StatsOptions,
    case_statistics,
    eval_gate,
    suite_statistics,
)

#: ``case_stats(n, c)`` by ``(n, c)``: a few pairs in any run (trials per case are few), and
#: reports ask for each case's figures several times (summary, headline, figures...).
_CASE_STATS: dict[tuple[int, int], CaseStats] = {}

if TYPE_CHECKING:
    from toolproof._statistics import GateDecision
    from toolproof._trace import Trace
    from toolproof.evals._suite import Case

__all__ = [
    "EXIT_BLOCKING_FAILED",
    "EXIT_CONFIG_ERROR",
    "EXIT_INFRASTRUCTURE",
    "EXIT_INTERRUPTED",
    "EXIT_NOTHING_RAN",
    "EXIT_OK",
    "EXIT_UNDECIDED",
    "CaseResult",
    "EvalReport",
    "TrialResult",
    "TrialStatus",
    "Verdict",
    "describe_errors",
    "describe_failures",
    "describe_faults",
]

#: Exit codes of ``toolproof run``, the same as ``toolproof replay``'s (docs/evals.md).
EXIT_OK = 0
EXIT_BLOCKING_FAILED = 1
EXIT_CONFIG_ERROR = 2
EXIT_INFRASTRUCTURE = 3
EXIT_NOTHING_RAN = 5
EXIT_INTERRUPTED = 130

TrialStatus = Literal["pass", "fail", "error", "simulator_fault"]
Verdict = Literal["pass", "fail", "error", "skipped", "not_run"]


@dataclass(slots=True)
class TrialResult:
    """One run of a case.

    Attributes:
        index: 0-based trial number.
        status: ``"pass"``, ``"fail"`` (the agent failed a check), ``"error"``
            (infrastructure errors prevented a verdict, even after retries) or
            ``"simulator_fault"`` (the simulated user broke its instructions, so the trial
            says nothing about the agent; its checks are kept).
        checks: Every check's result, objective first, then judged.
        error: For ``"error"``, what prevented a verdict; for a run that stopped on an
            error of the agent or its tools, that error.
        error_type: The class name of the root error.
        attempts: How many times the trial ran (retries after infrastructure errors).
        duration_ms: Wall time of the last attempt.
        usage: Tokens of the last attempt (cached responses included).
        cost: Cost of the last attempt in USD, when prices are known.
        model_calls: Model requests the last attempt sent.
        cached_calls: Model responses the last attempt took from the response cache.
        agent_ms: Time the agent's runs of the last attempt took (the trial's
            ``duration_ms`` also counts checks and the judge).
        judge_usage: Tokens the judge's requests of the last attempt used (cached verdicts
            cost nothing).
        judge_cost: Their cost in USD, when the judge model's price is known.
        judge_ms: Time the judge's requests took.
        traces: The traces of the last attempt (one per turn), when the run keeps them.
        traceback: When a bug in user code (a tool, a factory, a mock) stopped the trial, the
            traceback of the user's frames (shown by ``--traceback`` and pytest).
    """

    index: int
    status: TrialStatus
    checks: list[CheckResult] = field(default_factory=list)
    error: str | None = None
    error_type: str | None = None
    attempts: int = 1
    duration_ms: float = 0.0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    model_calls: int = 0
    cached_calls: int = 0
    agent_ms: float = 0.0
    judge_usage: Usage = field(default_factory=Usage)
    judge_cost: float | None = None
    judge_ms: float = 0.0
    traces: list[Trace] | None = None
    spool: tuple[int, int] | None = field(default=None, repr=False)
    traceback: str | None = field(default=None, repr=False)

    @property
    def failed_checks(self) -> list[CheckResult]:
        """Checks that did not pass (failed, or inconclusive)."""
        return [c for c in self.checks if c.status in ("fail", "inconclusive")]

    def head(self) -> dict[str, Any]:
        """Plain data for reports, without the traces."""
        usage = self.usage
        return {
            "index": self.index,
            "status": self.status,
            "attempts": self.attempts,
            "duration_ms": round(self.duration_ms, 3),
            "usage": {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cached_tokens": usage.cached_tokens,
                "requests": usage.requests,
                "estimated": usage.estimated,
            },
            "cost": self.cost,
            "model_calls": self.model_calls,
            "cached_calls": self.cached_calls,
            "agent_ms": round(self.agent_ms, 3),
            "judge": {
                "usage": {
                    "input_tokens": self.judge_usage.input_tokens,
                    "output_tokens": self.judge_usage.output_tokens,
                    "requests": self.judge_usage.requests,
                },
                "cost": self.judge_cost,
                "duration_ms": round(self.judge_ms, 3),
            },
            "error": None
            if self.error is None
            else {"type": self.error_type, "message": self.error},
            "checks": [c.to_dict() for c in self.checks],
        }


@dataclass(slots=True)
class CaseResult:
    """A case's verdict, its trials and their statistics.

    Attributes:
        case: The case.
        verdict: ``"pass"``, ``"fail"``, ``"error"`` (infrastructure errors left it
            undecided), ``"skipped"`` or ``"not_run"`` (the run was interrupted).
        reason: Why, in a sentence (failing checks with counts, or the error).
        trials: Every trial, in order.
        model: The model the case ran with.
        judge_model: The judge's model, when the case has judged checks and one.
        scripted: Whether the case ran with a scripted model (its ``script:``, or a
            ``ScriptedModel`` / ``FunctionModel``): its trials check the wiring (tools,
            mocks, checks), not a model, so they are left out of the run's pass^k figures.
        statistics: The level and method of the case's intervals.
        stopped: Why fewer trials ran than planned with ``until: decided``: ``"decided"``
            (the verdict was known), else ``None``.
    """

    case: Case
    verdict: Verdict
    reason: str
    trials: list[TrialResult] = field(default_factory=list)
    model: str | None = None
    judge_model: str | None = None
    scripted: bool = False
    statistics: StatsOptions | None = None
    stopped: str | None = None

    @property
    def blocking(self) -> bool:
        """Whether the case can fail the run (``gate: block``)."""
        return self.case.config.gate == "block"

    def _count(self, status: TrialStatus) -> int:
        return sum(1 for t in self.trials if t.status == status)

    @property
    def passes(self) -> int:
        """Trials that passed."""
        return self._count("pass")

    @property
    def failures(self) -> int:
        """Trials the agent failed."""
        return self._count("fail")

    @property
    def errors(self) -> int:
        """Trials without a verdict (infrastructure errors)."""
        return self._count("error")

    @property
    def simulator_faults(self) -> int:
        """Trials whose simulated user broke its instructions (no verdict on the agent)."""
        return self._count("simulator_fault")

    @property
    def stats(self) -> CaseStats | None:
        """Pass rate, pass@k, pass^k and class over the trials that have a verdict."""
        passes = self.passes
        n = passes + self.failures
        return _case_stats(n, passes) if n else None

    @property
    def duration_ms(self) -> float:
        """Wall time of all trials (they may have overlapped)."""
        return sum(t.duration_ms for t in self.trials)

    def head(self) -> dict[str, Any]:
        """Plain data for reports, without the trials."""
        case = self.case
        config = case.config
        stats = self.stats
        return {
            "suite": case.suite,
            "name": case.name,
            "id": case.id,
            "file": str(case.file),
            "line": case.line,
            "description": case.description,
            "tags": case.tags,
            "gate": config.gate,
            "pass_rule": config.pass_rule.describe(),
            "trials_planned": config.trials,
            "trials_run": len(self.trials),
            "until": config.until,
            "stopped": self.stopped,
            "tools": config.tools,
            "real_tools": list(config.named_real_tools),
            "model": self.model,
            "judge_model": self.judge_model,
            "scripted": self.scripted,
            "verdict": self.verdict,
            "reason": self.reason,
            "passes": self.passes,
            "failures": self.failures,
            "errors": self.errors,
            "simulator_faults": self.simulator_faults,
            "stats": None if stats is None else stats.to_dict(),
            "intervals": case_statistics(
                self.passes, self.passes + self.failures, self.statistics or StatsOptions()
            ),
            "attack": case.attack.head() if case.attack and case.attack.attacked else None,
            "costs": case_costs([t.head() for t in self.trials]),
        }


@dataclass(slots=True)
class EvalReport:
    """The outcome of a run.

    Attributes:
        cases: Every selected case, in suite order.
        started_at: ISO-8601 UTC start time.
        duration_s: Wall time of the run.
        interrupted: Whether the run was stopped early (Ctrl-C); unfinished cases are
            ``"not_run"``.
        model_calls: Model requests sent in the whole run.
        cached_calls: Model responses taken from the response cache.
        judge_calls: Judge requests sent (cached verdicts excluded).
        unwritten: The reports that could not be written (a full disk, a file-size limit),
            one message each; the others were written and the verdict stands.
        statistics: The level and method of the intervals, and the eval gate.
        costs: Cost, latency and tokens per suite, the comparison with a baseline run and
            its gates, and the cost estimate made before the run (see
            :mod:`toolproof.evals._costs`); a failed cost gate fails the run (exit code 1).
    """

    cases: list[CaseResult]
    started_at: str = ""
    duration_s: float = 0.0
    interrupted: bool = False
    model_calls: int = 0
    cached_calls: int = 0
    judge_calls: int = 0
    unwritten: list[str] = field(default_factory=list)
    statistics: StatsOptions = field(default_factory=StatsOptions)
    costs: dict[str, Any] | None = None

    @property
    def cost_gates_failed(self) -> list[str]:
        """The messages of the cost and latency gates that failed."""
        comparison = (self.costs or {}).get("comparison") or {}
        return [g["message"] for g in comparison.get("gates", []) if not g["passed"]]

    def count(self, verdict: Verdict, *, blocking: bool | None = None) -> int:
        """Cases with ``verdict`` (only blocking or advisory ones when ``blocking`` is set)."""
        return sum(
            1
            for c in self.cases
            if c.verdict == verdict and (blocking is None or c.blocking == blocking)
        )

    @property
    def ran(self) -> int:
        """Cases that ran (every case but the skipped and not run ones)."""
        return sum(1 for c in self.cases if c.verdict in ("pass", "fail", "error"))

    @property
    def exit_code(self) -> int:
        """The exit code of ``toolproof run``.

        0 every blocking case passed; 1 a blocking case failed; 3 the model provider failed
        and left one undecided; 5 no case ran (all skipped). Advisory cases (``gate:
        advise``) never change it; an interrupted run exits 130. With a rate gate
        (``max_failure_rate``), the gate decides instead of the blocking cases' verdicts:
        1 when it fails, 6 when it is undecided in release mode.
        """
        return _exit_code(
            self.interrupted,
            self.count("fail", blocking=True) + len(self.cost_gates_failed),
            self.count("error", blocking=True),
            self.ran,
            self.gate(),
        )

    def gate(self) -> GateDecision | None:
        """The eval gate's decision on the blocking cases' failure rate (``None``: no limit).

        Every blocking case with a verdict counts, scripted ones included: the gate holds
        the run, whatever model answered.
        """
        return eval_gate(_blocking_failures(self.cases), self.statistics)

    @property
    def scripted(self) -> bool:
        """Whether every case that ran was scripted (so the run measured no model)."""
        ran = [c for c in self.cases if c.trials]
        return bool(ran) and all(c.scripted for c in ran)

    @property
    def stats(self) -> SuiteStats:
        """Suite figures: means of the cases' pass rate, pass@k and pass^k, and classes.

        Scripted cases are left out: repeating a deterministic script measures nothing.
        """
        return suite_stats(
            s for s in (c.stats for c in self.cases if not c.scripted) if s is not None
        )

    def quality(self) -> list[dict[str, Any]]:
        """Per suite, the retrieval metrics (macro and micro) and grounding / faithfulness.

        Only suites with retrieval checks appear (see :mod:`toolproof.evals._quality`); the
        intervals are at the run's confidence level, as in :meth:`summary`.
        """
        from toolproof.evals._quality import quality_summary

        return quality_summary(self.cases, level=self.statistics.level)

    def summary(self) -> dict[str, Any]:
        """Counts and figures for reports."""
        from toolproof.evals._attacks import attack_summary
        from toolproof.evals._quality import quality_of

        tally = _Tally()  # one pass over the cases and their trials (large runs ask for this)
        for case in self.cases:
            tally.add(case)
        verdicts, figures = tally.verdicts, tally.figures
        ran = sum(sum(verdicts[v]) for v in ("pass", "fail", "error"))
        decision = eval_gate(tally.blocking, self.statistics)
        k = min((f.n for f in figures), default=None)
        intervals = suite_statistics(
            [(f.n, f.c) for f in figures],
            self.statistics,
            pass_hat=[f.pass_hat[k] for f in figures] if k else (),
            k=k,
        )
        return {
            "cases": len(self.cases),
            "passed": sum(verdicts["pass"]),
            "failed": sum(verdicts["fail"]),
            "errors": sum(verdicts["error"]),
            "skipped": sum(verdicts["skipped"]),
            "not_run": sum(verdicts["not_run"]),
            "blocking_failed": verdicts["fail"][0],
            "advisory_failed": verdicts["fail"][1],
            "trials": sum(tally.statuses.values()),
            "trials_passed": tally.statuses["pass"],
            "trials_failed": tally.statuses["fail"],
            "trials_errored": tally.statuses["error"],
            "trials_simulator_fault": tally.statuses["simulator_fault"],
            "scripted_cases": tally.scripted,
            "stats": suite_stats(figures).to_dict(),
            "intervals": intervals,
            "gate": None if decision is None else gate_dict(decision),
            "usage": tally.usage,
            "cost": tally.cost,
            "model_calls": self.model_calls,
            "cached_calls": self.cached_calls,
            "judge_calls": self.judge_calls,
            "judged_checks": tally.judged,
            "quality": quality_of(tally.quality, level=self.statistics.level),
            "attacks": attack_summary(self.cases),
            "costs": self.costs,
            "duration_s": round(self.duration_s, 3),
            "exit_code": _exit_code(
                self.interrupted,
                verdicts["fail"][0] + len(self.cost_gates_failed),
                verdicts["error"][0],
                ran,
                decision,
            ),
        }


@dataclass(slots=True)
class _Tally:
    """What :meth:`EvalReport.summary` counts over the cases and their trials."""

    verdicts: dict[str, list[int]] = field(  # verdict: [blocking cases, advisory cases]
        default_factory=lambda: {v: [0, 0] for v in ("pass", "fail", "error", "skipped", "not_run")}
    )
    statuses: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("pass", "fail", "error", "simulator_fault"), 0)
    )
    scripted: int = 0
    figures: list[CaseStats] = field(default_factory=list)  # of the cases a model answered
    blocking: list[tuple[int, int]] = field(default_factory=list)  # (with a verdict, failed)
    usage: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("input_tokens", "output_tokens", "cached_tokens"), 0)
    )
    cost: float | None = None  # None while no trial's cost is known
    judged: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("pass", "fail", "inconclusive", "skip"), 0)
    )
    quality: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)

    def add(self, case: CaseResult) -> None:
        from toolproof.evals._quality import CHECKS

        self.verdicts[case.verdict][0 if case.blocking else 1] += 1
        passes = failures = 0
        for trial in case.trials:
            passes += trial.status == "pass"
            failures += trial.status == "fail"
            self.statuses[trial.status] += 1
            for check in trial.checks:
                if check.kind == "judged":
                    self.judged[check.status] += 1
                if check.metrics is not None and check.check in CHECKS:
                    per = self.quality.setdefault(case.case.suite, {})
                    per.setdefault(check.check, []).append(check.metrics)
            usage = trial.usage
            self.usage["input_tokens"] += usage.input_tokens
            self.usage["output_tokens"] += usage.output_tokens
            self.usage["cached_tokens"] += usage.cached_tokens
            if trial.cost is not None:
                self.cost = (self.cost or 0.0) + trial.cost
        if case.blocking and passes + failures:
            self.blocking.append((passes + failures, failures))
        if case.scripted:
            self.scripted += 1
        elif passes + failures:
            self.figures.append(_case_stats(passes + failures, passes))


def _blocking_failures(cases: Sequence[CaseResult]) -> list[tuple[int, int]]:
    """Each blocking case's ``(trials with a verdict, failures)``."""
    out = []
    for case in cases:
        if case.blocking and (case.passes + case.failures):
            out.append((case.passes + case.failures, case.failures))
    return out


def _exit_code(
    interrupted: bool,
    blocking_failed: int,
    blocking_errors: int,
    ran: int,
    decision: GateDecision | None = None,
) -> int:
    if interrupted:
        return EXIT_INTERRUPTED
    if decision is not None:
        if decision.verdict == "fail":
            return EXIT_BLOCKING_FAILED
    elif blocking_failed:
        return EXIT_BLOCKING_FAILED
    if blocking_errors:
        return EXIT_INFRASTRUCTURE
    if not ran:
        return EXIT_NOTHING_RAN
    if decision is not None and decision.blocks:
        return EXIT_UNDECIDED
    return EXIT_OK


def _case_stats(n: int, passes: int) -> CaseStats:
    """:attr:`CaseResult.stats` of ``passes`` out of ``n`` trials with a verdict (memoized)."""
    found = _CASE_STATS.get((n, passes))
    if found is None:
        found = _CASE_STATS[n, passes] = case_stats(n, passes)
    return found


def describe_failures(trials: Sequence[TrialResult], limit: int = 3) -> str:
    """The failing checks of failed trials with counts, and the first reason of each."""
    counts: dict[str, int] = {}
    first: dict[str, str] = {}
    for trial in trials:
        if trial.status != "fail":
            continue
        for check in trial.failed_checks:
            counts[check.label] = counts.get(check.label, 0) + 1
            first.setdefault(check.label, check.reason)
    if not counts:
        return ""
    parts = []
    for label, n in sorted(counts.items(), key=lambda item: -item[1])[:limit]:
        parts.append(f"{label} (x{n}): {first[label]}")
    more = len(counts) - limit
    return "; ".join(parts) + (f"; and {more} more checks" if more > 0 else "")


def describe_faults(trials: Sequence[TrialResult]) -> str:
    """The first simulator fault of each trial that had one, with counts."""
    return _with_counts(
        next(
            (c.reason for c in t.checks if c.check == "simulated_user"),
            "the simulated user broke its instructions",
        )
        for t in trials
        if t.status == "simulator_fault"
    )


def describe_errors(trials: Sequence[TrialResult]) -> str:
    """Distinct infrastructure errors of the trials, with counts."""
    return _with_counts(
        f"{t.error_type}: {t.error}" if t.error_type else t.error
        for t in trials
        if t.status == "error" and t.error
    )


def _with_counts(texts: Iterable[str]) -> str:
    """Distinct texts in the order first seen, each with its count when above one."""
    counts = Counter(texts)
    return "; ".join(f"{text} (x{n})" if n > 1 else text for text, n in counts.items())
