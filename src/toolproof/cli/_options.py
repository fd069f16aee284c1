"""Options several commands take, each declared once, and what they turn into.

``toolproof run``, ``replay``, ``plan``, ``runs``, ``traces``, ``view`` and ``serve`` share
these: the statistics options, reports, run logs, redaction, where the work runs, and the
trace store and which of its traces.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from toolproof._runlog import RunLog

N = TypeVar("N", int, float)

__all__ = [
    "add_confidence_argument",
    "add_executor_argument",
    "add_filter_arguments",
    "add_log_arguments",
    "add_redaction_arguments",
    "add_report_argument",
    "add_statistics_arguments",
    "add_store_argument",
    "check_report_paths",
    "cost_gates",
    "filter_from_args",
    "finish_log",
    "judge_model_from_args",
    "logged",
    "number_type",
    "positive_int",
    "rate",
    "redactor_from_args",
    "start_log",
    "store_path",
]


def number_type(
    parse: Callable[[str], N], expected: str, fits: Callable[[N], bool], problem: str
) -> Callable[[str], N]:
    """An argparse ``type``: ``parse`` the text, and check the number ``fits``.

    Args:
        parse: Reads the number (raises ``ValueError`` on other text).
        expected: What was expected, said when the text is not a number.
        fits: Whether the number is within the option's range.
        problem: Said when it is not (``{text}`` and ``{value}`` are filled in).
    """

    def convert(text: str) -> N:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not fits(value):
            raise argparse.ArgumentTypeError(problem.format(text=text, value=value))
        return value

    return convert


#: A whole number of at least 1.
positive_int = number_type(
    int, "a whole number", lambda v: v >= 1, "must be at least 1, got {value}"
)
#: A rate between 0 and 1.
rate = number_type(
    float, "a rate such as 0.1", lambda v: 0 <= v <= 1, "must be a rate between 0 and 1, got {text}"
)
_level = number_type(
    float,
    "a number such as 0.95",
    lambda v: 0 < v < 1,
    "must be between 0 and 1 (e.g. 0.95), got {text}",
)


def add_statistics_arguments(parser: Any, *, gate: bool = True) -> None:
    """Add ``--confidence``, ``--interval``, ``--gate-mode`` and ``--max-failure-rate``.

    ``toolproof replay`` shares them but has its own limit (``--gate``): ``gate=False``.
    """
    add_confidence_argument(parser, default=None)
    parser.add_argument(
        "--interval",
        choices=("wilson", "clopper-pearson"),
        help="interval of a case's pass rate and of a failure rate (default: the suites' "
        "setting, else wilson)",
    )
    if gate:
        parser.add_argument(
            "--max-failure-rate",
            type=rate,
            metavar="RATE",
            help="gate the run on the blocking cases' failure rate (e.g. 0.1) instead of on "
            "each blocking case's verdict",
        )
    parser.add_argument(
        "--gate-mode",
        choices=("advisory", "release"),
        help="advisory (default): fail only when the failure rate is clearly above the limit; "
        "release: pass only when it is clearly below (undecided exits 6)",
    )


def add_confidence_argument(parser: Any, default: float | None = 0.95) -> None:
    """``--confidence LEVEL`` (shared by the commands that print intervals or decide)."""
    shown = "the suites' setting, else 0.95" if default is None else f"{default:g}"
    parser.add_argument(
        "--confidence",
        type=_level,
        default=default,
        metavar="LEVEL",
        help=f"confidence level of intervals and decisions, between 0 and 1 (default {shown})",
    )


def add_executor_argument(parser: Any, *, units: str) -> None:
    """``--executor local|ray[:ADDRESS]``: where the ``units`` (trials, samples) run."""
    parser.add_argument(
        "--executor",
        default="local",
        metavar="local|ray[:ADDRESS]",
        help=f"where {units} run: this process (default) or a Ray cluster (toolproof[ray])",
    )


def judge_model_from_args(args: argparse.Namespace) -> Any:
    """The model of ``--judge-model`` (``None``: not given), loaded like every model option.

    Raises:
        UserError: ``scripted``, which cannot grade, or a model that does not load.
    """
    from toolproof._loading import load_model_spec
    from toolproof.errors import UserError

    if not args.judge_model:
        return None
    judge = load_model_spec(args.judge_model, option="--judge-model")
    if isinstance(judge, str) and judge.strip().lower() == "scripted":
        raise UserError("--judge-model needs a model that can grade, not 'scripted'")
    return judge


def add_report_argument(parser: Any, *, metavar: str = "FORMAT[:PATH]") -> None:
    """``--report FORMAT[:PATH]`` (repeatable): the reports of a run or a replay."""
    parser.add_argument(
        "--report",
        action="append",
        default=[],
        metavar=metavar,
        help="write a report: json, junit, markdown or html, to PATH or '-' for stdout "
        "(repeatable)",
    )


def check_report_paths(specs: Any) -> None:
    """Fail before anything runs when a report cannot be written where it should go.

    Raises:
        UserError: A report's path is a folder or a read-only file, or its folder cannot be
            created or written.
    """
    from toolproof._reporting import check_output
    from toolproof.errors import UserError

    for spec in specs:
        if spec.to_stdout:
            continue
        try:
            check_output(spec.path)
        except UserError as exc:
            raise UserError(f"--report {spec.format}:{spec.path}: {exc}") from None


def add_redaction_arguments(parser: Any) -> None:
    """``--redact FILE`` and ``--no-redact`` (shared with ``toolproof replay``)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--redact",
        metavar="FILE",
        help="redaction rules (YAML) for what the reports and the run log hold (default: "
        "mask credentials, e-mail addresses, phone and card numbers)",
    )
    group.add_argument(
        "--no-redact",
        action="store_true",
        help="write the reports and the run log as the run saw them",
    )


