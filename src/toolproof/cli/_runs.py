"""``toolproof runs``: list past runs (their run logs) and compare two of them.

``runs list`` shows the run logs newest first; ``runs compare A B`` pairs the two runs case by
case (sample by sample for replay runs) and says whether B regressed, improved, or shows no
evidence of a change beyond noise (``toolproof._paired``), then lists the cases whose verdict
changed. Exit codes: 0 no regression beyond noise, 1 B regressed, 2 a bad run id or option
(one line).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from toolproof._runlog import CaseChange, Run, RunInfo
    from toolproof._statistics import Comparison

__all__ = ["register"]

#: First line of the Markdown comparison: CI finds (and updates) its earlier comment by it.
MARKDOWN_MARKER = "<!-- toolproof-runs-compare -->"
COMPARE_FORMAT = "toolproof-runs-compare"
COMPARE_VERSION = 1

_TITLES = {
    "regressed": ("❌", "regressed", "red"),
    "fixed": ("✅", "fixed", "green"),
    "flaky": ("🎲", "became flaky", "yellow"),
    "still_failing": ("🔁", "still failing", "red"),
    "new": ("🆕", "new", "cyan"),
    "removed": ("➖", "removed", "dim"),
    "no_verdict": ("⚠️", "no verdict", "yellow"),
    "changed": ("↔️", "grade changed", "yellow"),
    "unchanged": ("·", "unchanged", "dim"),
}

EPILOG = """\
run ids: a run log's folder name, a unique prefix of it, latest, latest~1 (the one before),
or a path to the folder.

examples:
  toolproof runs list
  toolproof runs compare                    # the two latest runs of the same kind
  toolproof runs compare latest~1 latest --report markdown:compare.md
