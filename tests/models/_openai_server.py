"""A real OpenAI-compatible HTTP server on 127.0.0.1 for the adapter tests.

It runs aiohttp's web server in a background thread with its own event loop, so tests can
drive it from synchronous code, from pytest-asyncio loops and from subprocesses (the chat
CLI). Each test queues the replies it wants (status, headers, JSON or text body, a
server-sent-event stream flushed event by event, a delay, or a dropped connection), or sets
a handler that computes the reply from the request. Every request is recorded.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    json: Any = None
    text: str | None = None
    sse: list[str] | None = None  # event payloads; each sent as "data: ...\n\n" and flushed
    sse_text: str | None = None  # a raw event-stream body, flushed at each blank line
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    end_delay: float = 0.0  # for streams: a pause between the last event and the end of body
    drop: bool = False  # close the connection without answering
    data: bytes | None = None  # a raw body, sent as it is (with the Content-Type of headers)

    @classmethod
    def completion(
        cls,
        content: str | None = "ok",
        *,
        tool_calls: list[dict[str, Any]] | None = None,
        reasoning: str | None = None,
        finish_reason: str | None = None,
        usage: dict[str, Any] | None = None,
        model: str = "test-model",
        **kwargs: Any,
    ) -> Reply:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        body = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                }
            ],
            "usage": usage
            if usage is not None
            else {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        return cls(json=body, **kwargs)


def tool_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """A wire tool call; ``arguments`` is sent as given when it is a string."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    peer: Any = None  # the client's (host, port): the same port means a reused connection
    raw: bytes = b""  # the body's bytes as they arrived


Handler = Callable[[Received], Reply]


class FakeOpenAIServer:
    """The server; use as a context manager or call ``start``/``stop``."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.handler: Handler | None = None
        self.requests: list[Received] = []
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._handling: set[asyncio.Task[Any]] = set()
        self.arrived = threading.Event()  # set whenever a request arrives

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def reset(self) -> None:
        if self._loop is not None:  # abandon answers still waiting out their delay
            asyncio.run_coroutine_threadsafe(self._cancel_handlers(), self._loop).result(10)
        self.replies.clear()
        self.requests.clear()
        self.handler = None
        self.arrived.clear()

    @property
    def last(self) -> Received:
        return self.requests[-1]

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(target=self._serve, name="fake-openai", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the test server did not start")
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        future.result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        assert self._thread is not None
        self._thread.join(10)
        self._loop = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _cancel_handlers(self) -> None:
        for task in list(self._handling):
            task.cancel()

    async def _shutdown(self) -> None:
        await self._cancel_handlers()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- answering ---------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._handling.add(task)
        try:
            return await self._answer(request)
        finally:
            self._handling.discard(task)

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        peer = request.transport.get_extra_info("peername") if request.transport else None
        received = Received(
            request.method, request.path, dict(request.headers), body, peer, raw=raw
        )
        self.requests.append(received)
        self.arrived.set()
        if self.replies:
            reply = self.replies.popleft()
        elif self.handler is not None:
            reply = self.handler(received)
        else:
            reply = Reply(status=599, text="the test queued no reply for this request")
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.drop:
            assert request.transport is not None
            request.transport.abort()
            return web.Response(status=500)
        if reply.sse is not None or reply.sse_text is not None:
            return await self._stream(request, reply)
        headers = dict(reply.headers)
        if reply.data is not None:
            headers.setdefault("Content-Type", "application/json")
            data = reply.data
        elif reply.json is not None:
            headers.setdefault("Content-Type", "application/json")
            data = json.dumps(reply.json).encode()
        else:
            headers.setdefault("Content-Type", "text/plain")
            data = (reply.text or "").encode()
        return web.Response(status=reply.status, body=data, headers=headers)

    async def _stream(self, request: web.Request, reply: Reply) -> web.StreamResponse:
        headers = {"Content-Type": "text/event-stream; charset=utf-8", **reply.headers}
        response = web.StreamResponse(status=reply.status, headers=headers)
        await response.prepare(request)
        if reply.sse is not None:
            pieces = [f"data: {payload}\n\n" for payload in reply.sse]
        else:
            assert reply.sse_text is not None
            # flushed at each blank line; the pieces join back to the exact recorded bytes
            pieces = [p for p in re.split(r"(?<=\n\n)", reply.sse_text) if p]
        for piece in pieces:
            await response.write(piece.encode())
            await asyncio.sleep(0)
        await asyncio.sleep(reply.end_delay)
        await response.write_eof()
        return response
