"""A command agent is a process toolproof starts: what it inherits, reads and leaves behind.

Each hostile behaviour (flooding stdout, leaving children behind, a child holding the
output pipe, a NUL in the input, secrets in toolproof's environment) goes through the
Python API, ``toolproof run`` as a subprocess, and the pytest plugin. What is checked is
counted: processes still alive, bytes kept, variables the child saw. A hang is caught by
the test's time limit.
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
from _suites import AGENTS
from hypothesis import given, settings
from hypothesis import strategies as st

import toolproof.evals
import toolproof.testing._suites  # noqa: F401
from toolproof.evals import evaluate_async, load_suite

pytest_plugins = ["pytester"]

SRC = Path(__file__).resolve().parents[2] / "src"
HOSTILE = [sys.executable, str(AGENTS / "hostile_agent.py")]


def _suite(
    folder: Path,
    *cases: tuple[str, str],
    timeout: float = 60,
    arg: bool = False,
    env: dict[str, str] | None = None,
    name: str = "hostile",
) -> Path:
    agent: dict[str, Any] = {
        "command": [*HOSTILE, "{input}"] if arg else HOSTILE,
        "timeout": timeout,
        "env": {"HOSTILE_DIR": str(folder), **(env or {})},
    }
    lines = [f"suite: {name}\nagent: {json.dumps(agent)}\ncases:"]
    for case, question in cases:
        lines.append(
            textwrap.indent(
                f"- name: {case}\n  input: {json.dumps(question)}\n"
                "  script: ['an apple costs 2 euros']\n  expect: {final_contains: '2 euros'}",
                "  ",
            )
        )
    path = folder / f"{name}.eval.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _alive(pid: int) -> bool:
    """Whether a process runs (a zombie waiting for its parent counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _children(folder: Path) -> list[int]:
    path = folder / "children"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


async def _python_api(*paths: Path) -> dict[str, tuple[str, str]]:
    suites = [load_suite(path) for path in paths]
    report = await evaluate_async(suites, model="scripted", keep_traces=True)
    return {c.case.name: (c.verdict, c.trials[0].error or c.reason) for c in report.cases}


def _cli(
    *paths: Path, env: dict[str, str] | None = None
) -> tuple[int, dict[str, tuple[str, str]], str]:
    out = paths[0].parent / "report.json"
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolproof",
            "run",
            *map(str, paths),
            "--model",
            "scripted",
            "--report",
            f"json:{out}",
        ],
        env={**(env if env is not None else os.environ), "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        cwd=paths[0].parent,
        start_new_session=True,
    )
    data = json.loads(out.read_text()) if out.exists() else {"cases": []}
    verdicts = {}
    for case in data["cases"]:
        error = (case.get("trials") or [{}])[0].get("error") or {}
        verdicts[case["name"]] = (case["verdict"], error.get("message") or case["reason"])
    return process.returncode, verdicts, process.stderr


# -- what a process leaves behind ---------------------------------------------------------------


@pytest.mark.timeout(240)
@pytest.mark.parametrize("entry", ["python", "cli"])
async def test_children_of_a_command_agent_never_outlive_its_case(
    entry: str, tmp_path: Path
) -> None:
    # The cases that answer get a generous limit (a loaded machine starts them slowly); the one
    # that hangs gets a short one of its own, so the test does not wait out the long one.
    answering = _suite(
        tmp_path,
        ("orphan", "orphan: a child in the background"),
        ("holder", "holder: a child holding stdout open"),
        timeout=60,
    )
    hanging = _suite(tmp_path, ("hang", "hang: never answers"), timeout=6, name="hanging")
    if entry == "python":
        verdicts = await _python_api(answering, hanging)
    else:
        code, verdicts, err = _cli(answering, hanging)
        assert code == 1 and "Traceback" not in err, err
    # A child holding stdout does not make the case wait for its time limit: it answered.
    assert verdicts["orphan"][0] == "pass", verdicts
    assert verdicts["holder"][0] == "pass", verdicts
    assert verdicts["hang"] == ("fail", verdicts["hang"][1])
    assert "did not finish within 6 s" in verdicts["hang"][1]
    children = _children(tmp_path)
    assert len(children) == 3
    assert [pid for pid in children if _alive(pid)] == []


@pytest.mark.timeout(240)
@pytest.mark.parametrize("entry", ["python", "cli"])
async def test_an_agent_flooding_stdout_fails_its_case_naming_the_limit(
    entry: str, tmp_path: Path
) -> None:
    path = _suite(tmp_path, ("flood", "flood"), ("fine", "fine"))
    if entry == "python":
        verdicts = await _python_api(path)
    else:
        code, verdicts, err = _cli(path)
        assert code == 1 and "Traceback" not in err, err
        assert (tmp_path / "report.json").stat().st_size < 200_000  # not the flood
    verdict, why = verdicts["flood"]
    assert verdict == "fail"
    assert "printed more than 1024 KiB (the limit of an agent's answer) on stdout" in why
    assert len(why) < 1000
    assert verdicts["fine"][0] == "pass"


