"""``toolproof traces``: list, show, export, import and prune recorded traces."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from toolproof._text import clip
from toolproof.cli import show_help
from toolproof.cli._options import (
    add_filter_arguments,
    add_store_argument,
    filter_from_args,
    store_path,
)

if TYPE_CHECKING:
    from toolproof._trace import Trace

__all__ = ["register"]

EPILOG = """examples:
  toolproof traces list --since 7d --tool query_users --status failed
  toolproof traces show 3fa9c0
  toolproof traces export --tag prod -o prod.jsonl
  toolproof traces import runs.jsonl
  toolproof traces import gpt-4o-airline.json --tools tools.json --model openai:gpt-4o
  toolproof traces prune --older-than 90d
  toolproof traces promote --since 7d --failed --distinct 20 -o week.eval.yaml --agent app:build
"""


def register(subparsers: Any) -> None:
    """Add the ``traces`` command and its subcommands."""
    parser = subparsers.add_parser(
        "traces",
        help="list, show, export and import recorded traces",
        description="Work with the trace store that Recorder writes and replay reads.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=lambda args: show_help(parser))
    commands = parser.add_subparsers(title="subcommands", metavar="SUBCOMMAND")

    listing = commands.add_parser("list", help="list stored traces, most recent first")
    add_store_argument(listing)
    add_filter_arguments(listing, limit=50)
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.set_defaults(handler=_list)

    show = commands.add_parser("show", help="show one trace")
    add_store_argument(show)
    show.add_argument("id", help="the trace id (or a unique prefix)")
    show.add_argument("--json", action="store_true", help="the stored JSON")
    show.set_defaults(handler=_show)

    export = commands.add_parser("export", help="write traces as JSONL (one trace per line)")
    add_store_argument(export)
    add_filter_arguments(export)
    export.add_argument("-o", "--output", default="-", help="the file (default: stdout)")
    export.set_defaults(handler=_export)

    _add_import_parser(commands)

    from toolproof.cli import _promote

    promote = _promote.add_parser(commands)
    add_store_argument(promote)
    add_filter_arguments(promote)
    promote.set_defaults(
        handler=lambda args: _promote.promote(args, filter_from_args, store_path(args))
    )

    prune = commands.add_parser("prune", help="delete expired traces")
    add_store_argument(prune)
    prune.add_argument("--older-than", required=True, metavar="AGE", help="e.g. 90d")
    prune.add_argument("--dry-run", action="store_true", help="only count them")
    prune.set_defaults(handler=_prune)


def _add_import_parser(commands: Any) -> None:
    """``traces import``: its files, formats and redaction."""
    importer = commands.add_parser(
        "import",
        help="import JSONL exports or OpenAI-format conversations",
        description=(
            "Import traces: toolproof JSONL exports, or OpenAI-format conversations (a JSON\n"
            "list or JSONL of records whose 'traj'/'messages' hold the chat). A conversation\n"
            "becomes one trace per answered user turn (history = the turns before it)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store_argument(importer)
    importer.add_argument("files", nargs="+", metavar="FILE")
    importer.add_argument(
        "--format",
        choices=("auto", "toolproof", "openai", "otel"),
        default="auto",
        help="default: auto; otel reads OTLP JSON spans (GenAI conventions; toolproof[otel])",
    )
    importer.add_argument(
        "--tools", metavar="FILE", help="tool schemas: OpenAI tools.json or a toolproof snapshot"
    )
    importer.add_argument("--model", default="", help="model name to record for conversations")
    importer.add_argument("--tag", action="append", default=[], help="tag every imported trace")
    importer.add_argument(
        "--turns",
        choices=("all", "last"),
        default="all",
        help="one trace per answered turn (all), or the last turn only",
    )
    redaction = importer.add_mutually_exclusive_group()
    redaction.add_argument("--redact", metavar="FILE", help="redaction rules (YAML)")
    redaction.add_argument(
        "--no-redact",
        action="store_true",
        help="store as is (the default masks credentials, "
        "e-mail addresses, phone and card numbers)",
    )
    importer.add_argument("--replace", action="store_true", help="overwrite traces with same id")
    importer.set_defaults(handler=_import)


def _list(args: argparse.Namespace) -> int:
    import json

    from toolproof.replay._store import open_store

    with open_store(store_path(args)) as store:
        rows = store.rows(filter_from_args(args), check=True)
        total = store.count(filter_from_args(args)) - len(store.skipped)
    if args.json:
        for row in rows:
            print(
                json.dumps(
                    {
                        "id": row.id,
                        "started_at": row.started_at or _iso(row.ts),
                        "model": row.model,
                        "status": row.status,
                        "tools": row.tools,
                        "tool_calls": row.tool_calls,
                        "tags": row.tags,
                        "duration_ms": round(row.duration_ms, 3),
                        "input": row.input,
                    },
                    ensure_ascii=False,
                )
            )
        return 0
    if not rows:
        print("no traces match")
        return 0
    table = [["ID", "STARTED", "MODEL", "STATUS", "TOOLS", "TAGS", "INPUT"]]
    for row in rows:
        tools = ", ".join(f"{name}×{n}" if n > 1 else name for name, n in row.tools.items())
        table.append(
            [
                row.id[:12],
                _iso(row.ts)[:16].replace("T", " "),
                clip(row.model, 24),
                row.status,
                clip(tools, 32) or "-",
                clip(",".join(row.tags), 24) or "-",
                clip(row.input, 50),
            ]
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]) - 1)]
    for line in table:
        print(
            "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=False))
            + "  "
            + line[-1]
        )
    if total > len(rows):
        print(f"({len(rows)} of {total} shown; use --limit)")
    return 0


def _show(args: argparse.Namespace) -> int:
    import json

    from toolproof.replay._store import open_store

    with open_store(store_path(args)) as store:
        if args.json:
            print(json.dumps(json.loads(store.get_json(args.id)), indent=2, ensure_ascii=False))
            return 0
        trace = store.get(args.id)
    print(trace.summary())
    print(f"  started: {trace.started_at or '-'}  tags: {', '.join(trace.tags) or '-'}")
    if trace.system_prompt_hash:
        print(f"  system prompt: {trace.system_prompt_hash}")
    if trace.tools:
        print("  tools: " + ", ".join(f"{t.name}@{t.schema_hash[:8]}" for t in trace.tools))
    if trace.metadata:
        print("  metadata: " + json.dumps(trace.metadata, ensure_ascii=False, default=str))
    print()
    for message in trace.messages:
        if message.role == "system":
            continue
        label = message.role if message.role != "tool" else f"tool {message.name}"
        if message.content:
            print(f"[{label}] {message.content}")
        for call in message.tool_calls:
            print(f"[{label}] -> {call.signature()}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from toolproof._reporting import open_output
    from toolproof.replay._store import open_store

    count = 0
    with open_store(store_path(args)) as store, open_output(args.output) as out:
        for _, payload, _ in store.payloads(filter_from_args(args), newest_first=False):
            out.write(payload.decode() if isinstance(payload, bytes) else str(payload))
            out.write("\n")
            count += 1
    if args.output != "-":
        print(f"exported {count} traces to {args.output}", file=sys.stderr)
    return 0


def _import(args: argparse.Namespace) -> int:
    from pydantic_core import to_json

    from toolproof.cli._options import redactor_from_args
    from toolproof.errors import UserError
    from toolproof.replay import TraceStore
    from toolproof.replay._import import read_trace_file
    from toolproof.replay._schema_check import load_schema_file
    from toolproof.replay._store import row_from_dict

    redactor = redactor_from_args(args)
    tools = load_schema_file(args.tools) if args.tools else []
    if args.format == "otel":
        try:
            from toolproof.integrations.otel import traces_from_otlp_json
        except ImportError as exc:
            raise UserError(
                "--format otel needs the OpenTelemetry extra: pip install 'toolproof[otel]' "
                f"({exc})"
            ) from None

    def read(file: str) -> Iterator[Trace]:
        if args.format != "otel":
            yield from read_trace_file(
                file,
                format=args.format,
                tools=tools,
                model=args.model,
                tags=args.tag,
                turns=args.turns,
            )
            return
        for trace in traces_from_otlp_json(file):
            # (the tag import_otlp_json adds, then the user's)
            added = ["otel", *args.tag]
            trace.tags = [*trace.tags, *dict.fromkeys(t for t in added if t not in trace.tags)]
            if args.model and not trace.model:
                trace.model = args.model
            yield trace

    path = store_path(args)
    total = new = 0
    with TraceStore(path) as store:
        path = store.location  # a URL's password is not printed
        for file in args.files:
            batch: list[Any] = []
            group: list[dict[str, Any]] = []
            for trace in read(file):
                data = trace.to_dict()
                conversation = data["metadata"].get("conversation")
                if group and (
                    conversation is None or conversation != group[0]["metadata"].get("conversation")
                ):
                    batch += [row_from_dict(d, to_json(d)) for d in redactor.redact_many(group)]
                    group = []
                group.append(data)
                if len(batch) >= 500:
                    new += store._write(batch, replace=args.replace)
                    total += len(batch)
                    batch = []
            batch += [row_from_dict(d, to_json(d)) for d in redactor.redact_many(group)]
            new += store._write(batch, replace=args.replace)
            total += len(batch)
    skipped = total - new
    note = f" ({skipped} already present, kept)" if skipped and not args.replace else ""
    print(f"imported {new} of {total} traces into {path}{note}")
    return 0


def _prune(args: argparse.Namespace) -> int:
    from toolproof.replay import TraceFilter
    from toolproof.replay._store import open_store
    from toolproof.replay._time import parse_duration

    parse_duration(args.older_than, where="--older-than")
    expired = TraceFilter(until=args.older_than)
    with open_store(store_path(args)) as store:
        if args.dry_run:
            print(f"{store.count(expired)} traces are older than {args.older_than}")
            return 0
        deleted = store.delete_matching(expired)
    print(f"deleted {deleted} traces older than {args.older_than}")
    return 0


def _iso(ts: float) -> str:
    from datetime import datetime, timezone

    return (
        datetime.fromtimestamp(ts, timezone.utc)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )
