"""Reports of an eval run: console summary, JSON, JUnit XML and Markdown.

The JSON report (``format: toolproof-eval-report``, ``version: 1``) is the complete record:

.. code-block:: text

    {format, version, toolproof, started_at, duration_s, interrupted, exit_code,
     judge_prompt_version,
     summary: {cases, passed, failed, errors, skipped, not_run, blocking_failed,
               advisory_failed, trials, trials_passed, trials_failed, trials_errored,
               scripted_cases, stats: {cases, trials, passed, pass_rate, pass_at_k, pass_hat_k,
                       stable_pass, stable_fail, flaky},
               intervals: {options, pass_rate?: <interval>, pass_hat_k?: {k, <interval>},
                           detectable_drop?: {drop, cases, trials, power, icc}},
               gate: null | {verdict, blocks, mode, limit, bound, needed,
                             failure_rate: <interval>},
               usage, cost, model_calls, cached_calls, judge_calls, judged_checks,
               quality: [{suite, retrieval: [{tool, k, queries, undefined,
                          macro: {recall, precision, hit, mrr, ndcg, map},
                          micro: {recall, precision}}],
                          grounding?: {answers, ungrounded_answers, claims, ungrounded_claims},
                          faithfulness?: {answers, claims, supported, contradicted, not_found,
                                          hallucination_rate, macro_hallucination_rate}}],
               costs: {suites, comparison, estimate} | null,
               duration_s, exit_code},
     suites: [{name, file, cases}],
     cases: [{suite, name, id, file, line, description, tags, gate, pass_rule,
              trials_planned, trials_run, until, stopped, tools, real_tools, model, judge_model,
              scripted, verdict, reason, passes, failures, errors, stats: {n, c, pass_rate,
              pass_at_k, pass_hat_k, classification},
              intervals: null | {pass_rate: <interval>, pass_hat_k: {k, <interval>}},
              costs,
              trials: [{index, status, attempts, duration_ms, usage, cost, model_calls,
                        cached_calls, agent_ms, judge: {usage, cost, duration_ms},
                        error: {type, message} | null,
                        checks: [{check, kind, status, reason, turn?, criterion?,
                                  metrics?}],
                        traces: [<toolproof trace>...]}]}]}

where ``<interval>`` is ``{estimate, low, high, level, method, n, effective_n}``
(``toolproof.evals._stats_report``). docs/evals.md documents every field. Trials are copied
from the spool file the runner streamed them to, so writing the report never holds all
traces in memory.

JUnit and Markdown show the transcript of each failing trial (read back from the spool one
trial at a time, clipped: see :func:`toolproof._reporting.transcript_lines`); so does the
console with ``toolproof run -v`` (:func:`print_transcripts`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from toolproof._reporting import (
    JUnitCase,
    JUnitSuite,
    ReportSpec,
    md_code,
    md_details,
    md_escape,
    md_pre,
    md_table,
    md_truncate,
    open_output,
    printable,
    transcript_rich,
    transcript_text,
    utf8,
    write_junit,
)
from toolproof._stats_text import gate_line, show
from toolproof._text import cut
from toolproof.evals._costs import case_costs, cost_lines
from toolproof.evals._costs import case_properties as cost_properties
from toolproof.evals._results import CaseResult, EvalReport, TrialResult
from toolproof.evals._stats_report import drop_line

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "MARKDOWN_MARKER",
    "REPORT_FORMAT",
    "REPORT_VERSION",
    "case_interval_text",
    "json_report_head",
    "junit_suites",
    "markdown_report",
    "print_summary",
    "print_transcripts",
    "trial_traces",
    "write_json_report",
    "write_reports",
]

REPORT_FORMAT = "toolproof-eval-report"
#: Version of the JSON report. Bump it when a field is removed or changes meaning; new
#: fields do not bump it.
REPORT_VERSION = 1

#: First line of the Markdown report: CI finds (and updates) its earlier comment by it.
MARKDOWN_MARKER = "<!-- toolproof-evals -->"

_ICON = {"pass": "✅", "fail": "❌", "error": "⚠️", "skipped": "⏭️", "not_run": "⏸️"}


def write_reports(
    report: EvalReport,
    specs: Sequence[ReportSpec],
    spool: IO[bytes] | None,
    blocks: Mapping[int, tuple[int, int]] | None = None,
) -> list[str]:
    """Write each requested report (the summary figures are computed once for all).

    A report that cannot be written (a full disk, a file-size limit, a folder gone) does
    not keep the others from being written: its error is returned, one line each.

    ``blocks``: the cases' entries of the JSON report already written to ``spool`` while
    the trials ran (see :func:`write_json_report`).
    """
    from toolproof.errors import UserError

    summary: dict[str, Any] | None = None
    problems: list[str] = []
    for spec in specs:
        if spec.format in ("json", "markdown", "html") and summary is None:
            summary = report.summary()
        try:
            if spec.format == "json":
                write_json_report(spec.path, report, spool, summary=summary, blocks=blocks)
            elif spec.format == "junit":
                write_junit(spec.path, junit_suites(report, spool))
            elif spec.format == "markdown":
                with open_output(spec.path) as out:
                    out.write(markdown_report(report, spool=spool, summary=summary))
            elif spec.format == "html":
                write_eval_html(spec.path, report, spool, summary=summary)
        except (UserError, OSError) as exc:
            problems.append(f"{spec.format} report not written: {exc}")
    return problems


#: Failing trials per case whose transcript JUnit and Markdown show.
TRANSCRIPTS_PER_CASE = 3
#: Cases whose transcripts the Markdown report shows (it must fit a GitHub comment).
MARKDOWN_TRANSCRIPT_CASES = 10
#: Characters of one transcript in the Markdown report.
MARKDOWN_TRANSCRIPT_LIMIT = 4000


def trial_traces(trial: TrialResult, spool: IO[bytes] | None = None) -> list[dict[str, Any]] | None:
    """A trial's traces in their JSON form: kept in memory, or read back from the spool."""
    if trial.traces is not None:
        return [trace.to_dict() for trace in trial.traces]
    if trial.spool is None or spool is None:
        return None
    offset, length = trial.spool
    position = spool.tell()
    try:
        spool.seek(offset)
        data = json.loads(spool.read(length))
    except (OSError, ValueError):
        return None
    finally:
        spool.seek(position)
    traces = data.get("traces") if isinstance(data, dict) else None
    return traces if isinstance(traces, list) else None


