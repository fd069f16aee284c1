"""Exit codes and error messages of the CLI, as a real subprocess.

The table (docs/evals.md, docs/replay.md): 0 passed, 1 a check failed, 2 usage or
configuration error found before anything ran, 3 the model provider or the network failed,
5 nothing ran. Errors are one line without a Python traceback unless ``--traceback`` (or
``TOOLPROOF_TRACEBACK=1``) asks for the user's own frames.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml  # noqa: F401 - loaded here, so in-process pytester runs share one YAML loader

# pytester restores sys.modules after each in-process run; keep what inner runs import loaded.
import toolproof.evals
import toolproof.evals._suite
import toolproof.models
import toolproof.testing
import toolproof.testing._suites

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PYTHONPATH = os.pathsep.join([str(HERE), str(ROOT / "src")])

pytest_plugins = ["pytester"]


def toolproof(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": PYTHONPATH, "NO_COLOR": "1", "COLUMNS": "200"}
    for name in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "TOOLPROOF_TRACEBACK"):
        environ.pop(name, None)
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def inner_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\n"
        "asyncio_mode = auto\n"
        "asyncio_default_fixture_loop_scope = function\n"
        "addopts = --strict-markers -p no:cacheprovider\n"
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a configuration error (exit 2, nothing on stdout)."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout == ""
    return lines[0]


JUDGED = """\
suite: judged
agent: evalagents:build_agent
model: scripted
cases:
  - name: a
    input: hi
    judge: [The answer is polite.]
    script: [hello]
"""


def test_an_unknown_or_keyless_judge_model_exits_2_before_running(tmp_path: Path) -> None:
    suite = write(tmp_path / "judged.eval.yaml", JUDGED)
    line = one_line_error(toolproof("run", str(suite), "--judge-model", "nowhere:x", cwd=tmp_path))
    assert line.startswith("toolproof: error: --judge-model nowhere:x: unknown model provider")
    line = one_line_error(
        toolproof("run", str(suite), "--judge-model", "deepseek:deepseek-chat", cwd=tmp_path)
    )
    assert line == (
        "toolproof: error: deepseek:deepseek-chat needs an API key: set the environment "
        "variable DEEPSEEK_API_KEY (or pass api_key=...)"
    )


def test_a_factory_that_fails_with_the_real_model_exits_2_before_running(tmp_path: Path) -> None:
    write(
        tmp_path / "picky.py",
        """\
        from evalagents import build_agent
        from toolproof.testing import FunctionModel

        MODEL = FunctionModel(lambda messages, info: "hi", name="mine")

        def factory(model, tools=None):
            if model.name == "mine":
                settings = {}
                return settings["endpoint"]
            return build_agent(model, tools)
        """,
    )
    suite = write(
        tmp_path / "picky.eval.yaml",
        "suite: picky\nagent: picky:factory\ncases: [{name: a, input: hi}]\n",
    )
    result = toolproof("run", str(suite), "--model", "picky:MODEL", cwd=tmp_path)
    line = one_line_error(result)
    assert line == (
        "toolproof: error: picky::a: agent factory picky:factory failed with model mine: "
        "KeyError: 'endpoint' (picky.py:9 in factory)"
    )
    shown = toolproof("--traceback", "run", str(suite), "--model", "picky:MODEL", cwd=tmp_path)
    assert shown.returncode == 2
    assert 'File "' + str(tmp_path / "picky.py") + '", line 9, in factory' in shown.stderr
    assert "_runner.py" not in shown.stderr


def test_a_model_given_as_module_attr_runs(tmp_path: Path) -> None:
    write(
        tmp_path / "mymodel.py",
        """\
        from toolproof.testing import FunctionModel

        MODEL = FunctionModel(lambda messages, info: "12 x 8 = 96", name="mine")
        """,
    )
    suite = write(
        tmp_path / "m.eval.yaml",
        "suite: m\nagent: evalagents:build_agent\n"
        "cases: [{name: a, input: hi, expect: {final_contains: '96'}}]\n",
    )
    result = toolproof("run", str(suite), "--model", "mymodel:MODEL", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "✅ toolproof evals: 1/1 blocking cases passed" in result.stdout


def test_a_run_where_nothing_ran_exits_5_and_does_not_look_green(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
        suite: s
        agent: evalagents:build_agent
        model: scripted
        cases:
          - {name: a, input: hi, skip: waiting for the API}
          - {name: b, input: hi}
        """,
    )
    result = toolproof("run", str(suite), "-q", cwd=tmp_path)
    assert result.returncode == 5, result.stdout + result.stderr
    assert "✅" not in result.stdout
    assert "⏭️ toolproof evals: nothing ran (2 cases skipped)  (exit code 5)" in result.stdout


