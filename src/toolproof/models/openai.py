"""The OpenAI-compatible chat-completions adapter (OpenAI, DeepSeek, Qwen, vLLM, Ollama...).

One class, :class:`OpenAIChatModel`, speaks ``POST {base_url}/chat/completions`` with native
tools, plain or streamed (server-sent events). Provider differences are options, set for you
by :func:`toolproof.models.model_from_string`:

- ``send_reasoning``: DeepSeek's thinking mode with tools requires the ``reasoning_content``
  of the current turn's assistant messages to be sent back; earlier turns are not sent.
- ``max_tokens_field``: OpenAI's current models take ``max_completion_tokens``.
- ``system_role``: OpenAI reasoning models take ``developer`` instead of ``system``.

The wire mapping is exact: assistant tool-call messages carry ``content: null`` and each
call's arguments as the JSON text the model wrote (``ToolCall.arguments_json()``); tool
messages carry their ``tool_call_id``; malformed arguments from the model never raise (they
become ``ToolCall.arguments_error`` and the agent reports them to the model). When such a
call is sent back in the conversation, its arguments go as a JSON object wrapping the
model's text (``{"unparsed_arguments": "..."}``), since servers that parse the history
reject invalid JSON there; the trace keeps the text exactly.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from toolproof import models as _models
from toolproof._messages import (
    Message,
    ModelResponse,
    ModelSettings,
    ToolDefinition,
)
from toolproof._text import clip, mask_urls
from toolproof._version import __version__
from toolproof.errors import (
    MissingAPIKey,
    ModelConnectionError,
    ModelHTTPError,
    UnexpectedModelOutput,
    UserError,
)
from toolproof.models._base import Model
from toolproof.models._http import (
    RetryPolicy,
    SessionPool,
    Timeout,
    parse_retry_after,
    rejects_request,
)
from toolproof.models._openai_wire import (
    UNPARSED_ARGUMENTS_KEY as UNPARSED_ARGUMENTS_KEY,
)
from toolproof.models._openai_wire import (
    StreamState,
    amend_error,
    content_text,
    decode_tool_call,
    decode_usage,
    drain_response,
    provider_error_text,
    str_or_none,
    wire_arguments,
    wire_tool_choice,
)

if TYPE_CHECKING:
    import aiohttp

__all__ = ["OpenAIChatModel"]


class OpenAIChatModel(Model):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        model: The model id sent to the provider (``"gpt-4o-mini"``, ``"deepseek-chat"``).
        base_url: The API root; requests go to ``{base_url}/chat/completions``.
        api_key: The key; when ``None`` it is read from ``api_key_env``.
        api_key_env: The environment variable that holds the key. If it is named and not
            set, the constructor raises :class:`~toolproof.errors.MissingAPIKey`. With neither
            ``api_key`` nor ``api_key_env`` the requests carry no key (local servers).
        name: The name recorded in traces; defaults to ``model``.
        stream: Ask for a streamed (server-sent events) response; the result is the same.
        timeout: A :class:`Timeout`, or a number of seconds for the read and progress
            timeouts.
        retry: A :class:`RetryPolicy`, or a number of retries.
        headers: Extra HTTP headers sent with every request.
        max_connections: Most open connections per event loop.
        send_reasoning: Send ``reasoning_content`` back for the assistant messages of the
            current turn (after the last user message), as DeepSeek's thinking mode with
            tools requires.
        max_tokens_field: The body field that carries ``ModelSettings.max_tokens``.
        system_role: The role used for system messages (``"developer"`` for OpenAI's
            reasoning models that reject ``system``).
        stream_usage: With ``stream=True``, ask for a final usage chunk
            (``stream_options.include_usage``); turn off for servers that reject it.
        base_url_env: The environment variable the base URL came from, named in
            connection errors.

    Raises:
        MissingAPIKey: ``api_key_env`` is named but not set.
        UserError: An option is invalid (for example a base URL without ``http(s)://``).

    Example:
        ```python
        model = OpenAIChatModel("qwen2.5:7b", base_url="http://localhost:11434/v1")
        agent = Agent(model, [get_weather])
        ```
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        api_key_env: str | None = None,
        name: str | None = None,
        stream: bool = False,
        timeout: float | Timeout | None = None,
        retry: RetryPolicy | int | None = None,
        headers: Mapping[str, str] | None = None,
        max_connections: int = 256,
        send_reasoning: bool = False,
        max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
        system_role: Literal["system", "developer", "user"] = "system",
        stream_usage: bool = True,
        base_url_env: str | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise UserError(f"OpenAIChatModel needs a model id, got {model!r}")
        base = base_url.strip().rstrip("/") if isinstance(base_url, str) else ""
        if not base.startswith(("http://", "https://")):
            where = f" (from {base_url_env})" if base_url_env else ""
            raise UserError(
                f"base URL {mask_urls(repr(base_url))}{where} must start with "
                "http:// or https://, "
                "for example https://api.openai.com/v1"
            )
        if max_tokens_field not in ("max_tokens", "max_completion_tokens"):
            raise UserError(
                "max_tokens_field must be 'max_tokens' or 'max_completion_tokens', "
                f"got {max_tokens_field!r}"
            )
        if system_role not in ("system", "developer", "user"):
            raise UserError(
                f"system_role must be 'system', 'developer' or 'user', got {system_role!r}"
            )
        self.name = name or model
        if api_key is None and api_key_env:
            api_key = os.environ.get(api_key_env) or None
            if api_key is None:
                raise MissingAPIKey(
                    f"{self.name} needs an API key: set the environment variable "
                    f"{api_key_env} (or pass api_key=...)",
                    variable=api_key_env,
                )
        self.model = model
        self.base_url = base
        self.url = base + "/chat/completions"
        #: ``url`` as messages show it (a password or secret parameter in it masked).
        self.shown_url = mask_urls(self.url)
        self.api_key_env = api_key_env
        self.base_url_env = base_url_env
        self.stream = stream
        self.timeout = Timeout.coerce(timeout)
        self.retry = RetryPolicy.coerce(retry)
        self.send_reasoning = send_reasoning
        self.max_tokens_field = max_tokens_field
        self.system_role = system_role
        self.stream_usage = stream_usage
        self._has_key = bool(api_key)
        self._tools_cache: dict[
            tuple[int, ...], tuple[tuple[ToolDefinition, ...], list[tuple[str, str, Any]], bytes]
        ] = {}
        all_headers = {
            "Content-Type": "application/json",
            "User-Agent": f"toolproof/{__version__}",
        }
        if api_key:
            all_headers["Authorization"] = f"Bearer {api_key}"
        all_headers.update(headers or {})
        self._pool = SessionPool(
            timeout=self.timeout,
            headers=all_headers,
            max_connections=max_connections,
            url=self.url,
        )

    # -- the Model interface -------------------------------------------------------------------

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        """Send one chat-completions request, retrying per the retry policy.

        Raises:
            ModelRequestsDisabled: ``toolproof.models.ALLOW_MODEL_REQUESTS`` is ``False``.
            ModelHTTPError: The provider answered an error status (after retries for 429
                and 5xx).
            ModelConnectionError: The provider could not be reached or timed out (after
                retries).
            UnexpectedModelOutput: The provider's answer could not be understood.
        """
        if not _models.ALLOW_MODEL_REQUESTS:
            _models.check_allow_model_requests(self.name)
        payload = self._payload(messages, tools, settings)
        policy = self.retry
        started = time.monotonic()
        retries = 0
        while True:
            try:
                return await self._attempt(payload, messages)
            except (ModelHTTPError, ModelConnectionError) as exc:
                if isinstance(exc, ModelHTTPError) and (
                    not exc.retryable
                    or rejects_request(exc.status, exc.provider_message, exc.error_type)
                ):
                    raise
                retry_after = exc.retry_after if isinstance(exc, ModelHTTPError) else None
                elapsed = time.monotonic() - started
                if retries >= policy.max_retries:
                    if retries:
                        amend_error(exc, f"gave up after {retries + 1} attempts in {elapsed:.1f} s")
                    raise
                delay = policy.delay(retries, retry_after)
                if elapsed + delay > policy.max_elapsed:
                    asked = " the provider's Retry-After" if retry_after is not None else ""
                    amend_error(
                        exc,
                        f"gave up after {retries + 1} attempt{'s' if retries else ''}: waiting"
                        f"{asked} {delay:.1f} s would exceed the retry budget "
                        f"(RetryPolicy.max_elapsed={policy.max_elapsed:g} s)",
                    )
                    raise
                retries += 1
                await policy.wait(delay)

    async def aclose(self) -> None:
        """Close this event loop's HTTP connections (they also close with the loop)."""
        await self._pool.aclose()

    # -- building the request ------------------------------------------------------------------

    def build_body(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> dict[str, Any]:
        """The JSON body of a chat-completions request (what :meth:`request` sends)."""
        body: dict[str, Any] = {"model": self.model, "messages": self._wire_messages(messages)}
        if tools:
            body["tools"] = [t.to_openai() for t in tools]
            self._tool_fields(settings, body)
        self._setting_fields(settings, body)
        if settings.extra:
            body.update(settings.extra)
        return body

    def _tool_fields(self, settings: ModelSettings, body: dict[str, Any]) -> None:
        if settings.tool_choice is not None:
            body["tool_choice"] = wire_tool_choice(settings.tool_choice)
        if settings.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = settings.parallel_tool_calls

    def _setting_fields(self, settings: ModelSettings, body: dict[str, Any]) -> None:
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            body[self.max_tokens_field] = settings.max_tokens
        if settings.seed is not None:
            body["seed"] = settings.seed
        if settings.stop is not None:
            body["stop"] = list(settings.stop)
        if self.stream:
            body["stream"] = True
            if self.stream_usage:
                body["stream_options"] = {"include_usage": True}

    def _payload(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> bytes:
        """The encoded body: :meth:`build_body` written as compact JSON, byte for byte.

        The tools array, the same on every request of a run, is encoded once and spliced
        in after the messages (where :meth:`build_body` puts it); ``settings.extra`` may
        replace any field, so with extras the whole body is encoded as built.
        """
        if not tools or settings.extra:
            return _dumps(self.build_body(messages, tools, settings)).encode()
        head = _encode({"model": self.model, "messages": self._wire_messages(messages)})
        tail: dict[str, Any] = {}
        self._tool_fields(settings, tail)
        self._setting_fields(settings, tail)
        rest = b"," + _dumps(tail)[1:].encode() if tail else b"}"
        return b"".join((head[:-1], b',"tools":', self._tools_json(tools), rest))

    def _tools_json(self, tools: Sequence[ToolDefinition]) -> bytes:
        """The encoded ``tools`` array, reused while the definitions are unchanged."""
        key = tuple(map(id, tools))
        found = self._tools_cache.get(key)
        if found is not None:
            kept, snapshot, text = found
            # The same objects (ids are not reused while kept) with the same contents: a
            # definition changed in place since it was encoded is encoded again.
            for t, k, (name, description, parameters) in zip(tools, kept, snapshot, strict=True):
                if (
                    t is not k
                    or t.name != name
                    or t.description != description
                    or t.parameters != parameters
                ):
                    break
            else:
                return text
        text = _dumps([t.to_openai() for t in tools]).encode()
        import copy

        snapshot = [(t.name, t.description, copy.deepcopy(t.parameters)) for t in tools]
        if len(self._tools_cache) >= 64:
            self._tools_cache.clear()
        self._tools_cache[key] = (tuple(tools), snapshot, text)
        return text

    def _wire_messages(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        current_turn = 0
        if self.send_reasoning:
            for index in range(len(messages) - 1, -1, -1):
                if messages[index].role == "user":
                    current_turn = index + 1
                    break
        wire: list[dict[str, Any]] = []
        for index, m in enumerate(messages):
            role = m.role
            if role == "assistant":
                item: dict[str, Any] = {"role": "assistant"}
                if m.tool_calls:
                    item["content"] = m.content or None
                    item["tool_calls"] = [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": wire_arguments(c)},
                        }
                        for c in m.tool_calls
                    ]
                else:
                    item["content"] = m.content or ""
                if self.send_reasoning and m.reasoning is not None and index >= current_turn:
                    item["reasoning_content"] = m.reasoning
            elif role == "tool":
                item = {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content or ""}
            elif role == "system":
                item = {"role": self.system_role, "content": m.content or ""}
            else:
                item = {"role": role, "content": m.content or ""}
            wire.append(item)
        return wire

    # -- one HTTP attempt ----------------------------------------------------------------------

    async def _attempt(self, payload: bytes, messages: Sequence[Message]) -> ModelResponse:
        from toolproof.models._http import Deadlines, Stalled

        state = self._pool.current() or await self._pool.state()
        deadlines = Deadlines(self.timeout, state.watch)
        try:
            if deadlines.watched:
                with deadlines:
                    response = await state.session.post(self.url, data=payload)
            else:
                response = await deadlines.wait(state.session.post(self.url, data=payload))
            async with response:
                try:
                    if response.status >= 400:
                        raw = await deadlines.wait(response.read())
                        raise self._http_error(
                            response.status, response.reason, raw, response.headers
                        )
                    kind = response.headers.get("Content-Type", "")
                    if "event-stream" in kind.lower() and response.content_type == (
                        "text/event-stream"
                    ):
                        return await self._read_stream(response, messages, deadlines)
                    content = response.content
                    if content.is_eof():
                        # The whole body is already here (the usual case for a small answer):
                        # no wait, and no deadline left to push back.
                        raw = content.read_nowait()
                    else:
                        raw = await self._read_body(response, deadlines)
                except Stalled:
                    response.close()  # the connection is in an unknown state: drop it
                    raise
        except Stalled as exc:
            raise self._stalled_error(exc) from None
        except Exception as exc:
            if isinstance(exc, _transport_errors()):
                raise self._connection_error(exc) from exc
            raise
        return self._parse_completion(raw, messages)

    async def _read_body(self, response: aiohttp.ClientResponse, deadlines: Any) -> bytes:
        """The whole body; keep-alive whitespace before the JSON is not progress."""
        content = response.content
        parts: list[bytes] = []
        while True:
            chunk = await deadlines.wait(content.readany())
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
            if chunk.strip():
                deadlines.progress()

    async def _read_stream(
        self, response: aiohttp.ClientResponse, messages: Sequence[Message], deadlines: Any
    ) -> ModelResponse:
        from toolproof.models._sse import SSEDecoder

        decoder = SSEDecoder()
        stream = StreamState()
        done = False
        content = response.content
        while not done:
            chunk = await deadlines.wait(content.readany())
            if not chunk:
                for event in decoder.close():
                    done = done or stream.add(event.data, event.event, self.name)
                break
            parts = stream.parts
            for event in decoder.feed(chunk):
                done = done or stream.add(event.data, event.event, self.name)
            if stream.parts != parts or done:
                # Comments, blank lines and empty chunks (keep-alives) are not progress.
                deadlines.progress()
        if done:
            if not response.content.at_eof():
                await drain_response(response)
        elif stream.finish_reason is None:
            raise ModelConnectionError(
                f"{self.name}: the response stream from {self.shown_url} ended before the "
                "answer was complete (no finish_reason and no [DONE])"
            )
        return stream.result(self, messages)

    # -- parsing the response ------------------------------------------------------------------

    def _decode_slowly(self, raw: bytes) -> Any:
        try:
            # What json.loads does with bytes, without sniffing the encoding of a body that
            # opens like UTF-8 JSON: UTF-16 and UTF-32 bodies, and bodies with a byte-order
            # mark, still go through json.loads.
            if raw[:1] == b"{" and raw[1:2] != b"\x00":
                return json.loads(raw.decode("utf-8", "surrogatepass"))
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise UnexpectedModelOutput(
                f"{self.name}: the response from {self.shown_url} is not valid JSON: "
                f"{clip(raw.decode('utf-8', 'replace'), 200, flatten=False)!r}",
                body=raw.decode("utf-8", "replace"),
            ) from None

    def _parse_completion(self, raw: bytes, messages: Sequence[Message]) -> ModelResponse:
        # A body that opens like UTF-8 JSON (an object whose second byte is not NUL) is read
        # by pydantic-core; what it refuses, and UTF-16, UTF-32 and byte-order-marked bodies,
        # go through json.loads, which reads them as it always did or says why it cannot.
        data = _decode(raw) if raw[:1] == b"{" and raw[1:2] != b"\x00" else None
        if data is None:
            data = self._decode_slowly(raw)
        if not isinstance(data, dict):
            raise UnexpectedModelOutput(
                f"{self.name}: the response from {self.shown_url} is not a JSON object: "
                f"{clip(raw.decode('utf-8', 'replace'), 200, flatten=False)!r}",
                body=raw.decode("utf-8", "replace"),
            )
        choices = data.get("choices")
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            detail = provider_error_text(data.get("error")) if data.get("error") else None
            why = f"it reports an error: {detail}" if detail else "it has no choices"
            raise UnexpectedModelOutput(
                f"{self.name}: cannot use the response from {self.shown_url}: {why}",
                body=raw.decode("utf-8", "replace"),
            )
        choice = choices[0]
        wire = choice.get("message")
        if not isinstance(wire, dict):
            wire = {}
        listed = wire.get("tool_calls")
        calls = [
            decode_tool_call(item, index)
            for index, item in enumerate(listed if isinstance(listed, list) else ())
            if isinstance(item, dict)
        ]
        content = content_text(wire.get("content"))
        if content is None and not calls and isinstance(wire.get("refusal"), str):
            content = wire["refusal"]
        if calls and content == "":
            content = None
        reasoning = wire.get("reasoning_content")
        if not isinstance(reasoning, str):
            reasoning = wire.get("reasoning") if isinstance(wire.get("reasoning"), str) else None
        message = Message("assistant", content, calls, None, None, reasoning)  # by position
        return ModelResponse(
            message,
            decode_usage(data.get("usage"), messages, message),
            data.get("model") or self.model,
            choice.get("finish_reason"),
        )

    # -- errors --------------------------------------------------------------------------------

    def _http_error(
        self, status: int, reason: str | None, raw: bytes, headers: Mapping[str, str]
    ) -> ModelHTTPError:
        text = raw.decode("utf-8", "replace")
        try:
            data: Any = json.loads(text)
        except (ValueError, RecursionError):
            data = None
        error = data.get("error") if isinstance(data, dict) else None
        provider_message: str | None = None
        code: str | int | None = None
        error_type: str | None = None
        param: str | None = None
        extra = ""
        if isinstance(error, dict):
            provider_message = str_or_none(error.get("message"))
            raw_code = error.get("code")
            code = raw_code if isinstance(raw_code, (str, int)) else None
            error_type = str_or_none(error.get("type"))
            param = str_or_none(error.get("param"))
            metadata = error.get("metadata")
            if isinstance(metadata, dict) and isinstance(metadata.get("raw"), str):
                extra = f" ({clip(metadata['raw'], 300, flatten=False)})"
            if isinstance(error.get("failed_generation"), str):
                wrote = clip(error["failed_generation"], 300, flatten=False)
                extra = f" (the model wrote: {wrote!r})"
        elif isinstance(error, str):
            provider_message = error
        elif isinstance(data, dict):  # vLLM / FastAPI style: {"message": ...} or {"detail": ...}
            provider_message = str_or_none(data.get("message")) or provider_error_text(
                data.get("detail")
            )
            raw_code = data.get("code")
            code = raw_code if isinstance(raw_code, (str, int)) else None
            error_type = str_or_none(data.get("type"))
        if provider_message is None and text.strip():
            provider_message = clip(text.strip(), 500, flatten=False)
        quoted = f": {json.dumps(provider_message, ensure_ascii=False)}" if provider_message else ""
        facts = ", ".join(
            f"{k}: {v}" for k, v in (("code", code), ("param", param)) if v not in (None, "")
        )
        facts = f" ({facts})" if facts else ""
        status_text = f"HTTP {status}{f' {reason}' if reason else ''}"
        message = (
            f"{self.name}: {status_text} from {self.shown_url}{quoted}{extra}{facts}. "
            f"{self._advice(status, provider_message or '', code)}"
        )
        return ModelHTTPError(
            message.rstrip(". ") + ".",
            status=status,
            provider_message=provider_message,
            code=code,
            error_type=error_type,
            param=param,
            body=data if data is not None else text,
            retry_after=parse_retry_after(headers),
        )

    def _advice(self, status: int, provider_message: str, code: str | int | None) -> str:
        key = f"the API key in {self.api_key_env}" if self.api_key_env else "the API key"
        lowered = provider_message.lower()
        if status == 401:
            if not self._has_key:
                return "Check the API key: none was sent (pass api_key=... or set its variable)"
            return f"Check {key}: the provider did not accept it"
        if status == 403:
            return f"Check that {key} may use model {self.model!r} (permissions, region, billing)"
        if status == 404:
            return (
                f"Check the model name {self.model!r} and the base URL {mask_urls(self.base_url)} "
                "(requests go to <base URL>/chat/completions)"
            )
        if status == 429:
            return (
                "Rate limited: lower the concurrency, wait, or allow more retries with "
                "retry=RetryPolicy(...)"
            )
        if status >= 500 and rejects_request(status, provider_message, None):
            return (
                "The server could not process this request (not retried: resending it would "
                "fail the same way); check the conversation and tool schemas it was sent"
            )
        if status >= 500:
            return "The provider failed; retry later"
        if "reasoning_content" in lowered:
            return (
                "DeepSeek's thinking mode needs the reasoning_content of this turn's assistant "
                "messages sent back: use send_reasoning=True (the deepseek: model strings do)"
            )
        if "context" in lowered and ("length" in lowered or "maximum" in lowered):
            return (
                "The conversation is longer than the model's context window: trim it with "
                "Agent(memory=Memory(...))"
            )
        return (
            "Check the request: message order (each role 'tool' message must follow the "
            "assistant message whose tool_calls it answers, with the same tool_call_id), the "
            f"tool schemas, and settings model {self.model!r} may not support"
        )

    def _stalled_error(self, exc: Any) -> ModelConnectionError:
        if exc.kind == "progress":
            text = (
                f"no answer from {self.shown_url} for {exc.seconds:g} s: the server sent "
                "nothing, or "
                "only keep-alives (progress timeout); raise it with "
                "timeout=Timeout(progress=...) for slow models"
            )
        else:
            text = (
                f"the request to {self.shown_url} took longer than the total timeout "
                f"({exc.seconds:g} s), keep-alives included; raise it with "
                "timeout=Timeout(total=...)"
            )
        return ModelConnectionError(f"{self.name}: {text}")

    def _connection_error(self, exc: BaseException) -> ModelConnectionError:
        import asyncio

        import aiohttp

        where = f" (from {self.base_url_env})" if self.base_url_env else ""
        if isinstance(exc, aiohttp.ConnectionTimeoutError):
            text = (
                f"could not connect to {self.shown_url} within {self.timeout.connect:g} s; "
                "check the "
                f"base URL{where} and the network"
            )
        elif isinstance(exc, aiohttp.SocketTimeoutError):
            text = (
                f"no response from {self.shown_url} within the read timeout "
                f"({self.timeout.read:g} s); raise it with timeout=Timeout(read=...)"
            )
        elif isinstance(exc, asyncio.TimeoutError):
            text = (
                f"the request to {self.shown_url} took longer than the total timeout "
                f"({self.timeout.total} s)"
            )
        elif isinstance(exc, aiohttp.ClientConnectorError):
            reason = exc.os_error.strerror or str(exc.os_error) or type(exc.os_error).__name__
            text = (
                f"could not connect to {self.shown_url}: {reason}. Check the base "
                f"URL{where} and that "
                "the server is running"
            )
        elif isinstance(exc, aiohttp.ServerDisconnectedError):
            text = f"{self.shown_url} closed the connection before answering"
        elif isinstance(exc, aiohttp.ClientPayloadError):
            text = f"the response from {self.shown_url} was cut off: {mask_urls(str(exc))}"
        else:
            text = (
                f"the request to {self.shown_url} failed: {type(exc).__name__}: "
                f"{mask_urls(str(exc))}"
            )
        return ModelConnectionError(f"{self.name}: {text}")


def _transport_errors() -> tuple[type[BaseException], ...]:
    """What a failed connection or a timeout of aiohttp raises (aiohttp is loaded by then)."""
    import asyncio

    import aiohttp

    return (aiohttp.ClientError, asyncio.TimeoutError)


_ENCODER: Any = None
_TO_JSON: Any = None
_FROM_JSON: Any = None


def _encode(value: Any) -> bytes:
    """``_dumps(value).encode()`` for the messages part of a body, by pydantic-core.

    The messages hold only strings, ``None`` and containers, which pydantic-core writes as
    the same bytes, without the detour through a ``str``. What it cannot write (text with
    lone surrogates, changed after the message was built) goes through ``_dumps``, which
    fails as it always did.
    """
    global _TO_JSON
    if _TO_JSON is None:
        from pydantic_core import to_json

        _TO_JSON = to_json
    try:
        encoded: bytes = _TO_JSON(value)
    except ValueError:
        return _dumps(value).encode()
    return encoded


def _decode(raw: bytes) -> Any:
    """``json.loads(raw)`` for a body that opens like UTF-8 JSON, by pydantic-core.

    Where pydantic-core refuses a body (lone surrogates, nesting over 200 levels, bytes
    that are not UTF-8, invalid JSON) this returns ``None`` and the caller decodes it with
    ``json``, which reads it the same way it always did or says why it cannot. What both
    read, they read alike (``tests/models/test_request_bytes.py`` tries to tell them apart).
    """
    global _FROM_JSON
    if _FROM_JSON is None:
        from pydantic_core import from_json

        _FROM_JSON = from_json
    try:
        return _FROM_JSON(raw)
    except ValueError:
        return None


def _dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` with one encoder."""
    global _ENCODER
    if _ENCODER is None:
        import json

        _ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
    return str(_ENCODER.encode(value))
