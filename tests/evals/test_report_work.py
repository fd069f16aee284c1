"""Work budget of writing an eval run's reports: counted, not timed.

A report's summary (counts, usage, pass^k, quality) walks every trial of every case; a
large run pays for each walk. ``toolproof run`` computes it once for all the report files
and once for the console (and once more for the run log when it keeps one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolproof.cli import main
from toolproof.evals._results import EvalReport

ROOT = Path(__file__).resolve().parents[2]
HR_SUITE = ROOT / "examples" / "hr_assistant" / "hr.eval.yaml"


@pytest.fixture
def summaries(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = EvalReport.summary

    def counted(self: EvalReport) -> dict[str, Any]:
        calls.append(1)
        return real(self)

    monkeypatch.setattr(EvalReport, "summary", counted)
    return calls


def test_the_summary_is_computed_once_for_the_reports_and_once_for_the_console(
    tmp_path: Path, summaries: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    markdown = tmp_path / "r.md"
    argv = ["run", str(HR_SUITE), "--model", "scripted", "-q", "--no-log"]
    argv += ["--report", f"json:{out}", "--report", f"markdown:{markdown}"]
    code = main(argv)
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert len(summaries) == 2, len(summaries)
    data = json.loads(out.read_text())
    summary = data["summary"]
    assert summary["trials_passed"] == summary["trials"] > 0
    assert f"{summary['trials_passed']}/{summary['trials']} trials passed" in printed
    assert f"{summary['trials_passed']}/{summary['trials']} trials passed" in markdown.read_text()
