"""``toolproof mocks check``: find mocks that drifted from the real tools they stand in for.

Every declared mock (``@tool.mock``) and ``StatefulMock`` handler must accept exactly its
tool's parameters, and mock outputs (on fixture arguments, or a synthesized valid call) and
``ToolMock`` fixture values must match the tool's return annotation. Exits 1 listing each
drift.
"""

from __future__ import annotations

import argparse
from typing import Any

from toolproof.cli import show_help
from toolproof.errors import UserError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``mocks`` command and its ``check`` subcommand."""
    parser = subparsers.add_parser(
        "mocks",
        help="check that mocks still match their real tools",
        description="Mocked tools: check them against the real tools.",
    )
    commands = parser.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    parser.set_defaults(handler=lambda args: show_help(parser))
    check = commands.add_parser(
        "check",
        help="exit 1 listing every mock that drifted from its tool",
        description="Check declared mocks (@tool.mock), StatefulMock handlers and ToolMock "
        "fixtures found in the modules against the real tools: same parameters, outputs "
        "that match the tool's return annotation. Exit 1 listing each drift.",
        epilog="examples:\n"
        "  toolproof mocks check examples.hr_assistant.tools\n"
        "  toolproof mocks check myapp/tools.py tests/mocks.py",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument(
        "modules",
        nargs="+",
        metavar="MODULE",
        help="modules (pkg.mod, path/file.py or module:attr) holding the tools and their mocks",
    )
    check.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    """``mocks check``."""
    from toolproof._loading import collect_tools
    from toolproof.testing._drift import check_mocks

    tools, objects = collect_tools(args.modules)
    if not tools:
        raise UserError(
            f"no tools found in {', '.join(args.modules)} (looked for tools, toolsets, agents "
            "and lists of tools; pass the module with the real tools too)"
        )
    report = check_mocks(tools, objects)
    print(report.summary())
    for note in report.notes:
        print(f"  note: {note}")
    for drift in report.drifts:
        print(drift)
    if report.ok:
        if not (report.declared or report.handlers or report.fixtures):
            print("no mocks found to check")
        else:
            print("no drift")
        return 0
    count = len(report.drifts)
    print(f"{count} drift{'s' if count != 1 else ''} found")
    return 1
