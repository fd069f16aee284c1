"""The ``toolproof`` command line.

Each subcommand lives in its own module with a ``register(subparsers)`` function that adds
its parser and sets ``handler`` (a function ``(args) -> int`` returning the exit code).
Heavy imports happen inside handlers, so ``toolproof --help`` stays fast.

Exit codes: 0 success, 1 a check failed (evals, replay gate, schema check), 2 usage or
configuration error, 3 infrastructure errors prevented a verdict, 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from toolproof._version import __version__
from toolproof.errors import UserError

__all__ = ["main"]

#: Subcommand modules, in the order ``--help`` lists them.
COMMAND_MODULES = [
    "toolproof.cli._run",
    "toolproof.cli._chat",
    "toolproof.cli._schema",
    "toolproof.cli._mocks",
    "toolproof.cli._traces",
    "toolproof.cli._replay",
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every available subcommand."""
    parser = argparse.ArgumentParser(
        prog="toolproof",
        description="Build tool-calling LLM agents and prove that they work.",
    )
    parser.add_argument("--version", action="version", version=f"toolproof {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a command not built yet
                continue
            raise
        module.register(subparsers)
    return parser


def show_help(parser: argparse.ArgumentParser) -> int:
    """Print a command group's help; the handler of a group called without a subcommand."""
    parser.print_help()
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (also used as the console script)."""
    try:
        try:
            code = _main(argv)
        finally:
            sys.stdout.flush()  # inside the try, so a closed pipe is handled below
    except BrokenPipeError:
        # The reader went away (`toolproof traces list | head`): stop quietly, and keep
        # Python from complaining again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code


def _main(argv: Sequence[str] | None) -> int:
    # User modules (agent factories, tool modules) are imported relative to the current
    # directory, as `python -m` would.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        code: int = handler(args)
    except UserError as exc:
        print(f"toolproof: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("toolproof: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
