"""What a long-running server keeps, and how long it holds up other clients, is bounded.

Memory is counted with ``tracemalloc`` (bytes still allocated once the requests are
answered and garbage collected), never read from the process's resident size.
"""

from __future__ import annotations

import asyncio
import gc
import io
import json
import tracemalloc
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from toolproof._messages import Message, ModelResponse, Usage
from toolproof.models import Model
from toolproof.models.fake import ScriptedModel, call
from toolproof.server import ToolproofServer

MiB = 1024 * 1024


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as opened:
        yield opened


async def _post(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> dict[str, Any]:
    data = json.dumps(body).encode()
    async with session.post(url, data=io.BytesIO(data)) as reply:
        assert reply.status == 200, await reply.text()
        answer: dict[str, Any] = await reply.json()
        return answer


def _retained() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


class _Answers(Model):
    """A model answering from a list, keeping nothing of the requests (what is measured is
    the server's memory alone)."""

    name = "answers"

    def __init__(self, answers: list[Any]) -> None:
        self.answers = list(answers)

    async def request(self, messages: Any, tools: Any, settings: Any) -> ModelResponse:
        item = self.answers.pop(0)
        message = (
            Message("assistant", item)
            if isinstance(item, str)
            else Message("assistant", None, [item])
        )
        return ModelResponse(message, Usage(1, 1))


STEPS = 40


def _factory(kind: str, tmp_path: Path) -> Callable[[], Any]:
    script: list[Any] = [call("f", n=n).with_id(f"c{n}") for n in range(STEPS)] + ["done"]
    if kind == "model":
        return lambda: _Answers(script)
    # What `toolproof serve --mode scripted --script FILE` answers with.
    from toolproof.cli import build_parser
    from toolproof.cli._serve import backend

    path = tmp_path / "script.yaml"
    items = [{"call": {"name": "f", "arguments": {"n": n}}} for n in range(STEPS)] + ["done"]
    path.write_text(json.dumps(items))
    args = build_parser().parse_args(["serve", "--mode", "scripted", "--script", str(path)])
    factory, _ = backend(args)
    return factory  # type: ignore[no-any-return]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["model", "serve --mode scripted"])
async def test_a_long_conversation_keeps_memory_in_proportion_to_its_last_request(
    session: aiohttp.ClientSession, kind: str, tmp_path: Path
) -> None:
    # Each request resends the whole conversation, as every client does: 41 requests of
    # up to 2 MiB send 40 MiB in all. What stays must be about the last request, not the sum.
    server = ToolproofServer(_factory(kind, tmp_path))
    await server.start()
    url = f"{server.url}/v1/chat/completions"
    messages: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    tracemalloc.start()
    try:
        base = _retained()
        sent = 0
        for _ in range(STEPS + 1):
            body = {"model": "m", "messages": messages}
            sent += len(json.dumps(body))
            message = (await _post(session, url, body))["choices"][0]["message"]
            messages.append(message)
            for c in message.get("tool_calls") or []:
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": "r" * 50_000})
        del body, message
        last = len(json.dumps({"model": "m", "messages": messages}))
        kept = _retained() - base - _size_of(messages)
    finally:
        tracemalloc.stop()
        await server.aclose()
    [trace] = server.default.traces()
    assert len(trace.steps) == STEPS + 1 and trace.output == "done"
    assert sent > 15 * last  # the requests together were far larger than the last one
    assert kept < 4 * last, (kept, last, sent)  # (the sum would be 20 times the last)


def _size_of(messages: list[dict[str, Any]]) -> int:
    """What the test's own copy of the conversation holds (its strings, mostly)."""
    return sum(len(m.get("content") or "") + 200 for m in messages)


@pytest.mark.timeout(300)
async def test_a_flood_of_open_conversations_keeps_at_most_the_documented_text(
    session: aiohttp.ClientSession,
) -> None:
    # 120 conversations of 512 KiB each that never finish (each answer calls a tool whose
    # result never comes): 60 MiB sent, at most 32 MiB of text kept.
    server = ToolproofServer(lambda: ScriptedModel([call("f", x=1)]))
    await server.start()
    url = f"{server.url}/v1/chat/completions"
    tracemalloc.start()
    try:
        base = _retained()
        for n in range(120):
            text = f"{n:04d}" + "x" * (512 * 1024)
            await _post(
                session, url, {"model": "m", "messages": [{"role": "user", "content": text}]}
            )
        kept = _retained() - base
        remembered = len(server.default.conversations)
    finally:
        tracemalloc.stop()
        await server.aclose()
    assert kept < 40 * MiB, kept
    assert remembered < 120


@pytest.mark.timeout(300)
async def test_many_conversations_are_remembered_up_to_the_documented_count(
    session: aiohttp.ClientSession,
) -> None:
    recorded: list[Any] = []
    server = ToolproofServer(lambda: ScriptedModel([call("f", x=1)]), on_finished=recorded.append)
    await server.start()
    url = f"{server.url}/v1/chat/completions"
    try:
        for n in range(300):
            await _post(
                session, url, {"model": "m", "messages": [{"role": "user", "content": str(n)}]}
            )
    finally:
        await server.aclose()
    assert len(server.default.conversations) == 256
    # The 44 forgotten before they finished were handed to the recorder as they stood: cut
    # right after a tool call, as every recorded conversation cut there ends.
    assert len(recorded) == 44
    assert [t.input for t in recorded] == [str(n) for n in range(44)]
    assert all(t.stop_reason == "cancelled" and len(t.steps) == 1 for t in recorded)


@pytest.mark.timeout(300)
async def test_a_large_body_being_read_does_not_hold_up_other_clients(
    session: aiohttp.ClientSession,
) -> None:
    # A body of 7 MiB made of 200,000 tiny messages takes a lot of work to read. Once it is
    # sent, small requests go one after another until it is answered: they are answered
    # meanwhile (with the body read on the event loop, not one was).
    server = ToolproofServer(lambda: ScriptedModel(["ok"] * 10))
    await server.start()
    url = f"{server.url}/v1/chat/completions"
    huge = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}] * 200_000})
    small = {"model": "m", "messages": [{"role": "user", "content": "quick"}]}
    answered_meanwhile = 0
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        head = (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(huge)}\r\n"
            "Connection: close\r\n\r\n"
        )
        writer.write(head.encode() + huge.encode())
        await writer.drain()
        big = asyncio.ensure_future(reader.read())
        while not big.done():
            await _post(session, url, small)
            answered_meanwhile += not big.done()
        status = int((await big).split(b" ", 2)[1])
    finally:
        writer.close()
        await server.aclose()
    assert status == 200
    assert answered_meanwhile >= 3, answered_meanwhile
