"""The verdict always reaches the console and the exit code, and every report that can be
written is: hostile text in every field that reaches a report (lone surrogates, NUL, control
characters, bidirectional overrides, in dataset ids and inputs), and reports that cannot be
written (a file-size limit, a folder removed under the run).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: In dataset rows (which refuse lone surrogates: those come from the tool, below).
HOSTILE = [
    "nul \x00 byte",
    "bell \x07 esc \x1b[31m red",
    "bidi \u202e evil \u202c",
    "line\u2028sep",
    "del \x7f c1 \x85",
]

SUITE = """\
suite: hostile
agent: hostileagent:build_agent
model: scripted
datasets:
  - file: rows.jsonl
    template:
      name: "{id}"
      input: "{question}"
      description: "{question}"
      script:
        - call: {name: echo, arguments: {text: "{question}"}}
        - "{question}"
      expect: {final_contains: answer}
"""

#: The tool answers with lone surrogates, NUL and a bidirectional override of its own.
AGENT = """\
from toolproof import Agent, tool


@tool
def echo(text: str) -> str:
    \"\"\"Echo.

    Args:
        text: The text.
    \"\"\"
    return text + " lone \\ud800 low \\udfff nul \\x00 \\u202e"


def build_agent(model, tools=None, **options):
    return Agent(model, [echo] if tools is None else tools)
"""


def _workspace(tmp_path: Path) -> Path:
    rows = [
        {"id": f"case {n} {text}", "question": f"answer {text}"} for n, text in enumerate(HOSTILE)
    ]
    (tmp_path / "rows.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8"
    )
    (tmp_path / "hostile.eval.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "hostileagent.py").write_text(AGENT, encoding="utf-8")
    return tmp_path / "hostile.eval.yaml"


def _run(tmp_path: Path, *extra: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    def preexec() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    reports = [f"--report={fmt}:{tmp_path / ('out.' + fmt)}" for fmt in FORMATS]
    return subprocess.run(
        [sys.executable, "-m", "toolproof", "run", "hostile.eval.yaml", *reports, *extra],
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), str(ROOT / "src")]),
            "TOOLPROOF_LOG_DIR": str(tmp_path / "runs"),
            "NO_COLOR": "1",
        },
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=120,
        preexec_fn=preexec,
    )


FORMATS = ("json", "junit", "markdown", "html")


@pytest.mark.timeout(180)
def test_hostile_text_in_every_field_reaches_every_report(tmp_path: Path) -> None:
    _workspace(tmp_path)
    result = _run(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert [case["name"] for case in report["cases"]] == [
        f"case {n} {text}" for n, text in enumerate(HOSTILE)
    ]
    (log,) = (tmp_path / "runs").iterdir()
    assert (
        json.loads((log / "report.json").read_text(encoding="utf-8"))["cases"] == (report["cases"])
    )
    results = [
        result["content"]
        for case in report["cases"]
        for trace in case["trials"][0]["traces"]
        for step in trace["steps"]
        for result in step["tool_results"]
    ]
    assert len(results) == len(HOSTILE)
    # (the trace codec keeps a lone surrogate as its escape, text a report can hold)
    assert all("lone \\ud800 low \\udfff" in content for content in results), results[0]
    ET.parse(tmp_path / "out.junit")  # well-formed XML
    assert "case 0 nul" in (tmp_path / "out.markdown").read_text(encoding="utf-8")
    assert "case 2 bidi" in (tmp_path / "out.html").read_text(encoding="utf-8")


@pytest.mark.timeout(180)
@pytest.mark.parametrize("limit", [0, 3000, 20000])
def test_a_file_size_limit_loses_no_verdict(tmp_path: Path, limit: int) -> None:
    _workspace(tmp_path)
    # (with no room at all, the run log could not start: a configuration error before
    # anything runs; that case is run without one)
    result = _run(tmp_path, *(["--no-log"] if limit == 0 else []), limit=limit)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "internal error" not in result.stderr
    assert f"{len(HOSTILE)}/{len(HOSTILE)} blocking cases passed" in result.stdout
    written = {fmt for fmt in FORMATS if (tmp_path / f"out.{fmt}").exists()}
    said = {fmt for fmt in FORMATS if f"{fmt} report not written" in result.stderr}
    assert written | said == set(FORMATS), result.stderr
    assert not written & said
    for fmt in written:  # a report written is whole
        assert (tmp_path / f"out.{fmt}").stat().st_size <= max(limit, 1)


@pytest.mark.timeout(180)
def test_a_failing_run_keeps_exit_1_when_no_report_can_be_written(tmp_path: Path) -> None:
    suite = _workspace(tmp_path)
    suite.write_text(SUITE.replace("final_contains: answer", "final_contains: zzz"))
    result = _run(tmp_path, "--no-log", limit=0)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert f"{len(HOSTILE)} blocking cases failed" in result.stdout
