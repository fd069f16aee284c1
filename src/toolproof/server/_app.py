"""The OpenAI-compatible server: channels, conversations, faults, and the aiohttp app."""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolproof._messages import Message, ModelResponse
from toolproof.server._conversation import Conversation, transcript_digests
from toolproof.server._local import is_loopback, local_hosts, refusal
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


#: The largest request body the server reads; a larger one is answered 413.
MAX_REQUEST_BYTES = 8 * 1024 * 1024
#: The longest delay a fault may ask for (``timeout:SECONDS``, ``429:SECONDS``).
MAX_FAULT_SECONDS = 600.0
#: What the default channel of a long-running server remembers: its most recent
#: conversations, and at most this many characters of their text.
KEEP_CONVERSATIONS = 256
KEEP_CHARS = 32 * 1024 * 1024
#: Seconds a stopping server gives open connections (an answer being streamed) to finish.
STOP_GRACE = 1.0
#: The header naming a client's conversation, for clients that run identical conversations
#: side by side and want each kept apart by name rather than by content.
CONVERSATION_HEADER = "X-Toolproof-Conversation"


def parse_fault(text: str) -> tuple[str, float | None]:
    """Read one fault (``429:2``, ``timeout:0.5``, ``503``...): its name and seconds.

    Raises:
        BadRequest: An unknown fault, a value where none is taken, or seconds that are not
            a number from 0 to ``MAX_FAULT_SECONDS``.
    """
    name, colon, value = text.strip().partition(":")
    if name not in FAULTS:
        raise BadRequest(f"unknown fault {text[:60]!r}; known: {', '.join(FAULTS)}")
    if not colon:
        return name, None
    if name not in ("429", "timeout"):
        raise BadRequest(f"fault {name} takes no value, got {text[:60]!r}")
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds <= MAX_FAULT_SECONDS:  # NaN and infinities fail here too
        raise BadRequest(
            f"fault {name}: {value[:40]!r} is not a number of seconds from 0 to "
            f"{MAX_FAULT_SECONDS:g}"
        )
    return name, seconds


@dataclass(eq=False)
class Channel:
    """The requests of one client (a trial): its model, faults and conversations.

    A request continues the conversation whose transcript (every message, the answers this
    server gave with their tool call ids included) its messages start with; among several
    identical ones, any one not already being answered, so identical conversations run side
    by side each stay whole. A request that answers the pending tool calls of exactly one
    conversation continues it too; anything else starts a conversation. A client can also
    name its conversations with the ``X-Toolproof-Conversation`` header.

    Attributes:
        id: The channel's id (its base URL is ``/t/<id>/v1``, its API key ``tp-<id>``).
        new_model: Makes the model of each new conversation.
        faults: Faults applied to the next requests, in order (``None`` for no fault).
        on_finished: Called with each finished conversation's trace.
        keep: How many recent conversations to remember (``None``: all, as a trial needs);
            a long-running server forgets older ones.
        keep_chars: How many characters of text the remembered conversations may hold
            (``None``: no limit). A conversation forgotten before it finished is handed to
            ``on_finished`` as it stands.
    """

    id: str
    new_model: Callable[[], Any]
    faults: list[str | None] = field(default_factory=list)
    on_finished: Callable[[Trace], None] | None = None
    keep: int | None = None
    keep_chars: int | None = None
    conversations: list[Conversation] = field(default_factory=list)
    requests: int = 0
    _tails: dict[bytes, list[Conversation]] = field(default_factory=dict, repr=False)
    _tagged: dict[str, Conversation] = field(default_factory=dict, repr=False)

    def conversation(
        self, messages: list[Message], digests: list[bytes], tag: str | None = None
    ) -> Conversation:
        """The conversation of a request, claimed until :meth:`done`.

        It is the one the request continues, or a new one (with the model of the finished
        conversation it follows, if any).
        """
        found = self._continued(messages, digests, tag)
        if found is not None:
            self._unindex(found)
            if not found.finished:
                found.busy = True
                return found
        conv = Conversation(found.model if found is not None else self.new_model(), tag)
        conv.busy = True
        self.conversations.append(conv)
        if tag is not None:
            self._tagged[tag] = conv
        return conv

    def _continued(
        self, messages: list[Message], digests: list[bytes], tag: str | None
    ) -> Conversation | None:
        if tag is not None:
            return self._tagged.get(tag)
        for position in range(len(messages) - 2, -1, -1):  # the longest continuation first
            if messages[position].role == "assistant":
                waiting = self._tails.get(digests[position])
                if waiting:
                    return waiting[0]
        answered = {m.tool_call_id for m in messages if m.role == "tool" and m.tool_call_id}
        if not answered:
            return None
        pending = [
            c
            for c in self.conversations
            if not c.busy and not c.finished and answered & c.pending_call_ids()
        ]
        return pending[0] if len(pending) == 1 else None  # several: refuse to guess

    def done(self, conv: Conversation) -> None:
        """A request of ``conv`` was answered or given up: index it again, record it if over."""
        conv.busy = False
        self._unindex(conv)
        if not conv.exchanges:  # its only request was never answered
            self._forget(conv)
            return
        if conv.digest is not None:
            self._tails.setdefault(conv.digest, []).append(conv)
        if conv.finished:
            self._record(conv)
        self._trim()

    def _trim(self) -> None:
        keep = self.keep if self.keep is not None else len(self.conversations)
        chars = self.keep_chars
        if len(self.conversations) <= keep and chars is None:
            return
        total = sum(c.chars for c in self.conversations)
        index = 0
        while index < len(self.conversations) and (
            len(self.conversations) > keep or (chars is not None and total > chars)
        ):
            conv = self.conversations[index]
            if conv.busy:
                index += 1
                continue
            self._forget(conv)
            total -= conv.chars
            if not conv.finished:
                self._record(conv)  # what it has so far: nothing is dropped unseen

    def _unindex(self, conv: Conversation) -> None:
        if conv.digest is not None:
            same = self._tails.get(conv.digest, [])
            if conv in same:
                same.remove(conv)
            if not same:
                self._tails.pop(conv.digest, None)

    def _forget(self, conv: Conversation) -> None:
        self._unindex(conv)
        if conv in self.conversations:
            self.conversations.remove(conv)
        if conv.tag is not None and self._tagged.get(conv.tag) is conv:
            del self._tagged[conv.tag]

    def _record(self, conv: Conversation) -> None:
        if self.on_finished is None:
            return
        try:
            self.on_finished(conv.trace())
        except Exception:  # recording never breaks an answer
            import logging

            logging.getLogger("toolproof").exception("recording a conversation failed")

    def traces(self) -> list[Trace]:
        """The trace of every conversation, in the order they started."""
        return [c.trace() for c in self.conversations if c.exchanges]


