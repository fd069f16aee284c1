"""External agents (a program, an HTTP service) as eval targets, graded off the wire."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _suites import AGENTS, suite_for

from toolproof.evals import evaluate_async, load_suite

pytest.importorskip("openai")


async def test_an_openai_sdk_program_passes_one_case_and_fails_the_other(tmp_path: Path) -> None:
    agent = {"command": [sys.executable, str(AGENTS / "openai_sdk_agent.py")]}
    report = await evaluate_async([load_suite(suite_for(tmp_path, agent))], model="scripted", keep_traces=True)
    apples, pears = report.cases
    assert apples.verdict == "pass", apples.reason
    assert pears.verdict == "fail"
    assert "multiply" in pears.reason
    [trace] = apples.trials[0].traces
    assert [(c.name, c.arguments) for c in trace.tool_calls] == [
        ("get_price", {"item": "apple"}),
        ("multiply", {"a": 3, "b": 1}),
        ("multiply", {"a": 3, "b": 2}),
    ]
    results = [(r.call_id, r.content) for r in trace.tool_results]
    assert results == [(c.id, v) for c, v in zip(trace.tool_calls, ["2", "3", "6"])]
    assert len({c.id for c in trace.tool_calls}) == 3
    assert trace.output == "3 apples cost 6 euros."
    assert trace.system_prompt == "You are a shop assistant."
    assert {t.name for t in trace.tools} == {"get_price", "multiply"}
