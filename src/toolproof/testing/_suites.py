"""pytest hooks that collect eval suite files as test items (one per case).

Registered by ``toolproof.testing.plugin`` at ``pytest_configure`` (as ``toolproof-suites``).

Which files: YAML files named ``*.eval.yaml`` / ``*.eval.yml``, or any ``.yaml`` / ``.yml``
file whose top level has both ``suite:`` and ``cases:`` (the same rule as ``toolproof run
DIRECTORY``). Each case becomes one item named after it; its tags become keywords, so
``pytest -k smoke`` selects tagged cases.

Which model: real model requests are off in pytest unless ``--toolproof-live`` (or
``TOOLPROOF_LIVE=1``), so by default each case runs its ``script:`` (the scripted model) and a
case without a script is skipped with the reason. Live, a case runs with its suite's model,
and is skipped when the provider's API key is not set. Every trial runs and the pass rule
decides, as with ``toolproof run``; the response cache is not used. A failing case shows its
pass rate with its interval (of several trials), its failing checks per trial and the
summaries of the failed trials' traces. An advisory case
(``gate: advise``) that fails is reported as xfailed, never as a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from toolproof.testing._live import is_live

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from toolproof.evals._results import CaseResult
    from toolproof.evals._suite import Case, Suite

__all__ = ["CaseFailed", "EvalCaseItem", "SuiteFile", "pytest_collect_file"]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect eval suites found among the YAML files pytest visits."""
    if file_path.suffix.lower() not in (".yaml", ".yml"):
        return None
    from toolproof.evals._suite import is_suite_file

    if not is_suite_file(file_path):
        return None
    collector: SuiteFile = SuiteFile.from_parent(parent, path=file_path)
    return collector


class SuiteFile(pytest.File):
    """An eval suite file; its cases are the items."""

    def collect(self) -> Iterator[pytest.Item]:
        """Load (and fully check) the suite; a bad suite is one collection error."""
        from toolproof.errors import ConfigError
        from toolproof.evals._suite import load_suite

        try:
            suite = load_suite(self.path)
        except ConfigError as exc:
            raise self.CollectError(str(exc)) from None
        for case in suite.cases:
            yield EvalCaseItem.from_parent(self, name=case.name, suite=suite, case=case)


class CaseFailed(Exception):
    """A case's verdict was not a pass; carries its result for the failure report."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.reason)
        self.result = result


class EvalCaseItem(pytest.Item):
    """One case of a suite, with all its trials."""

    def __init__(self, *, suite: Suite, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.case = case
        self.extra_keyword_matches.update(case.tags)

    def _model(self) -> str | None:
        """The model to run with, or skip the item with the reason."""
        case = self.case
        model = case.config.model
        if is_live(self.config) and model and model.strip().lower() != "scripted":
            from toolproof.errors import UserError
            from toolproof.models import api_key_env

            try:
                variable = api_key_env(model)
            except UserError as exc:
                pytest.fail(f"{case.location}: {exc}", pytrace=False)
            if variable and not os.environ.get(variable, "").strip():
                pytest.skip(f"live eval case ({model}): {variable} is not set")
            return model
        if case.script is None:
            pytest.skip(
                f"needs a live model ({model or 'no model set'}) and has no script: run with "
                "--toolproof-live (or TOOLPROOF_LIVE=1), or give the case a 'script:'"
            )
        return "scripted"

    def runtest(self) -> None:
        """Run the case's trials and apply its pass rule."""
        import asyncio

        from toolproof.evals._options import EvalOptions
        from toolproof.evals._runner import evaluate_async
        from toolproof.evals._suite import Suite

        if self.case.skip is not None:
            pytest.skip(self.case.skip)
        model = self._model()
        from toolproof.errors import MockBypassed, UserError

        suite = self.suite
        one = Suite(suite.name, suite.file, [self.case], suite.description, suite.statistics)
        try:
            report = asyncio.run(
                evaluate_async(
                    [one],
                    EvalOptions(
                        model=model,
                        cache=False,
                        keep_traces=True,
                        concurrency=max(1, self.case.config.trials),
                    ),
                )
            )
        except MockBypassed:
            raise  # shown by repr_failure, with what to change
        except UserError as exc:  # a configuration problem found before the case ran
            pytest.fail(f"{self.case.location}: {exc}", pytrace=False)
        result = report.cases[0]
        if result.verdict == "skipped":
            pytest.skip(result.reason)
        if result.verdict == "pass":
            return
        if not result.blocking:
            pytest.xfail(f"advisory case (gate: advise) did not pass: {result.reason}")
        raise CaseFailed(result)

    def repr_failure(
        self,
        excinfo: ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | TerminalRepr:
        """Failing checks per trial and trace summaries, instead of a traceback."""
        if isinstance(excinfo.value, CaseFailed):
            return _describe(excinfo.value.result)
        from toolproof.errors import MockBypassed

        if isinstance(excinfo.value, MockBypassed):  # a configuration error: say what to fix
            return f"{self.case.location}: {self.case.id}: {excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the case is written."""
        return self.path, self.case.line - 1, f"eval case {self.case.id}"


def _describe(result: CaseResult) -> str:
    case = result.case
    lines = [
        f"{case.location}: {case.id} {result.verdict.upper()}",
        f"  {result.reason}",
    ]
    if len(result.trials) > 1:  # what the trials say about the case's true pass rate
        from toolproof.evals._report import case_interval_text
        from toolproof.evals._stats_report import StatsOptions

        level = (result.statistics or StatsOptions()).level
        lines.append(f"  pass rate {case_interval_text(result)} ({level:.0%} interval)")
    for trial in result.trials:
        lines.append(
            f"  trial {trial.index + 1}: {trial.status.upper()}"
            + (f" after {trial.attempts} attempts" if trial.attempts > 1 else "")
        )
        if trial.status == "error" and trial.error:
            lines.append(f"    error: {trial.error_type}: {trial.error}")
        for check in trial.checks:
            if check.status in ("fail", "inconclusive"):
                criterion = f" [{check.criterion}]" if check.criterion else ""
                lines.append(f"    {check.status}: {check.label}{criterion}: {check.reason}")
    crashed = [t for t in result.trials if t.status != "pass" and t.traceback]
    if crashed:  # a bug in user code (a tool, a mock, the factory): show where
        lines.append("")
        lines.append(f"trial {crashed[0].index + 1} stopped on a bug in your code:")
        lines.extend("  " + line for line in (crashed[0].traceback or "").splitlines())
    failed = [t for t in result.trials if t.status != "pass" and t.traces]
    if failed:
        lines.append("")
        lines.append(f"traces of trial {failed[0].index + 1}:")
        for trace in failed[0].traces or []:
            lines.extend("  " + line for line in trace.summary().splitlines())
    return "\n".join(lines)
