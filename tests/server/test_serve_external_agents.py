"""External agents (a program, an HTTP service) as eval targets, graded off the wire."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _suites import AGENTS, suite_for

from toolproof.errors import AgentRunError
from toolproof.evals import evaluate_async, load_suite

pytest.importorskip("openai")


async def test_a_streaming_openai_sdk_program_passes_one_case_and_fails_the_other(
    tmp_path: Path,
) -> None:
    agent = {"command": [sys.executable, str(AGENTS / "openai_sdk_agent.py"), "--stream"]}
    report = await evaluate_async(
        [load_suite(suite_for(tmp_path, agent))], model="scripted", keep_traces=True
    )
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
    assert results == [(c.id, v) for c, v in zip(trace.tool_calls, ["2", "3", "6"], strict=True)]
    assert len({c.id for c in trace.tool_calls}) == 3
    assert trace.output == "3 apples cost 6 euros."
    assert trace.system_prompt == "You are a shop assistant."
    assert {t.name for t in trace.tools} == {"get_price", "multiply"}


STDLIB = [sys.executable, str(AGENTS / "stdlib_agent.py")]


#: The tool an HTTP agent of these tests offers its model (a script may call only that).
GET_PRICE = {
    "type": "function",
    "function": {
        "name": "get_price",
        "description": "The price of an item in euros.",
        "parameters": {
            "type": "object",
            "properties": {"item": {"type": "string"}},
            "required": ["item"],
        },
    },
}


def one_case(tmp_path: Path, agent: dict[str, object], question: str, **extra: str) -> Path:
    """A suite of one scripted case for ``agent``."""
    lines = [
        "suite: one",
        f"agent: {json.dumps(agent)}",
        *(f"{k}: {v}" for k, v in extra.items()),
        "cases:",
        "  - name: only",
        f"    input: {json.dumps(question)}",
        "    script:",
        "      - {call: {name: get_price, arguments: {item: apple}}}",
        "      - 'an apple costs 2 euros'",
        "    expect: {tools_called: [get_price], final_contains: '2 euros'}",
    ]
    path = tmp_path / "one.eval.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("question", "agent_extra", "expected"),
    [
        ("crash now", {}, "exited with status 1: Traceback: something broke in the agent"),
        ("silent please", {}, "the agent printed no answer"),
        ("offline", {}, "the base URL was not used: does your client read OPENAI_BASE_URL?"),
        ("sleep", {"timeout": 1}, "did not finish within 1 s"),
    ],
)
async def test_a_failing_program_fails_its_case_with_one_clear_line(
    tmp_path: Path, question: str, agent_extra: dict[str, object], expected: str
) -> None:
    suite = load_suite(one_case(tmp_path, {"command": STDLIB, **agent_extra}, question))
    report = await evaluate_async([suite], model="scripted", keep_traces=True)
    [case] = report.cases
    assert case.verdict == "fail"
    [trial] = case.trials
    assert trial.error is not None and expected in trial.error
    assert "\n" not in trial.error


async def test_the_input_can_be_an_argument_and_concurrent_trials_never_mix(
    tmp_path: Path,
) -> None:
    agent = {"command": [*STDLIB, "{input}"]}
    suite = load_suite(one_case(tmp_path, agent, "What does an apple cost?", trials="12"))
    report = await evaluate_async([suite], model="scripted", keep_traces=True, concurrency=12)
    [case] = report.cases
    assert case.verdict == "pass", case.reason
    ids = set()
    for trial in case.trials:
        [trace] = trial.traces or []
        assert trace.input == "What does an apple cost?"
        assert len(trace.steps) == 2 and trace.tool_names == ["get_price"]
        ids.add(trace.id)
    assert len(ids) == 12


async def test_an_http_agent_gets_its_base_url_in_the_request(tmp_path: Path) -> None:
    import aiohttp
    from aiohttp import web

    seen: list[dict[str, str]] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append({"field": body["base_url"], "header": request.headers["X-Toolproof-Base-Url"]})
        messages = [{"role": "user", "content": body["input"]}]
        headers = {"Authorization": f"Bearer {body['api_key']}"}
        async with aiohttp.ClientSession() as session:
            for _ in range(4):
                async with session.post(
                    body["base_url"] + "/chat/completions",
                    json={"model": "m", "messages": messages, "tools": [GET_PRICE]},
                    headers=headers,
                ) as reply:
                    message = (await reply.json())["choices"][0]["message"]
                messages.append(message)
                if not message.get("tool_calls"):
                    return web.json_response({"output": message["content"]})
                for call in message["tool_calls"]:
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": "2"})
        return web.json_response({"output": None})

    app = web.Application()
    app.router.add_post("/chat", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        agent = {"http": f"http://127.0.0.1:{port}/chat"}
        suite = load_suite(one_case(tmp_path, agent, "What does an apple cost?"))
        report = await evaluate_async([suite], model="scripted", keep_traces=True)
    finally:
        await runner.cleanup()
    [case] = report.cases
    assert case.verdict == "pass", case.reason
    assert seen[0]["field"] == seen[0]["header"]
    assert seen[0]["field"].startswith("http://127.0.0.1:") and "/t/" in seen[0]["field"]
    [trace] = case.trials[0].traces or []
    assert trace.tool_results[0].content == "2"


async def test_a_real_model_is_proxied_for_the_program(tmp_path: Path) -> None:
    from toolproof.models import override_allow_model_requests
    from toolproof.models.fake import ScriptedModel, call
    from toolproof.server import ToolproofServer

    upstream = ToolproofServer(
        lambda: ScriptedModel([call("get_price", item="apple"), "an apple costs 2 euros"])
    )
    await upstream.start()
    try:
        suite = load_suite(one_case(tmp_path, {"command": STDLIB}, "What does an apple cost?"))
        with override_allow_model_requests(True):
            report = await evaluate_async(
                [suite], model=f"openai-compatible:up?base_url={upstream.url}/v1", keep_traces=True
            )
    finally:
        await upstream.aclose()
    [case] = report.cases
    assert case.verdict == "pass", case.reason
    assert not case.scripted
    [trace] = case.trials[0].traces or []
    assert trace.model.startswith("openai-compatible:up")
    assert trace.tool_names == ["get_price"] and trace.output == "an apple costs 2 euros"
    assert report.model_calls == 2


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ({"command": "x", "retries": 2}, "unknown key 'retries' in agent"),
        ({}, "exactly one of 'command' (a program) or 'http' (a URL)"),
        ({"http": "ftp://x"}, "agent.http: expected an http:// or https:// URL"),
        ({"command": "x", "timeout": -1}, "agent.timeout: expected a positive number"),
    ],
)
def test_a_bad_agent_mapping_names_what_to_fix(
    tmp_path: Path, agent: dict[str, object], expected: str
) -> None:
    from toolproof.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        load_suite(one_case(tmp_path, agent, "hi"))
    assert expected in str(caught.value.problems)


def test_the_cli_runs_a_suite_of_an_external_agent_and_writes_reports(tmp_path: Path) -> None:
    from toolproof.cli import main

    suite = suite_for(tmp_path, {"command": STDLIB})
    out = tmp_path / "report.json"
    code = main(["run", str(suite), "--model", "scripted", "--report", f"json:{out}"])
    assert code == 1  # one case fails
    data = json.loads(out.read_text())
    verdicts = {c["name"]: c["verdict"] for c in data["cases"]}
    assert verdicts == {"apples": "pass", "pears": "fail"}


async def test_a_program_recorded_once_replays_from_its_trace_without_a_model() -> None:
    from toolproof.models.fake import ScriptedModel, call
    from toolproof.server import ExternalAgent, RecordedModel

    script = ScriptedModel([call("get_price", item="pear"), "a pear costs 3 euros"])
    first = await ExternalAgent(script, command=STDLIB).run("What does a pear cost?")
    replayed = await ExternalAgent(RecordedModel([first.trace]), command=STDLIB).run(
        "What does a pear cost?"
    )
    assert replayed.output == first.output == "a pear costs 3 euros"
    assert [(c.name, c.arguments) for c in replayed.trace.tool_calls] == [
        ("get_price", {"item": "pear"})
    ]
    assert replayed.trace.tool_results[0].content == "3"
    # A question never recorded is refused (HTTP 404), so the program fails: no live call.
    with pytest.raises(AgentRunError) as caught:
        await ExternalAgent(RecordedModel([first.trace]), command=STDLIB).run("And an apple?")
    assert "exited with status 1" in str(caught.value) and "404" in str(caught.value)


def test_a_suite_replays_a_program_from_a_store_with_the_replay_model_spec(
    tmp_path: Path,
) -> None:
    import asyncio
    import os
    import subprocess

    from toolproof.models.fake import ScriptedModel, call
    from toolproof.replay import TraceStore
    from toolproof.server import ExternalAgent

    script = ScriptedModel([call("get_price", item="apple"), "an apple costs 2 euros"])
    first = asyncio.run(ExternalAgent(script, command=STDLIB).run("What does an apple cost?"))
    store = tmp_path / "traces.db"
    with TraceStore(store) as opened:
        opened.add(first.trace)
    suite = tmp_path / "replayed.eval.yaml"
    suite.write_text(
        "\n".join(
            [
                "suite: replayed",
                f"agent: {json.dumps({'command': STDLIB})}",
                "cases:",
                "  - name: recorded",
                "    input: What does an apple cost?",
                "    expect: {tools_called: [get_price], final_contains: '2 euros'}",
                "  - name: never_recorded",
                "    input: What does a pear cost?",
                "    expect: {tools_called: [get_price]}",
            ]
        )
        + "\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    done = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", str(suite), "--model", f"replay:{store}",
         "--no-log", "--report", f"json:{tmp_path / 'report.json'}"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": src, "NO_COLOR": "1"},
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # one case fails, nothing is live
    cases = {c["name"]: c for c in json.loads((tmp_path / "report.json").read_text())["cases"]}
    assert cases["recorded"]["verdict"] == "pass", cases["recorded"]["reason"]
    assert cases["never_recorded"]["verdict"] == "fail"
    assert "404" in cases["never_recorded"]["reason"]
    # A store that is not there is a configuration error before anything runs.
    missing = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", str(suite), "--model",
         f"replay:{tmp_path / 'nope.db'}", "--no-log"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": src},
        timeout=60,
    )  # fmt: skip
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "no trace store" in missing.stderr
