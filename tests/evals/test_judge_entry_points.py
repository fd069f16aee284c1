"""The same judge answers give the same verdicts through ``evaluate``, ``toolproof run`` and
the pytest plugin, with a judge behind a real OpenAI-compatible server on 127.0.0.1.

The server answers each judged check by its criterion: a verdict tool call, a tool call
with text that contradicts it, prose that negates or conditions its verdict word, and a
server that refuses tools (the judge is then asked for JSON). It also shows what the judge
was sent: the verdict tool, forced, and the agent's system prompt and tools unless the
case says ``judge_sees_agent: false``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

# pytester restores sys.modules after each in-process run; keep what inner runs import loaded.
import toolproof.evals
import toolproof.models
import toolproof.testing._suites
from toolproof.evals import evaluate, load_suite

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

# criterion -> (how the server answers, what it answers, the case's expected verdict)
ANSWERS: dict[str, tuple[str, Any, str]] = {
    "tool-pass": ("tool", {"verdict": "PASS", "reason": "Polite."}, "pass"),
    "tool-fail": ("tool", {"verdict": "FAIL", "reason": "Rude."}, "fail"),
    "tool-pass-said-otherwise": (
        "tool",
        {"verdict": "PASS", "reason": "ok", "text": "On reflection this does not pass."},
        "fail",
    ),
    "prose-plain-pass": ("text", "PASS: the answer greets the user.", "pass"),
    "prose-does-not-pass": ("text", "This does not pass: the answer invents a balance.", "fail"),
    "prose-not-a-pass": ("text", "Not a PASS – the balance was never returned.", "fail"),
    "prose-cannot-pass": ("text", "I cannot pass this answer: it claims a tool.", "fail"),
    "prose-pass-only-if": (
        "text",
        "It would PASS only if the tool had been called; it does not, so FAIL",
        "fail",
    ),
    "no-tools-json-pass": ("no tools", '{"verdict": "PASS", "reason": "Polite."}', "pass"),
    "no-tools-not-a-pass": ("no tools", "Not a PASS - it is rude.", "fail"),
}
HIDDEN = "tool-pass-without-the-agent"


class JudgeServer:
    """A chat-completions endpoint that judges by criterion, in a thread of its own."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        prompt = body["messages"][-1]["content"]
        if "CRITERION: " not in prompt:  # the agent under test: it greets
            return self.reply(body, {"role": "assistant", "content": "hello"})
        self.requests.append(body)
        criterion = prompt.split("CRITERION: ", 1)[1].split("\n", 1)[0]
        how, answer, _ = ANSWERS.get(criterion, ANSWERS["tool-pass"])
        if how == "no tools" and "tools" in body:
            error = {"message": "tools are not supported", "type": "invalid_request_error"}
            return web.json_response({"error": error}, status=400)
        if how == "tool":
            arguments = {k: v for k, v in answer.items() if k != "text"}
            message = {
                "role": "assistant",
                "content": answer.get("text"),
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "record_verdict", "arguments": json.dumps(arguments)},
                    }
                ],
            }
        else:
            message = {"role": "assistant", "content": answer}
        return self.reply(body, message)

    def reply(self, body: dict[str, Any], message: dict[str, Any]) -> web.Response:
        return web.json_response(
            {
                "id": "x",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
            }
        )

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        runner = web.AppRunner(app)
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(runner.cleanup())
        self.loop.close()

    def suite(self, folder: Path) -> Path:
        url = f"base_url=http://127.0.0.1:{self.port}/v1&max_retries=0"
        lines = [
            "suite: judged",
            "agent: evalagents:build_agent",
            f'model: "openai-compatible:agent?{url}"',
            f'judge_model: "openai-compatible:judge?{url}"',
            "cases:",
        ]
        for criterion in ANSWERS:
            lines.append(f"  - {{name: {criterion}, input: hi, judge: [{criterion}]}}")
        lines.append(
            f"  - {{name: {HIDDEN}, input: hi, judge: [tool-pass], judge_sees_agent: false}}"
        )
        path = folder / "judged.eval.yaml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


EXPECTED = {name: verdict for name, (_, _, verdict) in ANSWERS.items()} | {HIDDEN: "pass"}


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    running = JudgeServer()
    running.thread.start()
    assert running.ready.wait(10)
    try:
        with toolproof.models.override_allow_model_requests(True):
            yield running
    finally:
        running.loop.call_soon_threadsafe(running.loop.stop)
        running.thread.join(10)


def check_requests(server: JudgeServer) -> None:
    """The judge was asked through the forced verdict tool, and shown the agent's setup."""
    with_tools = [r for r in server.requests if "tools" in r]
    assert with_tools and all(
        [t["function"]["name"] for t in r["tools"]] == ["record_verdict"]
        and r["tool_choice"] == {"type": "function", "function": {"name": "record_verdict"}}
        for r in with_tools
    )
    retried = [r for r in server.requests if "tools" not in r]
    assert len(retried) == 2  # the two criteria whose server refuses tools, asked again
    prompts = [r["messages"][-1]["content"] for r in server.requests]
    shown = [p for p in prompts if "AGENT'S SYSTEM PROMPT: You help." in p]
    assert len(shown) == len(prompts) - 1  # every case but the one that hides the agent
    assert all("- multiply_numbers: Multiply two numbers." in p for p in shown)
    assert all("- cancel_order: Cancel an order." in p for p in shown)
    [hidden] = [p for p in prompts if p not in shown]
    assert "AGENT'S" not in hidden and "CRITERION: tool-pass" in hidden


@pytest.mark.timeout(120)
def test_python_api(server: JudgeServer, tmp_path: Path) -> None:
    report = evaluate([load_suite(server.suite(tmp_path))], cache=False)
    assert {result.case.name: result.verdict for result in report.cases} == EXPECTED
    check_requests(server)
    [negated] = [r for r in report.cases if r.case.name == "prose-does-not-pass"]
    [judged] = [c for c in negated.trials[0].checks if c.kind == "judged"]
    assert judged.status == "inconclusive"
    assert "could not be read as a verdict (hedges its verdict" in judged.reason


@pytest.mark.timeout(180)
def test_cli(server: JudgeServer, tmp_path: Path) -> None:
    path = server.suite(tmp_path)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT / "src")]),
        "NO_COLOR": "1",
        "COLUMNS": "300",
    }
    done = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", path.name, "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    verdicts = {
        name: verdict.lower()
        for verdict, name in re.findall(r"\] (PASS|FAIL) judged::(\S+)", done.stdout + done.stderr)
    }
    assert verdicts == EXPECTED
    check_requests(server)


@pytest.mark.timeout(180)
def test_pytest_plugin(
    server: JudgeServer, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "addopts = -p no:cacheprovider\n"
    )
    monkeypatch.syspath_prepend(str(HERE))
    server.suite(pytester.path)
    result = pytester.runpytest("--toolproof-live", "-v")
    verdicts = {
        name: "pass" if outcome == "PASSED" else "fail"
        for name, outcome in re.findall(
            r"judged\.eval\.yaml::(\S+) (PASSED|FAILED)", result.stdout.str()
        )
    }
    assert verdicts == EXPECTED
    check_requests(server)
