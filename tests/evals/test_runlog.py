"""Run logs of ``toolproof run`` / ``replay`` and ``toolproof runs``, as real subprocesses.

Every test runs in its own temporary folder as the current directory; the run-log tests take
``TOOLPROOF_LOG_DIR`` (which the test session sets) out of the child's environment to test
the default location.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import _processes as processes
from _cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PYTHONPATH = os.pathsep.join([str(HERE), str(ROOT / "src"), str(ROOT / "tests" / "replay")])
RUN_ID = re.compile(r"^\d{8}T\d{6}Z-(run|replay)-[0-9a-f]{6}$")
HOSTILE = "<script>alert(1)</script> ]]> [red]x[/] [link=https://e.vil]click[/link] :smile:"
#: A terminal escape sequence (a colour, and an OSC 8 hyperlink) in model output.
ESCAPES = "\x1b[31mred\x1b]8;;https://e.vil\x07link\x1b]8;;\x07"


def toolproof(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The command run in this process (tests/_cli.py); the interrupted runs use a process."""
    child = {**os.environ, "PYTHONPATH": PYTHONPATH, "NO_COLOR": "1", "COLUMNS": "200"}
    child.pop("TOOLPROOF_LOG_DIR", None)
    child.pop("DEEPSEEK_API_KEY", None)
    child.update(env or {})
    return run_cli(*args, cwd=cwd, env=child, paths=PYTHONPATH.split(os.pathsep))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def runs_in(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir())


SUITE = """\
suite: log
agent: evalagents:build_agent
model: scripted
cases:
  - name: good
    input: "12 times 8"
    expect: {tools_called: [multiply_numbers], final_contains: "96"}
    script: [{call: {name: multiply_numbers, arguments: {a: 12, b: 8}}}, "12 x 8 = 96"]
  - name: bad
    input: "12 times 8"
    expect: {final_contains: "97"}
    script: [{call: {name: multiply_numbers, arguments: {a: 12, b: 8}}}, "12 x 8 = 96"]
"""


# -- writing run logs ---------------------------------------------------------------------------


