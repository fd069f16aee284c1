"""``toolproof run``: exit codes, reports, filters (in process), Ctrl-C (a real process).

The exit codes of a real ``python -m toolproof`` process: test_cli_exit_codes.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import _processes as processes
from _cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
HR_SUITE = ROOT / "examples" / "hr_assistant" / "hr.eval.yaml"
# The subprocess imports this checkout's toolproof (not another installed copy).
PYTHONPATH = os.pathsep.join([str(HERE), str(ROOT / "src")])


def toolproof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command run in this process, as ``python -m toolproof`` would (tests/_cli.py)."""
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("DEEPSEEK_API_KEY", None)
    return run_cli(*args, cwd=cwd, env=env, paths=PYTHONPATH.split(os.pathsep))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


SUITE = """\
suite: cli
agent: evalagents:build_agent
model: scripted
cases:
  - name: good
    input: "12 times 8"
    tags: [smoke]
    expect: {tools_called: [multiply_numbers], final_contains: "96"}
    script: [{call: {name: multiply_numbers, arguments: {a: 12, b: 8}}}, "12 x 8 = 96"]
  - name: bad
    input: "12 times 8"
    expect: {final_contains: "97"}
    script: [{call: {name: multiply_numbers, arguments: {a: 12, b: 8}}}, "12 x 8 = 96"]
"""