"""


def register(subparsers: Any) -> None:
    """Add the ``runs`` command group."""
    from toolproof.cli import show_help

    parser = subparsers.add_parser(
        "runs",
        help="list past runs (their run logs) and compare two of them",
        description="Past runs of toolproof run and toolproof replay, from their run logs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=lambda args: show_help(parser))
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    listing = commands.add_parser("list", help="past runs, newest first")
    _log_dir(listing)
    listing.add_argument("--json", action="store_true", help="print the runs as JSON")
    listing.add_argument("--kind", choices=("run", "replay"), help="only runs of this kind")
    listing.add_argument(
        "--limit", "-n", type=int, default=50, metavar="N", help="show at most N (default 50)"
    )
    listing.set_defaults(handler=_list)

    compare = commands.add_parser(
        "compare",
        help="what changed between two runs: regressed, fixed, flaky, still failing, new, removed",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    compare.add_argument(
        "old", nargs="?", metavar="A", help="the earlier run (default: the run before B)"
    )
    compare.add_argument("new", nargs="?", metavar="B", help="the later run (default: latest)")
    _log_dir(compare)
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.add_argument(
        "--report",
        action="append",
        default=[],
        metavar="FORMAT[:PATH]",
        help="write the comparison: json or markdown, to PATH or '-' for stdout (repeatable)",
    )
    compare.add_argument(
        "--all", action="store_true", help="also list the unchanged cases in the console"
    )
    from toolproof.cli._options import add_confidence_argument

    add_confidence_argument(compare)
    compare.add_argument(
        "--correction",
        choices=("bh", "holm"),
        default="bh",
        help="how per-case changes are corrected for testing many cases: bh "
        "(Benjamini-Hochberg, the default) or holm",
    )
    compare.add_argument(
        "--max-latency-increase",
        metavar="PCT",
        help="eval runs: exit 1 when B's p95 agent latency is more than this over A's (e.g. 20%%)",
    )
    compare.add_argument(
        "--max-cost-increase",
        metavar="PCT",
        help="eval runs: exit 1 when B's cost per case is more than this over A's (e.g. 10%%)",
    )
    compare.set_defaults(handler=_compare)


def _log_dir(parser: Any) -> None:
    parser.add_argument(
        "--log-dir",
        metavar="PATH",
        help="where the run logs are (default .toolproof/runs, or $TOOLPROOF_LOG_DIR)",
    )


# -- list ---------------------------------------------------------------------------------------


def _when(started: str) -> str:
    return started[5:16].replace("T", " ") if len(started) >= 16 else "?"


def _subject(info: RunInfo) -> str:
    import os

    if info.kind == "replay":
        return info.store or "?"
    names = [os.path.basename(s) for s in info.suites]
    return ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "") or "?"


def _passed(info: RunInfo) -> tuple[str, str]:
    """Passed cases (or graded-ok samples), and passed trials (``run``)."""
    counts = info.counts
    if not counts:
        return "-", "-"
    if info.kind == "replay":
        ok = counts.get("pass", 0) + counts.get("warn", 0)
        return f"{ok}/{counts.get('samples', 0)}", "-"
    cases = f"{counts.get('passed', 0)}/{counts.get('cases', 0)}"
    trials = f"{counts.get('trials_passed', 0)}/{counts['trials']}" if "trials" in counts else "-"
    return cases, trials


def _list(args: argparse.Namespace) -> int:
    import json

    from rich.table import Table
    from rich.text import Text

    from toolproof._runlog import list_runs, log_dir
    from toolproof.cli import report_console

    runs = [r for r in list_runs(args.log_dir) if args.kind is None or r.kind == args.kind]
    runs = runs[: max(args.limit, 0)]
    if args.json:
        print(json.dumps([r.to_dict() | {"path": str(r.path.resolve())} for r in runs], indent=1))
        return 0
    console = report_console()
    if not runs:
        console.print(f"no runs in {log_dir(args.log_dir)}")
        return 0
    table = Table(show_header=True, header_style="bold")
    # Ids, times and figures never wrap (ids are copied into commands); names fold.
    # The id says the kind (``-run-`` / ``-replay-``).
    table.add_column("id", no_wrap=True, min_width=len(runs[0].id))
    table.add_column("when (UTC)", no_wrap=True, min_width=11)
    table.add_column("suite / store", overflow="fold", min_width=8)
    table.add_column("model", overflow="fold", min_width=6)
    table.add_column("cases", justify="right", no_wrap=True)
    table.add_column("trials", justify="right", no_wrap=True)
    table.add_column("exit", justify="right", no_wrap=True, min_width=4)
    table.add_column("time", justify="right", no_wrap=True)
    unfinished = any(info.status != "finished" for info in runs)
    if unfinished:
        table.add_column("status", no_wrap=True, min_width=7)  # died, running: never folded away
    for info in runs:
        code = "-" if info.exit_code is None else str(info.exit_code)
        style = "green" if info.exit_code == 0 else "red" if info.exit_code == 1 else "yellow"
        cases, trials = _passed(info)
        row = [
            Text(info.id),
            Text(_when(info.started)),
            Text(_subject(info)),
            Text(info.model or "-"),
            Text(cases),
            Text(trials),
            Text(code, style=style),
            Text("-" if info.duration_s is None else f"{info.duration_s:.1f} s"),
        ]
        if unfinished:
            row.append(Text("" if info.status == "finished" else info.status, style="yellow"))
        table.add_row(*row)
    console.print(table)
    return 0


# -- compare ------------------------------------------------------------------------------------


def _pick(args: argparse.Namespace) -> tuple[Run, Run]:
    from toolproof._runlog import list_runs, load_run
    from toolproof.errors import UserError

    new = load_run(args.new or "latest", args.log_dir)
    if args.old:
        old = load_run(args.old, args.log_dir)
    else:
        earlier = [
            r
            for r in list_runs(args.log_dir)
            if r.kind == new.info.kind
            and r.id != new.info.id
            and (r.started, r.id) < (new.info.started, new.info.id)
        ]
        if not earlier:
            raise UserError(
                f"no {new.info.kind} run before {new.info.id} to compare it with; give two run "
                "ids (toolproof runs list shows them)"
            )
        old = load_run(earlier[0].path)
    return old, new


def _compare(args: argparse.Namespace) -> int:
    import json

    from toolproof._paired import exit_code, paired
    from toolproof._reporting import open_output, parse_report_specs
    from toolproof._runlog import compare_runs
    from toolproof.cli import report_console
    from toolproof.cli._options import check_report_paths

    specs = parse_report_specs(args.report, formats=("json", "markdown"))
    check_report_paths(specs)
    old, new = _pick(args)
    changes = compare_runs(old, new)
    comparison = paired(old.report, new.report, level=args.confidence, correction=args.correction)
    data = _as_json(old, new, changes, comparison)
    costs = _costs(old, new, args)
    if costs is not None:
        data["costs"] = costs
    for spec in specs:
        with open_output(spec.path) as out:
            if spec.format == "json":
                out.write(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
            else:
                out.write(markdown_comparison(old, new, changes, comparison))
    if args.json:
        print(json.dumps(data, indent=1, ensure_ascii=False))
    else:
        stdout_taken = any(spec.to_stdout for spec in specs)
        console = report_console(stderr=stdout_taken)
        _print(old, new, changes, comparison, console, show_all=args.all)
        from rich.text import Text

        from toolproof.evals._costs import cost_lines

        for line in cost_lines({"comparison": costs}):
            console.print(Text(line, style="red" if line.startswith("FAIL ") else "dim"))
    failed_gates = costs is not None and not all(g["passed"] for g in costs["gates"])
    code = exit_code(comparison)
    return 1 if failed_gates and code == 0 else code


def _costs(old: Run, new: Run, args: argparse.Namespace) -> dict[str, Any] | None:
    """Cost and latency of two eval runs over the cases both ran (``None`` for replays)."""
    from toolproof.cli._options import cost_gates
    from toolproof.errors import UserError
    from toolproof.evals._costs import compare_costs

    gated = args.max_latency_increase is not None or args.max_cost_increase is not None
    if old.report is None or new.report is None or new.info.kind != "run":
        if gated:
            raise UserError("cost and latency gates compare eval runs that have reports")
        return None
    gates = cost_gates(args)
    cases = [c for c in new.report.get("cases") or [] if isinstance(c, dict)]
    before = [c for c in old.report.get("cases") or [] if isinstance(c, dict)]
    return compare_costs(cases, before, gates)


def _counts(changes: list[CaseChange]) -> dict[str, int]:
    from toolproof._runlog import CHANGE_CLASSES

    return {name: sum(1 for c in changes if c.change == name) for name in CHANGE_CLASSES}


def _as_json(
    old: Run, new: Run, changes: list[CaseChange], comparison: Comparison | None
) -> dict[str, Any]:
    from toolproof._paired import comparison_dict

    return {
        "format": COMPARE_FORMAT,
        "version": COMPARE_VERSION,
        "kind": new.info.kind,
        "old": {"id": old.info.id, "started": old.info.started, "path": str(old.info.path)},
        "new": {"id": new.info.id, "started": new.info.started, "path": str(new.info.path)},
        "counts": _counts(changes),
        "regressed": comparison is not None and comparison.change == "regressed",
        "comparison": None if comparison is None else comparison_dict(comparison),
        "changes": [c.to_dict() for c in changes],
    }


def _headline(changes: list[CaseChange]) -> str:
    counts = _counts(changes)
    parts = [
        f"{counts[name]} {_TITLES[name][1]}"
        for name in ("regressed", "fixed", "flaky", "still_failing", "new", "removed")
        if counts[name]
    ]
    return ", ".join(parts) if parts else "no change"


def _print(
    old: Run,
    new: Run,
    changes: list[CaseChange],
    comparison: Comparison | None,
    console: Console,
    *,
    show_all: bool,
) -> None:
    from rich.table import Table
    from rich.text import Text

    unit = "sample" if new.info.kind == "replay" else "case"
    console.print(Text(f"comparing {old.info.id} → {new.info.id} ({_kind(new)})"))
    shown = [c for c in changes if show_all or c.change != "unchanged"]
    if shown:
        table = Table(show_header=True, header_style="bold")
        table.add_column("change")
        table.add_column(unit, overflow="fold")
        table.add_column("old → new", justify="right")
        for change in sorted(shown, key=lambda c: _order(c.change)):
            _, title, style = _TITLES[change.change]
            table.add_row(Text(title, style=style), Text(change.key), Text(change.rates()))
        console.print(table)
    unchanged = sum(1 for c in changes if c.change == "unchanged")
    if unchanged and not show_all:
        console.print(Text(f"{unchanged} unchanged {unit}s not shown (--all shows them)", "dim"))
    from toolproof._paired import comparison_lines, exit_code

    code = exit_code(comparison)
    console.print(Text(f"verdicts: {_headline(changes)} (noise or not: see below)"))
    for line in comparison_lines(comparison) if comparison is not None else [_NOTHING_PAIRED]:
        console.print(Text(line))
    console.print(
        Text(_verdict(comparison), style="bold red" if code else "bold green"),
        Text(f"  (exit code {code})"),
    )


_NOTHING_PAIRED = "no case has a verdict in both runs: nothing to compare"


def _verdict(comparison: Comparison | None) -> str:
    if comparison is None:
        return "nothing compared"
    return {
        "regressed": "regressed beyond noise",
        "improved": "improved beyond noise",
        "no evidence": "no evidence of a change",
    }[comparison.change]


def _kind(run: Run) -> str:
    return "replays, per sample grade" if run.info.kind == "replay" else "eval runs, per case"


def _order(change: str) -> int:
    from toolproof._runlog import CHANGE_CLASSES

    return CHANGE_CLASSES.index(change)


def markdown_comparison(
    old: Run, new: Run, changes: list[CaseChange], comparison: Comparison | None = None
) -> str:
    """The comparison as Markdown for a pull-request comment (it starts with a marker line)."""
    from toolproof._paired import comparison_markdown, exit_code
    from toolproof._reporting import md_code, md_details, md_escape, md_table, md_truncate

    code = exit_code(comparison)
    unit = "sample" if new.info.kind == "replay" else "case"
    icon = "❌" if code else "✅"
    lines = [
        MARKDOWN_MARKER,
        f"## {icon} toolproof runs compare: {_verdict(comparison)}",
        "",
        f"{md_code(old.info.id)} → {md_code(new.info.id)} ({_kind(new)})",
        "",
        *(comparison_markdown(comparison) if comparison is not None else [_NOTHING_PAIRED]),
        "",
        f"verdicts: {md_escape(_headline(changes))}",
        "",
    ]
    counts = _counts(changes)
    names = [n for n in counts if counts[n]]
    if names:
        lines += [md_table([_TITLES[n][1] for n in names], [[str(counts[n]) for n in names]]), ""]
    for name in ("regressed", "fixed", "flaky", "still_failing", "new", "removed", "no_verdict"):
        group = [c for c in changes if c.change == name]
        if not group:
            continue
        emoji, title, _ = _TITLES[name]
        rows = [[md_code(c.key), md_escape(c.rates())] for c in group]
        table = md_table([unit, "old → new"], rows)
        if name in ("regressed", "fixed", "flaky"):
            lines += [f"### {emoji} {title} ({len(group)})", "", table, ""]
        else:
            lines += [md_details(f"{emoji} {title} ({len(group)})", table), ""]
    changed = [c for c in changes if c.change == "changed"]
    if changed:
        rows = [[md_code(c.key), md_escape(c.rates())] for c in changed]
        table = md_table([unit, "old → new"], rows)
        lines += [md_details(f"grade changed ({len(changed)})", table), ""]
    lines.append(f"<sub>exit code {code} · toolproof runs compare</sub>")
    return md_truncate("\n".join(lines) + "\n")
