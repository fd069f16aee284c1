"""Deadlines and bad-request answers, against real local aiohttp servers.

A server that keeps a request alive forever (SSE comments, blank lines, a 200 with headers
and nothing after) must not hold a request, an agent run or ``toolproof chat`` forever: the
progress and total deadlines end the attempt with a clear error. A 5xx that says the
request itself is bad is reported at once, quoting the server, instead of being retried.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
from _handlers_server import blank_lines, serve_handlers, silent
from _openai_server import FakeOpenAIServer, Reply
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from _processes import running
from toolproof import Agent
from toolproof._messages import Message, ModelSettings, ToolCall, ToolResult
from toolproof.errors import ModelConnectionError, ModelFailed, ModelHTTPError, UserError
from toolproof.models import OpenAIChatModel, RetryPolicy, Timeout
from toolproof.models._http import rejects_request

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def _keepalive_stream(request: web.Request) -> web.StreamResponse:
    """200, an event-stream content type, then SSE comments and blank lines forever."""
    await request.read()
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    while True:
        await response.write(b": keep-alive\n\n")
        await asyncio.sleep(0.05)
        await response.write(b"\n")
        await asyncio.sleep(0.05)


async def _slow_tokens(request: web.Request) -> web.StreamResponse:
    """A stream that makes progress (a data event every 0.1 s) but never ends."""
    await request.read()
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    chunk = {"choices": [{"index": 0, "delta": {"content": "la "}}]}
    while True:
        await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await asyncio.sleep(0.1)


async def _empty_chunks(request: web.Request) -> web.StreamResponse:
    """Data events that carry nothing of the answer (empty deltas, empty text), forever."""
    await request.read()
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    chunks = [
        {"choices": [{"index": 0, "delta": {}}]},
        {"choices": [{"index": 0, "delta": {"content": "", "reasoning_content": ""}}]},
        {"choices": []},
    ]
    while True:
        for chunk in chunks:
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await asyncio.sleep(0.05)


HANDLERS: dict[str, Handler] = {
    "keepalive": _keepalive_stream,
    "blank": blank_lines,
    "slow": _slow_tokens,
    "empty": _empty_chunks,
    "silent": silent,
}


@pytest.fixture
async def hanging_server() -> AsyncIterator[str]:
    """A real aiohttp server on 127.0.0.1: /NAME/v1/chat/completions runs HANDLERS[NAME]."""
    async with serve_handlers(HANDLERS) as url:
        yield url


def _model(base: str, name: str, **options: Any) -> OpenAIChatModel:
    options.setdefault("retry", 0)
    return OpenAIChatModel("m", base_url=f"{base}/{name}/v1", **options)


@pytest.mark.parametrize(
    ("name", "stream"),
    [("keepalive", True), ("empty", True), ("blank", False), ("silent", False)],
)
@pytest.mark.timeout(60)  # a keep-alive that holds the request fails here
async def test_keepalives_do_not_hold_a_request_past_the_progress_timeout(
    hanging_server: str, name: str, stream: bool, allow_requests: None
) -> None:
    model = _model(hanging_server, name, stream=stream, timeout=Timeout(read=30, progress=0.6))
    started = time.monotonic()
    with pytest.raises(ModelConnectionError) as caught:
        await model.request([Message.user("hi")], [], ModelSettings())
    elapsed = time.monotonic() - started
    await model.aclose()
    assert elapsed >= 0.5, elapsed  # not before its 0.6 s progress timeout
    assert str(caught.value) == (
        f"m: no answer from {hanging_server}/{name}/v1/chat/completions for 0.6 s: the server "
        "sent nothing, or only keep-alives (progress timeout); raise it with "
        "timeout=Timeout(progress=...) for slow models"
    )


@pytest.mark.timeout(60)
async def test_a_stream_that_makes_progress_forever_stops_at_the_total_timeout(
    hanging_server: str, allow_requests: None
) -> None:
    model = _model(hanging_server, "slow", stream=True, timeout=Timeout(progress=0.5, total=1.0))
    started = time.monotonic()
    with pytest.raises(ModelConnectionError, match=r"longer than the total timeout \(1 s\)"):
        await model.request([Message.user("hi")], [], ModelSettings())
    elapsed = time.monotonic() - started
    await model.aclose()
    assert elapsed >= 0.9, elapsed  # progress kept it going past 0.5 s, total ended it


@pytest.mark.timeout(60)
async def test_retries_of_a_stalled_server_stay_within_their_budget(
    hanging_server: str, allow_requests: None
) -> None:
    model = _model(
        hanging_server,
        "keepalive",
        stream=True,
        timeout=0.4,  # a number: read and progress
        retry=RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.01),
    )
    with pytest.raises(ModelConnectionError, match="gave up after 3 attempts"):
        await model.request([Message.user("hi")], [], ModelSettings())
    await model.aclose()


@pytest.mark.timeout(60)
def test_an_agent_run_against_a_stalled_server_ends_with_its_trace(allow_requests: None) -> None:
    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", _keepalive_stream)
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        model = OpenAIChatModel(
            "m", base_url=f"http://127.0.0.1:{port}/v1", stream=True, timeout=0.5, retry=0
        )
        try:
            with pytest.raises(ModelFailed) as caught:
                await Agent(model).run("hi")
            assert caught.value.trace.stop_reason == "error"
            assert "only keep-alives" in str(caught.value)
        finally:
            await model.aclose()
            await runner.cleanup()

    asyncio.run(main())


@pytest.mark.timeout(120)
def test_toolproof_chat_against_a_stalled_server_returns(tmp_path: Any) -> None:
    """The chat as a subprocess: a turn that gets only keep-alives fails and the chat goes on."""
    server_code = (
        "import asyncio, sys\n"
        "from aiohttp import web\n"
        "sys.path[:0] = [sys.argv[1], sys.argv[1] + '/..']\n"
        "from test_deadlines import _keepalive_stream\n"
        "app = web.Application()\n"
        "app.router.add_post('/v1/chat/completions', _keepalive_stream)\n"
        "web.run_app(app, host='127.0.0.1', port=int(sys.argv[2]), print=None)\n"
    )
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    here = os.path.dirname(__file__)
    with running([sys.executable, "-c", server_code, here, str(port)]):
        _wait_for_port(port)
        env = dict(os.environ, TOOLPROOF_ALLOW_MODEL_REQUESTS="1", PYTHONUTF8="1")
        spec = f"openai-compatible:m?base_url=http://127.0.0.1:{port}/v1&stream=true"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "toolproof",
                "chat",
                "--model",
                spec + "&timeout=0.5&max_retries=0",
            ],
            input="hello\nexit\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert "only keep-alives" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("bye")


def _wait_for_port(port: int) -> None:
    import socket

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"the server on port {port} did not start")


@pytest.mark.parametrize(
    "value", [0, -1, float("nan"), True, "5"], ids=["zero", "negative", "nan", "bool", "str"]
)
def test_invalid_timeouts_are_user_errors(value: Any) -> None:
    with pytest.raises(UserError, match=r"Timeout\(progress=\.\.\.\) must be a positive number"):
        Timeout(progress=value)


# -- 5xx answers that name a bad request ------------------------------------------------------


LLAMA_500 = {
    "error": {
        "code": 500,
        "message": "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] "
        "parse error at line 1, column 17: syntax error while parsing object",
        "type": "server_error",
    }
}


@pytest.fixture
def server(_openai_server: FakeOpenAIServer, allow_requests: None) -> Iterator[FakeOpenAIServer]:
    _openai_server.reset()
    yield _openai_server
    _openai_server.reset()


def test_a_500_that_names_a_bad_request_is_not_retried_and_quotes_the_server(
    server: FakeOpenAIServer,
) -> None:
    server.queue(Reply(status=500, json=LLAMA_500), Reply.completion("never reached"))
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    model = OpenAIChatModel(
        "m", base_url=server.url + "/v1", retry=RetryPolicy(max_retries=3, sleep=sleep)
    )
    with pytest.raises(ModelHTTPError) as caught:
        asyncio.run(model.request([Message.user("hi")], [], ModelSettings()))
    assert len(server.requests) == 1 and sleeps == []
    assert str(caught.value) == (
        f"m: HTTP 500 Internal Server Error from {server.url}/v1/chat/completions: "
        f"{json.dumps(LLAMA_500['error']['message'])} (code: 500). The server could not "
        "process this request (not retried: resending it would fail the same way); check the "
        "conversation and tool schemas it was sent."
    )


@pytest.mark.parametrize(
    ("status", "message", "error_type", "rejected"),
    [
        (500, "Failed to parse tool call arguments as JSON", "server_error", True),
        (500, "anything", "invalid_request_error", True),
        (500, "the request exceeds the available context size", None, True),
        (500, "internal", None, False),
        (503, "upstream connect error or disconnect/reset before headers", None, False),
        (502, "Bad gateway", None, False),
        (500, None, None, False),
        (400, "Failed to parse", None, False),  # not a 5xx: never retried anyway
    ],
)
def test_which_server_errors_name_a_bad_request(
    status: int, message: str | None, error_type: str | None, rejected: bool
) -> None:
    assert rejects_request(status, message, error_type) is rejected


# -- what goes back in the conversation ----------------------------------------------------------


def _strict(text: str) -> Any:
    def reject(constant: str) -> Any:
        raise ValueError(constant)

    return json.loads(text, parse_constant=reject)


@pytest.mark.timeout(300)
@settings(deadline=None, max_examples=150)
@given(
    raw=st.one_of(
        st.text(max_size=60),
        st.builds(json.dumps, st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)),
        st.sampled_from(['{"a": NaN}', '{"a": Infinity}', "[1, 2]", '"x"', "null", " ", "{}"]),
    )
)
def test_tool_call_arguments_always_go_back_as_a_strict_json_object(raw: str) -> None:
    call = ToolCall.from_json_arguments("f", raw, "c1")
    model = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1")
    messages = [
        Message.user("go"),
        Message.assistant(None, [call]),
        Message.tool(ToolResult("c1", "f", "error", "bad arguments")),
    ]
    body = model.build_body(messages, [], ModelSettings())
    sent = body["messages"][1]["tool_calls"][0]["function"]["arguments"]
    parsed = _strict(sent)
    assert isinstance(parsed, dict)
    if call.arguments_error is None and raw.strip() and "NaN" not in raw and "Infinity" not in raw:
        assert sent == raw  # valid arguments: byte for byte
    elif call.arguments_error is not None:
        assert parsed == {"unparsed_arguments": raw}
    # the call itself (what the trace records) is untouched
    assert call.raw_arguments == raw
