"""``toolproof run``: run eval suites and gate CI on them.

Exit codes (shared with ``toolproof replay``; docs/evals.md): 0 every blocking case passed;
1 a blocking case failed (a bug in the user's tools or factory fails its case); 2 usage or
configuration error, found before anything ran (a missing key, an unknown model, a factory
that fails with the model); 3 only the model provider or the network failed and left a
blocking case without a verdict; 5 nothing ran (every case skipped); 130 interrupted by Ctrl-C or
SIGTERM (the reports are still written with the cases finished so far).

Every run writes a run log (``toolproof._runlog``) unless ``--no-log``; ``-v`` prints the
transcripts of failing trials, ``-x`` stops at the first blocking failure, and ``--lf`` reruns
the cases that failed in the last run log of the same suites.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from toolproof.cli._options import (
    add_executor_argument,
    add_log_arguments,
    add_redaction_arguments,
    add_report_argument,
    add_statistics_arguments,
    check_report_paths,
    cost_gates,
    judge_model_from_args,
    logged,
    number_type,
    positive_int,
    redactor_from_args,
    start_log,
)

if TYPE_CHECKING:
    from rich.console import Console

    from toolproof._reporting import ReportSpec
    from toolproof._runlog import RunInfo, RunLog
    from toolproof.evals._options import EvalOptions
    from toolproof.evals._results import EvalReport
    from toolproof.evals._stats_report import StatsOptions
    from toolproof.evals._suite import Case, Suite

__all__ = ["register"]

EPILOG = """\
examples:
  toolproof run examples/hr_assistant/hr.eval.yaml --model scripted   # offline, no key
  toolproof run evals/ --model deepseek:deepseek-chat --trials 3 --concurrency 16
  toolproof run evals/ --tag smoke --report junit:out/evals.xml --report markdown:out/evals.md
  toolproof run evals/hr.eval.yaml --case 'leave_*' --no-cache
  toolproof run evals/ --lf -x -v        # rerun last failures, stop at the first, show it

every run writes a run log in .toolproof/runs/ (--log-dir, --no-log): see toolproof runs list
and toolproof runs compare.

exit codes (the same for toolproof replay):
  0  every blocking case passed         3  the model provider or network failed: no verdict
  1  a blocking case failed             5  nothing ran (every selected case was skipped)
  2  usage or configuration error, found before anything ran (one line; --traceback for more)
  6  the gate is undecided in release mode (--max-failure-rate with --gate-mode release):
     too few samples to show the failure rate is below the limit
