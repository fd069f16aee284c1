"""The ``toolproof`` command line.

Each subcommand lives in its own module with a ``register(subparsers)`` function that adds
its parser and sets ``handler`` (a function ``(args) -> int`` returning the exit code).
Heavy imports happen inside handlers, so ``toolproof --help`` stays fast.

Exit codes (the same for every command; documented in docs/evals.md and docs/replay.md):

====  ==========================================================================================
0     success
1     a check failed (a blocking eval case, the replay gate, a schema or mock check)
2     usage or configuration error, found before anything ran (one line, no traceback)
3     the model provider or the network failed, so some verdicts are missing
4     toolproof itself failed (a bug in toolproof: the traceback is printed)
5     nothing ran: every selected case was skipped, or no sample was replayed
6     a gate in release mode is undecided: too few samples to show the failure rate is below
      its limit (``--gate-mode release``)
130   interrupted (Ctrl-C, or SIGTERM)
141   the reader of the output went away (``toolproof traces list | head``)
====  ==========================================================================================

Errors are one line. ``toolproof --traceback ...`` (or ``TOOLPROOF_TRACEBACK=1``) adds the
traceback of the user's own code (toolproof's and asyncio's frames hidden).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

from toolproof._version import __version__
from toolproof.errors import UserError

__all__ = ["main"]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every available subcommand, or with ``command``'s alone.

    ``toolproof run ...`` is parsed with the ``run`` subcommand alone: the parsers of the
    other commands import their modules, work a run does not need.
    """
    parser = argparse.ArgumentParser(
        prog="toolproof",
        description="Build tool-calling LLM agents and prove that they work.",
    )
    parser.add_argument("--version", action="version", version=f"toolproof {__version__}")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="after an error, show the traceback of your own code (also TOOLPROOF_TRACEBACK=1; "
        "accepted anywhere on the command line)",
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    if command == "run":
        from toolproof.cli import _run

        _run.register(subparsers)
        return parser
    from toolproof.cli import (
        _chat,
        _mcp,
        _mocks,
        _planning,
        _replay,
        _run,
        _runs,
        _schema,
        _serve,
        _traces,
        _view,
    )

    # In the order ``--help`` lists them.
    modules: tuple[Any, ...] = (_run, _chat, _schema, _mocks, _traces, _replay, _runs, _planning)
    modules += (_view, _mcp, _serve)
    for module in modules:
        module.register(subparsers)
    return parser


def report_console(*, stderr: bool = False) -> Console:
    """A rich console for tables: 140 columns wide when writing to a log, not a terminal.

    Rich assumes 80 columns without a terminal, which folds wide tables in CI logs; an
    explicit ``COLUMNS`` still wins.
    """
    from rich.console import Console

    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 140
    return console


def show_help(parser: argparse.ArgumentParser) -> int:
    """Print a command group's help; the handler of a group called without a subcommand."""
    parser.print_help()
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (also used as the console script)."""
    if argv is None:
        _stop_on_sigterm()
    for stream in (sys.stdout, sys.stderr):
        # Text from datasets, models and tools may hold lone surrogates, which no encoding
        # can write: they print as their escape (\udc80) instead of ending the command.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(OSError, ValueError):
                reconfigure(errors="backslashreplace")
    try:
        try:
            code = _main(argv)
        finally:
            sys.stdout.flush()  # inside the try, so a closed pipe is handled below
    except BrokenPipeError:
        # The reader went away (`toolproof traces list | head`): stop quietly, and keep
        # Python from complaining again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 141
    if argv is None:
        # The program ends here (the console script, `python -m toolproof`). Without this,
        # the interpreter's exit walks every object the command built with the cyclic
        # collector (~0.1 s of CPU after a 1,000-case run); live objects are freed at exit
        # either way, and Python never promises to collect cyclic garbage at exit.
        import gc

        gc.freeze()
    return code


def _stop_on_sigterm() -> None:
    """As the program: SIGTERM stops a command the way Ctrl-C does.

    Containers, service managers and CI systems (a cancelled or timed-out job) stop a
    process with SIGTERM, whose default ends it at once: a replay's run log would stay
    unfinished, a recorder's queue unwritten. Commands that run an event loop install
    their own handlers for both signals; the others get ``KeyboardInterrupt`` (exit 130).
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return  # (someone chose a handler already)

    def interrupted(number: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)


