"""Progress of a run: a live rich bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console

    from toolproof.evals._results import CaseResult, TrialResult
    from toolproof.evals._suite import Case

__all__ = ["NullProgress", "PlainProgress", "Progress", "RichProgress", "default_progress"]

_MARKS = {"pass": "PASS", "fail": "FAIL", "error": "ERROR", "skipped": "SKIP", "not_run": "NOT RUN"}


class Progress(Protocol):
    """Receives the events of a run (all calls happen on the event loop's thread)."""

    def start(self, cases: int, trials: int) -> None:
        """The run starts: how many cases and trials it will run."""

    def trial_done(self, case: Case, trial: TrialResult) -> None:
        """One trial finished."""

    def case_done(self, result: CaseResult) -> None:
        """All trials of a case finished (or it was skipped)."""

    def finish(self) -> None:
        """The run ended (also after an interruption)."""


class NullProgress:
    """Shows nothing."""

    def start(self, cases: int, trials: int) -> None:
        """Ignore."""

    def trial_done(self, case: Case, trial: TrialResult) -> None:
        """Ignore."""

    def case_done(self, result: CaseResult) -> None:
        """Ignore."""

    def finish(self) -> None:
        """Ignore."""


class PlainProgress:
    """One line per finished case (for logs and CI, where a live bar would be noise).

    Args:
        stream: Where lines go (standard error by default).
    """

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream
        self.cases = 0
        self.done = 0

    def start(self, cases: int, trials: int) -> None:
        """Announce the run."""
        self.cases = cases
        self._write(f"running {cases} case{'s' if cases != 1 else ''} ({trials} trials)")

    def trial_done(self, case: Case, trial: TrialResult) -> None:
        """Nothing per trial."""

    def case_done(self, result: CaseResult) -> None:
        """``[3/10] PASS suite::case (3/3 trials)``."""
        self.done += 1
        trials = len(result.trials)
        counts = f" ({result.passes}/{trials} trials passed)" if trials else ""
        advisory = " [advisory]" if not result.blocking else ""
        mark = _MARKS[result.verdict]
        self._write(f"[{self.done}/{self.cases}] {mark} {result.case.id}{counts}{advisory}")

    def finish(self) -> None:
        """Nothing to close."""

    def _write(self, line: str) -> None:
        from toolproof._reporting import printable

        stream = self.stream or sys.stderr
        stream.write(printable(line) + "\n")  # (a case name must not drive the terminal)
        stream.flush()


class RichProgress:
    """A live bar with pass/fail/error counts and an ETA, on standard error.

    Args:
        console: Where to draw (standard error by default).
    """

    def __init__(self, console: Console | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.console = console or Console(stderr=True)
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(
                "trials  [green]✓ {task.fields[passed]}[/] [red]✗ {task.fields[failed]}[/] "
                "[yellow]! {task.fields[errors]}[/]  cases {task.fields[cases_done]}/"
                "{task.fields[cases]}"
            ),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self.task = self.progress.add_task(
            "evals", total=0, passed=0, failed=0, errors=0, cases=0, cases_done=0, start=False
        )
        self.counts = {"pass": 0, "fail": 0, "error": 0, "simulator_fault": 0}
        self.cases_done = 0

    def start(self, cases: int, trials: int) -> None:
        """Show the bar."""
        self.progress.update(self.task, total=trials, cases=cases)
        self.progress.start_task(self.task)
        self.progress.start()

    def trial_done(self, case: Case, trial: TrialResult) -> None:
        """Advance the bar and the live counts."""
        self.counts[trial.status] += 1
        self.progress.update(
            self.task,
            advance=1,
            passed=self.counts["pass"],
            failed=self.counts["fail"],
            errors=self.counts["error"],
        )

    def case_done(self, result: CaseResult) -> None:
        """Print failing cases above the bar as they finish."""
        self.cases_done += 1
        self.progress.update(self.task, cases_done=self.cases_done)
        if result.verdict in ("fail", "error"):
            from rich.markup import escape

            from toolproof._reporting import printable

            style = "red" if result.verdict == "fail" else "yellow"
            self.progress.console.print(
                f"[{style}]{_MARKS[result.verdict]}[/] {escape(printable(result.case.id))}: "
                f"{escape(printable(result.reason))}",
                markup=True,
                highlight=False,
                soft_wrap=True,
            )

    def finish(self) -> None:
        """Remove the live display."""
        self.progress.stop()


def default_progress(*, quiet: bool = False) -> Progress:
    """A rich bar when standard error is a terminal, plain lines otherwise."""
    if quiet:
        return NullProgress()
    if sys.stderr.isatty():
        return RichProgress()
    return PlainProgress()