class ToolproofServer:
    """An OpenAI-compatible chat-completions server that records what it sees as traces.

    Every request is answered by a toolproof model (scripted, a real model, or replay) and
    recorded in a conversation; each conversation becomes the same ``Trace`` toolproof's
    own agent produces. Clients are told apart by a base URL prefix ``/t/<channel>/v1`` or
    an API key ``tp-<channel>``; anything else goes to the default channel.

    The server is for programs on this machine: on a loopback address it answers only
    requests whose ``Host`` names this machine (421 otherwise), and on any address it
    refuses requests a web page of another site sends (403, by their ``Origin``). Request
    bodies are limited to ``MAX_REQUEST_BYTES`` (413), and stopping answers the requests
    still open with 503 at once.

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
        self.default = Channel(
            "",
            new_model or _no_model,
            on_finished=on_finished,
            keep=KEEP_CONVERSATIONS,
            keep_chars=KEEP_CHARS,
        )
        #: ``Host`` values answered (``None``: any, on a non-loopback address).
        self.allowed_hosts: set[str] | None = set() if is_loopback(host) else None
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Future[None] | None = None

    # -- life cycle --------------------------------------------------------------------------

    def app(self) -> web.Application:
        """The aiohttp application."""
        from aiohttp import web

        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/t/{channel}/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/t/{channel}/v1/models", self._models)
        return app

    async def start(self) -> str:
        """Start listening; returns the base URL (``http://127.0.0.1:PORT``)."""
        from aiohttp import web

        self._stopping = asyncio.get_running_loop().create_future()
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=STOP_GRACE)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        addresses = self._runner.addresses
        if addresses:
            self.port = addresses[0][1]
        if self.allowed_hosts is not None:
            self.allowed_hosts = local_hosts(self.host, self.port)
        return self.url

    @property
    def url(self) -> str:
        """The server's root URL."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def aclose(self) -> None:
        """Stop listening; requests still open are answered 503 at once."""
        if self._stopping is not None and not self._stopping.done():
            self._stopping.set_result(None)
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
        """A new channel with its own base URL (``url/t/<id>/v1``) and key (``tp-<id>``).

        Raises:
            UserError: A fault is unknown or its seconds are not from 0 to 600.
        """
        from toolproof.errors import UserError

        for fault in faults or []:
            if fault is not None:
                try:
                    parse_fault(fault)
                except BadRequest as exc:
                    raise UserError(f"open_channel(faults=...): {exc}") from None
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

    def _refused(self, request: web.Request) -> web.Response | None:
        refused = refusal(request.host, request.headers.get("Origin"), self.allowed_hosts)
        if refused is None:
            return None
        status, message = refused
        return _error(status, message, "permission_error")

    async def _models(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        refused = self._refused(request)
        if refused is not None:
            return refused
        return web.json_response(
            {"object": "list", "data": [{"id": "toolproof", "object": "model", "owned_by": "me"}]}
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        refused = self._refused(request)
        if refused is not None:
            return refused
        channel = self._channel(request)
        if channel is None:
            return _error(404, "no such channel: this base URL belongs to no running trial")
        channel.requests += 1
        # The answer races the server's stop: a stopping server answers at once.
        work = asyncio.ensure_future(self._answer(request, channel))
        waits: set[asyncio.Future[Any]] = {work}
        if self._stopping is not None:
            waits.add(self._stopping)
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not work.done():
                work.cancel()
        if not work.done():
            return _error(
                503, "the server is stopping: this request was not answered", "server_error"
            )
        answer = work.result()
        if isinstance(answer, web.StreamResponse):
            return answer
        response, chat = answer
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

    async def _answer(
        self, request: web.Request, channel: Channel
    ) -> web.Response | tuple[ModelResponse, ChatRequest]:
        """The answer to one request: an error or a fault, or the model's response."""
        from aiohttp import web

        text = request.headers.get("X-Toolproof-Fault") or request.query.get("fault")
        if text is None and channel.faults:
            text = channel.faults.pop(0)
        if text:
            try:
                name, seconds = parse_fault(text)
            except BadRequest as exc:
                return _error(400, str(exc), "invalid_request_error")
            answer = await _fault(request, name, seconds)
            if answer is not None:
                return answer
        size = request.content_length
        if size is not None and size > MAX_REQUEST_BYTES:
            return _too_large(size)
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _too_large(None)
        try:  # in a worker thread: a large body never holds up the other clients' answers
            chat, digests = await asyncio.to_thread(_read, raw)
        except BadRequest as exc:
            return _error(400, str(exc), "invalid_request_error")
        except Exception as exc:  # a body this reader did not foresee: still a clear 400
            return _error(
                400, f"unreadable request: {type(exc).__name__}: {exc}", "invalid_request_error"
            )
        conv = channel.conversation(
            chat.messages, digests, request.headers.get(CONVERSATION_HEADER)
        )
        started = time.perf_counter()
        try:
            try:
                response = await conv.model.request(chat.messages, chat.tools, chat.settings)
            except Exception as exc:
                conv.add(chat.messages, digests, chat.tools, None, started, exc)
                return _model_error(exc, conv.model)
            if not isinstance(response, ModelResponse):  # a model's bug
                error = TypeError(f"the model returned {type(response).__name__}")
                conv.add(chat.messages, digests, chat.tools, None, started, error)
                return _error(500, str(error))
            conv.add(chat.messages, digests, chat.tools, response, started)
            return response, chat
        finally:
            channel.done(conv)