def _main(argv: Sequence[str] | None) -> int:
    from toolproof._tracebacks import ENV_VARIABLE

    # User modules (agent factories, tool modules) are imported relative to the current
    # directory, as `python -m` would.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    arguments = list(sys.argv[1:] if argv is None else argv)
    # `--traceback` is global and may come anywhere before a `--`; it holds for this call only.
    end = arguments.index("--") if "--" in arguments else len(arguments)
    if "--traceback" not in arguments[:end]:
        return _dispatch(arguments)
    arguments = [a for i, a in enumerate(arguments) if i >= end or a != "--traceback"]
    previous = os.environ.get(ENV_VARIABLE)
    os.environ[ENV_VARIABLE] = "1"
    try:
        return _dispatch(arguments)
    finally:
        if previous is None:
            os.environ.pop(ENV_VARIABLE, None)
        else:
            os.environ[ENV_VARIABLE] = previous


def _dispatch(arguments: list[str]) -> int:
    # Only when the command comes first: `toolproof --version run` needs the whole parser.
    parser = build_parser("run" if arguments[:1] == ["run"] else None)
    args = parser.parse_args(arguments)
    args.argv = list(arguments)  # what run logs record
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        code: int = handler(args)
    except UserError as exc:
        _report_error(f"toolproof: error: {_one_line(exc)}", exc)
        return 2
    except KeyboardInterrupt:
        print("toolproof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise  # main() ends quietly
    except BaseException as exc:  # an error, or the user's code raised SystemExit (or its own)
        from toolproof._tracebacks import user_location

        if isinstance(exc, OSError) and _bad_path(exc):  # a path no file system takes
            name = str(exc.filename)
            shown = name if len(name) <= 80 else name[:40] + "…" + name[-39:]
            _report_error(f"toolproof: error: {shown}: {exc.strerror}", exc)
            return 2

        where = user_location(exc)
        if where is None:  # nothing of the user's code: a bug in toolproof
            import traceback

            traceback.print_exc(file=sys.stderr)
            print(
                f"toolproof: internal error: {type(exc).__name__}: {exc} (a bug in toolproof; "
                "please report it with the traceback above)",
                file=sys.stderr,
            )
            return 4
        # (toolproof decides the exit code: a SystemExit of the user's is reported as such)
        _report_error(f"toolproof: error: {type(exc).__name__}: {_one_line(exc)} ({where})", exc)
        return 2
    return code


def _bad_path(exc: OSError) -> bool:
    """Whether ``exc`` says a path is of a shape no file system takes (too long, a loop)."""
    import errno

    return exc.filename is not None and exc.errno in (errno.ENAMETOOLONG, errno.ELOOP)


def _one_line(exc: BaseException) -> str:
    """The message of an error on one line (a config error keeps its problems, one a line)."""
    from toolproof.errors import ConfigError

    text = str(exc).strip()
    if isinstance(exc, ConfigError) and exc.problems:
        return text  # "invalid ... (N problems):" and one problem a line
    lines = [line.strip().removeprefix("- ") for line in text.splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    head, rest = lines[0], lines[1:]
    if not rest:
        return head
    return head + (" " if head.endswith(":") else "; ") + "; ".join(rest)


def _report_error(line: str, exc: BaseException) -> None:
    from toolproof._text import mask_urls
    from toolproof._tracebacks import format_user_traceback, traceback_enabled

    print(mask_urls(line), file=sys.stderr)
    if traceback_enabled():
        print(format_user_traceback(exc), file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
