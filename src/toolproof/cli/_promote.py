"""``toolproof traces promote``: recorded runs become eval cases."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "promote"]

EPILOG = """examples:
  toolproof traces promote 3fa9c0 -o evals/regressions.eval.yaml --agent app.agent:build
  toolproof traces promote --since 7d --failed --distinct 20 -o evals/last-week.eval.yaml \\
      --agent app.agent:build
  toolproof traces promote --errors --retries --new-tools evals/ -o new.eval.yaml --agent app:build

then: toolproof run evals/regressions.eval.yaml   (model: scripted replays the recording)
"""


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``traces promote`` to the ``traces`` subcommands.

    The store and filter arguments and the handler are the ``traces`` command's to add.
    """
    parser: argparse.ArgumentParser = commands.add_parser(
        "promote",
        help="turn recorded traces into eval cases (with fixtures of their tool results)",
        description=(
            "Write an eval suite with one case per trace: the user's turns, the recorded\n"
            "answers as a script, expectations drafted from the recorded calls and answer,\n"
            "and a fixture file per case holding the recorded tool results. Everything is\n"
            "redacted first (default rules, or --redact)."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("trace_ids", nargs="*", metavar="ID", help="trace ids (or prefixes)")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the suite to write")
    parser.add_argument(
        "--agent", required=True, metavar="MODULE:FACTORY", help="the agent factory of the suite"
    )
    parser.add_argument("--suite-name", help="the suite's name (default: the file's name)")
    parser.add_argument("--force", action="store_true", help="overwrite FILE and its fixtures")
    signals = parser.add_argument_group("signals (a trace showing any of them is promoted)")
    signals.add_argument(
        "--failed", action="store_true", help="no final answer, or a check or the judge failed it"
    )
    signals.add_argument("--errors", action="store_true", help="a tool returned an error")
    signals.add_argument(
        "--retries", action="store_true", help="the same call was made more than once"
    )
    signals.add_argument("--min-cost", type=float, metavar="USD", help="cost at least this much")
    signals.add_argument(
        "--min-latency", type=float, metavar="SECONDS", help="took at least this long"
    )
    signals.add_argument(
        "--new-tools",
        metavar="SUITE",
        help="called a tool that the suite files at SUITE (a file or directory) never name",
    )
    parser.add_argument(
        "--distinct",
        type=int,
        metavar="N",
        help="keep the N most different traces, collapsing near-duplicates",
    )
    parser.add_argument("--redact", metavar="FILE", help="redaction rules (YAML)")
    return parser


def promote(args: argparse.Namespace, filter_from_args: Any, store: str) -> int:
    """Handle ``toolproof traces promote`` (``filter_from_args`` reads the trace filters)."""
    from toolproof.errors import UserError
    from toolproof.replay._promote import Signals, distinct, promote_traces, signals_of
    from toolproof.replay._redact import Redactor
    from toolproof.replay._store import open_store

    output = Path(args.output)
    if not output.name.endswith((".eval.yaml", ".eval.yml")):
        raise UserError(f"-o {args.output}: name the suite FILE.eval.yaml, so runs find it")
    fixtures_dir = output.name.removesuffix(".yaml").removesuffix(".yml") + ".fixtures"
    if not args.force and (output.exists() or (output.parent / fixtures_dir).exists()):
        raise UserError(f"-o {args.output}: it exists; choose another file or pass --force")
    for flag, value in (("--min-cost", args.min_cost), ("--min-latency", args.min_latency)):
        if value is not None and not value >= 0:
            raise UserError(f"{flag} must be a number of 0 or more, got {value}")
    if args.distinct is not None and args.distinct < 1:
        raise UserError(f"--distinct must be at least 1, got {args.distinct}")
    wanted = Signals(
        failed=args.failed,
        errors=args.errors,
        retries=args.retries,
        min_cost=args.min_cost,
        min_latency_s=args.min_latency,
        new_tools=None if args.new_tools is None else frozenset(_suite_tools(args.new_tools)),
    )
    redactor = Redactor.from_file(args.redact) if args.redact else Redactor()
    args.ids = [*args.ids, *args.trace_ids]
    with open_store(store) as opened:
        if args.trace_ids:
            traces = [opened.get(one) for one in args.trace_ids]
            args.ids = []
            found = filter_from_args(args)
            if _narrowed(args):
                keep = {t.id for t in opened.query(found)}
                traces = [t for t in traces if t.id in keep]
        else:
            traces = [
                t
                for t in opened.query(filter_from_args(args))
                if signals_of(t, wanted) or not wanted.any
            ]
    if wanted.any:
        traces = [t for t in traces if signals_of(t, wanted)]
    if args.distinct is not None:
        traces = distinct(traces, args.distinct)
    if not traces:
        raise UserError("no trace matches: nothing to promote (see toolproof traces list)")
    name = args.suite_name or output.name.split(".")[0]
    promoted = promote_traces(
        traces, agent=args.agent, suite_name=name, fixtures_dir=fixtures_dir, redactor=redactor
    )
    from toolproof.replay._promote import write_promoted

    write_promoted(promoted, output)
    print(
        f"promoted {len(traces)} trace{'s' if len(traces) != 1 else ''} to {output} "
        f"(fixtures in {output.parent / fixtures_dir})"
    )
    for note in promoted.notes:
        print(f"  note: {note}")
    print(f"run it: toolproof run {output}")
    return 0


def _narrowed(args: argparse.Namespace) -> bool:
    return bool(
        args.since or args.until or args.tool or args.filter_model or args.tag or args.status
    )


def _suite_tools(location: str) -> set[str]:
    """The tools a suite names: in expectations, scripts and fixtures (read, not run)."""
    from toolproof._yaml import safe_load
    from toolproof.errors import UserError

    root = Path(location)
    files = (
        sorted([*root.rglob("*.eval.yaml"), *root.rglob("*.eval.yml")]) if root.is_dir() else [root]
    )
    if not files or not all(f.is_file() for f in files):
        raise UserError(f"--new-tools {location}: no suite file there")
    names: set[str] = set()
    for file in files:
        _named_tools(safe_load(file.read_text(encoding="utf-8"), file), names)
    return names


def _named_tools(node: Any, into: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("tools_called", "args", "required_args") and isinstance(value, dict):
                into.update(str(k) for k in value)
            elif key in ("tools_called", "tools_not_called") and isinstance(value, list):
                into.update(str(v) for v in value if isinstance(v, str))
            elif key in ("call", "tool") and isinstance(value, dict) and "name" in value:
                into.add(str(value["name"]))
            elif key == "tool" and isinstance(value, str):
                into.add(value)
            _named_tools(value, into)
    elif isinstance(node, list):
        for item in node:
            _named_tools(item, into)