CRASH = """\
suite: c
agent: evalagents:build_agent
model: scripted
trials: 1
cases:
  - name: boom
    input: hi
    script: [{call: {name: crash, arguments: {}}}, "done"]
"""


def test_a_tool_bug_fails_its_case_and_shows_where_only_when_asked(tmp_path: Path) -> None:
    suite = write(tmp_path / "c.eval.yaml", CRASH)
    plain = toolproof("run", str(suite), "-q", cwd=tmp_path)
    assert plain.returncode == 1  # the case failed: never "infrastructure" (3)
    assert "Traceback" not in plain.stdout + plain.stderr
    assert "evalagents.py:67 in crash" in plain.stdout  # the one line names the place
    frame = f'File "{HERE / "evalagents.py"}", line 67, in crash'
    for shown in (
        toolproof("--traceback", "run", str(suite), "-q", cwd=tmp_path),
        toolproof("run", str(suite), "-q", "--traceback", cwd=tmp_path),
        toolproof("run", str(suite), "-q", cwd=tmp_path, env={"TOOLPROOF_TRACEBACK": "1"}),
    ):
        assert shown.returncode == 1
        assert frame in shown.stdout
        assert 'raise ZeroDivisionError("division by zero")' in shown.stdout
        assert "_toolset.py" not in shown.stdout and "asyncio/" not in shown.stdout


