"""Every built-in check gives the same verdict whoever runs the agent, or says it cannot check.

The same scenario (a tool that fails) runs as toolproof's own ``Agent``, as a program and
as an HTTP service. A check that needs what only toolproof's own tools show (whether a tool
failed, the state of the suite's mocks) cannot see it on the wire: it must say "not
checked" with the reason, and the case cannot pass on it, never a pass it did not see.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _suites import AGENTS

from toolproof.evals import evaluate_async, load_suite

EXPECT = {
    "calls": [{"name": "get_price", "arguments": {"item": "durian"}}],
    "order": "strict",
    "args": {"get_price": {"item": "durian"}},
    "tools_called": ["get_price"],
    "tools_not_called": ["multiply"],
    "final_contains": "no price",
    "final_not_contains": "euros",
    "final_regex": "no price for \\w+",
    "final_equals": "There is no price for durian.",
    "final_json_schema": {"type": "object"},
    "no_tool_errors": True,
    "stop_reason": "final",
    "max_steps": 5,
    "max_tool_calls": 3,
    "max_tokens": 100000,
    "max_latency_s": 600,
    "grounded": True,
}
SCRIPT = [
    {"call": {"name": "get_price", "arguments": {"item": "durian"}}},
    "There is no price for durian.",
]


def _suite(folder: Path, agent: Any) -> Path:
    cases = [
        {"name": "failing tool", "input": "What does a durian cost?", "script": SCRIPT,
         "expect": EXPECT},
        {"name": "mock state", "input": "What does a durian cost?", "script": SCRIPT,
         "tools": "mock", "mocks": "shop_agent:Basket",
         "expect": {"state": {"asked": ["durian"]}, "no_tool_errors": {"allow": ["get_price"]}}},
    ]  # fmt: skip
    path = folder / f"checks-{len(list(folder.iterdir()))}.eval.yaml"
    path.write_text(
        json.dumps({"suite": "checks", "agent": agent, "cases": cases}), encoding="utf-8"
    )
    return path


@pytest.fixture
async def http_agent() -> AsyncIterator[str]:
    from aiohttp import web

    sys.path.insert(0, str(AGENTS))
    import shop_program

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        output = await asyncio.to_thread(
            shop_program.answer, body["input"], body["base_url"], body["api_key"]
        )
        return web.json_response({"output": output})

    app = web.Application()
    app.router.add_post("/chat", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/chat"
    finally:
        await runner.cleanup()
        sys.path.remove(str(AGENTS))


async def _checks(path: Path) -> dict[str, dict[str, tuple[str, str]]]:
    report = await evaluate_async([load_suite(path)], model="scripted", keep_traces=True)
    out = {}
    for case in report.cases:
        [trial] = case.trials
        assert trial.error is None or trial.error == "", trial.error
        out[case.case.name] = {c.check: (c.status, c.reason) for c in trial.checks}
        out[case.case.name]["(verdict)"] = (case.verdict, case.reason)
    return out


@pytest.mark.timeout(300)
async def test_each_check_agrees_across_agent_kinds_or_says_it_cannot_check(
    tmp_path: Path, http_agent: str
) -> None:
    program = {"command": [sys.executable, str(AGENTS / "shop_program.py")]}
    own = await _checks(_suite(tmp_path, "shop_agent:build_agent"))
    kinds = {
        "program": await _checks(_suite(tmp_path, program)),
        "http": await _checks(_suite(tmp_path, {"http": http_agent})),
    }
    # The agents did the same thing: every check toolproof's own agent ran, ran for them.
    assert own["failing tool"]["no_tool_errors"][0] == "fail"
    assert own["mock state"]["state"][0] == "pass"
    for kind, results in kinds.items():
        for case, checks in own.items():
            assert set(results[case]) == set(checks), (kind, case)
            for name, (status, reason) in checks.items():
                if name == "(verdict)":
                    continue
                theirs, why = results[case][name]
                if theirs != status:
                    assert theirs == "inconclusive" and why.startswith("not checked: "), (
                        kind, case, name, (status, reason), (theirs, why),
                    )  # fmt: skip
        # What the wire cannot show is never passed.
        assert results["failing tool"]["no_tool_errors"][0] == "inconclusive"
        assert "not checked" in results["failing tool"]["no_tool_errors"][1]
        assert results["mock state"]["state"][0] == "inconclusive"
        assert results["mock state"]["(verdict)"][0] == "fail", (kind, results["mock state"])
    # The checks that can see agree exactly (the same calls, answer and stop).
    for name in ("calls", "args", "tools_called", "final_equals", "stop_reason", "grounded"):
        assert {own["failing tool"][name][0]} == {
            kinds[k]["failing tool"][name][0] for k in kinds
        }, name