def _failing(result: CaseResult) -> list[TrialResult]:
    return [t for t in result.trials if t.status != "pass"][:TRANSCRIPTS_PER_CASE]


def _transcripts(result: CaseResult, spool: IO[bytes] | None, limit: int | None = None) -> str:
    """The transcripts of a case's first failing trials, as plain text."""
    parts = []
    for trial in _failing(result):
        traces = trial_traces(trial, spool)
        if not traces:
            continue
        text = transcript_text(traces, indent="  ")
        if limit is not None:
            text = cut(text, limit)
        parts.append(f"transcript of trial {trial.index + 1} ({trial.status}):\n{text}")
    return "\n".join(parts)


# -- JSON -------------------------------------------------------------------------------------


def json_report_head(report: EvalReport, summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything of the JSON report except the cases (``summary``: ``report.summary()``)."""
    from toolproof._version import __version__
    from toolproof.evals._judge import JUDGE_PROMPT_VERSION

    suites: dict[str, dict[str, Any]] = {}
    for result in report.cases:
        entry = suites.setdefault(
            result.case.suite,
            {"name": result.case.suite, "file": str(result.case.file), "cases": 0},
        )
        entry["cases"] += 1
    return {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        "toolproof": __version__,
        "started_at": report.started_at,
        "duration_s": round(report.duration_s, 3),
        "interrupted": report.interrupted,
        "exit_code": report.exit_code,
        "judge_prompt_version": JUDGE_PROMPT_VERSION,
        "summary": report.summary() if summary is None else summary,
        "suites": list(suites.values()),
    }


def write_json_report(
    path: str,
    report: EvalReport,
    spool: IO[bytes] | None,
    *,
    summary: dict[str, Any] | None = None,
    blocks: Mapping[int, tuple[int, int]] | None = None,
) -> None:
    """Write the JSON report, copying each trial (with its traces) from the spool.

    ``blocks`` maps ``id(case result)`` to where the case's whole entry (``{...,
    "trials": [...]}``) already is in ``spool``: the runner writes each as its case is
    decided, so only the cases left are encoded here.
    """
    head = json.dumps(json_report_head(report, summary), ensure_ascii=False, indent=1)
    # json.dumps(..., ensure_ascii=False) for every case, without an encoder per case.
    encode = json.JSONEncoder(ensure_ascii=False).encode
    with open_output(path) as out:
        out.write(head[:-2] + ',\n "cases": [')
        if blocks and spool is not None and str(path) != "-":
            # A file (UTF-8, like the spool): the cases' bytes go under the text layer, so
            # the entries are copied without decoding and encoding them again.
            out.flush()
            _copy_cases(out.buffer, report, spool, blocks, encode)  # type: ignore[attr-defined]
            out.buffer.write(b"\n ]\n}\n")  # type: ignore[attr-defined]
            blocks = None
            report_cases: Sequence[CaseResult] = ()
        else:
            report_cases = report.cases
        for number, result in enumerate(report_cases):
            block = blocks.get(id(result)) if blocks and spool is not None else None
            if block is not None:
                assert spool is not None
                spool.seek(block[0])
                out.write(("," if number else "") + "\n  " + spool.read(block[1]).decode())
                continue
            case = encode(result.head())
            out.write(("," if number else "") + "\n  " + case[:-1] + ', "trials": [')
            for index, trial in enumerate(result.trials):
                out.write(("," if index else "") + "\n   ")
                if trial.spool is not None and spool is not None:
                    offset, length = trial.spool
                    spool.seek(offset)
                    out.write(spool.read(length).decode("utf-8"))
                else:
                    data = trial.head()
                    data["traces"] = [t.to_dict() for t in trial.traces or []]
                    out.write(json.dumps(data, ensure_ascii=False))
            out.write("]}")
        if report_cases is report.cases:
            out.write("\n ]\n}\n")
    if spool is not None:
        spool.seek(0, 2)


def write_eval_html(
    path: str,
    report: EvalReport,
    spool: IO[bytes] | None,
    *,
    summary: dict[str, Any] | None = None,
) -> None:
    """Write the HTML report: the JSON report's data, rendered, one case at a time.

    The page's body needs little of the traces (:func:`page_trial`); the whole traces are
    read back from the spool case by case as they are embedded, so the report never holds
    them all at once.
    """
    from toolproof.evals._html import page_trial, write_eval_page

    data = json_report_head(report, summary)
    data["cases"] = [
        {**result.head(), "trials": [page_trial(_trial_data(t, spool)) for t in result.trials]}
        for result in report.cases
    ]

    def cases() -> Iterator[dict[str, Any]]:
        for result in report.cases:
            yield {**result.head(), "trials": [_trial_data(t, spool) for t in result.trials]}

    with open_output(path) as out:
        write_eval_page(out, data, cases)
    if spool is not None:
        spool.seek(0, 2)


def _trial_data(trial: TrialResult, spool: IO[bytes] | None) -> dict[str, Any]:
    """A trial as the JSON report holds it (its traces included)."""
    if trial.spool is not None and spool is not None:
        spool.seek(trial.spool[0])
        data: dict[str, Any] = json.loads(spool.read(trial.spool[1]))
        return data
    data = trial.head()
    data["traces"] = [t.to_dict() for t in trial.traces or []]
    return data


def _copy_cases(
    out: IO[bytes],
    report: EvalReport,
    spool: IO[bytes],
    blocks: Mapping[int, tuple[int, int]],
    encode: Any,
) -> None:
    """The ``"cases"`` entries of the JSON report, as bytes (see :func:`write_json_report`)."""
    for number, result in enumerate(report.cases):
        out.write(b",\n  " if number else b"\n  ")
        block = blocks.get(id(result))
        if block is not None:
            spool.seek(block[0])
            out.write(spool.read(block[1]))
            continue
        out.write(utf8(encode(result.head())[:-1]) + b', "trials": [')
        for index, trial in enumerate(result.trials):
            out.write(b",\n   " if index else b"\n   ")
            if trial.spool is not None:
                spool.seek(trial.spool[0])
                out.write(spool.read(trial.spool[1]))
            else:
                data = trial.head()
                data["traces"] = [t.to_dict() for t in trial.traces or []]
                out.write(utf8(json.dumps(data, ensure_ascii=False)))
        out.write(b"]}")


# -- JUnit ------------------------------------------------------------------------------------


def _trial_lines(result: CaseResult) -> list[str]:
    lines = []
    for trial in result.trials:
        mark = {
            "pass": "PASS",
            "fail": "FAIL",
            "error": "ERROR",
            "simulator_fault": "SIMULATOR FAULT",
        }[trial.status]
        retries = f", {trial.attempts} attempts" if trial.attempts > 1 else ""
        lines.append(f"trial {trial.index + 1}: {mark} ({trial.duration_ms / 1000:.2f} s{retries})")
        if trial.status == "error" and trial.error:
            lines.append(f"  error: {trial.error_type}: {trial.error}")
        for check in trial.checks:
            if check.status in ("fail", "inconclusive"):
                lines.append(f"  {check.status}: {check.label}: {check.reason}")
    return lines


def _real_line(result: CaseResult, prefix: str) -> str:
    """``real tools: a, b`` for a mocked case that runs some tools for real, else ``""``."""
    names = result.case.config.named_real_tools
    return f"{prefix}real tools: {', '.join(names)}" if names else ""


def real_tools_summary(report: EvalReport, code: bool = False) -> str | None:
    """One line naming the tools that ran for real in mocked cases, or ``None``."""
    names = [n for c in report.cases for n in c.case.config.named_real_tools]
    if not names:
        return None
    cases = sum(1 for c in report.cases if c.case.config.named_real_tools)
    shown = ", ".join(md_code(n) if code else n for n in dict.fromkeys(names))
    return f"real tools: {shown} (in {cases} mocked case{'s' if cases != 1 else ''})"


def junit_suites(report: EvalReport, spool: IO[bytes] | None = None) -> list[JUnitSuite]:
    """One ``<testsuite>`` per eval suite, one ``<testcase>`` per case.

    A failing case's ``<system-out>`` holds the transcripts of its first failing trials
    (when their traces are kept, or in ``spool``).
    """
    from toolproof.evals._attacks import attack_summary, case_properties, junit_properties

    suites: dict[str, JUnitSuite] = {}
    figures: dict[tuple[str, str], dict[str, str]] = {}  # the attacked cases' own
    for entry in attack_summary(report.cases):
        name = entry["suite"]
        suites[name] = JUnitSuite(name, timestamp=report.started_at)
        suites[name].properties = junit_properties(entry)
        figures.update({(name, c["case"]): junit_properties(c) for c in entry["cases"]})
    for result in report.cases:
        case = result.case
        suite = suites.setdefault(case.suite, JUnitSuite(case.suite, timestamp=report.started_at))
        details = "\n".join(_trial_lines(result))
        out = case.location + _real_line(result, "\n")
        shown = details
        if result.verdict in ("fail", "error"):
            transcripts = _transcripts(result, spool)
            if transcripts:
                shown = f"{details}\n{transcripts}" if details else transcripts
        item = JUnitCase(
            name=case.name,
            classname=case.suite,
            time_s=result.duration_ms / 1000,
            system_out=f"{out}\n{shown}" if shown else out,
            properties={
                **_interval_properties(result),
                **(case_properties(result) or figures.get((case.suite, case.name), {})),
                **cost_properties(case_costs([t.head() for t in result.trials])),
            },
        )
        advisory = "" if result.blocking else "[advisory, gate: advise] "
        if result.verdict == "fail":
            if result.blocking:
                item.failure = f"{result.reason}\n\n{details}"
            else:
                item.skipped = f"{advisory}{result.reason}"
        elif result.verdict == "error":
            item.error = f"{advisory}{result.reason}\n\n{details}"
        elif result.verdict in ("skipped", "not_run"):
            item.skipped = result.reason
        suite.cases.append(item)
    if suites:
        summary = report.summary()
        first = next(iter(suites.values()))
        first.properties = {**first.properties, **_suite_properties(summary)}
    costs = report.costs or {}
    for spent in costs.get("suites") or []:
        if spent["suite"] in suites:
            suites[spent["suite"]].properties = {
                **suites[spent["suite"]].properties,
                **cost_properties(spent),
                **(
                    {}
                    if spent["cost_per_case"] is None
                    else {"cost_per_case": f"{spent['cost_per_case']:g}"}
                ),
            }
    gates = (costs.get("comparison") or {}).get("gates") or []
    if gates:  # a gate that fails the run fails a test case, so CI shows why
        checked = JUnitSuite("cost and latency gates", timestamp=report.started_at)
        for gate in gates:
            checked.cases.append(
                JUnitCase(
                    name=gate["name"],
                    classname="cost and latency gates",
                    failure=None if gate["passed"] else gate["message"],
                    system_out=gate["message"],
                )
            )
        suites[checked.name] = checked
    return list(suites.values())


def _interval_properties(result: CaseResult) -> dict[str, str]:
    """A case's pass rate and pass^k with their intervals, as JUnit properties."""
    figures = result.head()["intervals"]
    if figures is None:
        return {}
    rate, hat = figures["pass_rate"], figures["pass_hat_k"]
    return {
        "pass_rate": show(rate),
        f"pass^{hat['k']}": show(hat),
        "interval": f"{100 * rate['level']:g}% {rate['method']}",
        "trials": f"{len(result.trials)} of {result.case.config.trials}",
    }


