"""Run logs: every ``toolproof run`` and ``toolproof replay`` keeps a record of what it did.

A run log is one folder per run under the log directory (``.toolproof/runs/`` relative to the
current directory; ``--log-dir PATH`` or the environment variable ``TOOLPROOF_LOG_DIR`` move
it, ``--no-log`` writes none). The layout is a contract that ``toolproof runs`` and the HTML
viewer read:

.. code-block:: text

    .toolproof/runs/
      20261201T092224Z-run-3fa9c1/        <UTC start YYYYmmddTHHMMSSZ>-<run|replay>-<6 hex>
        meta.json                         small: listing runs never parses a report
        report.json                       the JSON report of --report json:PATH, with traces

``report.json`` is exactly the versioned JSON report that ``--report json:PATH`` writes
(``format: toolproof-eval-report`` for ``run``, ``format: toolproof-replay-report`` for
``replay``), always with the traces of every trial or replayed sample. It is written
atomically when the run ends, including a run stopped by Ctrl-C, by ``-x`` or by a crash of
toolproof: then it holds the cases finished so far and ``"interrupted": true``.

``meta.json`` (``format: toolproof-run-meta``, ``version: 1``) is written atomically when the
run starts (``status: "running"``) and again when it ends::

    {format, version, id, kind, status, started, finished, duration_s, argv, cwd,
     toolproof, suites, store, model, exit_code, interrupted, counts}

``status`` is ``running`` (the process is still going), ``died`` (its process is gone
without finishing: killed by SIGKILL, or a lost pipe; then there is no ``report.json``),
``finished``, ``interrupted`` (Ctrl-C, or stopped at the first failure by ``-x``) or
``crashed``. A running command holds a lock on the folder's ``lock`` file (removed when it
finishes), which the system releases however the process ends: readers tell ``running``
from ``died`` by it.
``counts`` is ``{cases, passed, failed, errors, skipped, not_run, trials, trials_passed}``
for ``run`` and ``{samples, pass, warn, fail, error}`` for ``replay``.

A run is named by its folder name, a unique prefix of it, ``latest`` (the newest run),
``latest~N`` (the N-th before it), or a path to its folder (see :func:`resolve_run`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from toolproof.errors import UserError

__all__ = [
    "CHANGE_CLASSES",
    "DEFAULT_LOG_DIR",
    "LOG_DIR_ENV",
    "META_FILE",
    "META_FORMAT",
    "META_VERSION",
    "REPORT_FILE",
    "CaseChange",
    "Run",
    "RunInfo",
    "RunLog",
    "compare_runs",
    "list_runs",
    "load_run",
    "log_dir",
    "resolve_run",
]

#: Where run logs go, relative to the current directory.
DEFAULT_LOG_DIR = ".toolproof/runs"
#: The environment variable that moves the log directory (``--log-dir`` wins over it).
LOG_DIR_ENV = "TOOLPROOF_LOG_DIR"
META_FILE = "meta.json"
REPORT_FILE = "report.json"
LOCK_FILE = "lock"
META_FORMAT = "toolproof-run-meta"
#: Version of ``meta.json``. Bumped when a field is removed or changes meaning.
META_VERSION = 1
KINDS = ("run", "replay")

_ID = re.compile(r"^\d{8}T\d{6}Z-(run|replay)-[0-9a-f]{6}$")
_LATEST = re.compile(r"^latest(?:~(\d+))?$")


def log_dir(option: str | os.PathLike[str] | None = None) -> Path:
    """The log directory: ``option`` (``--log-dir``), else ``$TOOLPROOF_LOG_DIR``, else default."""
    if option:
        return Path(option)
    env = os.environ.get(LOG_DIR_ENV, "").strip()
    return Path(env) if env else Path(DEFAULT_LOG_DIR)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(moment: datetime) -> str:
    # Microseconds, so runs started within the same second still sort in order.
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class RunInfo:
    """What ``meta.json`` says about one run.

    Attributes:
        id: The folder name (``20261201T092224Z-run-3fa9c1``).
        path: The run's folder.
        kind: ``"run"`` or ``"replay"``.
        status: ``"running"``, ``"died"`` (its process is gone: see the module's notes),
            ``"finished"``, ``"interrupted"`` or ``"crashed"``.
        started: ISO-8601 UTC start time, with microseconds (runs sort by it).
        finished: ISO-8601 UTC end time, or ``None`` while running (or when killed).
        duration_s: Wall time, when finished.
        argv: The command line after ``toolproof``.
        suites: Suite files (``run``).
        store: The trace store (``replay``).
        model: The model the run used: ``--model``, else the suites' models (comma-separated),
            or the replay's new model.
        exit_code: The exit code, when finished.
        interrupted: Whether the run stopped before every case or sample ran.
        counts: Pass/fail counts (see the module docstring).
    """

    id: str
    path: Path
    kind: str
    status: str = "running"
    started: str = ""
    finished: str | None = None
    duration_s: float | None = None
    argv: list[str] = field(default_factory=list)
    suites: list[str] = field(default_factory=list)
    store: str | None = None
    model: str | None = None
    exit_code: int | None = None
    interrupted: bool = False
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def report_path(self) -> Path:
        """The run's ``report.json``."""
        return self.path / REPORT_FILE

    @property
    def has_report(self) -> bool:
        """Whether ``report.json`` was written."""
        return self.report_path.is_file()

    def to_dict(self) -> dict[str, Any]:
        """``meta.json``'s content (credentials in URLs masked: see ``mask_urls``)."""
        from toolproof._text import mask_urls

        def shown(text: str | None) -> str | None:
            return None if text is None else mask_urls(text)

        return {
            "format": META_FORMAT,
            "version": META_VERSION,
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "started": self.started,
            "finished": self.finished,
            "duration_s": self.duration_s,
            "argv": [mask_urls(arg) for arg in self.argv],
            "cwd": os.getcwd(),
            "toolproof": _version(),
            "suites": [mask_urls(suite) for suite in self.suites],
            "store": shown(self.store),
            "model": shown(self.model),
            "exit_code": self.exit_code,
            "interrupted": self.interrupted,
            "counts": dict(self.counts),
        }

    @classmethod
    def read(cls, path: Path) -> RunInfo:
        """Read a run folder's ``meta.json``.

        Raises:
            UserError: The folder has no readable ``meta.json``.
        """
        try:
            data = json.loads((path / META_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UserError(f"{path}: not a run log (no {META_FILE})") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise UserError(f"{path / META_FILE}: unreadable ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != META_FORMAT:
            raise UserError(f"{path / META_FILE}: not a toolproof run log")

        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        def texts(key: str) -> list[str]:
            value = data.get(key)
            return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

        counts = data.get("counts")
        duration = data.get("duration_s")
        exit_code = data.get("exit_code")
        status = text("status") or "running"
        if status == "running" and _gone(path / LOCK_FILE):
            status = "died"
        return cls(
            id=path.name,
            path=path,
            kind=text("kind") or ("replay" if "-replay-" in path.name else "run"),
            status=status,
            started=text("started") or "",
            finished=text("finished"),
            duration_s=float(duration)
            if isinstance(duration, (int, float)) and _number(duration)
            else None,
            argv=texts("argv"),
            suites=texts("suites"),
            store=text("store"),
            model=text("model"),
            exit_code=exit_code if _integer(exit_code) else None,
            interrupted=data.get("interrupted") is True,
            counts={
                str(k): v
                for k, v in (counts.items() if isinstance(counts, dict) else ())
                if _integer(v)
            },
        )


@dataclass(slots=True)
class Run:
    """A run log read back: its ``meta.json`` and its ``report.json``.

    Attributes:
        info: The metadata.
        report: The parsed JSON report (``None`` when the run wrote none: still running,
            or killed).
    """

    info: RunInfo
    report: dict[str, Any] | None


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    import math

    return _integer(value) or (isinstance(value, float) and math.isfinite(value))


def _version() -> str:
    from toolproof._version import __version__

    return __version__


def _hold(path: Path) -> Any:
    """Take the lock of a running command's folder (``None`` where locks are not had)."""
    try:
        import fcntl
    except ImportError:  # (Windows)
        return None
    handle = open(path, "a+b")  # noqa: SIM115 - held until the run ends
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def _gone(path: Path) -> bool:
    """Whether the command that held ``path``'s lock has ended (its lock is free)."""
    try:
        import fcntl
    except ImportError:  # (Windows: a run that did not finish stays running)
        return False
    try:
        handle = open(path, "rb")  # noqa: SIM115
    except OSError:  # no lock file: written before locks, or by another platform
        return False
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return False  # held: the command is running
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return True


def _write_json(path: Path, data: dict[str, Any]) -> None:
    from toolproof._reporting import open_output

    with open_output(path) as out:
        out.write(json.dumps(data, ensure_ascii=False, indent=1) + "\n")


class RunLog:
    """The run log being written by the current command.

    Create it with :meth:`start` before anything runs; pass :attr:`report_path` to the
    report writer (as a ``json`` report); call :meth:`finish` when the command ends.
    """

    def __init__(self, info: RunInfo, started: datetime) -> None:
        self.info = info
        self._started = started
        self._lock = _hold(info.path / LOCK_FILE)

    @classmethod
    def start(
        cls,
        directory: str | os.PathLike[str] | None,
        kind: str,
        *,
        argv: Sequence[str] | None = None,
        suites: Sequence[str] = (),
        store: str | None = None,
        model: str | None = None,
    ) -> RunLog:
        """Create the run's folder and write ``meta.json`` with ``status: "running"``.

        Raises:
            UserError: The log directory cannot be created or written.
        """
        base = log_dir(directory)
        started = _now()
        for _ in range(20):
            run_id = f"{started:%Y%m%dT%H%M%SZ}-{kind}-{secrets.token_hex(3)}"
            path = base / run_id
            try:
                path.mkdir(parents=True, exist_ok=False)
                break
            except FileExistsError:
                continue
            except OSError as exc:
                raise UserError(
                    f"cannot write the run log in {base}: {exc.strerror or exc} (use --log-dir "
                    f"PATH or {LOG_DIR_ENV} to move it, or --no-log)"
                ) from None
        else:  # pragma: no cover - 20 collisions of 24 random bits within one second
            raise UserError(f"cannot create a run log folder in {base}")
        info = RunInfo(
            id=run_id,
            path=path,
            kind=kind,
            started=_iso(started),
            argv=list(sys.argv[1:] if argv is None else argv),
            suites=list(suites),
            store=store,
            model=model,
        )
        log = cls(info, started)
        log.write_meta()
        return log

    @property
    def report_path(self) -> Path:
        """Where ``report.json`` goes."""
        return self.info.report_path

    def discard(self) -> None:
        """Remove the run's folder (nothing ran: a configuration error)."""
        import shutil

        self._release()
        shutil.rmtree(self.info.path, ignore_errors=True)

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None
            with contextlib.suppress(OSError):
                (self.info.path / LOCK_FILE).unlink()

    def write_meta(self) -> None:
        """Write ``meta.json`` atomically."""
        _write_json(self.info.path / META_FILE, self.info.to_dict())

    def finish(
        self,
        *,
        status: str,
        exit_code: int | None,
        counts: dict[str, int] | None = None,
        interrupted: bool = False,
    ) -> bool:
        """Record how the run ended in ``meta.json``; returns whether it was written.

        A ``meta.json`` that cannot be written (a full disk) is said on stderr: the run's
        verdict still reaches its exit code.
        """
        ended = _now()
        self.info.status = status
        self.info.finished = _iso(ended)
        self.info.duration_s = round((ended - self._started).total_seconds(), 3)
        self.info.exit_code = exit_code
        self.info.interrupted = interrupted
        if counts is not None:
            self.info.counts = dict(counts)
        try:
            self.write_meta()
        except UserError as exc:
            print(f"toolproof: error: run log not finished: {exc}", file=sys.stderr)
            return False
        finally:
            self._release()  # (after meta.json says how the run ended)
        return True


# -- reading ------------------------------------------------------------------------------------


def list_runs(directory: str | os.PathLike[str] | None = None) -> list[RunInfo]:
    """Every run log in ``directory`` (default: :func:`log_dir`), newest first.

    Folders without a readable ``meta.json`` are left out.
    """
    base = log_dir(directory)
    try:
        entries = [p for p in base.iterdir() if p.is_dir() and _ID.match(p.name)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    runs: list[RunInfo] = []
    for path in entries:
        try:
            runs.append(RunInfo.read(path))
        except UserError:
            continue
    # The id starts with the start time; the random tail breaks ties arbitrarily but stably.
    runs.sort(key=lambda info: (info.started, info.id), reverse=True)
    return runs


def resolve_run(
    ref: str | os.PathLike[str],
    directory: str | os.PathLike[str] | None = None,
    *,
    kind: str | None = None,
) -> Path:
    """The folder of the run that ``ref`` names.

    ``ref`` is a run id (the folder name), a unique prefix of one, ``latest`` (the newest
    run), ``latest~N`` (the N-th run before the newest), or a path to a run's folder (or to
    its ``report.json`` / ``meta.json``). With ``kind``, ``latest`` and prefixes count only
    runs of that kind.

    Raises:
        UserError: ``ref`` names no run, or several (the message lists them).
    """
    text = str(ref).strip()
    base = log_dir(directory)
    candidate = Path(text)
    if candidate.name in (META_FILE, REPORT_FILE) and candidate.is_file():
        candidate = candidate.parent
    if (candidate / META_FILE).is_file() and (os.sep in text or "/" in text or not _ID.match(text)):
        return candidate
    runs = [r for r in list_runs(base) if kind is None or r.kind == kind]
    what = f"{kind} runs" if kind else "runs"
    latest = _LATEST.match(text)
    if latest:
        back = int(latest.group(1) or 0)
        if back >= len(runs):
            noun = what if len(runs) != 1 else what.removesuffix("s")
            have = f"only {len(runs)} {noun}" if runs else f"no {what}"
            raise UserError(f"run {text!r}: there are {have} in {base}")
        return runs[back].path
    if not text:
        raise UserError("empty run id; give a run id, a unique prefix of one, latest or a path")
    exact = [r for r in runs if r.id == text]
    if exact:
        return exact[0].path
    matches = [r for r in runs if r.id.startswith(text)]
    if len(matches) == 1:
        return matches[0].path
    if matches:
        shown = ", ".join(r.id for r in matches[:5]) + (" ..." if len(matches) > 5 else "")
        raise UserError(f"run {text!r} is ambiguous: it starts {len(matches)} run ids ({shown})")
    if candidate.exists():
        raise UserError(f"{text}: not a run log (no {META_FILE})")
    hint = "'toolproof runs list' shows them" if runs else f"no {what} in {base} yet"
    raise UserError(f"no run {text!r} in {base} ({hint})")


def load_run(
    ref: str | os.PathLike[str],
    directory: str | os.PathLike[str] | None = None,
    *,
    kind: str | None = None,
) -> Run:
    """Read a run log: its metadata and its parsed ``report.json``.

    ``ref`` is resolved as :func:`resolve_run` says.

    Raises:
        UserError: ``ref`` names no run, or its report is unreadable.
    """
    path = resolve_run(ref, directory, kind=kind)
    info = RunInfo.read(path)
    report: dict[str, Any] | None = None
    if info.has_report:
        try:
            with info.report_path.open(encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise UserError(f"{info.report_path}: unreadable report ({exc})") from None
        if not isinstance(data, dict):
            raise UserError(f"{info.report_path}: not a toolproof report")
        report = data
    return Run(info, report)


# -- comparing ----------------------------------------------------------------------------------

#: The classes of :func:`compare_runs`, in the order reports show them.
CHANGE_CLASSES = (
    "regressed",
    "fixed",
    "flaky",
    "still_failing",
    "new",
    "removed",
    "no_verdict",
    "changed",
    "unchanged",
)


@dataclass(slots=True)
class CaseChange:
    """How one case (or replayed sample) changed between two runs.

    Attributes:
        key: The case id (``suite::name``) or the sample's trace id.
        change: One of :data:`CHANGE_CLASSES`: ``regressed`` (passed, now fails), ``fixed``
            (failed, now passes), ``flaky`` (passed every trial, now passes only some),
            ``still_failing``, ``new`` (only in the new run), ``removed`` (only in the old
            run), ``no_verdict`` (an infrastructure error, a skip or an interruption on either
            side), ``changed`` (a replayed sample went from pass to warn or back), or
            ``unchanged``.
        old: The old verdict or grade (``None`` when the case is new).
        new: The new verdict or grade (``None`` when the case was removed).
        old_passed: Trials passed in the old run (eval runs).
        old_trials: Trials with a verdict in the old run (eval runs).
        new_passed: Trials passed in the new run (eval runs).
        new_trials: Trials with a verdict in the new run (eval runs).
    """

    key: str
    change: str
    old: str | None = None
    new: str | None = None
    old_passed: int | None = None
    old_trials: int | None = None
    new_passed: int | None = None
    new_trials: int | None = None

    def rates(self) -> str:
        """``"3/3 → 1/3"`` (trial counts), or the grades for replayed samples."""

        def side(verdict: str | None, passed: int | None, trials: int | None) -> str:
            if verdict is None:
                return "—"
            if passed is None or trials is None:
                return verdict
            return f"{passed}/{trials}" + ("" if verdict in ("pass", "fail") else f" {verdict}")

        return (
            f"{side(self.old, self.old_passed, self.old_trials)} → "
            f"{side(self.new, self.new_passed, self.new_trials)}"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the JSON comparison: every field, by its name."""
        return asdict(self)


def _eval_entries(report: dict[str, Any]) -> dict[str, tuple[str, int, int]]:
    out: dict[str, tuple[str, int, int]] = {}
    cases = report.get("cases")
    for case in cases if isinstance(cases, list) else []:
        if not isinstance(case, dict) or not isinstance(case.get("id"), str):
            continue
        passes = case.get("passes")
        failures = case.get("failures")
        passes = passes if isinstance(passes, int) else 0
        failures = failures if isinstance(failures, int) else 0
        out[case["id"]] = (str(case.get("verdict")), passes, passes + failures)
    return out


def _replay_entries(report: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    results = report.get("results")
    for sample in results if isinstance(results, list) else []:
        if isinstance(sample, dict) and isinstance(sample.get("trace_id"), str):
            out[sample["trace_id"]] = str(sample.get("grade"))
    return out


def _eval_change(old: tuple[str, int, int], new: tuple[str, int, int]) -> str:
    (old_verdict, old_passed, old_trials), (new_verdict, new_passed, new_trials) = old, new
    if old_verdict not in ("pass", "fail") or new_verdict not in ("pass", "fail"):
        return "no_verdict"
    if old_verdict == "pass" and new_verdict == "fail":
        return "regressed"
    if old_verdict == "fail" and new_verdict == "pass":
        return "fixed"
    if old_verdict == "fail":
        return "still_failing"
    if old_passed == old_trials and new_passed < new_trials:
        return "flaky"
    return "unchanged"


def _replay_change(old: str, new: str) -> str:
    if "error" in (old, new):
        return "no_verdict"
    if old != "fail" and new == "fail":
        return "regressed"
    if old == "fail" and new != "fail":
        return "fixed"
    if old == "fail":
        return "still_failing"
    return "changed" if old != new else "unchanged"


def compare_runs(old: Run, new: Run) -> list[CaseChange]:
    """Per case (``run``) or per sample (``replay``): how ``new`` differs from ``old``.

    Cases are matched by id (``suite::name``), samples by trace id. The result follows the
    new run's order, then the removed cases in the old run's order.

    Raises:
        UserError: The runs are of different kinds, or one has no report.
    """
    for run in (old, new):
        if run.report is None:
            raise UserError(f"run {run.info.id} has no report.json (still running, or killed)")
    assert old.report is not None
    assert new.report is not None
    if old.info.kind != new.info.kind:
        raise UserError(
            f"cannot compare a {old.info.kind} run ({old.info.id}) with a {new.info.kind} run "
            f"({new.info.id})"
        )
    changes: list[CaseChange] = []
    if new.info.kind == "replay":
        before, after = _replay_entries(old.report), _replay_entries(new.report)
        for key, grade in after.items():
            if key not in before:
                changes.append(CaseChange(key, "new", None, grade))
            else:
                change = _replay_change(before[key], grade)
                changes.append(CaseChange(key, change, before[key], grade))
        changes += [CaseChange(k, "removed", g, None) for k, g in before.items() if k not in after]
        return changes
    old_cases, new_cases = _eval_entries(old.report), _eval_entries(new.report)
    for key, entry in new_cases.items():
        previous = old_cases.get(key)
        change = "new" if previous is None else _eval_change(previous, entry)
        changes.append(
            CaseChange(
                key,
                change,
                None if previous is None else previous[0],
                entry[0],
                None if previous is None else previous[1],
                None if previous is None else previous[2],
                entry[1],
                entry[2],
            )
        )
    for key, entry in old_cases.items():
        if key not in new_cases:
            changes.append(CaseChange(key, "removed", entry[0], None, entry[1], entry[2]))
    return changes
