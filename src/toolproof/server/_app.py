"""The OpenAI-compatible server: channels, conversations, faults, and the aiohttp app."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolproof._messages import Message, ModelResponse
from toolproof.server._conversation import Conversation, message_key
from toolproof.server._wire import (
    BadRequest,
    ChatRequest,
    completion_body,
    error_body,
    parse_request,
    stream_chunks,
)

if TYPE_CHECKING:
    from aiohttp import web

    from toolproof._trace import Trace

__all__ = ["Channel", "ToolproofServer"]

#: Faults a request can ask for (header ``X-Toolproof-Fault`` or query ``?fault=``).
FAULTS = ("429", "500", "502", "503", "timeout", "malformed", "drop")


@dataclass
class Channel:
    """The requests of one client (a trial): its model, faults and conversations.

    Attributes:
        id: The channel's id (its base URL is ``/t/<id>/v1``, its API key ``tp-<id>``).
        new_model: Makes the model of each new conversation.
        faults: Faults applied to the next requests, in order (``None`` for no fault).
        on_finished: Called with each finished conversation's trace.
        keep: How many recent conversations to remember (``None``: all, as a trial needs);
            a long-running server forgets older ones once they are recorded.
    """

    id: str
    new_model: Callable[[], Any]
    faults: list[str | None] = field(default_factory=list)
    on_finished: Callable[[Trace], None] | None = None
    keep: int | None = None
    conversations: list[Conversation] = field(default_factory=list)
    requests: int = 0
    _tails: dict[tuple[int, tuple[Any, ...]], list[Conversation]] = field(
        default_factory=dict, repr=False
    )

    def find(self, messages: list[Message]) -> Conversation | None:
        """The conversation a request continues, if any.

        A request continues the conversation whose last request and answer it starts with
        (the longest such); else the one whose pending tool calls it answers.
        """
        keys = [message_key(m) for m in messages]
        for position in range(len(keys) - 2, -1, -1):  # the longest continuation first
            if keys[position][0] != "assistant":
                continue
            for conv in self._tails.get((position, keys[position]), ()):
                if keys[: position + 1] == conv.expected:
                    return conv
        answered = {m.tool_call_id for m in messages if m.role == "tool"}
        if not answered:
            return None
        for conv in reversed(self.conversations):
            if answered & conv.pending_call_ids():
                return conv
        return None

    def remember(self, conv: Conversation) -> None:
        """Index a conversation by its last answer, after each exchange."""
        self._forget(conv)
        if conv.exchanges and conv.exchanges[-1].response is not None:
            conv.tail = (len(conv.expected) - 1, conv.expected[-1])
            self._tails.setdefault(conv.tail, []).append(conv)

    def _forget(self, conv: Conversation) -> None:
        if conv.tail is not None:
            same = self._tails.get(conv.tail, [])
            if conv in same:
                same.remove(conv)
            if not same:
                self._tails.pop(conv.tail, None)
        conv.tail = None

    def conversation(self, messages: list[Message]) -> Conversation:
        """The conversation of a request: the one it continues, or a new one."""
        found = self.find(messages)
        if found is not None and not found.finished:
            return found
        conv = Conversation(found.model if found is not None else self.new_model())
        self.conversations.append(conv)
        if self.keep is not None and len(self.conversations) > self.keep:
            for old in self.conversations[: len(self.conversations) - self.keep]:
                self._forget(old)
            del self.conversations[: len(self.conversations) - self.keep]
        return conv

    def traces(self) -> list[Trace]:
        """The trace of every conversation, in the order they started."""
        return [c.trace() for c in self.conversations if c.exchanges]


class ToolproofServer:
    """An OpenAI-compatible chat-completions server that records what it sees as traces.

    Every request is answered by a toolproof model (scripted, a real model, or replay) and
    recorded in a conversation; each conversation becomes the same ``Trace`` toolproof's
    own agent produces. Clients are told apart by a base URL prefix ``/t/<channel>/v1`` or
    an API key ``tp-<channel>``; anything else goes to the default channel.

    Args:
        new_model: Makes the model of each new conversation of the default channel.
        on_finished: Called with each finished conversation's trace (the recorder).
        host: The address to listen on (loopback by default).
        port: The port (0: a free one).
    """

    def __init__(
        self,
        new_model: Callable[[], Any] | None = None,
        *,
        on_finished: Callable[[Trace], None] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.host = host
        self.port = port
        self.channels: dict[str, Channel] = {}
        self.default = Channel("", new_model or _no_model, on_finished=on_finished, keep=256)
        self._runner: web.AppRunner | None = None

    # -- life cycle --------------------------------------------------------------------------

    def app(self) -> web.Application:
        """The aiohttp application."""
        from aiohttp import web

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/t/{channel}/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/t/{channel}/v1/models", self._models)
        return app

    async def start(self) -> str:
        """Start listening; returns the base URL (``http://127.0.0.1:PORT``)."""
        from aiohttp import web

        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        addresses = self._runner.addresses
        if addresses:
            self.port = addresses[0][1]
        return self.url

    @property
    def url(self) -> str:
        """The server's root URL."""
        return f"http://{self.host}:{self.port}"

    async def aclose(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def open_channel(
        self,
        new_model: Callable[[], Any],
        *,
        faults: list[str | None] | None = None,
        on_finished: Callable[[Trace], None] | None = None,
    ) -> Channel:
        """A new channel with its own base URL (``url/t/<id>/v1``) and key (``tp-<id>``)."""
        channel = Channel(
            uuid.uuid4().hex[:16], new_model, list(faults or []), on_finished, keep=None
        )
        self.channels[channel.id] = channel
        return channel

    def close_channel(self, channel: Channel) -> None:
        """Forget a channel."""
        self.channels.pop(channel.id, None)

    def base_url(self, channel: Channel) -> str:
        """The OpenAI base URL of a channel."""
        return f"{self.url}/t/{channel.id}/v1" if channel.id else f"{self.url}/v1"

    # -- requests ----------------------------------------------------------------------------

    def _channel(self, request: web.Request) -> Channel | None:
        name = request.match_info.get("channel")
        if name is None:
            auth = request.headers.get("Authorization", "")
            key = auth.removeprefix("Bearer ").strip()
            if key.startswith("tp-") and key[3:] in self.channels:
                return self.channels[key[3:]]
            return self.default
        return self.channels.get(name)

    async def _models(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        return web.json_response(
            {"object": "list", "data": [{"id": "toolproof", "object": "model", "owned_by": "me"}]}
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        channel = self._channel(request)
        if channel is None:
            return _error(404, "no such channel: this base URL belongs to no running trial")
        channel.requests += 1
        fault = request.headers.get("X-Toolproof-Fault") or request.query.get("fault")
        if fault is None and channel.faults:
            fault = channel.faults.pop(0)
        if fault:
            answer = await _fault(request, fault)
            if answer is not None:
                return answer
        try:
            chat = parse_request(await request.read())
        except BadRequest as exc:
            return _error(400, str(exc), "invalid_request_error")
        except Exception as exc:  # a body this reader did not foresee: still a clear 400
            return _error(
                400, f"unreadable request: {type(exc).__name__}: {exc}", "invalid_request_error"
            )
        conv = channel.conversation(chat.messages)
        started = time.perf_counter()
        try:
            response = await conv.model.request(chat.messages, chat.tools, chat.settings)
        except Exception as exc:
            conv.add(chat.messages, chat.tools, None, started, exc)
            channel.remember(conv)
            self._finished(channel, conv)
            return _model_error(exc, chat)
        if not isinstance(response, ModelResponse):  # pragma: no cover - a model's bug
            return _error(500, f"the model returned {type(response).__name__}")
        conv.add(chat.messages, chat.tools, response, started)
        channel.remember(conv)
        if conv.finished:
            self._finished(channel, conv)
        if not chat.stream:
            return web.json_response(completion_body(response, chat.model))
        stream = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await stream.prepare(request)
        for event in stream_chunks(response, chat.model, chat.include_usage):
            await stream.write(event)
        await stream.write_eof()
        return stream

    def _finished(self, channel: Channel, conv: Conversation) -> None:
        if channel.on_finished is None:
            return
        try:
            channel.on_finished(conv.trace())
        except Exception:  # recording never breaks an answer
            import logging

            logging.getLogger("toolproof").exception("recording a conversation failed")


def _no_model() -> Any:
    from toolproof.errors import UserError

    raise UserError("this server has no default model: use a trial's base URL")


def _error(status: int, message: str, kind: str = "toolproof_error", **extra: Any) -> web.Response:
    from aiohttp import web

    return web.json_response(error_body(message, kind, **extra), status=status)


async def _fault(request: web.Request, fault: str) -> web.StreamResponse | None:
    from aiohttp import web

    name, _, value = fault.partition(":")
    if name == "429":
        return web.json_response(
            error_body("rate limited (injected by toolproof)", "rate_limit_error"),
            status=429,
            headers={"Retry-After": value or "1"},
        )
    if name in ("500", "502", "503"):
        return _error(int(name), f"server error {name} (injected by toolproof)", "server_error")
    if name == "timeout":
        await asyncio.sleep(float(value or 30))
        return _error(504, "timed out (injected by toolproof)", "timeout")
    if name == "malformed":
        return web.Response(text='{"choices": [{"message": ', content_type="application/json")
    if name == "drop":
        transport = request.transport
        if transport is not None:
            transport.close()
        return web.Response(status=500)
    return _error(400, f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")


def _model_error(exc: BaseException, chat: ChatRequest) -> web.Response:
    from toolproof.errors import ModelHTTPError, NoRecording

    if isinstance(exc, NoRecording):
        return _error(
            404,
            str(exc),
            "toolproof_no_recording",
            request=exc.request,
            closest=exc.closest,
        )
    if isinstance(exc, ModelHTTPError):
        status = exc.status if isinstance(exc.status, int) and exc.status >= 400 else 502
        return _error(status, str(exc), "upstream_error")
    from toolproof.errors import ScriptExhausted

    if isinstance(exc, ScriptExhausted):
        return _error(400, str(exc), "toolproof_script_exhausted")
    return _error(
        502,
        f"the model failed: {type(exc).__name__}: {exc}",
        "upstream_error",
    )