def _suite_properties(summary: dict[str, Any]) -> dict[str, str]:
    """The run's suite-level intervals and gate, as properties of the first ``<testsuite>``."""
    out: dict[str, str] = {}
    intervals = summary["intervals"]
    if "pass_rate" in intervals:
        rate = intervals["pass_rate"]
        out["run_pass_rate"] = show(rate)
        out["run_interval"] = f"{100 * rate['level']:g}% {rate['method']} over {rate['n']} cases"
    if "pass_hat_k" in intervals:
        out[f"run_pass^{intervals['pass_hat_k']['k']}"] = show(intervals["pass_hat_k"])
    if summary["gate"] is not None:
        out["gate"] = gate_line(summary["gate"], "cases")
    return out


def _case_bounds(result: CaseResult) -> str:
    """``"0.21–0.94"``: the bounds of the case's pass rate (the console's narrow column)."""
    figures = result.head()["intervals"]
    if figures is None:
        return "-"
    rate = figures["pass_rate"]
    return f"{rate['low']:.2f}–{rate['high']:.2f}"


def case_interval_text(result: CaseResult) -> str:
    """``"0.667 [0.208, 0.939]"``: the case's pass rate and its interval, or ``"-"``."""
    figures = result.head()["intervals"]
    return "-" if figures is None else show(figures["pass_rate"], 2)