def test_a_run_writes_a_log_by_default_with_the_json_report_and_meta(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    result = toolproof("run", str(suite), "-q", "--report", "json:r.json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    [run] = runs_in(tmp_path / ".toolproof" / "runs")
    assert RUN_ID.match(run.name) and "-run-" in run.name
    assert sorted(p.name for p in run.iterdir()) == ["meta.json", "report.json"]
    assert f"run log: .toolproof/runs/{run.name}" in result.stdout
    # Exactly the --report json file, traces of every trial included.
    assert (run / "report.json").read_text() == (tmp_path / "r.json").read_text()
    report = json.loads((run / "report.json").read_text())
    assert report["format"] == "toolproof-eval-report" and report["version"] == 1
    assert all(t["traces"] for c in report["cases"] for t in c["trials"])
    meta = json.loads((run / "meta.json").read_text())
    assert meta["format"] == "toolproof-run-meta" and meta["version"] == 1
    assert meta["id"] == run.name and meta["kind"] == "run" and meta["status"] == "finished"
    assert meta["argv"] == ["run", str(suite), "-q", "--report", "json:r.json"]
    assert meta["suites"] == [str(suite.resolve())]
    assert meta["exit_code"] == 1 and meta["interrupted"] is False
    assert meta["model"] == "scripted"  # the suite's model, as the cases ran with it
    assert meta["counts"] == {
        "cases": 2,
        "passed": 1,
        "failed": 1,
        "errors": 0,
        "skipped": 0,
        "not_run": 0,
        "trials": 2,
        "trials_passed": 1,
    }
    assert meta["started"] <= meta["finished"] and meta["duration_s"] >= 0
    assert run.name.startswith(meta["started"][:19].replace("-", "").replace(":", ""))


def test_no_log_writes_none_and_log_dir_or_env_moves_it(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    assert toolproof("run", str(suite), "-q", "--no-log", cwd=tmp_path).returncode == 1
    assert not (tmp_path / ".toolproof").exists()
    assert toolproof("run", str(suite), "-q", "--log-dir", "elsewhere", cwd=tmp_path).returncode
    assert len(runs_in(tmp_path / "elsewhere")) == 1
    env = {"TOOLPROOF_LOG_DIR": str(tmp_path / "from-env")}
    assert toolproof("run", str(suite), "-q", cwd=tmp_path, env=env).returncode == 1
    assert len(runs_in(tmp_path / "from-env")) == 1
    assert not (tmp_path / ".toolproof").exists()
    # --log-dir wins over the environment.
    toolproof("run", str(suite), "-q", "--log-dir", "flag", cwd=tmp_path, env=env)
    assert len(runs_in(tmp_path / "flag")) == 1 and len(runs_in(tmp_path / "from-env")) == 1


def test_a_configuration_error_before_anything_ran_leaves_no_log(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE.replace("evalagents:build_agent", "nowhere:x"))
    result = toolproof("run", str(suite), "-q", cwd=tmp_path)
    assert result.returncode == 2
    assert runs_in(tmp_path / ".toolproof" / "runs") == []


def test_an_unwritable_log_dir_is_one_clear_error_before_anything_runs(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    (tmp_path / "afile").write_text("not a folder")
    result = toolproof("run", str(suite), "-q", "--log-dir", "afile", cwd=tmp_path)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("toolproof: error: cannot write the run log in afile")
    assert "--no-log" in line and "trials passed" not in result.stdout


def test_the_run_log_keeps_traces_on_disk_not_in_memory(tmp_path: Path) -> None:
    from toolproof.evals import evaluate

    suite = write(tmp_path / "s.eval.yaml", SUITE)
    report = evaluate([suite], reports=[f"json:{tmp_path / 'r.json'}"], cache=False)
    assert all(t.traces is None for c in report.cases for t in c.trials)
    on_disk = json.loads((tmp_path / "r.json").read_text())
    assert all(t["traces"] for c in on_disk["cases"] for t in c["trials"])
    verbose = evaluate([suite], keep_failed_traces=True, cache=False)
    kept = {c.case.name: [t.traces is not None for t in c.trials] for c in verbose.cases}
    assert kept == {"good": [False], "bad": [True]}


SLOW = """\
suite: slow
agent: evalagents:slow_agent
model: scripted
cases:
  - {name: a, input: hi, script: [x]}
  - {name: b, input: hi, script: [x]}
  - {name: c, input: hi, script: [x]}
  - {name: d, input: hi, script: [x]}
"""


def _start_slow(tmp_path: Path) -> subprocess.Popen[str]:
    suite = write(tmp_path / "slow.eval.yaml", SLOW)
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "NO_COLOR": "1"}
    env.pop("TOOLPROOF_LOG_DIR", None)
    process = processes.start(
        [sys.executable, "-m", "toolproof", "run", str(suite), "-j", "1"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    assert process.stderr.readline().startswith("running 4 cases")
    assert process.stderr.readline().startswith("[1/4] PASS slow::a")  # each takes a second
    return process


@pytest.mark.skipif(sys.platform == "win32", reason="signal delivery to a child is POSIX-only")
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_mid_run_leaves_a_readable_log_of_what_finished(
    tmp_path: Path, stop: int
) -> None:
    process = _start_slow(tmp_path)
    logs = runs_in(tmp_path / ".toolproof" / "runs")
    assert len(logs) == 1  # written when the run started
    running = json.loads((logs[0] / "meta.json").read_text())
    assert running["status"] == "running" and running["finished"] is None
    assert not (logs[0] / "report.json").exists()
    time.sleep(0.2)
    process.send_signal(stop)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    report = json.loads((logs[0] / "report.json").read_text())
    assert report["interrupted"] is True and report["exit_code"] == 130
    verdicts = [c["verdict"] for c in report["cases"]]
    assert verdicts[0] == "pass" and verdicts[-1] == "not_run"
    assert report["cases"][0]["trials"][0]["traces"][0]["output"] == "slow answer"
    meta = json.loads((logs[0] / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["exit_code"] == 130
    assert meta["interrupted"] is True and meta["counts"]["not_run"] >= 1
    # No temporary file is left behind by the atomic writes.
    assert sorted(p.name for p in logs[0].iterdir()) == ["meta.json", "report.json"]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX-only")
def test_a_killed_run_is_listed_as_died_without_a_report(tmp_path: Path) -> None:
    process = _start_slow(tmp_path)
    process.kill()
    process.communicate(timeout=30)
    listed = toolproof("runs", "list", "--json", cwd=tmp_path)
    [row] = json.loads(listed.stdout)
    assert row["status"] == "died" and row["exit_code"] is None
    compared = toolproof("runs", "compare", "latest", "latest", cwd=tmp_path)
    assert compared.returncode == 2
    assert compared.stderr.strip().endswith("has no report.json (still running, or killed)")


def test_a_crash_midway_still_writes_the_reports_of_what_finished(tmp_path: Path) -> None:
    import asyncio

    from toolproof.evals import evaluate_async

    suite = write(tmp_path / "s.eval.yaml", SUITE)

    class Crashing:
        def __init__(self) -> None:
            self.done = 0

        def start(self, cases: int, trials: int) -> None:
            pass

        def trial_done(self, case: Any, trial: Any) -> None:
            pass

        def case_done(self, result: Any) -> None:
            self.done += 1
            if self.done == 1:
                raise RuntimeError("a bug while showing progress")

        def finish(self) -> None:
            pass

    path = tmp_path / "log" / "report.json"
    with pytest.raises(RuntimeError, match="a bug while showing progress"):
        asyncio.run(
            evaluate_async(
                [suite],
                concurrency=1,
                reports=[f"json:{path}"],
                progress=Crashing(),
                cache=False,
            )
        )
    report = json.loads(path.read_text())
    assert report["interrupted"] is True
    assert [c["verdict"] for c in report["cases"]] == ["pass", "not_run"]


# -- -v, -x, --lf -------------------------------------------------------------------------------


VERBOSE = f"""\
suite: verbose
agent: evalagents:build_agent
model: scripted
cases:
  - name: hostile
    input: "multiply {HOSTILE}"
    expect: {{final_contains: "97"}}
    script:
      - call:
          name: multiply_numbers
          arguments: {{a: "[bold]x[/]", b: 8}}
          id: "call-[i]7[/i]"
          unchecked: true
      - {{call: {{name: multiply_numbers, arguments: {{a: 12, b: 8}}, id: call_2}}}}
      - {json.dumps(HOSTILE + " " + ESCAPES)}
  - name: fine
    input: "12 times 8"
    expect: {{final_contains: "96"}}
    script: [{{call: {{name: multiply_numbers, arguments: {{a: 12, b: 8}}}}}}, "96"]
  - name: crashes
    input: "crash please"
    script: [{{call: {{name: crash, arguments: {{}}}}}}, "done"]
"""


def test_verbose_prints_failing_transcripts_literally(tmp_path: Path) -> None:
    suite = write(tmp_path / "v.eval.yaml", VERBOSE)
    quiet = toolproof("run", str(suite), "-q", "--no-log", cwd=tmp_path)
    assert "transcripts of failing trials" not in quiet.stdout
    for env in ({}, {"FORCE_COLOR": "1", "NO_COLOR": ""}):
        result = toolproof("run", str(suite), "-q", "-v", "--no-log", cwd=tmp_path, env=env)
        assert result.returncode == 1, result.stderr
        out = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)  # colours, when forced
        section = out.split("transcripts of failing trials", 1)[1]
        assert "FAIL verbose::hostile" in section
        assert "verbose::fine" not in section.split("┏")[0]  # passing cases have no transcript
        assert f"user: multiply {HOSTILE}" in section
        # The call with its id and raw arguments, the validation error with its type.
        assert 'call multiply_numbers [call-[i]7[/i]] {"a": "[bold]x[/]", "b": 8}' in section
        assert "result multiply_numbers [call-[i]7[/i]] error (ValidationError):" in section
        assert 'call multiply_numbers [call_2] {"a": 12, "b": 8}' in section
        assert "result multiply_numbers [call_2] ok: 96.0" in section
        assert f"assistant: {HOSTILE}" in section
        assert "stop: final" in section
        crashed = section.split("FAIL verbose::crashes", 1)[1]
        assert "call crash [call_1] {}" in crashed and "stop: error\n" in crashed
        assert "error: ZeroDivisionError: tool 'crash' raised ZeroDivisionError" in crashed
        assert "(tool crash)" in crashed
        assert "]8;" not in result.stdout.replace("\\x1b]8;", "")  # no hyperlink
        if not env:
            assert "\x1b" not in result.stdout  # model output sends no escape sequence
        assert "\\x1b[31mred\\x1b]8;;https://e.vil\\x07link" in section  # shown, defused


EXITFIRST = """\
suite: x
agent: evalagents:build_agent
model: scripted
trials: 3
cases:
""" + "".join(
    f"""\
  - name: bad{n}
    input: "12 times 8"
    expect: {{final_contains: "97"}}
    script: [{{call: {{name: multiply_numbers, arguments: {{a: 12, b: 8}}}}}}, "96"]
"""
    for n in range(4)
)


def test_exitfirst_stops_at_the_first_blocking_failure(tmp_path: Path) -> None:
    suite = write(tmp_path / "x.eval.yaml", EXITFIRST)
    result = toolproof("run", str(suite), "-x", "-j", "1", "-q", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "stopped at the first blocking failure (-x): 1 of 12 trials ran" in result.stdout
    [run] = runs_in(tmp_path / ".toolproof" / "runs")
    report = json.loads((run / "report.json").read_text())
    assert sum(len(c["trials"]) for c in report["cases"]) == 1
    assert [c["verdict"] for c in report["cases"]] == ["fail", "not_run", "not_run", "not_run"]
    assert report["exit_code"] == 1
    meta = json.loads((run / "meta.json").read_text())
    assert meta["status"] == "stopped" and meta["exit_code"] == 1 and meta["interrupted"]
    # Without -x every trial runs.
    full = toolproof("run", str(suite), "-j", "1", "-q", "--no-log", cwd=tmp_path)
    assert full.returncode == 1 and "stopped at the first" not in full.stdout
    assert "0/12 trials passed" in full.stdout


def test_exitfirst_with_concurrency_cancels_the_running_trials(tmp_path: Path) -> None:
    suite = write(tmp_path / "x.eval.yaml", EXITFIRST)
    result = toolproof("run", str(suite), "-x", "-j", "4", "-q", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    [run] = runs_in(tmp_path / ".toolproof" / "runs")
    report = json.loads((run / "report.json").read_text())
    assert 1 <= sum(len(c["trials"]) for c in report["cases"]) < 12


LAST_FAILED = """\
suite: lf
agent: evalagents:build_agent
model: scripted
cases:
  - name: one
    input: "12 times 8"
    expect: {final_contains: "ONE"}
    script: [{call: {name: multiply_numbers, arguments: {a: 12, b: 8}}}, "96 ONE"]
  - name: two
    input: "12 times 8"
    expect: {final_contains: "TWO"}
    script: [{call: {name: multiply_numbers, arguments: {a: 12, b: 8}}}, "96 TWO"]
  - name: three
    input: "12 times 8"
    expect: {final_contains: "THREE"}
    script: [{call: {name: multiply_numbers, arguments: {a: 12, b: 8}}}, "96 THREE"]
"""


def test_last_failed_reruns_only_the_failures_of_the_last_run(tmp_path: Path) -> None:
    suite = write(tmp_path / "lf.eval.yaml", LAST_FAILED)
    first = toolproof("run", str(suite), "--lf", "-q", cwd=tmp_path)
    assert first.returncode == 0 and "no previous run: running all" in first.stdout
    assert "3/3 trials passed" in first.stdout
    again = toolproof("run", str(suite), "--lf", "-q", cwd=tmp_path)
    assert "no failures in the last run" in again.stdout and "running all" in again.stdout
    # Break two cases: a full run fails them, --lf reruns those two only.
    write(suite, LAST_FAILED.replace('"96 ONE"', '"96"').replace('"96 THREE"', '"96"'))
    assert toolproof("run", str(suite), "-q", cwd=tmp_path).returncode == 1
    rerun = toolproof("run", str(suite), "--last-failed", "-q", cwd=tmp_path)
    assert rerun.returncode == 1
    assert "rerunning the 2 cases that failed in the last run" in rerun.stdout
    latest = json.loads(toolproof("runs", "list", "--json", cwd=tmp_path).stdout)[0]
    report = json.loads((Path(latest["path"]) / "report.json").read_text())
    assert [c["id"] for c in report["cases"]] == ["lf::one", "lf::three"]
    # --case still narrows the rerun.
    narrowed = toolproof("run", str(suite), "--lf", "--case", "three", "-q", cwd=tmp_path)
    assert "lf::three" in narrowed.stdout and "lf::one" not in narrowed.stdout
    # Another suite's runs do not count as the last run of this one.
    other = write(tmp_path / "other" / "o.eval.yaml", LAST_FAILED.replace("suite: lf", "suite: o"))
    assert "no previous run" in toolproof("run", str(other), "--lf", "-q", cwd=tmp_path).stdout


# -- JUnit and Markdown transcripts -------------------------------------------------------------


def test_junit_and_markdown_carry_escaped_bounded_transcripts(tmp_path: Path) -> None:
    long = "y" * 5000
    suite = write(tmp_path / "v.eval.yaml", VERBOSE.replace("multiply ", f"multiply {long} "))
    result = toolproof(
        "run", str(suite), "-q", "--no-log", "--report", "junit:j.xml", "--report", "markdown:m.md",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    raw = (tmp_path / "j.xml").read_text()
    assert "<script>" not in raw  # escaped by the XML library
    root = ET.fromstring(raw)
    hostile = root.find(".//testcase[@name='hostile']")
    assert hostile is not None
    out = hostile.findtext("system-out") or ""
    assert f"assistant: {HOSTILE}" in out
    assert "result multiply_numbers [call-[i]7[/i]] error (ValidationError)" in out
    assert long not in out and "y" * 400 in out  # clipped
    failure = hostile.find("failure")
    assert failure is not None and "transcript" not in (failure.text or "")
    fine = root.find(".//testcase[@name='fine']")
    assert fine is not None and "transcript" not in (fine.findtext("system-out") or "")

    markdown = (tmp_path / "m.md").read_text()
    assert markdown.startswith("<!-- toolproof-evals -->")
    assert "<script>" not in markdown and "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown
    assert "<details><summary>verbose::hostile: transcript</summary>" in markdown
    block = markdown.split("verbose::hostile: transcript</summary>", 1)[1].split("</details>")[0]
    assert "<pre>" in block and "</pre>" in block and block.count("</pre>") == 1
    assert "call multiply_numbers [call-[i]7[/i]]" in block
    assert len(block) < 5000


def test_transcripts_are_clipped_and_never_raise_on_malformed_traces() -> None:
    from toolproof._reporting import transcript_lines, transcript_rich

    steps = [
        {"response": {"content": "z" * 10_000, "tool_calls": [{"name": "t", "id": "c"}]}}
    ] * 300
    lines = transcript_lines([{"id": "t", "input": "i", "steps": steps}], line_limit=50)
    assert len(lines) == 50 and lines[-1][1].startswith("… ")
    assert all(len(text) < 700 for _, text in lines)
    for junk in ([None], [{"steps": "x"}], [{"steps": [None, {"response": 3}]}], [{"error": 1}]):
        transcript_lines(junk)
    text = transcript_rich([{"input": "[red]x[/]", "output": "[link=https://e.vil]y[/link]"}])
    assert "[red]x[/]" in text.plain and "[link=https://e.vil]y[/link]" in text.plain


# -- runs list / compare ------------------------------------------------------------------------


def _case(cid: str, verdict: str, passes: int, failures: int, errors: int = 0) -> dict[str, Any]:
    return {
        "id": cid,
        "verdict": verdict,
        "passes": passes,
        "failures": failures,
        "errors": errors,
        "trials": [],
    }


def make_run(
    logs: Path,
    stamp: str,
    kind: str,
    report: dict[str, Any],
    *,
    suffix: str = "abcdef",
    exit_code: int = 0,
) -> str:
    run_id = f"{stamp}-{kind}-{suffix}"
    folder = logs / run_id
    folder.mkdir(parents=True)
    started = f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:{stamp[11:13]}:{stamp[13:15]}Z"
    meta = {
        "format": "toolproof-run-meta",
        "version": 1,
        "id": run_id,
        "kind": kind,
        "status": "finished",
        "started": started,
        "finished": started,
        "duration_s": 1.5,
        "argv": [kind],
        "suites": ["/x/s.eval.yaml"] if kind == "run" else [],
        "store": "traces.db" if kind == "replay" else None,
        "model": "m:1",
        "exit_code": exit_code,
        "interrupted": False,
        "counts": {"cases": len(report.get("cases", [])), "passed": 0},
    }
    (folder / "meta.json").write_text(json.dumps(meta))
    (folder / "report.json").write_text(json.dumps(report))
    return run_id


OLD = {
    "format": "toolproof-eval-report",
    "cases": [
        _case("s::regressed", "pass", 3, 0),
        _case("s::fixed", "fail", 0, 3),
        _case("s::flaky", "pass", 3, 0),
        _case("s::still", "fail", 1, 2),
        _case("s::removed", "pass", 3, 0),
        _case("s::same", "pass", 3, 0),
        _case("s::errored", "pass", 3, 0),
    ],
}
NEW = {
    "format": "toolproof-eval-report",
    "cases": [
        _case("s::regressed", "fail", 1, 2),
        _case("s::fixed", "pass", 3, 0),
        _case("s::flaky", "pass", 2, 1),
        _case("s::still", "fail", 0, 3),
        _case("s::new", "pass", 3, 0),
        _case("s::same", "pass", 3, 0),
        _case("s::errored", "error", 0, 0, 3),
    ],
}


def test_compare_names_every_class_with_counts(tmp_path: Path) -> None:
    logs = tmp_path / ".toolproof" / "runs"
    old = make_run(logs, "20261201T080000Z", "run", OLD, exit_code=1)
    new = make_run(logs, "20261201T090000Z", "run", NEW, exit_code=1)
    result = toolproof(
        "runs", "compare", "--report", "markdown:c.md", "--report", "json:c.json", cwd=tmp_path
    )
    # One case of five paired ones went from 3/3 to 1/3 and another the other way: the
    # verdicts changed, but nothing beyond what two runs of one agent show (exit 0).
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"comparing {old} → {new}" in out
    for title, case, rates in (
        ("regressed", "s::regressed", "3/3 → 1/3"),
        ("fixed", "s::fixed", "0/3 → 3/3"),
        ("became flaky", "s::flaky", "3/3 → 2/3"),
        ("still failing", "s::still", "1/3 → 0/3"),
        ("new", "s::new", "— → 3/3"),
        ("removed", "s::removed", "3/3 → —"),
        ("no verdict", "s::errored", "3/3 → 0/0 error"),
    ):
        line = next(line for line in out.splitlines() if f" {case} " in line)
        assert title in line and rates in line, line
    assert "s::same" not in out and "1 unchanged case" in out
    assert "1 regressed, 1 fixed, 1 became flaky, 1 still failing, 1 new, 1 removed" in out
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["format"] == "toolproof-runs-compare" and data["regressed"] is False
    assert data["comparison"]["change"] == "no evidence"
    assert data["comparison"]["paired"] == 5  # the errored case has no verdict on one side
    assert sorted(data["comparison"]["unpaired"]) == ["s::errored", "s::new", "s::removed"]
    assert data["old"]["id"] == old and data["new"]["id"] == new
    assert {c["key"]: c["change"] for c in data["changes"]} == {
        "s::regressed": "regressed",
        "s::fixed": "fixed",
        "s::flaky": "flaky",
        "s::still": "still_failing",
        "s::new": "new",
        "s::removed": "removed",
        "s::same": "unchanged",
        "s::errored": "no_verdict",
    }
    markdown = (tmp_path / "c.md").read_text()
    assert markdown.startswith(
        "<!-- toolproof-runs-compare -->\n## ✅ toolproof runs compare: no evidence of a change"
    )
    assert "paired comparison of 5 cases: no evidence of a change" in markdown
    assert "| `s::regressed` | 3/3 → 1/3 |" in markdown
    assert "exit code 0" in markdown
    # --json prints the same comparison; --all lists the unchanged case too.
    printed = toolproof("runs", "compare", old, new, "--json", cwd=tmp_path)
    assert json.loads(printed.stdout)["changes"] == data["changes"]
    assert "s::same" in toolproof("runs", "compare", "--all", cwd=tmp_path).stdout


def test_compare_without_regressions_exits_0(tmp_path: Path) -> None:
    logs = tmp_path / ".toolproof" / "runs"
    only_fixed = {"cases": [c for c in NEW["cases"] if c["id"] != "s::regressed"]}
    make_run(logs, "20261201T080000Z", "run", OLD)
    make_run(logs, "20261201T090000Z", "run", only_fixed)
    result = toolproof("runs", "compare", "--report", "markdown:-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("<!-- toolproof-runs-compare -->\n## ✅")
    assert "(exit code 0)" in result.stderr  # the console goes to stderr when stdout is taken


def test_compare_ids_defaults_and_bad_ids(tmp_path: Path) -> None:
    logs = tmp_path / ".toolproof" / "runs"
    a = make_run(logs, "20261201T080000Z", "run", OLD, suffix="aaaaaa")
    r1 = make_run(logs, "20261201T083000Z", "replay", {"results": []}, suffix="111111")
    b = make_run(logs, "20261201T090000Z", "run", NEW, suffix="bbbbbb")
    # The default pair: the latest run and the run of the same kind before it.
    default = toolproof("runs", "compare", "--json", cwd=tmp_path)
    data = json.loads(default.stdout)
    assert (data["old"]["id"], data["new"]["id"]) == (a, b)
    # latest~N, a unique prefix, a path (to the folder or its report.json).
    by_ref = toolproof(
        "runs", "compare", "latest~2", str(logs / b / "report.json"), "--json", cwd=tmp_path
    )
    assert json.loads(by_ref.stdout)["old"]["id"] == a
    assert json.loads(toolproof("runs", "compare", a[:20], b, "--json", cwd=tmp_path).stdout)
    for args, message in (
        (("nope", b), "no run 'nope'"),
        (("20261201T0", b), "is ambiguous"),
        (("latest~9", b), "there are only 3 runs"),
        ((a, r1), "cannot compare a run run"),
        ((str(tmp_path), b), "not a run log"),
    ):
        result = toolproof("runs", "compare", *args, cwd=tmp_path)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, lines)
        assert "Traceback" not in result.stderr
    lonely = tmp_path / "lonely"
    make_run(lonely / ".toolproof" / "runs", "20261201T080000Z", "run", OLD)
    alone = toolproof("runs", "compare", cwd=lonely)
    assert alone.returncode == 2 and "no run run before" in alone.stderr


def test_compare_replays_per_sample_grade(tmp_path: Path) -> None:
    logs = tmp_path / ".toolproof" / "runs"

    def samples(**grades: str) -> dict[str, Any]:
        results = [{"trace_id": k, "grade": v} for k, v in grades.items()]
        return {"format": "toolproof-replay-report", "results": results}

    before = samples(t1="pass", t2="fail", t3="warn", t4="fail", t5="pass")
    after = samples(t1="fail", t2="pass", t3="pass", t4="fail", t6="pass")
    make_run(logs, "20261201T080000Z", "replay", before)
    make_run(logs, "20261201T090000Z", "replay", after)
    result = toolproof("runs", "compare", "--json", cwd=tmp_path)
    assert result.returncode == 0  # one sample of four got worse, one better: no evidence
    data = json.loads(result.stdout)
    assert data["comparison"]["test"] == "mcnemar-exact" and data["comparison"]["paired"] == 4
    changes = {c["key"]: (c["change"], c["old"], c["new"]) for c in data["changes"]}
    assert changes == {
        "t1": ("regressed", "pass", "fail"),
        "t2": ("fixed", "fail", "pass"),
        "t3": ("changed", "warn", "pass"),
        "t4": ("still_failing", "fail", "fail"),
        "t5": ("removed", "pass", None),
        "t6": ("new", None, "pass"),
    }
    console = toolproof("runs", "compare", cwd=tmp_path).stdout
    assert "pass → fail" in console and "replays, per sample grade" in console


def test_runs_list_newest_first_and_json(tmp_path: Path) -> None:
    empty = toolproof("runs", "list", cwd=tmp_path)
    assert empty.returncode == 0 and "no runs in .toolproof/runs" in empty.stdout
    logs = tmp_path / ".toolproof" / "runs"
    old = make_run(logs, "20261201T080000Z", "run", OLD, exit_code=1)
    new = make_run(logs, "20261201T090000Z", "replay", {"results": []})
    (logs / "not-a-run").mkdir()
    (logs / "20261201T100000Z-run-badbad").mkdir()  # no meta.json: left out
    listed = toolproof("runs", "list", cwd=tmp_path)
    assert listed.returncode == 0
    rows = [line for line in listed.stdout.splitlines() if "-run-" in line or "-replay-" in line]
    assert [row.split()[1] for row in rows] == [new, old]
    assert "status" not in listed.stdout  # shown only when a run did not finish
    assert "12-01 08:00" in rows[1] and "s.eval.yaml" in rows[1] and "m:1" in rows[1]
    assert "traces.db" in rows[0] and "1.5 s" in rows[0]
    data = json.loads(toolproof("runs", "list", "--json", cwd=tmp_path).stdout)
    assert [r["id"] for r in data] == [new, old]
    assert data[1]["exit_code"] == 1 and data[1]["kind"] == "run"
    only = json.loads(toolproof("runs", "list", "--json", "--kind", "run", cwd=tmp_path).stdout)
    assert [r["id"] for r in only] == [old]


@settings(max_examples=60)
@given(
    meta=st.dictionaries(
        st.sampled_from(
            ["kind", "status", "started", "argv", "suites", "counts", "exit_code", "duration_s",
             "interrupted", "model", "store", "finished"]
        ),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
            lambda inner: st.lists(inner, max_size=3)
            | st.dictionaries(st.text(max_size=5), inner, max_size=3),
            max_leaves=8,
        ),
    ),
    report=st.recursive(
        st.none() | st.integers() | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["cases", "results", "id", "verdict", "passes",
                                           "trace_id", "grade", "failures"]), inner, max_size=4),
        max_leaves=12,
    ),
)  # fmt: skip
def test_hostile_run_logs_never_crash_listing_or_comparing(
    tmp_path_factory: pytest.TempPathFactory, meta: dict[str, Any], report: Any
) -> None:
    from toolproof._runlog import compare_runs, list_runs, load_run
    from toolproof.errors import UserError

    logs = tmp_path_factory.mktemp("logs")
    for name in ("20261201T080000Z-run-aaaaaa", "20261201T090000Z-run-bbbbbb"):
        (logs / name).mkdir()
        (logs / name / "meta.json").write_text(json.dumps({**meta, "format": "toolproof-run-meta"}))
        (logs / name / "report.json").write_text(json.dumps(report))
    (logs / "20261201T100000Z-run-cccccc").mkdir()
    (logs / "20261201T100000Z-run-cccccc" / "meta.json").write_text("{not json")
    runs = list_runs(logs)
    assert len(runs) == 2
    for info in runs:
        assert isinstance(info.argv, list) and all(isinstance(v, int) for v in info.counts.values())
    try:
        old, new = load_run(runs[1].path), load_run(runs[0].path)
        changes = compare_runs(old, new)
    except UserError:
        return  # a report that is not an object, or runs of different kinds: one clear error
    assert all(c.change in ("unchanged", "no_verdict", "still_failing", "flaky", "changed",
                            "fixed", "regressed") for c in changes)  # fmt: skip


def test_real_runs_compare_after_a_regression(tmp_path: Path) -> None:
    suite = write(tmp_path / "lf.eval.yaml", LAST_FAILED)
    assert toolproof("run", str(suite), "-q", cwd=tmp_path).returncode == 0
    write(suite, LAST_FAILED.replace('"96 TWO"', '"96"'))
    assert toolproof("run", str(suite), "-q", cwd=tmp_path).returncode == 1
    result = toolproof("runs", "compare", cwd=tmp_path)
    assert result.returncode == 0  # one case of two: its verdict changed, but that is no evidence
    line = next(line for line in result.stdout.splitlines() if "lf::two" in line)
    assert "regressed" in line and "1/1 → 0/1" in line
    assert "1 regressed" in result.stdout


# -- replay -------------------------------------------------------------------------------------


def test_replay_writes_a_run_log_with_new_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "replay"))
    from replay_helpers import user_trace

    from toolproof.replay import TraceStore

    db = tmp_path / "t.db"
    with TraceStore(db) as store:
        store.add_many([user_trace(1), user_trace(2)])
    agent = write(
        tmp_path / "ops.py",
        """\
        from toolproof import Agent
        from replay_helpers import query_users


        def build(model, tools=None):
            return Agent(model, tools if tools is not None else [query_users])
        """,
    )
    assert agent.exists()
    args = ("replay", "--store", str(db), "--mode", "model", "--agent", "ops:build")
    first = toolproof(*args, "--model", "recorded", "-v", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    [log] = runs_in(tmp_path / ".toolproof" / "runs")
    assert "-replay-" in log.name and RUN_ID.match(log.name)
    report = json.loads((log / "report.json").read_text())
    assert report["format"] == "toolproof-replay-report" and report["version"] == 1
    assert len(report["results"]) == 2
    assert all(r["new_trace"]["steps"] for r in report["results"])
    meta = json.loads((log / "meta.json").read_text())
    assert meta["kind"] == "replay" and meta["store"] == str(db) and meta["exit_code"] == 0
    assert meta["counts"] == {"samples": 2, "pass": 2, "warn": 0, "fail": 0, "error": 0}
    assert toolproof(*args, "--model", "recorded", "--no-log", cwd=tmp_path).returncode == 0
    assert len(runs_in(tmp_path / ".toolproof" / "runs")) == 1
    assert toolproof(*args, "--model", "recorded", cwd=tmp_path).returncode == 0
    compared = toolproof("runs", "compare", "--json", cwd=tmp_path)
    assert compared.returncode == 0
    assert {c["change"] for c in json.loads(compared.stdout)["changes"]} == {"unchanged"}


@pytest.mark.timeout(180)  # a replay that never starts or never stops fails here
@pytest.mark.skipif(sys.platform == "win32", reason="signal delivery to a child is POSIX-only")
def test_a_replay_stopped_by_sigterm_finishes_its_run_log_as_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SIGTERM (a cancelled CI job) is handled as Ctrl-C by every command: the log says so.
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "replay"))
    from replay_helpers import user_trace

    from toolproof.replay import TraceStore

    db = tmp_path / "t.db"
    with TraceStore(db) as store:  # (about 10 s of replay: stopped well before its end)
        base = [user_trace(n) for n in range(1, 7)]
        store.add_many([replace(base[n % 6], id=f"s-{n:05d}") for n in range(12_000)])
    write(
        tmp_path / "ops.py",
        """\
        from toolproof import Agent
        from replay_helpers import query_users


        def build(model, tools=None):
            return Agent(model, tools if tools is not None else [query_users])
        """,
    )
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "NO_COLOR": "1"}
    env.pop("TOOLPROOF_LOG_DIR", None)
    process = processes.start(
        [
            sys.executable,
            "-m",
            "toolproof",
            "replay",
            "--store",
            str(db),
            "--mode",
            "model",
            "--agent",
            "ops:build",
            "--model",
            "recorded",
            "--concurrency",
            "1",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    logs_dir = tmp_path / ".toolproof" / "runs"
    while not runs_in(logs_dir):  # the replay started (however busy the machine is)
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    [log] = runs_in(logs_dir)
    meta = json.loads((log / "meta.json").read_text())
    assert meta["kind"] == "replay"
    assert meta["status"] == "interrupted" and meta["exit_code"] == 130 and meta["interrupted"]


# -- hostile text, generated ---------------------------------------------------------------------

_HOSTILE_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("<>&[]/]\"'`*_|:=\x1b\x07\x00\x9b\ud7ff\ufffe\n\t ")),
        st.characters(),
    ),
    max_size=80,
)


@settings(max_examples=100)
@given(content=_HOSTILE_TEXT, arguments=_HOSTILE_TEXT, result=_HOSTILE_TEXT)
@example(content="<", arguments="", result="\ud800")  # a lone surrogate in JUnit XML
def test_any_model_text_prints_literally_and_stays_escaped(
    content: str, arguments: str, result: str
) -> None:
    import io

    from rich.console import Console

    from toolproof._reporting import (
        JUnitCase,
        JUnitSuite,
        _xml_text,
        junit_xml,
        md_pre,
        printable,
        transcript_rich,
        transcript_text,
    )
    from toolproof._text import clip

    trace = {
        "id": "t1",
        "input": content,
        "steps": [
            {
                "response": {
                    "content": content,
                    "tool_calls": [{"name": "f", "id": "c1", "raw_arguments": arguments}],
                },
                "tool_results": [
                    {"call_id": "c1", "name": "f", "status": "error", "error_type": "X",
                     "content": result}
                ],
            }
        ],
        "output": result,
        "stop_reason": "final",
    }  # fmt: skip
    shown = clip(printable(content), 500)
    assume(shown)  # an empty answer has no "assistant:" line
    text = transcript_rich([trace])
    assert f"assistant: {shown}" in text.plain
    buffer = io.StringIO()
    Console(file=buffer, width=10_000, color_system=None, emoji=True).print(text, soft_wrap=True)
    assert f"assistant: {shown}" in buffer.getvalue()
    assert "\x1b" not in buffer.getvalue()
    plain = transcript_text([trace])
    document = junit_xml([JUnitSuite("s", [JUnitCase("c", "s", system_out=plain)])])
    parsed = ET.fromstring(document).findtext(".//system-out") or ""
    assert _xml_text(f"assistant: {shown}") in parsed
    inner = md_pre(plain).removeprefix("<pre>\n").removesuffix("\n</pre>")
    assert "<" not in inner and ">" not in inner


def test_replay_verbose_and_reports_show_the_new_run_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "replay"))
    from replay_helpers import user_trace

    from toolproof.replay import TraceStore

    with TraceStore(tmp_path / "t.db") as store:
        store.add_many([user_trace(1)])
    write(
        tmp_path / "ops.py",
        f"""\
        from toolproof import Agent
        from toolproof.testing import ScriptedModel
        from replay_helpers import query_users


        def build(model, tools=None):
            return Agent(model, tools if tools is not None else [query_users])


        def rude():
            return ScriptedModel([{json.dumps(HOSTILE + " " + ESCAPES)}] * 3)
        """,
    )
    result = toolproof(
        "replay", "--store", "t.db", "--mode", "model", "--agent", "ops:build",
        "--model", "ops:rude", "-v", "--report", "junit:j.xml", "--report", "markdown:m.md",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    section = result.stdout.split("transcripts of failing samples", 1)[1]
    assert "user: Who is user 1?" in section
    assert f"assistant: {HOSTILE}" in section and "stop: final" in section
    assert "\x1b" not in result.stdout  # neither -v nor the findings send escape sequences
    junit = ET.fromstring((tmp_path / "j.xml").read_text())
    out = junit.findtext(".//system-out") or ""
    assert out.startswith("transcript of the new run:") and f"assistant: {HOSTILE}" in out
    markdown = (tmp_path / "m.md").read_text()
    assert "<script>" not in markdown and "&lt;script&gt;" in markdown
    assert "transcript of the new run</summary>" in markdown
    [log] = runs_in(tmp_path / ".toolproof" / "runs")
    report = json.loads((log / "report.json").read_text())
    assert report["results"][0]["grade"] == "fail"
    assert report["results"][0]["new_trace"]["output"] == HOSTILE + " " + ESCAPES