@pytest.mark.timeout(240)
@pytest.mark.parametrize("entry", ["python", "cli"])
async def test_a_nul_in_the_input_fails_only_its_case_or_reaches_stdin_intact(
    entry: str, tmp_path: Path
) -> None:
    question = "echo: before\x00after"
    as_argument = _suite(tmp_path, ("nul", question), ("fine", "fine"), arg=True)
    if entry == "python":
        verdicts = await _python_api(as_argument)
    else:
        code, verdicts, err = _cli(as_argument)
        assert code == 1 and "Traceback" not in err, err
    assert verdicts["nul"][0] == "fail"
    assert "NUL character" in verdicts["nul"][1] and "stdin" in verdicts["nul"][1]
    assert verdicts["fine"][0] == "pass"  # the run went on
    on_stdin = _suite(tmp_path, ("nul", question))
    verdicts = await _python_api(on_stdin) if entry == "python" else _cli(on_stdin)[1]
    assert verdicts["nul"][0] == "pass"
    assert (tmp_path / "input.bin").read_bytes() == question.encode()


# -- what a process inherits ----------------------------------------------------------------------

PLANTED = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-planted-anthropic",
    "AWS_SECRET_ACCESS_KEY": "planted-aws-secret",
    "AWS_ACCESS_KEY_ID": "AKIAPLANTED",
    "DEEPSEEK_API_KEY": "sk-planted-deepseek",
    "GITHUB_TOKEN": "ghp_planted",
    "OPENAI_API_KEY": "sk-planted-openai",
    "OPENAI_BASE_URL": "https://planted.example/v1",
    "OPENAI_ORG_ID": "org-planted",
    "AZURE_OPENAI_API_KEY": "planted-azure",
    "HF_TOKEN": "hf_planted",
    "NPM_TOKEN": "npm_planted",
    "PGPASSWORD": "planted-pg",
    "DATABASE_URL": "postgresql://user:planted-db@host/db",
    "HTTPS_PROXY": "http://user:planted-proxy@proxy:3128",
    "GOOGLE_APPLICATION_CREDENTIALS": "/planted/credentials.json",
    "SSH_AUTH_SOCK": "/planted/ssh-agent.sock",
    "TOOLPROOF_STORE": "postgresql://u:planted-store@h/db",
}

_NAMES = st.from_regex(r"[A-Z][A-Z0-9_]{2,20}", fullmatch=True).filter(
    lambda n: not n.startswith("LC_") and n not in _kept()
)


def _kept() -> set[str]:
    from toolproof.server._external import INHERITED

    return set(INHERITED) | {"HOSTILE_DIR", "SUITE_NAMED"}


def _leaks(seen: dict[str, str], planted: dict[str, str]) -> list[str]:
    values = "\n".join(f"{k}={v}" for k, v in seen.items())
    return [name for name, value in planted.items() if value in values]


@pytest.mark.timeout(240)
@settings(max_examples=3, deadline=None)
@given(extra=st.dictionaries(_NAMES, st.just(""), min_size=5, max_size=20))
def test_no_planted_secret_reaches_a_command_agent_through_the_command_line(
    tmp_path_factory: pytest.TempPathFactory, extra: dict[str, str]
) -> None:
    folder = tmp_path_factory.mktemp("env")
    planted = {**PLANTED, **{name: f"planted-{n}-{name.lower()}" for n, name in enumerate(extra)}}
    path = _suite(folder, ("env", "env"), env={"SUITE_NAMED": "named-by-the-suite"})
    code, verdicts, err = _cli(path, env={**os.environ, **planted})
    assert code == 0, (verdicts, err)
    seen = json.loads((folder / "env.json").read_text())
    assert _leaks(seen, planted) == []
    assert seen["SUITE_NAMED"] == "named-by-the-suite"
    assert seen["OPENAI_API_KEY"].startswith("tp-") and "/t/" in seen["OPENAI_BASE_URL"]
    assert seen["PATH"] == os.environ["PATH"]


@pytest.mark.timeout(240)
async def test_no_planted_secret_reaches_a_command_agent_through_the_python_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    path = _suite(tmp_path, ("env", "env"), env={"SUITE_NAMED": "named-by-the-suite"})
    verdicts = await _python_api(path)
    assert verdicts["env"][0] == "pass", verdicts
    seen = json.loads((tmp_path / "env.json").read_text())
    assert _leaks(seen, PLANTED) == []
    assert seen["SUITE_NAMED"] == "named-by-the-suite"


@pytest.mark.timeout(240)
def test_no_planted_secret_reaches_a_command_agent_through_the_pytest_plugin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "addopts = -p no:cacheprovider\n"
    )
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    folder = Path(pytester.path)
    _suite(folder, ("env", "env"), env={"SUITE_NAMED": "named-by-the-suite"})
    result = pytester.runpytest_inprocess("hostile.eval.yaml")
    result.assert_outcomes(passed=1)
    seen = json.loads((folder / "env.json").read_text())
    assert _leaks(seen, PLANTED) == []
    assert seen["SUITE_NAMED"] == "named-by-the-suite"
