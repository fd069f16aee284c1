"""``toolproof schema suite``: the JSON Schema of the files you write, for editors and CI.

The schema is generated from the same models that check the files when they load; the
copy shipped with toolproof (``toolproof/schemas/suite.schema.json``) is that output for the
built-in checks.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_format_commands", "suite_schema_text"]


def suite_schema_text(*, modules: list[str] | None = None) -> str:
    """The suite JSON Schema as written to ``toolproof/schemas/suite.schema.json``.

    Args:
        modules: Modules that register your own checks: they are imported, and the schema
            then refuses ``expect`` keys that are not registered checks.
    """
    import json

    from toolproof.evals._suite_model import suite_json_schema

    for name in modules or []:
        _import(name)
    schema = suite_json_schema(strict_checks=bool(modules))
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def _import(name: str) -> None:
    from toolproof.evals._resolve import Resolver

    Resolver().load_module(name, Path.cwd() / "suite")


def add_format_commands(commands: Any) -> None:
    """Add ``schema suite`` to the ``schema`` subcommands."""
    suite = commands.add_parser(
        "suite",
        help="print the JSON Schema of eval suite files (for editors)",
        description="Print the JSON Schema of *.eval.yaml files. With --checks, your own "
        "checks are included and other expect keys are refused.",
        epilog="examples:\n  toolproof schema suite -o .vscode/toolproof-suite.schema.json\n"
        "  toolproof schema suite --checks mypkg.checks -o suite.schema.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    suite.add_argument(
        "--checks",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module that registers checks (repeatable)",
    )
    suite.add_argument(
        "-o", "--output", default="-", metavar="FILE", help="the schema file ('-': stdout)"
    )
    suite.set_defaults(handler=run_suite_schema)


def run_suite_schema(args: argparse.Namespace) -> int:
    """``schema suite``."""
    from toolproof._reporting import open_output

    text = suite_schema_text(modules=args.checks)
    with open_output(args.output) as out:
        out.write(text)
    if args.output != "-":
        print(f"wrote the suite schema to {args.output}")
    return 0