# -- Markdown ---------------------------------------------------------------------------------


def _headline(report: EvalReport, summary: dict[str, Any]) -> str:
    blocking = sum(1 for c in report.cases if c.blocking)
    if report.interrupted:
        return (
            f"⏸️ toolproof evals interrupted: {summary['passed']} of {summary['cases']} cases passed"
        )
    if summary["blocking_failed"]:
        n = summary["blocking_failed"]
        return f"❌ toolproof evals: {n} blocking case{'s' if n != 1 else ''} failed"
    if report.cost_gates_failed:
        return "❌ toolproof evals: " + "; ".join(report.cost_gates_failed)
    if report.count("error", blocking=True):
        n = report.count("error", blocking=True)
        cases = f"{n} case{'s' if n != 1 else ''}"
        return f"⚠️ toolproof evals: no verdict for {cases} (infrastructure errors)"
    if not report.ran:
        n = len(report.cases)
        return f"⏭️ toolproof evals: nothing ran ({n} case{'s' if n != 1 else ''} skipped)"
    passed = report.count("pass", blocking=True)
    skipped = report.count("skipped", blocking=True)
    ran = blocking - skipped
    extra = f" ({skipped} skipped)" if skipped else ""
    return f"✅ toolproof evals: {passed}/{ran} blocking cases passed{extra}"