def redactor_from_args(args: argparse.Namespace) -> Any:
    """The redactor of ``--redact`` and ``--no-redact`` (by default, the default rules)."""
    from toolproof.replay._redact import Redactor

    if args.no_redact:
        return Redactor.none()
    return Redactor.from_file(args.redact) if args.redact else Redactor()


def add_log_arguments(parser: Any) -> None:
    """Add ``--log-dir`` and ``--no-log`` (shared with ``toolproof replay``)."""
    parser.add_argument(
        "--log-dir",
        metavar="PATH",
        help="where run logs go (default .toolproof/runs, or $TOOLPROOF_LOG_DIR)",
    )
    parser.add_argument("--no-log", action="store_true", help="do not write a run log of this run")


def start_log(args: argparse.Namespace, kind: str, **details: Any) -> RunLog | None:
    """The run log of this command (``None`` with ``--no-log``); ``details`` as ``RunLog``."""
    if args.no_log:
        return None
    from toolproof._runlog import RunLog

    return RunLog.start(args.log_dir, kind, argv=getattr(args, "argv", None), **details)


def finish_log(log: RunLog | None, exc: BaseException) -> None:
    """Record in the run log how a command that raised ended.

    A configuration error found before anything ran leaves no run log at all.
    """
    from toolproof.errors import UserError

    if log is None:
        return
    if isinstance(exc, UserError) and not log.report_path.exists():
        log.discard()
        return
    if isinstance(exc, KeyboardInterrupt):
        log.finish(status="interrupted", exit_code=130, interrupted=True)
        return
    from toolproof._tracebacks import user_location

    code = 2 if isinstance(exc, UserError) or user_location(exc) is not None else 4
    log.finish(status="crashed", exit_code=code, interrupted=True)


@contextlib.contextmanager
def logged(*logs: RunLog | None) -> Iterator[None]:
    """Inside: work whose raising ends each run log as :func:`finish_log` says."""
    try:
        yield
    except BaseException as exc:
        for log in logs:
            finish_log(log, exc)
        raise


def cost_gates(args: argparse.Namespace) -> Any:
    """The ``CostGates`` of ``--max-latency-increase`` and ``--max-cost-increase`` (or None).

    Raises:
        UserError: A limit is not a percentage such as 20%.
    """
    if args.max_latency_increase is None and args.max_cost_increase is None:
        return None
    from toolproof.evals._costs import CostGates, parse_increase

    return CostGates(
        p95_latency=None
        if args.max_latency_increase is None
        else parse_increase(args.max_latency_increase, "--max-latency-increase"),
        cost_per_case=None
        if args.max_cost_increase is None
        else parse_increase(args.max_cost_increase, "--max-cost-increase"),
    )


_STATUSES = "ok, failed, final, max_steps, budget, repeated_call, cancelled, error"


def store_path(args: argparse.Namespace) -> str:
    """The store given with ``--store``, else ``$TOOLPROOF_STORE``, else the default."""
    from toolproof.replay._store import DEFAULT_STORE_PATH

    return str(args.store or os.environ.get("TOOLPROOF_STORE") or DEFAULT_STORE_PATH)


def add_store_argument(parser: argparse.ArgumentParser) -> None:
    """``--store PATH|URL``."""
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        help="trace store: a SQLite file or a postgresql:// URL "
        "(default: $TOOLPROOF_STORE or .toolproof/traces.db)",
    )


def add_filter_arguments(
    parser: argparse.ArgumentParser, *, model_flag: str = "--model", limit: int | None = None
) -> None:
    """The trace filters shared by ``traces`` and ``replay``."""
    group = parser.add_argument_group("which traces")
    group.add_argument("--since", help="started at or after: an age (7d, 12h) or an ISO date")
    group.add_argument("--until", help="started before: an age (7d, 12h) or an ISO date")
    group.add_argument(
        "--tool", action="append", default=[], help="called this tool (repeatable: any of them)"
    )
    group.add_argument(
        model_flag, dest="filter_model", metavar="MODEL", help="recorded with this model (globs)"
    )
    group.add_argument(
        "--tag", action="append", default=[], help="carries this tag (repeatable: all of them)"
    )
    group.add_argument("--status", help=f"outcome: {_STATUSES}")
    group.add_argument("--id", action="append", default=[], dest="ids", help="this trace id")
    group.add_argument(
        "--limit",
        type=int,
        default=limit,
        help="at most this many, most recent first" + (f" (default {limit})" if limit else ""),
    )


def filter_from_args(args: argparse.Namespace) -> Any:
    """The ``TraceFilter`` the filter arguments describe."""
    from toolproof.replay import TraceFilter

    return TraceFilter(
        since=args.since,
        until=args.until,
        tools=list(args.tool),
        model=args.filter_model,
        tags=list(args.tag),
        status=args.status,
        ids=list(args.ids),
        limit=args.limit,
    )