with --model A --model B: 0 no evidence that B is worse than A, 1 B regressed beyond noise.
"""


def register(subparsers: Any) -> None:
    """Add the ``run`` subcommand."""
    parser = subparsers.add_parser(
        "run",
        help="run eval suites (YAML) with trials, checks, a judge and reports",
        description=(
            "Run eval suites: each case runs its trials against the agent with mocked or real\n"
            "tools; objective checks and a judge decide each trial, the pass rule each case."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="suite files or directories (searched for *.eval.yaml and suite YAML files)",
    )
    _add_model_arguments(parser)
    _add_selection_arguments(parser)
    _add_pace_arguments(parser)
    add_report_argument(parser)
    _add_output_arguments(parser)
    add_statistics_arguments(parser)
    parser.add_argument(
        "--record",
        metavar="STORE",
        help="keep every trial's traces (redacted) in this trace store, with the run id, the "
        "case id and the verdict, for replay and toolproof traces promote",
    )
    _add_cost_arguments(parser)
    add_log_arguments(parser)
    add_redaction_arguments(parser)
    parser.set_defaults(handler=run_command)


def _add_model_arguments(parser: Any) -> None:
    parser.add_argument(
        "--model",
        "-m",
        action="append",
        metavar="MODEL",
        help="model for every case (overrides the suites): a model string, MODULE:ATTR naming "
        "a Model, or 'scripted' to run each case's script; twice (--model A --model B) runs "
        "every case on both and compares them case by case",
    )
    parser.add_argument(
        "--judge-model",
        metavar="MODEL",
        help="model that grades the 'judge:' rubric lines (a model string or MODULE:ATTR)",
    )
    parser.add_argument(
        "--user-model",
        metavar="MODEL",
        help="model that plays the simulated users of cases with a 'user:' (a model string or "
        "MODULE:ATTR); with --model scripted it lets simulated users run",
    )


def _add_selection_arguments(parser: Any) -> None:
    parser.add_argument(
        "--case",
        "-k",
        action="append",
        default=[],
        metavar="PATTERN",
        help="run only cases whose name matches (glob; repeatable)",
    )
    parser.add_argument(
        "--tag",
        "-t",
        action="append",
        default=[],
        help="run only cases with this tag (repeatable: any of them)",
    )
    parser.add_argument(
        "--trials", type=positive_int, metavar="N", help="trials per case (overrides suites)"
    )
    parser.add_argument(
        "--max-attack-success",
        type=_attack_rate,
        metavar="RATE",
        help="gate the attack cases of suites with 'attacks:': each attack may succeed in at "
        "most this share of its trials (0: never; overrides attacks.max_success_rate)",
    )


def _add_pace_arguments(parser: Any) -> None:
    parser.add_argument(
        "--concurrency",
        "-j",
        type=positive_int,
        default=8,
        metavar="N",
        help="trials running at the same time (default 8)",
    )
    add_executor_argument(parser, units="trials")
    parser.add_argument(
        "--rpm", type=_positive_float, metavar="N", help="most model requests per minute"
    )
    parser.add_argument(
        "--tpm", type=_positive_float, metavar="N", help="most model tokens per minute"
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="do not reuse or store model responses (the cache lives in --cache-dir)",
    )
    parser.add_argument(
        "--cache-dir",
        default=".toolproof",
        metavar="DIR",
        help="cache directory (default .toolproof)",
    )


def _add_output_arguments(parser: Any) -> None:
    parser.add_argument(
        "--list", action="store_true", help="list the selected cases and their checks; run nothing"
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="print the transcript of each failing trial (messages, tool calls, results)",
    )
    parser.add_argument(
        "--exitfirst",
        "-x",
        action="store_true",
        help="stop at the first blocking case that fails; the reports hold what finished",
    )
    parser.add_argument(
        "--lf",
        "--last-failed",
        dest="last_failed",
        action="store_true",
        help="rerun only the cases that failed or errored in the last run of these suites "
        "(all of them when there is none)",
    )


def _add_cost_arguments(parser: Any) -> None:
    costs = parser.add_argument_group("cost and latency")
    costs.add_argument(
        "--baseline",
        metavar="RUN",
        help="compare cost and latency with this run log (id, prefix, latest, path); "
        "also what the cost estimate is made from (default: the last run of these suites)",
    )
    costs.add_argument(
        "--max-latency-increase",
        metavar="PCT",
        help="fail the run when the p95 agent latency grew more than this over --baseline "
        "(e.g. 20%%)",
    )
    costs.add_argument(
        "--max-cost-increase",
        metavar="PCT",
        help="fail the run when the cost per case grew more than this over --baseline (e.g. 10%%)",
    )


_attack_rate = number_type(
    float,
    "a rate with 0 <= rate < 1",
    lambda v: 0 <= v < 1,
    "expected a rate with 0 <= rate < 1, got {text!r}",
)
# (NaN is not refused here: the rate limiter reads it as no limit)
_positive_float = number_type(float, "a number", lambda v: v > 0, "must be positive, got {text}")


#: Allocations between two collections of the youngest generation while ``toolproof run``
#: works (Python's default is 700; see :func:`_run_collector`).
YOUNG_GENERATION_THRESHOLD = 20_000


@contextlib.contextmanager
def _run_collector() -> Iterator[Callable[[], None]]:
    """The cyclic garbage collector tuned for a run; yields "the trials start now".

    The trials allocate many short-lived objects and almost no cyclic garbage; collecting
    the youngest generation every 700 allocations walks the objects of every trial in
    flight again and again (a tenth of a large run's CPU). Collections stay on, each after
    :data:`YOUNG_GENERATION_THRESHOLD` allocations; when the trials start, what start-up
    built (modules, the loaded suites) is moved out of the collector's walks for the run
    (``gc.freeze``). Both are undone when the command ends.
    """
    threshold = gc.get_threshold()
    frozen = False

    def trials_start() -> None:
        nonlocal frozen
        gc.freeze()
        frozen = True

    gc.set_threshold(max(threshold[0], YOUNG_GENERATION_THRESHOLD), *threshold[1:])
    try:
        yield trials_start
    finally:
        if frozen:
            gc.unfreeze()
        gc.set_threshold(*threshold)


def run_command(args: argparse.Namespace) -> int:
    """Handle ``toolproof run``."""
    with _run_collector() as trials_start:
        return _run_command(args, trials_start)


def _run_command(args: argparse.Namespace, trials_start: Callable[[], None]) -> int:
    from toolproof._reporting import parse_report_specs
    from toolproof.evals._stats_report import resolve_options
    from toolproof.evals._suite import load_suites, select_cases

    models = list(args.model or [])
    args.model = models[0] if models else None
    specs = parse_report_specs(args.report)
    suites = load_suites(args.paths)
    statistics = resolve_options(
        ((suite.name, suite.statistics) for suite in suites),
        level=args.confidence,
        method=args.interval,
        max_failure_rate=args.max_failure_rate,
        gate_mode=args.gate_mode,
    )
    if args.list:  # lists what would run; needs no key and writes nothing
        from rich.console import Console

        _list_cases(
            select_cases(suites, cases=args.case, tags=args.tag), Console(highlight=False), args
        )
        return 0
    check_report_paths(specs)
    options = _shared_options(args, statistics)
    if len(models) > 1:
        from toolproof.cli._pair import run_pair

        return run_pair(
            args,
            suites,
            models,
            specs,
            statistics,
            options=options,
            start_log=lambda model: _start_log(suites, args, model),
        )
    return _run_suites(args, suites, specs, options, trials_start)


def _shared_options(args: argparse.Namespace, statistics: StatsOptions) -> EvalOptions:
    """The options of ``toolproof run`` that hold for each of its runs (one model or two)."""
    from toolproof.evals._options import EvalOptions

    return EvalOptions(
        cases=args.case,
        tags=args.tag,
        trials=args.trials,
        concurrency=args.concurrency,
        cache=not args.no_cache,
        cache_dir=args.cache_dir,
        requests_per_minute=args.rpm,
        tokens_per_minute=args.tpm,
        redactor=redactor_from_args(args),
        statistics=statistics,
    )


def _run_suites(
    args: argparse.Namespace,
    suites: list[Suite],
    specs: list[ReportSpec],
    options: EvalOptions,
    trials_start: Callable[[], None],
) -> int:
    """Run the suites on one model (or each case's own); the exit code."""
    import dataclasses

    from toolproof._thread_loop import run_to_end
    from toolproof.cli import report_console
    from toolproof.evals._progress import default_progress

    model, judge_model, user_model = _load_models(args)
    stdout_taken = any(spec.to_stdout for spec in specs)
    # The console (rich) is made when first needed: with -q, after the trials.
    console: Console | None = None
    if args.last_failed:
        console = report_console(stderr=stdout_taken)
        suites = _last_failed(suites, args, console)
    gates, estimate, baseline = _cost_options(suites, args)
    if estimate is not None:
        if console is None:
            console = report_console(stderr=stdout_taken)
        cost, source = estimate
        console.print(f"estimate: this run will cost about ${cost:.4g} (from run {source})")
    log = _start_log(suites, args)
    reports = list(specs)
    if log is not None:
        from toolproof._reporting import ReportSpec

        reports.append(ReportSpec("json", str(log.report_path)))
    progress = default_progress(quiet=args.quiet)
    trials_start()
    with logged(log):
        report = run_to_end(
            _run(
                suites,
                dataclasses.replace(
                    options,
                    model=model,
                    judge_model=judge_model,
                    user_model=user_model,
                    executor=args.executor,
                    reports=reports,
                    progress=progress,
                    keep_failed_traces=args.verbose,
                    exitfirst=args.exitfirst,
                    max_attack_success=args.max_attack_success,
                    record=args.record,
                    run_id=None if log is None else log.info.id,
                    baseline=baseline,
                    cost_gates=gates,
                    cost_estimate=None if estimate is None else estimate[0],
                ),
            )
        )
    if console is None:
        console = report_console(stderr=stdout_taken)
    summary, stopped = _print_outcome(report, specs, args, console)
    if log is not None:
        _finish_log(log, report, summary, stopped, args, console)
    return report.exit_code


def _load_models(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """The models of ``--model``, ``--judge-model`` and ``--user-model`` (``None``: not given)."""
    from toolproof._loading import load_model_spec

    model = load_model_spec(args.model, keywords=("scripted",)) if args.model else None
    judge_model = judge_model_from_args(args)
    user_model = (
        load_model_spec(args.user_model, option="--user-model") if args.user_model else None
    )
    return model, judge_model, user_model


def _print_outcome(
    report: EvalReport, specs: list[ReportSpec], args: argparse.Namespace, console: Console
) -> tuple[dict[str, Any], bool]:
    """Print the summary, the reports written and how the run ended.

    Returns:
        The summary, and whether ``-x`` stopped the run.
    """
    from rich.markup import escape

    from toolproof.evals._report import print_summary, print_transcripts

    if args.verbose:
        print_transcripts(report, console)
    summary = print_summary(report, console)
    _print_tracebacks(report, console)
    failed = "\n".join(report.unwritten)
    for spec in specs:
        if not spec.to_stdout and f"cannot write {spec.path}:" not in failed:
            console.print(f"[dim]wrote {escape(spec.format)} report to {escape(spec.path)}[/]")
    for problem in report.unwritten:
        print(f"toolproof: error: {problem}", file=sys.stderr)
    ran = sum(len(c.trials) for c in report.cases)
    planned = sum(
        args.trials or c.case.config.trials for c in report.cases if c.verdict != "skipped"
    )
    stopped = args.exitfirst and not report.interrupted and ran < planned
    if report.interrupted:
        console.print("[yellow]interrupted: the reports hold the cases finished so far[/]")
    elif stopped:
        not_run = report.count("not_run")
        console.print(
            f"[yellow]stopped at the first blocking failure (-x): {ran} of {planned} trials "
            f"ran, {not_run} case{'s' if not_run != 1 else ''} not run[/]"
        )
    return summary, stopped


def _finish_log(
    log: RunLog,
    report: EvalReport,
    summary: dict[str, Any],
    stopped: bool,
    args: argparse.Namespace,
    console: Console,
) -> None:
    """End the run log of a run that finished, was stopped by ``-x`` or interrupted."""
    from rich.markup import escape

    if not args.model:  # the suites' own models, as the cases ran with them
        models = sorted({c.model for c in report.cases if c.model})
        log.info.model = ", ".join(models) or None
    status = "interrupted" if report.interrupted else "stopped" if stopped else "finished"
    log_written = log.finish(
        status=status,
        exit_code=report.exit_code,
        interrupted=report.interrupted or stopped,
        counts={
            key: summary[key]
            for key in (
                "cases",
                "passed",
                "failed",
                "errors",
                "skipped",
                "not_run",
                "trials",
                "trials_passed",
            )
        },
    )
    if log_written:
        console.print(f"[dim]run log: {escape(str(log.info.path))}[/]", highlight=False)


def _suite_files(suites: list[Suite]) -> list[str]:
    from pathlib import Path

    return sorted({str(Path(suite.file).resolve()) for suite in suites})


def _cost_options(
    suites: list[Suite], args: argparse.Namespace
) -> tuple[Any, tuple[float, str] | None, dict[str, Any] | None]:
    """The cost gates, the estimate (cost, from which run) and the baseline report."""
    from toolproof.errors import UserError
    from toolproof.evals._costs import estimate_cost
    from toolproof.evals._suite import select_cases

    gated = args.max_latency_increase is not None or args.max_cost_increase is not None
    if gated and args.baseline is None:
        raise UserError(
            "--max-latency-increase and --max-cost-increase compare with a baseline run: "
            "add --baseline RUN (a run id, or latest)"
        )
    gates = cost_gates(args)
    if args.baseline is None and args.no_log:
        return gates, None, None  # (estimates come from run logs)
    from toolproof._runlog import load_run

    run = None
    if args.baseline is not None:
        run = load_run(args.baseline, args.log_dir, kind="run")
        if run.report is None:
            raise UserError(f"--baseline {args.baseline}: run {run.info.id} has no report")
    else:
        last = _last_run(suites, args)
        if last is not None:
            with contextlib.suppress(UserError):
                run = load_run(str(last.path), args.log_dir)
    if run is None or run.report is None:
        return gates, None, None
    cases = run.report.get("cases")
    planned = [
        (f"{c.suite}::{c.name}", args.trials or c.config.trials)
        for c in select_cases(suites, cases=args.case, tags=args.tag)
        if not c.skip
    ]
    cost = estimate_cost(planned, cases if isinstance(cases, list) else [])
    estimate = None if cost is None else (cost, run.info.id)
    # Suites with cost_gates: are compared with the last run of them unless --baseline says.
    gated = args.baseline is not None or any(s.cost_gates is not None for s in suites)
    return gates, estimate, run.report if gated else None


def _last_run(suites: list[Suite], args: argparse.Namespace) -> RunInfo | None:
    """The latest run log with a report of a run of any of these suites."""
    from toolproof._runlog import list_runs

    files = set(_suite_files(suites))
    return next(
        (
            r
            for r in list_runs(args.log_dir)
            if r.kind == "run" and r.has_report and files & set(r.suites)
        ),
        None,
    )


def _start_log(
    suites: list[Suite], args: argparse.Namespace, model: str | None = None
) -> RunLog | None:
    return start_log(args, "run", suites=_suite_files(suites), model=model or args.model)


def _last_failed(suites: list[Suite], args: argparse.Namespace, console: Console) -> list[Suite]:
    """The suites cut to the cases that failed or errored in the last run log of them."""
    import dataclasses

    from rich.markup import escape

    from toolproof._runlog import load_run

    previous = _last_run(suites, args)
    if previous is None:
        console.print("no previous run: running all")
        return suites
    report = load_run(previous.path).report or {}
    cases = report.get("cases")
    failed = {
        c.get("id")
        for c in (cases if isinstance(cases, list) else [])
        if isinstance(c, dict) and c.get("verdict") in ("fail", "error")
    }
    kept = [
        dataclasses.replace(suite, cases=[c for c in suite.cases if c.id in failed])
        for suite in suites
    ]
    kept = [suite for suite in kept if suite.cases]
    if not kept:
        console.print(f"no failures in the last run ({escape(previous.id)}): running all")
        return suites
    count = sum(len(suite.cases) for suite in kept)
    console.print(
        f"rerunning the {count} case{'s' if count != 1 else ''} that failed in the last run "
        f"({escape(previous.id)})"
    )
    return kept


def _print_tracebacks(report: EvalReport, console: Console) -> None:
    """With ``--traceback``: where the user's code failed, once per distinct traceback."""
    from rich.markup import escape

    from toolproof._tracebacks import traceback_enabled

    if not traceback_enabled():
        return
    seen: set[str] = set()
    for result in report.cases:
        for trial in result.trials:
            if trial.traceback and trial.traceback not in seen:
                seen.add(trial.traceback)
                console.print(f"[bold]{escape(result.case.id)}[/], trial {trial.index + 1}:")
                console.print(escape(trial.traceback), highlight=False, soft_wrap=True)


async def _run(suites: Any, options: EvalOptions) -> EvalReport:
    """Run with Ctrl-C and SIGTERM handled: the first stops the run and keeps the partial report.

    SIGTERM is how CI systems and service managers stop a job (a cancelled or timed-out CI
    job gets it): it is handled as Ctrl-C, and a second one of either aborts.
    """
    import asyncio
    import signal

    from toolproof.evals._runner import evaluate_async

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    presses = 0
    names: dict[int, str] = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}

    def interrupt(number: int) -> None:
        nonlocal presses
        presses += 1
        if presses == 1 and task is not None:
            sys.stderr.write(
                f"\ntoolproof: interrupting ({names[number]}); writing the reports "
                "(Ctrl-C again to abort)\n"
            )
            task.cancel()
        else:
            restore()
            raise KeyboardInterrupt

    def restore() -> None:
        # (removing a loop's handler leaves the signal at its default: the handler the
        # program had, SIGTERM's KeyboardInterrupt included, is put back for the report)
        for each, before in installed.items():
            loop.remove_signal_handler(each)
            if before is not None:
                signal.signal(each, before)
        installed.clear()

    installed: dict[int, Any] = {}
    for number in names:
        before = signal.getsignal(number)
        try:
            loop.add_signal_handler(number, interrupt, number)
            installed[number] = before
        except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
            pass
    try:
        return await evaluate_async(suites, options, partial_on_cancel=True)
    finally:
        restore()


def _list_cases(cases: list[Case], console: Console, args: argparse.Namespace) -> None:
    from rich.markup import escape

    for case in cases:
        config = case.config
        model = args.model or config.model or "(no model)"
        trials = args.trials or config.trials
        flags = [f"model={model}", f"trials={trials}", f"pass_rule={config.pass_rule.describe()}"]
        flags.append(f"tools={config.tools}")
        if config.named_real_tools:
            flags.append("real_tools=" + ",".join(config.named_real_tools))
        if config.gate != "block":
            flags.append(f"gate={config.gate}")
        if case.tags:
            flags.append("tags=" + ",".join(case.tags))
        if case.skip:
            flags.append(f"skip={case.skip!r}")
        console.print(f"[bold]{escape(case.id)}[/]  [dim]{escape(case.location)}[/]")
        console.print("  " + escape("  ".join(flags)))
        for number, turn in enumerate(case.turns, 1):
            label = f"turn {number}" if len(case.turns) > 1 else "input"
            console.print(f"  {label}: {escape(turn.input)}")
            for check in turn.checks:
                console.print(f"    expect {check.name}: {escape(check.describe)}")
        if case.user is not None:
            console.print("  " + escape(case.user.describe()))
            for check in case.user.checks:
                console.print(f"    expect {check.name}: {escape(check.describe)}")
        for check in case.checks:
            console.print(f"  expect {check.name}: {escape(check.describe)}")
        for line in case.judge:
            console.print(f"  judge: {escape(line)}")
    console.print(f"{len(cases)} case{'s' if len(cases) != 1 else ''}")