def _figures(report: EvalReport, summary: dict[str, Any]) -> str:
    stats = report.stats
    intervals = summary["intervals"]
    parts = [f"{summary['trials_passed']}/{summary['trials']} trials passed"]
    faulted = summary.get("trials_simulator_fault")
    if faulted:
        parts.append(f"{faulted} with simulator faults (not counted for the agent)")
    if report.scripted:
        parts.append("scripted: checks the wiring (tools, mocks, checks), not the model")
    else:
        if summary["scripted_cases"]:
            parts.append(f"pass^k over the {stats.cases} cases with a model")
        if "pass_rate" in intervals:
            parts.append(f"pass rate {show(intervals['pass_rate'])}")
        top = intervals.get("pass_hat_k")
        for k, value in stats.pass_hat.items():
            if top is not None and k == top["k"] and k > 1:
                parts.append(f"pass^{k} {show(top)}")
            elif k in (1, max(stats.pass_hat)):
                parts.append(f"pass^{k} {value:.3f}")
        if stats.pass_at and max(stats.pass_at) > 1:
            k = max(stats.pass_at)
            parts.append(f"pass@{k} {stats.pass_at[k]:.3f}")
        parts.append(f"{stats.flaky} flaky")
    calls = summary["model_calls"] + summary["cached_calls"]
    if calls:
        parts.append(f"{summary['model_calls']} model calls ({summary['cached_calls']} cached)")
    parts.extend(_judged_figures(report, summary["judged_checks"]))
    if summary["cost"] is not None:
        parts.append(f"${summary['cost']:.4f}")
    parts.append(f"{summary['duration_s']:.1f} s")
    return " · ".join(parts)


