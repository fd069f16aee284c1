"""The options of an eval run: what `evaluate_async` is given besides the suites."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolproof._filemodel import did_you_mean

if TYPE_CHECKING:
    from toolproof._executor import Executor
    from toolproof._reporting import ReportSpec
    from toolproof.evals._costs import CostGates
    from toolproof.evals._progress import Progress
    from toolproof.evals._stats_report import StatsOptions
    from toolproof.models._base import Model

__all__ = ["EvalOptions", "chosen_options"]


@dataclass(frozen=True, slots=True)
class EvalOptions:
    """How an eval run goes: every option of :func:`~toolproof.evals.evaluate_async`.

    ``evaluate`` and ``evaluate_async`` take these as one value, as keywords of the same
    names, or both (the keywords override the value's fields); this is their typed form.

    Attributes:
        model: Overrides every case's model: a model string, ``"scripted"`` (each case's
            script), or a :class:`~toolproof.models.Model` instance.
        judge_model: Overrides the judge model (a string or a model).
        user_model: Overrides the model that plays the simulated users of cases with a
            ``user:`` (a string or a model); in a scripted run, it lets simulated users run.
        cases: Case name patterns to select (``fnmatch``; ``suite::name`` also works).
        tags: Select cases having any of these tags.
        trials: Overrides every case's number of trials.
        concurrency: Trials running at the same time.
        cache: Reuse stored model responses and judge verdicts, and store new ones.
        cache_dir: Where the response cache lives.
        requests_per_minute: Client-side request limit per model.
        tokens_per_minute: Client-side token limit per model.
        reports: Reports to write, as ``"FORMAT:PATH"`` (json, junit, markdown, html) or specs;
            they are written even when the run is interrupted.
        progress: Receives progress events (nothing is shown by default).
        keep_traces: Keep every trial's traces in memory (``TrialResult.traces``); the
            JSON report streams them to disk either way.
        retry_backoff: Seconds before the first retry after an infrastructure error
            (doubling each time, or the provider's ``Retry-After`` when longer).
        partial_on_cancel: When the run is cancelled, return the partial report
            (``interrupted=True``) instead of raising ``CancelledError``.
        keep_failed_traces: Keep the traces of trials that did not pass in memory (for
            transcripts of failures), and no others.
        exitfirst: Stop at the first blocking case that fails (or errors): no new trial
            starts, running trials are cancelled, and the cases left are ``"not_run"``.
        executor: Where trials run: ``"local"`` (this process, the default), ``"ray"`` (a
            local Ray cluster) or ``"ray:ADDRESS"``, or an executor object. On Ray the
            response cache is not used and rate limits apply per worker.
        redactor: When the run writes reports, what they hold is redacted first (each
            trial's traces, errors and check reasons; case names, descriptions and tags),
            and so is the report returned: a ``toolproof.replay.Redactor``, by default
            toolproof's default rules; ``Redactor.none()`` keeps everything.
        statistics: The confidence level and method of the reports' intervals, the eval
            gate (``max_failure_rate``, ``gate_mode``) and the level of sequential trials;
            by default the suites' ``statistics:`` settings.
        max_attack_success: Gate every attack case (suites with ``attacks:``): each attack
            may succeed in at most this share of its trials (``0``: never); overrides the
            suites' ``max_success_rate``.
        record: A trace store (a SQLite file or a ``postgresql://`` URL) that keeps every
            trial's traces, redacted with ``redactor``, each with the run id, the case id
            and the trial's verdict in ``metadata["eval"]`` and the tag ``eval``, so that
            replay and ``toolproof traces promote`` work on eval runs.
        run_id: The run id the recorded traces carry (default: a new one).
        baseline: A run to compare cost and latency with: a run log (id, prefix, ``latest``
            or path) or an eval report as data; the comparison is in
            ``report.costs["comparison"]`` and in every report.
        cost_gates: Limits on how much the p95 latency and the cost per case may grow over
            ``baseline``, over the suites' own ``cost_gates:`` (the strictest limit wins);
            a gate that fails makes ``report.exit_code`` 1. Without a baseline the suites'
            gates have nothing to compare with and are not applied.
        cost_estimate: What the run was expected to cost (reported with its error); by
            default estimated from ``baseline``.
    """

    model: str | Model | None = None
    judge_model: str | Model | None = None
    user_model: str | Model | None = None
    cases: Sequence[str] = ()
    tags: Sequence[str] = ()
    trials: int | None = None
    concurrency: int = 8
    cache: bool = True
    cache_dir: str | Path = ".toolproof"
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    reports: Sequence[str | ReportSpec] = ()
    progress: Progress | None = None
    keep_traces: bool = False
    retry_backoff: float = 1.0
    partial_on_cancel: bool = False
    keep_failed_traces: bool = False
    exitfirst: bool = False
    executor: str | Executor | None = None
    redactor: Any = None
    statistics: StatsOptions | None = None
    max_attack_success: float | None = None
    record: str | Path | None = None
    run_id: str | None = None
    baseline: str | Path | Mapping[str, Any] | None = None
    cost_gates: CostGates | None = None
    cost_estimate: float | None = None


_NAMES = tuple(field.name for field in dataclasses.fields(EvalOptions))


def chosen_options(options: EvalOptions | None, keywords: Mapping[str, Any]) -> EvalOptions:
    """``options`` with ``keywords`` over its fields: the keyword front of ``evaluate``.

    Raises:
        TypeError: ``options`` is not an :class:`EvalOptions`, or a keyword is not one of
            its fields (named, with the closest field, as Python words a wrong keyword).
    """
    if options is not None and not isinstance(options, EvalOptions):
        raise TypeError(
            f"options must be an EvalOptions (or given as keywords), not {type(options).__name__}"
        )
    for name in keywords:
        if name not in _NAMES:
            raise TypeError(
                f"unexpected keyword argument {name!r}{did_you_mean(name, _NAMES)}: the "
                "options of evaluate() and evaluate_async() are the fields of EvalOptions"
            )
    if options is None:
        return EvalOptions(**keywords)
    return dataclasses.replace(options, **keywords) if keywords else options
