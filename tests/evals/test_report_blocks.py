"""The JSON report assembled while the trials run is the report written at the end.

The runner writes each case's entry of the JSON report to the spool as soon as the case is
decided; the end only copies the entries. These tests run the same suites with that switched
off (every trial left as a line, the whole report encoded at the end, as before) and compare
the reports byte for byte, timings aside: passing, failing and skipped cases, text that is
not ASCII, several suites, a run stopped at the first failure (``-x``), and the Markdown and
JUnit reports that read failing trials back from inside the entries.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from toolproof.cli import main
from toolproof.evals import _runner

HERE = Path(__file__).resolve().parent

# Timestamps, durations and ids change from run to run; everything else must not.
_VARYING = re.compile(
    r'"(\w*_ms|\w*_s|\w*_at|id|trace_id)": ?'
    r'("[^"]*"|-?[\d.e+-]+)'
)


def _normalized(text: str) -> str:
    text = _VARYING.sub(r'"\1": _', text)
    # latency spreads (p50/p95/max) in JSON, JUnit properties and Markdown
    text = re.sub(r'"latency_s": \{[^}]*\}', '"latency_s": _', text)
    text = re.sub(r'(latency_s\.\w+" value=)"[^"]*"', r"\1_", text)
    text = re.sub(r"latency [\d./e+-]+ s", "latency _", text)
    text = re.sub(r"\b[0-9a-f]{32}\b", "_", text)  # trace ids in transcripts
    text = re.sub(r'time="[\d.]+"', 'time="_"', text)  # JUnit
    text = re.sub(r'timestamp="[^"]*"', 'timestamp="_"', text)  # JUnit, to the second
    return re.sub(r"\d+(\.\d+)? s\b|\d+\.\d+ ?ms", "_", text)


def _suites(folder: Path) -> list[Path]:
    first = folder / "first.eval.yaml"
    first.write_text(
        "suite: first\nagent: evalagents:build_agent\nmodel: scripted\ntrials: 3\n"
        "cases:\n"
        "  - {name: ok, input: 'hi', script: [hello]}\n"
        "  - {name: dé, input: 'héllo ✓ 世界', script: ['bonjour ✓'], tags: [ü]}\n"
        "  - {name: wrong, input: 'hi', script: [nope], expect: {final_contains: [absent]}}\n"
        "  - {name: later, input: 'hi', skip: 'not today'}\n"
        "  - {name: ok2, input: 'hi', script: [hello], expect: {final_contains: [hello]}}\n"
    )
    second = folder / "second.eval.yaml"
    second.write_text(
        "suite: second\nagent: evalagents:build_agent\nmodel: scripted\ntrials: 2\n"
        "cases:\n"
        + "".join(f"  - {{name: c{i}, input: 'n {i}', script: [fine]}}\n" for i in range(8))
    )
    return [first, second]


def _reports(folder: Path, extra: list[str]) -> tuple[int, dict[str, str]]:
    out = {kind: folder / f"report.{kind}" for kind in ("json", "md", "xml")}
    argv = ["run", *map(str, _suites(folder)), "-q", "--no-log", "-j", "3", *extra]
    argv += ["--report", f"json:{out['json']}", "--report", f"markdown:{out['md']}"]
    argv += ["--report", f"junit:{out['xml']}"]
    code = main(argv)
    texts = {kind: path.read_text(encoding="utf-8") for kind, path in out.items()}
    return code, {
        kind: _normalized(text.replace(str(folder), "DIR")) for kind, text in texts.items()
    }


@pytest.mark.parametrize("extra", [[], ["-x"], ["--trials", "1"]], ids=["all", "exitfirst", "one"])
def test_reports_assembled_during_the_run_match_reports_encoded_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str]
) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    built: list[int] = []
    real_block = _runner._Runner.write_block

    def counted(self: Any, plan: Any, result: Any) -> None:
        built.append(1)
        real_block(self, plan, result)

    monkeypatch.setattr(_runner._Runner, "write_block", counted)
    (tmp_path / "during").mkdir()
    code, during = _reports(tmp_path / "during", extra)
    assert built, "no case entry was written while the trials ran"

    def at_the_end(self: Any, plan: Any, result: Any) -> None:
        self.write_lines(plan)  # every trial as a line; the report encodes the cases

    monkeypatch.setattr(_runner._Runner, "write_block", at_the_end)
    # The second run always starts in another second, as it may on a slow machine.
    monkeypatch.setattr(_runner, "_now", lambda: "2000-01-01T00:00:00Z")
    (tmp_path / "end").mkdir()
    code_end, end = _reports(tmp_path / "end", extra)
    assert code == code_end == 1
    assert during["json"] == end["json"]
    assert during["md"] == end["md"]
    assert during["xml"] == end["xml"]
    assert "bonjour ✓" in during["json"] and "héllo ✓ 世界" in during["json"]
