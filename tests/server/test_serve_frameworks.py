"""Agents built with real frameworks, in Python and Node, tested through the server.

Each is a two-tool agent run by a suite with one passing and one failing case: the
verdicts, the trajectory read off the wire (names, arguments, call ids, order) and the
reports are checked. Nothing reaches the internet: base URLs are on 127.0.0.1, keys are
dummies and the Agents SDK's tracing export is off.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from _suites import AGENTS, suite_for

from toolproof.evals import evaluate_async, load_suite

HERE = Path(__file__).parent

PYTHON_AGENTS = {
    "openai-sdk": ("openai", "openai_sdk_agent.py"),
    "langchain": ("langchain_openai", "langchain_agent.py"),
    "agents-sdk": ("agents", "agents_sdk_agent.py"),
    "pydantic-ai": ("pydantic_ai", "pydantic_ai_agent.py"),
}


def node_command(cache: Path) -> list[str]:
    """``node node_agent.mjs`` with the openai npm package installed next to a copy of it."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    if int(version.lstrip("v").split(".")[0]) < 20:
        pytest.skip(f"the Node agent needs Node 20 or later, found {version.strip()}")
    folder = cache / "node-agent"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "package.json", folder / "package.json")
    shutil.copy(AGENTS / "node_agent.mjs", folder / "node_agent.mjs")
    if not (folder / "node_modules" / "openai").exists():
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            pytest.skip(f"npm install openai failed: {done.stderr.strip()[-300:]}")
    return [node, str(folder / "node_agent.mjs")]


@pytest.mark.parametrize("framework", [*PYTHON_AGENTS, "node"])
async def test_a_framework_agent_is_graded_off_the_wire(framework: str, tmp_path: Path) -> None:
    if framework == "node":
        command = node_command(Path(tempfile.gettempdir()) / "toolproof-server-tests")
    else:
        module, script = PYTHON_AGENTS[framework]
        pytest.importorskip(module)
        name, *flags = script.split()
        command = [sys.executable, str(AGENTS / name), *flags]
    env = {"OPENAI_AGENTS_DISABLE_TRACING": "1", "NO_PROXY": "127.0.0.1"}
    suite = load_suite(suite_for(tmp_path, {"command": command, "env": env}))
    report = await evaluate_async([suite], model="scripted", keep_traces=True, concurrency=4)
    apples, pears = report.cases
    assert apples.verdict == "pass", apples.reason
    assert pears.verdict == "fail", pears.reason
    assert "multiply" in pears.reason
    for trial in apples.trials:
        [trace] = trial.traces or []
        assert [(c.name, c.arguments) for c in trace.tool_calls] == [
            ("get_price", {"item": "apple"}),
            ("multiply", {"a": 3, "b": 1}),
            ("multiply", {"a": 3, "b": 2}),
        ]
        # Every result answers its call, by id, in the order the calls were made.
        assert [r.call_id for r in trace.tool_results] == [c.id for c in trace.tool_calls]
        assert [r.content for r in trace.tool_results] == ["2", "3", "6"]
        assert len({c.id for c in trace.tool_calls}) == 3
        assert [len(s.response.tool_calls) for s in trace.steps] == [2, 1, 0]
        assert trace.output == "3 apples cost 6 euros."
        assert trace.stop_reason == "final"
        assert {t.name for t in trace.tools} == {"get_price", "multiply"}
        assert trace.usage.requests == 3
    [pear_trace] = pears.trials[0].traces or []
    assert pear_trace.tool_names == ["get_price"]
    assert pear_trace.tool_results[0].content == "3"