def _statistics_lines(report: EvalReport, summary: dict[str, Any]) -> list[str]:
    """The intervals' method and level, the gate's decision and the planning line."""
    intervals = summary["intervals"]
    options = report.statistics
    lines = [
        f"intervals: {options.describe()} for a case's pass rate; the run's pass rate is "
        "clustered by case (cases, not trials, are the sample)"
    ]
    stopped = [c for c in report.cases if c.stopped is not None]
    if stopped:
        ran = sum(len(c.trials) for c in stopped)
        most = sum(c.case.config.trials for c in stopped)
        lines.append(
            f"until: decided: {ran} of at most {most} trials ran in the {len(stopped)} cases "
            "that stopped once their verdict was known"
        )
    if summary["gate"] is not None:
        lines.append(gate_line(summary["gate"], "cases"))
    drop = drop_line(intervals.get("detectable_drop"))
    if drop is not None and not report.scripted:
        lines.append(drop)
    return lines


def _judged_figures(report: EvalReport, judged: dict[str, int]) -> list[str]:
    """What the judge did, and why the judged checks it did not grade were skipped."""
    no_judge = after_failure = 0
    for case in report.cases:
        for trial in case.trials:
            for check in trial.checks:
                if check.kind == "judged" and check.status == "skip":
                    if "no judge model" in check.reason:
                        no_judge += 1
                    else:
                        after_failure += 1
    graded = judged["pass"] + judged["fail"] + judged["inconclusive"]
    if not graded and not no_judge and not after_failure:
        return []
    parts = []
    if graded:
        parts.append(
            f"judge: {judged['pass']} pass, {judged['fail']} fail, "
            f"{judged['inconclusive']} inconclusive"
        )
    if after_failure:
        parts.append(f"{after_failure} judged checks not run (the objective checks failed)")
    if no_judge:
        parts.append(f"{no_judge} judged checks not run (no judge model)")
    return parts


def _quality_markdown(quality: list[dict[str, Any]]) -> list[str]:
    """The retrieval quality table (one row per suite and retrieval tool) and figures."""
    if not quality:
        return []
    from toolproof.evals._quality import figure, quality_lines
    from toolproof.rag._metrics import METRICS

    rows = []
    for entry in quality:
        for item in entry.get("retrieval", []):
            cut = f"@{item['k']}" if item["k"] is not None else ""
            macro, micro = item["macro"], item["micro"]
            bounds = item.get("intervals") or {}
            cells = [
                "-" if macro.get(m) is None else figure(macro[m], bounds.get(m)) for m in METRICS
            ]
            rows.append(
                [
                    md_code(entry["suite"]),
                    f"{md_code(item['tool'])}{cut}",
                    str(item["queries"]),
                    *cells,
                    f"{micro['recall']:.3f}" if micro["recall"] is not None else "-",
                ]
            )
    lines = ["### Retrieval quality", ""]
    if rows:
        head = ["suite", "tool", "queries", *METRICS, "micro recall"]
        lines += [md_table(head, rows), ""]
    others = [line for line in quality_lines(quality) if ": retrieval (" not in line]
    lines += [f"- {md_escape(line)}" for line in others]
    return [*lines, ""] if others else lines


