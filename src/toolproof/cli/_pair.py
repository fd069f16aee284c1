"""``toolproof run --model A --model B``: every case on both models, compared case by case.

The two runs go at the same time, their trials interleaved on one event loop (each gets half
of ``--concurrency``), so a provider's slow minute hits both alike. Each writes its own run
log (``toolproof runs compare`` pairs them again later); the console shows both summaries and
the paired comparison of B against A, and ``--report json|markdown`` writes the comparison.
Exit codes: 0 no evidence that B is worse, 1 B regressed beyond noise, 2 bad options, 130
interrupted.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from toolproof.cli._options import judge_model_from_args, logged

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from toolproof._reporting import ReportSpec
    from toolproof._runlog import RunLog
    from toolproof.evals._options import EvalOptions
    from toolproof.evals._results import EvalReport
    from toolproof.evals._stats_report import StatsOptions
    from toolproof.evals._suite import Suite

__all__ = ["run_pair"]


def run_pair(
    args: argparse.Namespace,
    suites: list[Suite],
    models: list[str],
    specs: list[ReportSpec],
    statistics: StatsOptions,
    *,
    options: EvalOptions,
    start_log: Callable[[str], RunLog | None],
) -> int:
    """Run the suites on two models and report their paired comparison; the exit code.

    ``toolproof run`` hands over the options both runs share (the statistics among them)
    and how its run logs start, so each model's run is logged as a run of its own.
    """
    import asyncio

    from rich.text import Text

    from toolproof._paired import comparison_lines, paired
    from toolproof._reporting import ReportSpec as Spec
    from toolproof.cli import report_console

    loaded = _load_models(models, specs, args)
    logs = [log for log in (start_log(model) for model in models) if log is not None]
    reports: list[EvalReport]
    with logged(*logs):
        reports = asyncio.run(
            _both(
                suites,
                loaded,
                args,
                options,
                [[Spec("json", str(log.report_path))] for log in logs] if logs else [[], []],
            )
        )
    stdout_taken = any(spec.to_stdout for spec in specs)
    console = report_console(stderr=stdout_taken)
    data = [
        _print_run(console, number, model, report, logs[number] if logs else None)
        for number, (model, report) in enumerate(zip(models, reports, strict=True))
    ]
    comparison = paired(data[0], data[1], level=statistics.level)
    console.rule(Text(f"B against A: {models[1]} vs {models[0]}"))
    lines = (
        comparison_lines(comparison)
        if comparison is not None
        else ["no case has a verdict in both runs: nothing to compare"]
    )
    for line in lines:
        console.print(Text(line))
    interrupted = any(report.interrupted for report in reports)
    code = 130 if interrupted else 1 if comparison and comparison.change == "regressed" else 0
    _write_comparison(specs, models, logs, comparison, code)
    if comparison is not None:
        style = "bold red" if code == 1 else "bold green"
        verdict = Text(f"B vs A: {comparison.change}", style=style)
        console.print(verdict, Text(f"  (exit code {code})"))
    return code


#: Options of ``toolproof run`` that a comparison of two models does not take (dest: flag).
_ONE_MODEL_ONLY = {
    "user_model": "--user-model",
    "executor": "--executor",
    "exitfirst": "--exitfirst",
    "verbose": "--verbose",
    "last_failed": "--last-failed",
    "max_attack_success": "--max-attack-success",
    "record": "--record",
    "baseline": "--baseline",
    "max_latency_increase": "--max-latency-increase",
    "max_cost_increase": "--max-cost-increase",
}


def _load_models(models: list[str], specs: list[ReportSpec], args: argparse.Namespace) -> list[Any]:
    """The two models, once the options are found to fit a comparison."""
    from toolproof._loading import load_model_spec
    from toolproof.errors import UserError

    if len(models) != 2:
        raise UserError(f"--model compares two models at most; got {len(models)}")
    alone = [
        flag
        for dest, flag in _ONE_MODEL_ONLY.items()
        if getattr(args, dest, None) not in (None, False, "local")
    ]
    if alone:
        raise UserError(
            f"{alone[0]} applies to a run of one model; a comparison of two (--model given "
            "twice) does not take it"
        )
    bad = [spec.format for spec in specs if spec.format not in ("json", "markdown")]
    if bad:
        raise UserError(
            f"with two models, --report writes their comparison: json or markdown, not {bad[0]} "
            "(each run's own report is in its run log)"
        )
    loaded = [load_model_spec(m, keywords=("scripted",)) for m in models]
    names = [m if isinstance(m, str) else getattr(m, "name", str(m)) for m in loaded]
    if not args.no_cache and names[0] == names[1]:
        raise UserError(
            f"both models are named {names[0]!r}: their cached answers would mix; name them "
            "apart or pass --no-cache"
        )
    return loaded


def _print_run(
    console: Console, number: int, model: str, report: EvalReport, log: RunLog | None
) -> dict[str, Any]:
    """Print one model's summary and end its run log; what the comparison reads of it."""
    from rich.text import Text

    from toolproof.evals._report import print_summary

    console.rule(Text(f"{'AB'[number]}: {model}"))
    summary = print_summary(report, console)
    if log is not None:
        log.finish(
            status="interrupted" if report.interrupted else "finished",
            exit_code=report.exit_code,
            interrupted=report.interrupted,
            counts={
                key: summary[key]
                for key in ("cases", "passed", "failed", "trials", "trials_passed")
            },
        )
    return _plain(report, summary)


