"""The wire itself: faults for a client's retry logic, hostile bodies, conversations apart."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.models.fake import ScriptedModel, call
from toolproof.server import ToolproofServer

openai = pytest.importorskip("openai")


@pytest.fixture
async def server() -> AsyncIterator[ToolproofServer]:
    running = ToolproofServer(lambda: ScriptedModel(["hello"] * 50))
    await running.start()
    yield running
    await running.aclose()


@pytest.fixture
async def sdk() -> AsyncIterator[Callable[..., Any]]:
    """Makes openai SDK clients, closed after the test."""
    made: list[Any] = []

    def make(**options: Any) -> Any:
        made.append(openai.AsyncOpenAI(**options))
        return made[-1]

    yield make
    for client in made:
        await client.close()


def question(text: str = "hi") -> list[Any]:
    return [{"role": "user", "content": text}]


async def test_the_sdk_retries_injected_429_and_503_then_succeeds(
    server: ToolproofServer, sdk: Callable[..., Any]
) -> None:
    channel = server.open_channel(lambda: ScriptedModel(["hello"]), faults=["429:0", "503"])
    client = sdk(base_url=server.base_url(channel), api_key="k", max_retries=2)
    reply = await client.chat.completions.create(model="m", messages=question())
    assert reply.choices[0].message.content == "hello"
    assert channel.requests == 3
    [trace] = channel.traces()
    assert len(trace.steps) == 1 and trace.output == "hello"


async def test_429_carries_retry_after_and_other_faults_answer_as_asked(
    server: ToolproofServer, sdk: Callable[..., Any]
) -> None:
    url = server.base_url(server.default) + "/chat/completions"
    body = {"model": "m", "messages": question()}
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json=body, headers={"X-Toolproof-Fault": "429:7"}) as r:
            assert r.status == 429 and r.headers["Retry-After"] == "7"
            assert (await r.json())["error"]["type"] == "rate_limit_error"
        async with session.post(url + "?fault=502", json=body) as r:
            assert r.status == 502
        async with session.post(url + "?fault=malformed", json=body) as r:
            assert r.status == 200
            with pytest.raises(json.JSONDecodeError):
                json.loads(await r.text())
        async with session.post(url + "?fault=nonsense", json=body) as r:
            assert r.status == 400 and "unknown fault" in (await r.json())["error"]["message"]


@pytest.mark.timeout(60)
async def test_an_injected_timeout_trips_the_client_timeout(
    server: ToolproofServer, sdk: Callable[..., Any]
) -> None:
    channel = server.open_channel(lambda: ScriptedModel(["hello"]), faults=["timeout:5"])
    client = sdk(base_url=server.base_url(channel), api_key="k", max_retries=0, timeout=0.3)
    started = time.perf_counter()
    with pytest.raises(openai.APITimeoutError):  # the client's 0.3 s, not the server's 5 s
        await client.chat.completions.create(model="m", messages=question())
    assert time.perf_counter() - started >= 0.25


async def test_a_scripted_error_reaches_the_client_with_its_status(
    server: ToolproofServer, sdk: Callable[..., Any]
) -> None:
    from toolproof.errors import ModelHTTPError

    channel = server.open_channel(lambda: ScriptedModel([ModelHTTPError("overloaded", status=529)]))
    client = sdk(base_url=server.base_url(channel), api_key="k", max_retries=0)
    with pytest.raises(openai.APIStatusError) as caught:
        await client.chat.completions.create(model="m", messages=question())
    assert caught.value.status_code == 529
    [trace] = channel.traces()
    assert trace.stop_reason == "error" and trace.error is not None


async def test_conversations_are_told_apart_by_prefix_key_and_content(
    server: ToolproofServer, sdk: Callable[..., Any]
) -> None:
    one = server.open_channel(lambda: ScriptedModel([call("f", x=1), "one done"]))
    two = server.open_channel(lambda: ScriptedModel([call("f", x=2), "two done"]))
    by_prefix = sdk(base_url=server.base_url(one), api_key="k", max_retries=0)
    by_key = sdk(base_url=server.base_url(server.default), api_key=f"tp-{two.id}", max_retries=0)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]

    async def loop(client: Any, text: str) -> str:
        messages = question(text)
        for _ in range(3):
            reply = await client.chat.completions.create(model="m", messages=messages, tools=tools)
            message = reply.choices[0].message.model_dump(exclude_none=True)
            messages.append(message)
            if not message.get("tool_calls"):
                return str(message["content"])
            for c in message["tool_calls"]:
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": text})
        raise AssertionError("no answer")

    answers = await asyncio.gather(loop(by_prefix, "a"), loop(by_key, "b"))
    assert answers == ["one done", "two done"]
    for channel, text, x in ((one, "a", 1), (two, "b", 2)):
        [trace] = channel.traces()
        assert trace.input == text
        assert [c.arguments for c in trace.tool_calls] == [{"x": x}]
        assert trace.tool_results[0].content == text


async def test_an_unknown_channel_is_refused(
    server: ToolproofServer, sdk: Callable[..., Any]
) -> None:
    client = sdk(base_url=f"{server.url}/t/nope/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.NotFoundError):
        await client.chat.completions.create(model="m", messages=question())


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_bodies = st.one_of(
    st.binary(max_size=200),
    _json.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {"model": _json, "messages": st.lists(_json, max_size=4)},
        optional={"tools": _json, "stream": _json, "tool_choice": _json, "stop": _json},
    ).map(lambda v: json.dumps(v).encode()),
)


@pytest.mark.timeout(300)
@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=_bodies)
async def test_a_hostile_body_gets_a_json_answer_never_a_crash(
    server: ToolproofServer, body: bytes
) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(server.base_url(server.default) + "/chat/completions", data=body) as reply,
    ):
        data = await reply.json(content_type=None)
    assert reply.status in (200, 400), (reply.status, data)
    assert ("error" in data) == (reply.status == 400)


async def test_a_dropped_connection_is_a_connection_error_for_the_client(
    server: ToolproofServer, sdk: Callable[..., Any]
) -> None:
    channel = server.open_channel(lambda: ScriptedModel(["hello"]), faults=["drop"])
    client = sdk(base_url=server.base_url(channel), api_key="k", max_retries=1)
    reply = await client.chat.completions.create(model="m", messages=question())
    assert reply.choices[0].message.content == "hello"  # the retry got through
    assert channel.requests == 2


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--mode", "scripted"], "--mode scripted needs --script FILE"),
        (["--mode", "record"], "--mode record needs --model"),
        (["--mode", "replay", "--store", "nowhere.db"], "no trace store at nowhere.db"),
        (["--mode", "scripted", "--script", "missing.yaml"], "no such script file"),
    ],
)
def test_serve_refuses_bad_options_with_exit_2(
    args: list[str],
    expected: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolproof.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["serve", *args]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


async def test_interleaved_conversations_with_identical_answers_are_told_apart_by_content(
    sdk: Callable[..., Any],
) -> None:
    # No prefix, no key: every conversation gets the same answers and the same call ids,
    # so only the user's question tells them apart.
    running = ToolproofServer(lambda: ScriptedModel([call("f", x=1), call("f", x=1), "done"]))
    await running.start()
    client = sdk(base_url=f"{running.url}/v1", api_key="k", max_retries=0)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]

    async def loop(text: str) -> None:
        messages = question(text)
        for _ in range(4):
            await asyncio.sleep(0)
            reply = await client.chat.completions.create(model="m", messages=messages, tools=tools)
            message = reply.choices[0].message.model_dump(exclude_none=True)
            messages.append(message)
            if not message.get("tool_calls"):
                return
            for c in message["tool_calls"]:
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": text})

    try:
        await asyncio.gather(*(loop(f"question {n}") for n in range(8)))
    finally:
        await running.aclose()
    traces = running.default.traces()
    assert len(traces) == 8
    for trace in traces:
        assert trace.output == "done" and len(trace.steps) == 3
        assert [r.content for r in trace.tool_results] == [trace.input, trace.input]