def test_the_example_suite_passes_offline(tmp_path: Path) -> None:
    result = toolproof("run", str(HR_SUITE), "--model", "scripted", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "✅ toolproof evals: 7/7 blocking cases passed  (exit code 0)" in result.stdout
    assert "[7/7] PASS hr-assistant::leave_follow_up (3/3 trials passed)" in result.stderr
    assert (tmp_path / ".toolproof").exists() is False  # scripted runs need no cache


def test_a_failing_blocking_case_exits_1_with_the_reason(tmp_path: Path) -> None:
    suite = write(tmp_path / "cli.eval.yaml", SUITE)
    result = toolproof("run", str(suite), cwd=tmp_path)
    assert result.returncode == 1
    assert "FAIL" in result.stdout and "cli::bad" in result.stdout
    assert "expected the final answer to contain '97'; it was '12 x 8 = 96'" in result.stdout
    assert "❌ toolproof evals: 1 blocking case failed  (exit code 1)" in result.stdout


def test_filters_by_case_and_tag(tmp_path: Path) -> None:
    suite = write(tmp_path / "cli.eval.yaml", SUITE)
    assert toolproof("run", str(suite), "--case", "good", cwd=tmp_path).returncode == 0
    assert toolproof("run", str(suite), "--tag", "smoke", cwd=tmp_path).returncode == 0
    missing = toolproof("run", str(suite), "--tag", "nightly", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr == (
        "toolproof: error: no case matches --tag nightly; cases: good, bad; tags: smoke\n"
    )


def test_config_errors_exit_2_without_a_traceback(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "bad.eval.yaml", "suite: bad\nagent: nope:factory\ncases: [{name: a}]\n"
    )
    result = toolproof("run", str(suite), cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        "toolproof: error: invalid eval suite (2 problems; nothing was run):",
        f"  {suite}:2: agent: cannot import 'nope' for nope:factory: No module named 'nope'",
        f"  {suite}:3: cases[0]: case 'a' needs an 'input' (or 'turns' for a conversation)",
    ]
    assert result.stdout == ""
    bad_report = toolproof("run", str(HR_SUITE), "--report", "pdf:x.pdf", cwd=tmp_path)
    assert bad_report.returncode == 2
    assert "unknown format 'pdf'" in bad_report.stderr
    bad_model = toolproof("run", str(HR_SUITE), "--model", "nowhere:x", cwd=tmp_path)
    assert bad_model.returncode == 2
    assert "unknown model provider 'nowhere'" in bad_model.stderr
    assert "Traceback" not in bad_model.stderr


def test_infrastructure_errors_exit_3(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "down.eval.yaml",
        """\
        suite: down
        agent: evalagents:build_agent
        model: scripted
        retries: 0
        cases: [{name: a, input: hi, script: [{raise: ModelConnectionError}]}]
        """,
    )
    result = toolproof("run", str(suite), cwd=tmp_path)
    assert result.returncode == 3
    assert "ModelConnectionError: scripted ModelConnectionError" in result.stdout
    assert "no verdict for 1 case (infrastructure errors)" in result.stdout


def test_missing_api_key_exits_2_before_anything_runs(tmp_path: Path) -> None:
    # A misnamed CI secret is a configuration error, not an outage CI might tolerate.
    result = toolproof("run", str(HR_SUITE), "--case", "multiply", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        "toolproof: error: model deepseek:deepseek-chat needs an API key: set the environment "
        "variable DEEPSEEK_API_KEY (or pass api_key=...)\n"
    )
    assert result.stdout == ""


def test_reports_and_stdout(tmp_path: Path) -> None:
    suite = write(tmp_path / "cli.eval.yaml", SUITE)
    result = toolproof(
        "run",
        str(suite),
        "--report",
        "json:-",
        "--report",
        "junit:out/junit.xml",
        "--report",
        "md:out/report.md",
        cwd=tmp_path,
    )
    assert result.returncode == 1
    data = json.loads(result.stdout)  # stdout holds the JSON report alone
    assert [c["verdict"] for c in data["cases"]] == ["pass", "fail"]
    assert "wrote junit report to out/junit.xml" in result.stderr
    assert (tmp_path / "out" / "junit.xml").read_text().count("<testcase ") == 2
    assert "`cli::bad`" in (tmp_path / "out" / "report.md").read_text()


def test_list_shows_cases_and_checks(tmp_path: Path) -> None:
    suite = write(tmp_path / "cli.eval.yaml", SUITE)
    result = toolproof("run", str(suite), "--list", "--tag", "smoke", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        f"cli::good  {suite}:5",
        "  model=scripted  trials=1  pass_rule=all  tools=mock  tags=smoke",
        "  input: 12 times 8",
        "  expect tools_called: multiply_numbers at least 1 time",
        "  expect final_contains: answer contains '96'",
        "1 case",
    ]


def test_directories_of_suites(tmp_path: Path) -> None:
    write(tmp_path / "evals" / "a.eval.yaml", SUITE.replace("suite: cli", "suite: a"))
    write(tmp_path / "evals" / "b.yaml", SUITE.replace("suite: cli", "suite: b"))
    result = toolproof("run", "evals", "--case", "good", "-q", cwd=tmp_path)
    assert result.returncode == 0
    assert "a::good" in result.stdout and "b::good" in result.stdout
    assert result.stderr == ""  # --quiet: no progress lines


@pytest.mark.skipif(sys.platform == "win32", reason="signal delivery to a child is POSIX-only")
@pytest.mark.parametrize(
    ("stop", "named"), [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")]
)
def test_ctrl_c_or_sigterm_writes_a_partial_report(tmp_path: Path, stop: int, named: str) -> None:
    # SIGTERM: how a CI system stops a cancelled or timed-out job.
    suite = write(
        tmp_path / "slow.eval.yaml",
        """\
        suite: slow
        agent: evalagents:slow_agent
        model: scripted
        cases:
          - {name: a, input: hi, script: [x]}
          - {name: b, input: hi, script: [x]}
          - {name: c, input: hi, script: [x]}
          - {name: d, input: hi, script: [x]}
        """,
    )
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "NO_COLOR": "1"}
    process = processes.start(
        [
            sys.executable,
            "-m",
            "toolproof",
            "run",
            str(suite),
            "-j",
            "1",
            "--report",
            "json:r.json",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    first = process.stderr.readline()
    assert first.startswith("running 4 cases")
    second = process.stderr.readline()  # the first case finished (each takes a second)
    assert second.startswith("[1/4] PASS slow::a")
    time.sleep(0.2)
    process.send_signal(stop)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert f"interrupting ({named}); writing the reports" in stderr
    assert "Traceback" not in stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["interrupted"] is True
    verdicts = [c["verdict"] for c in data["cases"]]
    assert verdicts[0] == "pass" and verdicts[-1] == "not_run"
    assert "interrupted: the reports hold the cases finished so far" in stdout