def test_a_script_calling_a_tool_the_agent_lacks_is_refused_at_load(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
        suite: s
        agent: evalagents:build_agent
        model: scripted
        cases:
          - name: a
            input: hi
            script: [{call: {name: get_leave_balanse, arguments: {employee_id: E001}}}, "5"]
          - name: b
            input: hi
            script: [{call: {name: get_leave_balance, arguments: {employee: E001}}}, "5"]
          - name: on_purpose
            input: hi
            expect: {stop_reason: final}
            script:
              - {call: {name: get_leave_balanse, arguments: {}, unchecked: true}}
              - "sorry"
        """,
    )
    result = toolproof("run", str(suite), cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "toolproof: error: invalid eval suite (2 problems; nothing was run):"
    assert lines[1].startswith(
        f"  {suite}:7: cases[0].script[0].call.name: script calls unknown tool "
        "'get_leave_balanse' (did you mean 'get_leave_balance'?)"
    )
    assert lines[2].startswith(
        f"  {suite}:10: cases[1].script[0].call.arguments: script call of 'get_leave_balance' "
        "does not fit its schema:"
    )
    assert "missing required argument 'employee_id'" in lines[2]
    ok = toolproof("run", str(suite), "--case", "on_purpose", "-q", cwd=tmp_path)
    assert ok.returncode == 2  # the file still holds the two mistakes
    fixed = suite.read_text().replace(
        "balanse, arguments: {employee_id", "balance, arguments: {employee_id"
    )
    fixed = fixed.replace("arguments: {employee: E001}", "arguments: {employee_id: E001}")
    suite.write_text(fixed)
    ok = toolproof("run", str(suite), "-q", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_import_errors_name_the_file_and_line(tmp_path: Path) -> None:
    write(
        tmp_path / "crashing.py",
        """\
        SETTINGS = {}

        def endpoint():
            return SETTINGS["url"]

        URL = endpoint()
        """,
    )
    write(
        tmp_path / "badtools.py",
        """\
        from toolproof import tool

        @tool
        def get_stock(sku):
            \"\"\"Stock of an item.\"\"\"
            return 1
        """,
    )
    for command in (("schema", "snapshot"), ("mocks", "check")):
        line = one_line_error(toolproof(*command, "crashing.py", cwd=tmp_path))
        assert line == (
            "toolproof: error: cannot import 'crashing.py': KeyError: 'url' "
            "(crashing.py:4 in endpoint)"
        )
        line = one_line_error(toolproof(*command, "badtools.py", cwd=tmp_path))
        assert line.startswith(
            "toolproof: error: cannot import 'badtools.py': UserError: cannot make a tool from "
            "get_stock: "
        )
        assert "sku" in line and line.endswith("(badtools.py:3 in <module>)")
    shown = toolproof("schema", "snapshot", "crashing.py", "--traceback", cwd=tmp_path)
    assert shown.returncode == 2
    assert shown.stderr.splitlines()[1:4] == [
        "Traceback of your code (toolproof's and asyncio's frames hidden):",
        f'  File "{tmp_path / "crashing.py"}", line 6, in <module>',
        "    URL = endpoint()",
    ]
    assert f'  File "{tmp_path / "crashing.py"}", line 4, in endpoint' in shown.stderr
    assert "_loading.py" not in shown.stderr and "importlib" not in shown.stderr


def test_replay_agrees_with_run_on_every_code(tmp_path: Path) -> None:
    from toolproof.replay import TraceStore

    db = tmp_path / "t.db"
    TraceStore(db).close()
    schemas = write(tmp_path / "tools.json", "[]")
    empty = toolproof("replay", "--store", str(db), "--schemas", str(schemas), cwd=tmp_path)
    assert empty.returncode == 5  # nothing replayed
    assert "nothing replayed" in empty.stdout
    bad = toolproof(
        "replay", "--store", str(db), "--schemas", str(schemas), "--judge-model", "nowhere:x",
        cwd=tmp_path,
    )  # fmt: skip
    assert one_line_error(bad).startswith("toolproof: error: --judge-model nowhere:x: unknown")
    keyless = toolproof(
        "replay", "--store", str(db), "--mode", "model", "--agent", "evalagents:build_agent",
        "--model", "deepseek:deepseek-chat", cwd=tmp_path,
    )  # fmt: skip
    assert "DEEPSEEK_API_KEY" in one_line_error(keyless)
    factory = write(
        tmp_path / "broken_agent.py",
        "def build(model, tools=None):\n    raise RuntimeError('no config')\n",
    )
    assert factory.exists()
    broken = toolproof(
        "replay", "--store", str(db), "--mode", "model", "--agent", "broken_agent:build",
        "--model", "recorded", cwd=tmp_path,
    )  # fmt: skip
    assert one_line_error(broken) == (
        "toolproof: error: agent factory raised RuntimeError: no config "
        "(broken_agent.py:2 in build)"
    )


def test_the_pytest_plugin_shows_the_tools_traceback(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner_ini(pytester)
    monkeypatch.syspath_prepend(str(HERE))
    write(pytester.path / "c.eval.yaml", CRASH)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*trial 1 stopped on a bug in your code:",
            "*Traceback of your code (toolproof's and asyncio's frames hidden):",
            f'*File "{HERE / "evalagents.py"}", line 67, in crash',
            '*raise ZeroDivisionError("division by zero")',
            "*ZeroDivisionError: division by zero",
        ]
    )


def test_a_tool_bug_in_a_plain_pytest_test_shows_the_tools_frame(
    pytester: pytest.Pytester,
) -> None:
    inner_ini(pytester)
    pytester.makepyfile(
        test_stock='''
        from toolproof import Agent, tool
        from toolproof.errors import ToolCrashed
        from toolproof.testing import ScriptedModel, call

        STOCK = {"A1": 3}

        @tool
        def get_stock(sku: str) -> int:
            """Units in stock.

            Args:
                sku: The item.
            """
            return STOCK[sku]

        def test_crash():
            agent = Agent(ScriptedModel([call("get_stock", sku="B2"), "done"]), tools=[get_stock])
            agent.run_sync("how many B2?")
        '''
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            ">*return STOCK?sku?",  # fnmatch: ? stands for the brackets
            "E*KeyError: 'B2'",
            "test_stock.py:14: KeyError",
            "*ToolCrashed: tool 'get_stock' raised KeyError*",
        ]
    )


def test_the_pytest_plugin_reports_a_failing_factory_in_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner_ini(pytester)
    monkeypatch.syspath_prepend(str(HERE))
    write(
        pytester.path / "flaky_factory.py",
        """\
        from evalagents import build_agent

        def factory(model, tools=None):
            if model.name == "scripted":
                raise RuntimeError("no endpoint configured")
            return build_agent(model, tools)
        """,
    )
    monkeypatch.syspath_prepend(str(pytester.path))
    write(
        pytester.path / "f.eval.yaml",
        "suite: f\nagent: flaky_factory:factory\nmodel: scripted\n"
        "cases: [{name: a, input: hi, script: [hello]}]\n",
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*f.eval.yaml:4: f::a: agent factory flaky_factory:factory failed with model "
            "scripted: RuntimeError: no endpoint configured (flaky_factory.py:5 in factory)"
        ]
    )
    assert "Traceback" not in result.stdout.str()
