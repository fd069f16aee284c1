"""Agents toolproof did not build hold a conversation: every turn gets the turns before it.

A command agent gets them in the file ``TOOLPROOF_HISTORY_FILE`` names, an HTTP agent in
the request's ``history``; ``toolproof serve`` keeps concurrent multi-turn conversations
apart. The user side is a scripted user, and the model answers from what it was sent, so a
turn that lost its history shows in the answer.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _suites import AGENTS

from toolproof import Message
from toolproof.evals import evaluate_async, load_suite
from toolproof.models.fake import FunctionModel
from toolproof.server import ToolproofServer

SECRETS = ["sk-live-9f8e7d6c5b4a", 'p@ss w0rd "quoted"', "ünïcødé ✓ 中文", "line\nbreak"]


def _echo(messages: list[Message], info: Any) -> str:
    """The model: how many user messages it saw, and all of them."""
    users = [m.content for m in messages if m.role == "user"]
    return f"seen {len(users)}: " + json.dumps(users, ensure_ascii=False)


def _suite(tmp_path: Path, agent: dict[str, Any], turns: list[str]) -> Path:
    path = tmp_path / "talk.eval.yaml"
    script = "\n".join(f"          - {json.dumps(t)}" for t in turns)
    path.write_text(
        textwrap.dedent(
            f"""\
            suite: talk
            agent: {json.dumps(agent)}
            cases:
              - name: remembers
                user:
                  script:
            """
        )
        + script
        + "\n"
    )
    return path


@pytest.mark.timeout(120)
@pytest.mark.parametrize("count", [2, 4])
async def test_a_command_agent_gets_every_earlier_turn(tmp_path: Path, count: int) -> None:
    turns = [f"turn {n} {SECRETS[n % len(SECRETS)]}" for n in range(count)]
    agent = {"command": [sys.executable, str(AGENTS / "history_agent.py")]}
    suite = load_suite(_suite(tmp_path, agent, turns))
    report = await evaluate_async([suite], model=FunctionModel(_echo), keep_traces=True)
    [case] = report.cases
    traces = case.trials[0].traces or []
    assert case.verdict == "pass", case.reason
    assert len(traces) == count
    for number, trace in enumerate(traces, 1):
        # The model saw every user turn so far, in order: nothing lost, nothing mixed.
        assert trace.output == f"seen {number}: " + json.dumps(turns[:number], ensure_ascii=False)
        assert [m.content for m in trace.history if m.role == "user"] == turns[: number - 1]


@pytest.mark.timeout(120)
async def test_an_http_agent_gets_every_earlier_turn(tmp_path: Path) -> None:
    import aiohttp
    from aiohttp import web

    bodies: list[dict[str, Any]] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        bodies.append(body)
        messages = [*body["history"], {"role": "user", "content": body["input"]}]
        headers = {"Authorization": f"Bearer {body['api_key']}"}
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                body["base_url"] + "/chat/completions",
                json={"model": "m", "messages": messages},
                headers=headers,
            ) as reply,
        ):
            message = (await reply.json())["choices"][0]["message"]
        return web.json_response({"output": message["content"]})

    app = web.Application()
    app.router.add_post("/chat", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    turns = ["first " + SECRETS[0], "second " + SECRETS[2], "third " + SECRETS[3]]
    try:
        agent = {"http": f"http://127.0.0.1:{port}/chat"}
        suite = load_suite(_suite(tmp_path, agent, turns))
        report = await evaluate_async([suite], model=FunctionModel(_echo), keep_traces=True)
    finally:
        await runner.cleanup()
    [case] = report.cases
    assert case.verdict == "pass", case.reason
    assert [len(b["history"]) for b in bodies] == [0, 2, 4]
    assert [m["content"] for m in bodies[2]["history"] if m["role"] == "user"] == turns[:2]
    last = (case.trials[0].traces or [])[-1]
    assert last.output == "seen 3: " + json.dumps(turns, ensure_ascii=False)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("count", [3, 30])
async def test_serve_keeps_concurrent_multi_turn_conversations_apart(count: int) -> None:
    """Conversations that open alike and go on differently each keep their own turns."""
    import openai

    recorded: list[Any] = []
    server = ToolproofServer(lambda: FunctionModel(_echo), on_finished=recorded.append)
    await server.start()
    sdk = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0, timeout=90)

    async def talk(n: int) -> list[str]:
        messages: list[dict[str, Any]] = []
        answers = []
        for turn in ("hello", f"my number is {n}", f"bye {n}"):
            messages.append({"role": "user", "content": turn})
            await asyncio.sleep(0)  # interleave with the other conversations
            reply = await sdk.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
            content = reply.choices[0].message.content or ""
            messages.append({"role": "assistant", "content": content})
            answers.append(content)
        return answers

    try:
        every = await asyncio.gather(*(talk(n) for n in range(count)))
    finally:
        await sdk.close()
        await server.aclose()
    for n, answers in enumerate(every):
        assert answers[2] == "seen 3: " + json.dumps(["hello", f"my number is {n}", f"bye {n}"])
    # Each turn is one trace whose history is that conversation's own earlier turns.
    last_turns = [t for t in recorded if t.input.startswith("bye ")]
    assert len(last_turns) == count
    for trace in last_turns:
        n = trace.input.split()[1]
        assert [m.content for m in trace.history if m.role == "user"] == [
            "hello",
            f"my number is {n}",
        ]
