"""A check of yours that never finishes fails its case, naming the check and its bound.

Every kind of stuck check (blocking, awaiting forever, an ``async def`` that blocks its loop,
spinning the CPU), written where checks go (a case's ``expect``, the suite's, a turn's),
under both bounds (the case's ``timeout``; the check bound when the case has none), from
every entry point: ``evaluate`` in Python, the pytest plugin's suite items and
``toolproof run`` in a process of its own, which must still exit. Hangs are caught by
pytest-timeout, nothing is timed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

# pytester restores sys.modules after each in-process run; keep what inner runs import loaded.
import toolproof.evals
import toolproof.testing._suites  # noqa: F401
from toolproof.evals import _checks, evaluate, load_suite
from toolproof.evals._checks import unregister

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BOUND = 0.3


#: The checks of ``stuckchecks.py``.
KINDS = ["stuck_sync", "stuck_async", "stuck_async_blocking", "spinning"]


@pytest.fixture(autouse=True)
def release() -> Iterator[None]:
    """Register the stuck checks for the test; when it ends, let every one of them finish
    (their threads must then end) and forget them, so no other test sees them."""
    import stuckchecks

    stuckchecks.RELEASE.clear()
    try:
        yield
    finally:
        stuckchecks.RELEASE.set()
        for thread in threading.enumerate():
            if thread.name.startswith("toolproof check "):
                thread.join(10)
                assert not thread.is_alive(), f"{thread.name} still running after its release"
        for name in KINDS:
            unregister(name)
        sys.modules.pop("stuckchecks", None)


def suite_text(kind: str, where: str, timeout: bool) -> str:
    """A suite whose case ``stuck`` has the check ``kind`` in ``where``, and a case ``fine``."""
    check = f"{{{kind}: true}}"
    stuck = {
        "case": f"input: hi, expect: {check}",
        "suite": "input: hi",
        "turn": f"turns: [{{input: hi, expect: {check}}}]",
    }[where]
    text = "suite: bounded\nagent: evalagents:build_agent\nmodel: scripted\n"
    text += "checks: [stuckchecks]\n"
    if where == "suite":
        text += f"expect: {check}\n"
    if timeout:
        text += f"timeout: {BOUND}\n"
    return text + (
        "cases:\n"
        f"  - {{name: stuck, {stuck}, script: [hello]}}\n"
        "  - {name: fine, input: hi, script: [hello], expect: {final_contains: hello}}\n"
    )


def expected_reason(kind: str, timeout: bool) -> str:
    bound = (
        f"the case's timeout ({BOUND:g} s)"
        if timeout
        else f"{BOUND:g} s (a check's bound when its case sets no timeout)"
    )
    return f"the check {kind!r} did not finish within {bound}; it was left running in its thread"


CASES = [
    (kind, where, timeout)
    for kind in KINDS
    for where in ("case", "suite", "turn")
    for timeout in (True, False)
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("kind", "where", "timeout"),
    CASES,
    ids=[f"{k}-in-{w}-{'timeout' if t else 'check-bound'}" for k, w, t in CASES],
)
def test_python_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, where: str, timeout: bool
) -> None:
    monkeypatch.setattr(_checks, "CHECK_TIMEOUT", BOUND)
    monkeypatch.setattr("toolproof.evals._runner.CHECK_TIMEOUT", BOUND)
    path = tmp_path / "bounded.eval.yaml"
    path.write_text(suite_text(kind, where, timeout), encoding="utf-8")
    report = evaluate([load_suite(path)], cache=False)
    # A suite's check is every case's: then both cases are stuck, one after the other.
    stuck = report.cases if where == "suite" else report.cases[:1]
    assert [case.verdict for case in report.cases] == (
        ["fail", "fail"] if where == "suite" else ["fail", "pass"]
    )
    assert report.exit_code == 1
    for case in stuck:
        [trial] = case.trials
        [failed] = [c for c in trial.checks if c.status != "pass"]
        assert failed.check == kind and failed.status == "fail"
        assert failed.reason == expected_reason(kind, timeout)
        assert failed.turn == (1 if where == "turn" else None)
        assert trial.status == "fail" and trial.error is None
        # The trial keeps the checks that ran before the stuck one.
        assert "completed" in [c.check for c in trial.checks if c.status == "pass"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
def test_pytest_plugin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "addopts = -p no:cacheprovider\n"
    )
    monkeypatch.syspath_prepend(str(HERE))
    (pytester.path / "bounded.eval.yaml").write_text(
        suite_text(kind, "case", True), encoding="utf-8"
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*bounded.eval.yaml::stuck FAILED*", "*bounded.eval.yaml::fine PASSED*"]
    )
    result.stdout.fnmatch_lines([f"*fail: {kind}: {expected_reason(kind, True)}*"])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", KINDS)
def test_cli_fails_the_case_and_the_process_exits(tmp_path: Path, kind: str) -> None:
    (tmp_path / "bounded.eval.yaml").write_text(suite_text(kind, "case", True), encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT / "src")]),
        "NO_COLOR": "1",
        "COLUMNS": "300",
    }
    # The stuck check is never released in that process: it must exit all the same.
    process = subprocess.Popen(
        [sys.executable, "-m", "toolproof", "run", "bounded.eval.yaml"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=100)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
            process.wait()
    assert process.returncode == 1, out + err
    text = " ".join((out + err).split())
    assert f"{kind} (x1): {expected_reason(kind, True)}" in text, text
    assert "PASS bounded::fine (1/1 trials passed)" in text, text
    assert "Traceback" not in err
