"""``toolproof schema``: tool schema contracts (snapshot, check) and a classified diff.

- ``schema snapshot MODULE -o FILE`` writes every tool's name, description, parameter and
  return schema as deterministic JSON;
- ``schema check MODULE FILE`` exits 1 when the tools differ from the snapshot, printing the
  classified changes and a unified diff;
- ``schema diff OLD NEW [--store PATH]`` classifies each change between two snapshots or tool
  modules as breaking or compatible, and with ``--store`` counts the recorded calls that the
  new schemas would reject. Exits 1 on breaking changes or rejected calls.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from toolproof.cli import show_help
from toolproof.errors import UserError

__all__ = ["register"]

MODULE_HELP = (
    "tools: a module (pkg.tools), a file (path/tools.py) or module:attr naming a tool, a list "
    "of tools, a toolset or an agent; or an MCP server: mcp:'python server.py' (stdio) or "
    "mcp:http://127.0.0.1:8000/mcp"
)

#: The prefix of an MCP server source (``mcp:"python server.py"``, ``mcp:http://...``).
MCP_PREFIX = "mcp:"


def register(subparsers: Any) -> None:
    """Add the ``schema`` command and its subcommands."""
    parser = subparsers.add_parser(
        "schema",
        help="snapshot, check and diff tool schemas (contract tests)",
        description="Tool schema contracts: what the model is told about each tool.",
    )
    commands = parser.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    parser.set_defaults(handler=lambda args: show_help(parser))

    snapshot = commands.add_parser(
        "snapshot",
        help="write the tools' schemas to a snapshot file",
        description="Write every tool's name, description, parameter and return schema as "
        "deterministic JSON (commit it; `schema check` compares against it).",
        epilog="example:\n  toolproof schema snapshot examples.hr_assistant.tools "
        "-o tools.schema.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    snapshot.add_argument("modules", nargs="+", metavar="MODULE", help=MODULE_HELP)
    snapshot.add_argument(
        "-o", "--output", default="-", metavar="FILE", help="the snapshot file ('-': stdout)"
    )
    snapshot.set_defaults(handler=run_snapshot)

    check = commands.add_parser(
        "check",
        help="exit 1 if the tools differ from a snapshot",
        description="Compare the tools' schemas with a snapshot file; on any difference print "
        "the classified changes and a unified diff and exit 1.",
        epilog="example:\n  toolproof schema check examples.hr_assistant.tools tools.schema.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("module", metavar="MODULE", help=MODULE_HELP)
    check.add_argument("snapshot", metavar="FILE", help="the snapshot file")
    check.set_defaults(handler=run_check)

    diff = commands.add_parser(
        "diff",
        help="classify schema changes as breaking or compatible",
        description="Classify every change from OLD to NEW (snapshot files or tool modules) "
        "as breaking or compatible. Exit 1 on breaking changes, or when --store finds "
        "recorded calls the new schemas would reject.",
        epilog="examples:\n"
        "  git show main:tools.schema.json > /tmp/old.json\n"
        "  toolproof schema diff /tmp/old.json myapp.tools\n"
        "  toolproof schema diff old.json new.json --store .toolproof/traces.db",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    diff.add_argument("old", metavar="OLD", help="snapshot file or tool module before")
    diff.add_argument("new", metavar="NEW", help="snapshot file or tool module after")
    diff.add_argument(
        "--store",
        metavar="PATH",
        help="trace store: count the recorded calls the NEW schemas would reject",
    )
    diff.add_argument(
        "--examples",
        type=int,
        default=3,
        metavar="N",
        help="rejected calls to show per tool with --store (default 3)",
    )
    diff.set_defaults(handler=run_diff)

    from toolproof.cli._formats import add_format_commands

    add_format_commands(commands)


def run_snapshot(args: argparse.Namespace) -> int:
    """``schema snapshot``."""
    from toolproof._loading import collect_tools
    from toolproof.testing._contracts import dump_snapshot, snapshot_tools

    mcp_specs = [spec for spec in args.modules if spec.startswith(MCP_PREFIX)]
    tools, _ = collect_tools([spec for spec in args.modules if spec not in mcp_specs])
    if mcp_specs:
        tools = _merge_tools(tools, [t for spec in mcp_specs for t in _mcp_tools(spec)])
    if not tools:
        raise UserError(
            f"no tools found in {', '.join(args.modules)} (looked for tools, toolsets, agents "
            "and lists of tools)"
        )
    text = dump_snapshot(snapshot_tools(tools))
    from toolproof._reporting import open_output

    with open_output(args.output) as out:
        out.write(text)
    if args.output != "-":
        print(f"wrote {len(tools)} tool schema{'s' if len(tools) != 1 else ''} to {args.output}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    """``schema check``."""
    from toolproof.testing._contracts import diff_snapshots, dump_snapshot, text_diff

    snapshot, _ = _load_side(args.snapshot)
    current, _ = _load_side(args.module)
    old_text, new_text = dump_snapshot(snapshot), dump_snapshot(current)
    count = len(current["tools"])
    if old_text == new_text:
        print(f"{args.snapshot}: up to date ({count} tool{'s' if count != 1 else ''})")
        return 0
    changes = diff_snapshots(snapshot, current)
    print(f"{args.snapshot}: the tools in {args.module} differ from the snapshot")
    for change in changes:
        print(f"  {change}")
    print(text_diff(old_text, new_text, f"{args.snapshot} (snapshot)", f"{args.module} (now)"))
    print(
        f"If the change is intended, update the snapshot: "
        f"toolproof schema snapshot {args.module} -o {args.snapshot}"
    )
    return 1


def run_diff(args: argparse.Namespace) -> int:
    """``schema diff``."""
    from toolproof.testing._contracts import diff_snapshots

    if args.examples < 0:
        raise UserError(f"--examples must be 0 or more, got {args.examples}")
    old, old_label = _load_side(args.old)
    new, new_label = _load_side(args.new)
    changes = diff_snapshots(old, new)
    breaking = sum(1 for c in changes if c.breaking)
    compatible = len(changes) - breaking
    if not changes:
        print(f"{old_label} -> {new_label}: no schema changes")
    else:
        print(
            f"{old_label} -> {new_label}: {breaking} breaking, {compatible} compatible "
            f"change{'s' if len(changes) != 1 else ''}"
        )
        for change in sorted(changes, key=lambda c: (c.tool, not c.breaking)):
            print(f"  {change}")
    rejected = 0
    if args.store:
        rejected = _report_rejections(args.store, new, args.examples)
    return 1 if breaking or rejected else 0


def _load_side(spec: str) -> tuple[dict[str, Any], str]:
    """A snapshot from a schema file (toolproof snapshot or OpenAI tools.json) or a module."""
    from toolproof.testing._contracts import load_snapshot

    if spec.startswith(MCP_PREFIX):
        from toolproof.testing._contracts import snapshot_tools

        return snapshot_tools(_mcp_tools(spec)), spec
    path = Path(spec)
    if path.suffix == ".json" and not path.exists():
        load_snapshot(path)  # raises: no such snapshot file
    if path.suffix != ".py" and path.is_file():
        from toolproof.replay._schema_check import load_schema_file, schema_snapshot

        try:
            return load_snapshot(path), spec  # keeps the snapshot's return schemas
        except UnicodeDecodeError as exc:
            raise UserError(f"{path} is not a schema file: not UTF-8 text ({exc.reason})") from None
        except UserError as first:
            try:
                return schema_snapshot(load_schema_file(path)), spec
            except UserError as second:
                raise (first if "invalid JSON" in str(second) else second) from None
    from toolproof.testing._contracts import load_side

    return load_side(spec)


def _mcp_tools(spec: str) -> list[Any]:
    """The tools an MCP server lists: ``mcp:COMMAND`` (stdio) or ``mcp:http(s)://URL``."""
    import os

    server = spec[len(MCP_PREFIX) :].strip()
    if not server:
        raise UserError(f"{spec!r} names no MCP server: mcp:'python server.py' or mcp:http://...")
    try:
        from toolproof.integrations.mcp import DEFAULT_CONNECT_TIMEOUT, load_mcp_tools
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("mcp", "mcp_types"):
            raise UserError(
                f'{spec}: MCP servers need the MCP SDK: pip install "toolproof[mcp]"'
            ) from None
        raise
    raw = os.environ.get("TOOLPROOF_MCP_TIMEOUT", "")
    try:
        timeout = float(raw) if raw else DEFAULT_CONNECT_TIMEOUT
    except ValueError:
        raise UserError(f"TOOLPROOF_MCP_TIMEOUT must be seconds, got {raw!r}") from None
    tools = load_mcp_tools(server, timeout=timeout)
    if not tools:
        raise UserError(f"the MCP server {server} lists no tools")
    return sorted(tools, key=lambda t: t.name)


def _merge_tools(tools: list[Any], more: list[Any]) -> list[Any]:
    by_name = {t.name: t for t in tools}
    for t in more:
        if t.name in by_name:
            raise UserError(f"two different tools are named {t.name!r}")
        by_name[t.name] = t
    return [by_name[name] for name in sorted(by_name)]


def _report_rejections(store: str, new: dict[str, Any], examples: int) -> int:
    from toolproof.replay._store import is_store_url

    url = is_store_url(store)
    if not url and not Path(store).exists():
        raise UserError(f"--store {store}: no such trace store")
    from toolproof.replay import count_schema_rejections

    schemas = {name: entry["parameters"] for name, entry in new["tools"].items()}
    results = count_schema_rejections(store, schemas, examples=examples)
    total = sum(r.rejected for r in results)
    checked = sum(r.checked for r in results)
    if url:
        from toolproof.replay._postgres import mask_url

        store = mask_url(store)
    print(f"recorded calls in {store}: {total} of {checked} would be rejected by the new schemas")
    for result in sorted(results, key=lambda r: (-r.rejected, r.tool)):
        print(f"  {result.tool}: {result.rejected} of {result.checked} rejected")
        for example in result.examples:
            print(f"    - {example}")
    return int(total)