def markdown_report(
    report: EvalReport,
    *,
    limit: int = 65536,
    spool: IO[bytes] | None = None,
    summary: dict[str, Any] | None = None,
) -> str:
    """A Markdown report for a pull-request comment or ``$GITHUB_STEP_SUMMARY``.

    Failing, erroring and flaky cases come first, each with the failing checks of its
    trials in a collapsible block, then (for the first cases) a collapsed transcript of their
    failing trials, HTML-escaped; the text fits a GitHub comment (``limit`` characters).
    """
    if summary is None:
        summary = report.summary()
    lines = [MARKDOWN_MARKER, f"## {_headline(report, summary)}", ""]
    counts = [
        ["cases", str(summary["cases"])],
        ["passed", str(summary["passed"])],
        ["failed", f"{summary['failed']} ({summary['advisory_failed']} advisory)"],
        ["errors", str(summary["errors"])],
        ["skipped", str(summary["skipped"] + summary["not_run"])],
    ]
    if summary["trials_simulator_fault"]:
        counts.append(["simulator faults (trials)", str(summary["trials_simulator_fault"])])
    lines += [
        md_table([c[0] for c in counts], [[c[1] for c in counts]]),
        "",
        _figures(report, summary),
        "",
        *(f"- {md_escape(line)}" for line in _statistics_lines(report, summary)),
        "",
    ]
    real = real_tools_summary(report, code=True)
    if real is not None:
        lines += [real, ""]
    lines += _quality_markdown(summary["quality"])
    from toolproof.evals._attacks import attack_markdown

    lines += attack_markdown(summary["attacks"])
    costs = cost_lines(summary.get("costs"))
    if costs:
        lines += ["### Cost and latency", "", *(f"- {md_escape(line)}" for line in costs), ""]
    attention = [c for c in report.cases if c.verdict in ("fail", "error", "not_run")]
    flaky = [
        c
        for c in report.cases
        if c.verdict == "pass" and c.stats is not None and c.stats.classification == "flaky"
    ]
    lines += _attention_markdown(attention, spool)
    lines += _flaky_markdown(flaky)
    passing = [c for c in report.cases if c.verdict == "pass" and c not in flaky]
    if passing:
        body = "\n".join(
            f"- ✅ {md_code(c.case.id)} {c.passes}/{len(c.trials)} {case_interval_text(c)}"
            for c in passing
        )
        lines += [md_details(f"{len(passing)} passing cases", body), ""]
    skipped = [c for c in report.cases if c.verdict == "skipped"]
    if skipped:
        body = "\n".join(f"- ⏭️ {md_code(c.case.id)}: {md_escape(c.reason)}" for c in skipped)
        lines += [md_details(f"{len(skipped)} skipped cases", body), ""]
    lines.append(f"<sub>exit code {report.exit_code} · toolproof run</sub>")
    return md_truncate("\n".join(lines) + "\n", limit)


def _attention_markdown(attention: list[CaseResult], spool: IO[bytes] | None) -> list[str]:
    """The failing, erroring and unrun cases: a table, then each one's trials and transcript."""
    if not attention:
        return []
    rows = []
    for result in attention:
        gate = "" if result.blocking else " (advisory)"
        rows.append(
            [
                f"{_ICON[result.verdict]} {md_escape(result.verdict)}{gate}",
                f"{md_code(result.case.id)}",
                f"{result.passes}/{len(result.trials)}",
                case_interval_text(result),
                md_escape(result.reason, limit=300),
            ]
        )
    head = ["verdict", "case", "passed", "pass rate [interval]", "reason"]
    lines = ["### Needs attention", "", md_table(head, rows), ""]
    for number, result in enumerate(attention):
        body = "\n".join(_trial_lines(result))
        if body:
            lines += [md_details(f"{result.case.id}: trials", md_pre(body)), ""]
        if number < MARKDOWN_TRANSCRIPT_CASES:
            transcripts = _transcripts(result, spool, MARKDOWN_TRANSCRIPT_LIMIT)
            if transcripts:
                lines += [md_details(f"{result.case.id}: transcript", md_pre(transcripts)), ""]
    return lines


def _flaky_markdown(flaky: list[CaseResult]) -> list[str]:
    """The cases that passed by their pass_rule, but not in every trial."""
    if not flaky:
        return []
    rows = [
        [
            f"{md_code(c.case.id)}",
            f"{c.passes}/{len(c.trials)}",
            case_interval_text(c),
            md_escape(c.case.config.pass_rule.describe()),
            md_escape(c.reason, limit=200),
        ]
        for c in flaky
    ]
    head = ["case", "passed", "pass rate [interval]", "pass_rule", "failing checks"]
    return ["### Flaky (passed by pass_rule, but not every trial)", "", md_table(head, rows), ""]


# -- console ----------------------------------------------------------------------------------