def _write_comparison(
    specs: list[ReportSpec], models: list[str], logs: list[RunLog], comparison: Any, code: int
) -> None:
    import json

    from toolproof._paired import comparison_dict
    from toolproof._reporting import open_output

    result = {
        "format": "toolproof-models-compare",
        "version": 1,
        "models": models,
        "runs": [log.info.id for log in logs],
        "comparison": None if comparison is None else comparison_dict(comparison),
        "exit_code": code,
    }
    for spec in specs:
        with open_output(spec.path) as out:
            if spec.format == "json":
                out.write(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
            else:
                out.write(_markdown(models, comparison, code))


async def _both(
    suites: list[Suite],
    models: list[Any],
    args: argparse.Namespace,
    options: EvalOptions,
    reports: list[list[ReportSpec]],
) -> list[EvalReport]:
    import asyncio
    import dataclasses

    from toolproof.evals._runner import evaluate_async

    share = max(1, options.concurrency // 2)
    judge = judge_model_from_args(args)
    runs = [
        evaluate_async(
            suites,
            dataclasses.replace(
                options,
                model=model,
                judge_model=judge,
                concurrency=share,
                reports=specs,
                partial_on_cancel=True,
            ),
        )
        for model, specs in zip(models, reports, strict=True)
    ]
    return list(await asyncio.gather(*runs))


def _plain(report: EvalReport, summary: dict[str, Any]) -> dict[str, Any]:
    """What the comparison reads of a report: each case's id and trial counts."""
    return {
        "summary": summary,
        "cases": [
            {"id": c.case.id, "passes": c.passes, "failures": c.failures} for c in report.cases
        ],
    }


def _markdown(models: list[str], comparison: Any, code: int) -> str:
    from toolproof._paired import comparison_markdown
    from toolproof._reporting import md_code, md_truncate

    icon = "❌" if code == 1 else "✅"
    verdict = "nothing compared" if comparison is None else comparison.change
    lines = [
        "<!-- toolproof-models-compare -->",
        f"## {icon} toolproof: {md_code(models[1])} against {md_code(models[0])}: {verdict}",
        "",
        *(comparison_markdown(comparison) if comparison is not None else []),
        "",
        f"<sub>exit code {code} · toolproof run --model A --model B</sub>",
    ]
    return md_truncate("\n".join(lines) + "\n")
