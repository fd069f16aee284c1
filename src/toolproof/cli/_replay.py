"""``toolproof replay``: replay recorded traces against today's tools or model, and gate."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from toolproof.cli._options import (
    add_executor_argument,
    add_filter_arguments,
    add_log_arguments,
    add_redaction_arguments,
    add_report_argument,
    add_statistics_arguments,
    add_store_argument,
    check_report_paths,
    filter_from_args,
    logged,
    number_type,
    redactor_from_args,
    start_log,
    store_path,
)

if TYPE_CHECKING:
    from toolproof._runlog import RunLog

__all__ = ["register"]

EPILOG = """modes:
  tools   the recorded model outputs go through today's tools and schemas (no model cost)
  model   today's agent answers the recorded questions; tools answer from the recordings

examples:
  toolproof replay --mode tools --agent myapp.agent:build_agent --gate 0.05
  toolproof replay --mode tools --schemas tools.json --tag reward:1
  toolproof replay --mode model --agent myapp.agent:build_agent --model deepseek:deepseek-chat \\
      --rules replay.yaml --half-life 30d --max-age 90d --report junit:replay.xml

exit codes (the same as toolproof run's):
  0  the gate passed                    3  the model provider or network failed: samples
  1  failure rate above the gate           could not be graded, the gate passed without them
  2  usage or configuration error       5  nothing was replayed
  6  release mode: the gate is undecided (the interval contains the gate: too few samples)
"""


def register(subparsers: Any) -> None:
    """Add the ``replay`` command."""
    parser = subparsers.add_parser(
        "replay",
        help="replay recorded traces after a model, prompt or tool change, and gate on them",
        description=(
            "Replay stored traces in tools or model mode; each sample is graded pass, warn\n"
            "or fail, warns go to a spot-check list, and --gate fails the command when the\n"
            "failure rate is above it."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store_argument(parser)
    _add_today_arguments(parser)
    _add_grading_arguments(parser)
    parser.add_argument("--concurrency", type=int, default=4, help="model mode (default 4)")
    add_executor_argument(parser, units="samples")
    add_report_argument(parser, metavar="FORMAT:PATH")
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="print the transcript of each failing sample's new run (model mode)",
    )
    add_filter_arguments(parser, model_flag="--recorded-model")
    add_statistics_arguments(parser, gate=False)
    add_log_arguments(parser)
    add_redaction_arguments(parser)
    parser.set_defaults(handler=_replay)


def _add_today_arguments(parser: Any) -> None:
    """The mode, and today's agent, tools and model that the recordings meet."""
    parser.add_argument(
        "--mode", choices=("tools", "model"), default="tools", help="default: tools"
    )
    parser.add_argument(
        "--agent", metavar="MODULE:FACTORY", help="today's agent: factory(model, tools) -> Agent"
    )
    parser.add_argument(
        "--tools", metavar="MODULE[:ATTR]", help="today's tools (tools mode; default: the agent's)"
    )
    parser.add_argument(
        "--schemas",
        metavar="FILE",
        help="today's tool schemas as OpenAI JSON (tools mode, without Python tools)",
    )
    parser.add_argument(
        "--model",
        "-m",
        help="model mode: a model string, 'recorded' (replay the recorded outputs through the "
        "whole loop), or MODULE:ATTR naming a Model (as toolproof run --model)",
    )


def _add_grading_arguments(parser: Any) -> None:
    parser.add_argument("--rules", metavar="FILE", help="grading rules (YAML)")
    parser.add_argument(
        "--gate",
        type=_rate,
        help="the highest acceptable failure rate (default 0: any failure fails); the gate "
        "reads the rate's interval (see --gate-mode)",
    )
    parser.add_argument("--half-life", help="sample weights halve every this long (e.g. 30d)")
    parser.add_argument("--max-age", help="samples older than this are not replayed (e.g. 90d)")
    parser.add_argument("--judge-model", help="model that judges differently worded answers")
    parser.add_argument(
        "--run-mocks",
        action="store_true",
        help="tools mode: run today's declared mocks and compare their return structure",
    )
    parser.add_argument(
        "--real-tool",
        action="append",
        default=[],
        metavar="NAME",
        help="run this tool's real code instead of the recording (model mode) or its mock "
        "(tools mode with --run-mocks); no other tool's real code runs (repeatable)",
    )


_rate = number_type(
    lambda text: float(text.rstrip("%")) / (100 if text.endswith("%") else 1),
    "a rate such as 0.05 or 5%",
    lambda v: 0 <= v <= 1,
    "a rate is between 0 and 1, got {text!r}",
)


def _replay(args: argparse.Namespace) -> int:
    from toolproof._reporting import parse_report_specs
    from toolproof.errors import UserError
    from toolproof.replay import TraceStore, replay

    specs = parse_report_specs(args.report)
    check_report_paths(specs)
    redactor = redactor_from_args(args)
    rules, aging = _rules(args)
    if args.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {args.concurrency}")
    agent, tools, model, judge = _today(args)

    path = store_path(args)
    with TraceStore(path, create=False) as store:
        # (a URL's password is masked)
        log = start_log(args, "replay", store=str(store.location), model=args.model)
        with logged(log):
            report = replay(
                store,
                mode=args.mode,
                tools=tools,
                agent=agent,
                model=model,
                rules=rules,
                filter=filter_from_args(args),
                gate=args.gate,
                aging=aging,
                judge=judge,
                run_mocks=args.run_mocks,
                concurrency=args.concurrency,
                real_tools=args.real_tool,
                # (the run log, -v and every report format show the new runs)
                keep_traces=log is not None or args.verbose or bool(specs),
                executor=args.executor,
            )
    report.level = args.confidence if args.confidence is not None else 0.95
    report.interval = args.interval or "wilson"
    report.gate_mode = args.gate_mode or "advisory"
    _redact_samples(report, redactor)
    _output(report, specs, args, log)
    return report.exit_code


def _rules(args: argparse.Namespace) -> tuple[Any, Any]:
    """The grading rules of ``--rules``, and their aging (``--half-life``, ``--max-age``)."""
    from toolproof.replay import Aging, ReplayRules

    rules = ReplayRules.from_file(args.rules) if args.rules else ReplayRules()
    aging = rules.aging
    if args.half_life or args.max_age:
        override = Aging.parse(args.half_life, args.max_age)
        aging = Aging(
            override.half_life if args.half_life else aging.half_life,
            override.max_age if args.max_age else aging.max_age,
        )
    return rules, aging


def _today(args: argparse.Namespace) -> tuple[Any, Any, Any, Any]:
    """Today's agent, tools, model and judge, once the mode is found to have what it needs."""
    from toolproof.errors import UserError

    agent = _load_agent(args.agent) if args.agent else None
    tools: Any = None
    if args.schemas:
        from toolproof.replay._schema_check import load_schema_file

        tools = load_schema_file(args.schemas)
    elif args.tools:
        from toolproof._loading import load_target, tools_in

        target, label = load_target(args.tools)
        tools = tools_in(target)
        if not tools:
            raise UserError(f"--tools {args.tools}: {label} holds no tools")
    model = _load_model(args.model) if args.model else None
    if args.mode == "model" and agent is None:
        raise UserError("--mode model needs --agent MODULE:FACTORY (today's agent)")
    if args.mode == "model" and model is None and not isinstance(agent, _runnable()):
        raise UserError(
            "--mode model needs --model: a model string, 'recorded', or MODULE:ATTR naming a Model"
        )
    if args.mode == "tools" and agent is None and tools is None:
        raise UserError("--mode tools needs today's tools: --agent, --tools or --schemas")
    judge = _load_model(args.judge_model, "--judge-model") if args.judge_model else None
    if judge == "recorded":
        raise UserError("--judge-model needs a real model, not 'recorded'")
    return agent, tools, model, judge


def _output(report: Any, specs: list[Any], args: argparse.Namespace, log: RunLog | None) -> None:
    """Print the report and write the reports and the run log."""
    from toolproof._reporting import ReportSpec

    to_stdout = any(spec.to_stdout for spec in specs)
    console = sys.stderr if to_stdout else sys.stdout
    if args.verbose:
        _print_transcripts(report, console)
    print(report.render_text(), file=console)
    # A report that cannot be written (a full disk) is said; the others are still written
    # and the verdict still reaches the exit code.
    for spec in specs:
        if _write(report, spec) and not spec.to_stdout:
            print(f"wrote {spec.format} report to {spec.path}", file=console)
    if log is not None:
        _write(report, ReportSpec("json", str(log.report_path)), traces=True)
        counts = {"samples": len(report.samples), **report.counts}
        log.info.model = report.new_model or args.model
        if log.finish(status="finished", exit_code=report.exit_code, counts=counts):
            print(f"run log: {log.info.path}", file=console)


def _redact_samples(report: Any, redactor: Any) -> None:
    """Redact what the reports and the run log hold: new runs, answers and findings.

    The recorded runs were redacted when they were recorded.
    """
    if not redactor.enabled:
        return
    for sample in report.samples:
        texts = [sample.input, sample.recorded_output, sample.new_output, *sample.notes]
        findings = [[f.message, f.recorded, f.new] for f in sample.findings]
        traces = [sample.new_trace.to_dict()] if sample.new_trace is not None else []
        *clean, extra = redactor.redact_many(
            [*traces, {"metadata": {"texts": texts, "findings": findings}}]
        )
        if clean:
            sample.new_trace = type(sample.new_trace).from_dict(clean[0])
        texts = extra["metadata"]["texts"]
        sample.input, sample.recorded_output, sample.new_output = texts[:3]
        sample.notes = list(texts[3:])
        for finding, (message, recorded, new) in zip(
            sample.findings, extra["metadata"]["findings"], strict=True
        ):
            finding.message, finding.recorded, finding.new = message, recorded, new


def _write(report: Any, spec: Any, *, traces: bool = False) -> bool:
    from toolproof.errors import UserError

    try:
        report.write(spec, traces=traces)
    except UserError as exc:
        print(f"toolproof: error: {spec.format} report not written: {exc}", file=sys.stderr)
        return False
    return True


def _print_transcripts(report: Any, stream: Any) -> None:
    """``-v``: each failing sample's findings and the transcript of its new run."""
    from rich.console import Console
    from rich.text import Text

    from toolproof._reporting import printable, transcript_rich

    failing = [s for s in report.samples if s.grade in ("fail", "error")]
    if not failing:
        return
    console = Console(file=stream, highlight=False)
    console.rule("transcripts of failing samples")
    for sample in failing:
        head = printable(f"{sample.grade.upper()} {sample.trace_id}")
        console.print(Text(head, style="bold red"))
        for finding in sample.findings:
            console.print(
                Text(printable(f"  [{finding.grade}] {finding.check}: {finding.message}"), "red"),
                soft_wrap=True,
            )
        if sample.new_trace is not None:
            transcript = transcript_rich([sample.new_trace.to_dict()], indent="  ")
            console.print(transcript, soft_wrap=True)
        else:
            note = "  (tools mode: no new run; the findings compare the recording)"
            console.print(Text(note, "dim"))


def _runnable() -> type:
    from toolproof._agent import Runnable

    return Runnable


def _load_agent(spec: str) -> Any:
    from toolproof._agent import Runnable
    from toolproof._loading import load_target
    from toolproof.errors import UserError

    target, label = load_target(spec)
    if not (isinstance(target, Runnable) or callable(target)):
        raise UserError(f"--agent {spec}: {label} is neither an Agent nor a factory")
    return target


def _load_model(spec: str, option: str = "--model") -> Any:
    from toolproof._loading import load_model_spec
    from toolproof.models import model_from_string

    found = load_model_spec(spec, option=option, keywords=("recorded", "scripted"))
    if found in ("recorded", "scripted"):
        return "recorded"
    return model_from_string(found) if isinstance(found, str) else found