def print_transcripts(report: EvalReport, console: Console) -> None:
    """Print each failing trial's transcript under its verdict (``toolproof run -v``).

    Needs the failing trials' traces in memory (``keep_failed_traces``). Every string from
    the trace is printed literally (rich ``Text``, never markup).
    """
    from rich.text import Text

    shown = False
    for result in report.cases:
        failing = [t for t in result.trials if t.status != "pass"]
        if result.verdict not in ("fail", "error") and not failing:
            continue
        if not shown:
            console.rule("transcripts of failing trials")
            shown = True
        head = Text()
        head.append(f"{result.verdict.upper()} ", style="bold red")
        head.append(printable(result.case.id), style="bold")
        head.append(f"  {result.passes}/{len(result.trials)} trials passed", style="dim")
        console.print(head)
        for trial in failing:
            line = Text(f"  trial {trial.index + 1}: {trial.status.upper()}", style="red")
            if trial.error and trial.status == "error":  # a failure's checks say why
                error = printable(f"  {trial.error_type or 'error'}: {trial.error}")
                line.append(error, style="red")
            console.print(line, soft_wrap=True)
            for check in trial.failed_checks:
                console.print(
                    Text(printable(f"    {check.status}: {check.label}: {check.reason}"), "red"),
                    soft_wrap=True,
                )
            traces = trial_traces(trial)
            if traces:
                console.print(transcript_rich(traces, indent="    "), soft_wrap=True)
            else:
                console.print(Text("    (no trace: the trial stopped before the agent ran)", "dim"))


def print_summary(
    report: EvalReport, console: Console, *, all_cases: bool | None = None
) -> dict[str, Any]:
    """Print a table of cases (all, or only those needing attention in large runs) and totals.

    Returns:
        ``report.summary()``, as the totals were printed from it.
    """
    from rich.markup import escape

    show_all = len(report.cases) <= 40 if all_cases is None else all_cases
    styles = {"pass": "green", "fail": "red", "error": "yellow", "skipped": "dim", "not_run": "dim"}
    rows = [
        c
        for c in report.cases
        if show_all
        or c.verdict != "pass"
        or (c.stats is not None and c.stats.classification == "flaky")
    ]
    if rows:
        from rich.table import Table  # a large run that passed shows no table

        table = Table(show_header=True, header_style="bold", expand=False, show_lines=False)
        table.add_column("verdict")
        table.add_column("case", overflow="fold")
        table.add_column("trials", justify="right")
        table.add_column("pass^k", justify="right")
        table.add_column("interval", justify="right", no_wrap=True)
        table.add_column("reason", overflow="fold")
        for result in rows:
            stats = result.stats
            hat = f"{stats.pass_hat[stats.n]:.2f}" if stats and not result.scripted else "-"
            gate = "" if result.blocking else " (advise)"
            table.add_row(
                f"[{styles[result.verdict]}]{result.verdict.upper()}[/]{gate}",
                escape(printable(result.case.id)),
                f"{result.passes}/{len(result.trials)}" if result.trials else "-",
                hat,
                _case_bounds(result),
                escape(printable(result.reason)),
            )
        console.print(table)
    if not show_all:
        hidden = len(report.cases) - len(rows)
        if hidden:
            console.print(f"[dim]{hidden} stable passing cases not shown[/]")
    summary = report.summary()
    console.print(escape(_figures(report, summary)), highlight=False)
    for line in _statistics_lines(report, summary):
        console.print(escape(line), highlight=False)
    from toolproof.evals._quality import quality_lines

    for line in quality_lines(summary["quality"]):
        console.print(escape(printable(line)), highlight=False)
    from toolproof.evals._attacks import attack_lines

    for line in attack_lines(summary["attacks"], cases=True):
        console.print(escape(printable(line)), highlight=False)
    for line in cost_lines(summary.get("costs")):
        style = "red" if line.startswith("FAIL ") else "dim"
        console.print(f"[{style}]{escape(printable(line))}[/]", highlight=False)
    real = real_tools_summary(report)
    if real is not None:
        console.print(f"[yellow]{escape(real)}[/]", highlight=False)
    headline = _headline(report, summary)
    style = "green" if report.exit_code == 0 else "red" if report.exit_code == 1 else "yellow"
    console.print(f"[bold {style}]{escape(headline)}[/]  (exit code {report.exit_code})")
    return summary
