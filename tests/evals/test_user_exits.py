"""The user's code never decides the exit code: ``SystemExit``, ``KeyboardInterrupt``,
``GeneratorExit`` and the user's own ``BaseException`` raised from every hook.

Each kind is raised from each place where toolproof runs the user's code during a run (the
agent factory on a trial, a tool, a registered check, the judge model, a mock factory) and
the run goes through ``toolproof run`` as a subprocess and through the Python API. The exit
code then follows the documented table (docs/evals.md): a bug in the user's code fails its
case (1); a ``KeyboardInterrupt`` stops the run as Ctrl-C does (130); the reports are written
either way and the console never shows asyncio's "Task was destroyed".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The kinds, as Python source raising them.
KINDS = {
    "exit0": "SystemExit(0)",
    "exit1": "SystemExit(1)",
    "exitnone": "SystemExit(None)",
    "exitstr": 'SystemExit("x")',
    "keyboard": "KeyboardInterrupt()",
    "generatorexit": "GeneratorExit()",
    "own": "Mine()",
}
HOOKS = ("factory", "tool", "check", "judge", "mocks")
#: The cases that fail, by the hook that raised (the second case calls the real tool).
FAILING = {
    "factory": ["first", "second"],
    "tool": ["second"],
    "check": ["first"],
    "judge": ["first"],
    "mocks": ["first"],
}

MODULE = """\
import os

from toolproof import Agent, tool
from toolproof.evals import SessionRecord, check
from toolproof.testing import FunctionModel


class Mine(BaseException):
    pass


def boom(hook):
    if os.environ.get("EXITS_HOOK") == hook:
        raise {kind}


@tool
def lookup(key: str) -> str:
    \"\"\"Look a key up.

    Args:
        key: The key.
    \"\"\"
    boom("tool")
    return "value of " + key


CALLS = []


def build_agent(model, tools=None, **options):
    CALLS.append(1)
    if len(CALLS) > 3:  # (the probe at load and the checks before the run pass)
        boom("factory")
    return Agent(model, [lookup] if tools is None else tools, max_steps=4)


@check("exits_check")
def exits_check(record: SessionRecord, value: object) -> bool:
    boom("check")
    return True


def _judge(messages, info):
    boom("judge")
    return "PASS: fine"


JUDGE = FunctionModel(_judge, name="judge")


MOCKS = []


def mocks():
    MOCKS.append(1)
    if len(MOCKS) > 1:  # (the suite's check when it loads passes)
        boom("mocks")
    return [{{"lookup": lambda key: "mocked " + key}}]
"""

SUITE = """\
suite: exits
checks: [exitsmod]
agent: exitsmod:build_agent
model: scripted
judge_model: exitsmod:JUDGE
cases:
  - name: first
    input: look up a
    mocks: [exitsmod:mocks]
    tools: mock
    expect: {exits_check: true}
    judge: [The answer is fine.]
    judge_when: always
    script:
      - call: {name: lookup, arguments: {key: a}}
      - done
  - name: second
    input: look up b
    script:
      - call: {name: lookup, arguments: {key: b}}
      - done
"""


def _setup(tmp_path: Path, kind: str) -> Path:
    (tmp_path / "exitsmod.py").write_text(MODULE.format(kind=KINDS[kind]), encoding="utf-8")
    suite = tmp_path / "exits.eval.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    return suite


def _interrupts(kind: str, hook: str) -> bool:
    # A tool's KeyboardInterrupt stops its run as ToolCrashed, like its SystemExit
    # (docs/guarantees.md): the case fails.
    return kind == "keyboard" and hook != "tool"


def _expected(kind: str, hook: str) -> int:
    return 130 if _interrupts(kind, hook) else 1


@pytest.mark.timeout(120)
@pytest.mark.parametrize("hook", HOOKS)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_base_exception_of_the_users_code_never_decides_the_exit_code(
    tmp_path: Path, kind: str, hook: str
) -> None:
    suite = _setup(tmp_path, kind)
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")]),
        "EXITS_HOOK": hook,
        "NO_COLOR": "1",
        "TOOLPROOF_LOG_DIR": str(tmp_path / "runs"),
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolproof",
            "run",
            str(suite),
            "--no-cache",
            "--judge-model",
            "exitsmod:JUDGE",
            "--report",
            f"json:{tmp_path / 'r.json'}",
            "--report",
            f"junit:{tmp_path / 'r.xml'}",
        ],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=100,
    )
    output = result.stdout + result.stderr
    assert result.returncode == _expected(kind, hook), output
    assert "Task was destroyed" not in output
    assert "Traceback" not in output
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["exit_code"] == result.returncode
    assert (tmp_path / "r.xml").read_text(encoding="utf-8").startswith("<?xml")
    (log,) = (tmp_path / "runs").iterdir()
    meta = json.loads((log / "meta.json").read_text(encoding="utf-8"))
    assert meta["exit_code"] == result.returncode
    assert json.loads((log / "report.json").read_text(encoding="utf-8"))["exit_code"] == (
        result.returncode
    )
    if _interrupts(kind, hook):
        assert report["interrupted"] is True
    else:
        failed = _failed(report)
        assert failed == FAILING[hook], output
        message = _case(report, failed[0])["trials"][0]["error"]["message"]
        assert type_name(kind) in message, message


def _failed(report: dict[str, Any]) -> list[str]:
    return [case["name"] for case in report["cases"] if case["verdict"] == "fail"]


def _case(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(case for case in report["cases"] if case["name"] == name)


def type_name(kind: str) -> str:
    return KINDS[kind].split("(")[0]


@pytest.mark.parametrize("hook", HOOKS)
@pytest.mark.parametrize("kind", ["exit0", "own", "keyboard"])
def test_the_python_api_keeps_the_verdict_and_writes_the_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, hook: str
) -> None:
    from toolproof.evals import evaluate
    from toolproof.evals._checks import unregister

    suite = _setup(tmp_path, kind)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("EXITS_HOOK", hook)
    sys.modules.pop("exitsmod", None)
    report_path = tmp_path / "r.json"
    import exitsmod  # type: ignore[import-not-found]

    judge = exitsmod.JUDGE
    try:
        if _interrupts(kind, hook):
            with pytest.raises(KeyboardInterrupt):
                evaluate([suite], cache=False, judge_model=judge, reports=[f"json:{report_path}"])
            assert json.loads(report_path.read_text(encoding="utf-8"))["interrupted"] is True
            return
        report = evaluate([suite], cache=False, judge_model=judge, reports=[f"json:{report_path}"])
    finally:
        unregister("exits_check")
        sys.modules.pop("exitsmod", None)
    assert report.exit_code == 1
    data = json.loads(report_path.read_text(encoding="utf-8"))
    assert data["exit_code"] == 1
    assert _failed(data) == FAILING[hook]


def test_a_factory_that_exits_before_anything_runs_is_a_configuration_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "quitter.py").write_text(
        textwrap.dedent(
            """\
            import sys

            def build_agent(model, tools=None, **options):
                sys.exit(0)
            """
        ),
        encoding="utf-8",
    )
    suite = tmp_path / "q.eval.yaml"
    suite.write_text(
        "suite: q\nagent: quitter:build_agent\nmodel: scripted\n"
        "cases: [{name: a, input: hi, script: [done]}]\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", str(suite)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")])},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "SystemExit" in result.stderr