def _read(raw: bytes) -> tuple[ChatRequest, list[bytes]]:
    chat = parse_request(raw)
    return chat, transcript_digests(chat.messages)


def _no_model() -> Any:
    from toolproof.errors import UserError

    raise UserError("this server has no default model: use a trial's base URL")


def _error(status: int, message: str, kind: str = "toolproof_error", **extra: Any) -> web.Response:
    from aiohttp import web

    return web.json_response(error_body(message, kind, **extra), status=status)


def _too_large(size: int | None) -> web.Response:
    got = f" ({size:,} bytes)" if size is not None else ""
    return _error(
        413,
        f"the request body{got} is larger than this server reads: at most "
        f"{MAX_REQUEST_BYTES // (1024 * 1024)} MiB",
        "invalid_request_error",
    )


async def _fault(request: web.Request, name: str, seconds: float | None) -> web.Response | None:
    from aiohttp import web

    if name == "429":
        return web.json_response(
            error_body("rate limited (injected by toolproof)", "rate_limit_error"),
            status=429,
            headers={"Retry-After": f"{1 if seconds is None else seconds:g}"},
        )
    if name in ("500", "502", "503"):
        return _error(int(name), f"server error {name} (injected by toolproof)", "server_error")
    if name == "timeout":
        await asyncio.sleep(30 if seconds is None else seconds)
        return _error(504, "timed out (injected by toolproof)", "timeout")
    if name == "malformed":
        return web.Response(text='{"choices": [{"message": ', content_type="application/json")
    transport = request.transport  # drop
    if transport is not None:
        transport.close()
    return web.Response(status=500)


def _model_error(exc: BaseException, model: Any) -> web.Response:
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
    from toolproof.errors import ScriptExhausted, UserError
    from toolproof.models.fake import ScriptedModel

    if isinstance(exc, ScriptExhausted):
        return _error(400, str(exc), "toolproof_script_exhausted")
    if isinstance(exc, UserError) and isinstance(model, ScriptedModel):
        return _error(400, str(exc), "toolproof_script_error")  # the script does not fit
    return _error(
        502,
        f"the model failed: {type(exc).__name__}: {exc}",
        "upstream_error",
    )
