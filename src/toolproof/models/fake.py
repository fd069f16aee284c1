"""Fake models for tests: a scripted model and a function model, peers of the real adapters.

Both record every request they receive (messages, tool definitions, settings), so tests can
check what the agent sent, not only what it got back.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from toolproof._messages import (
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolDefinition,
    Usage,
)
from toolproof._text import cut
from toolproof._tokens import MESSAGE_OVERHEAD, estimate_message_tokens
from toolproof.errors import ScriptExhausted, UserError
from toolproof.models._base import Model

__all__ = [
    "FunctionModel",
    "ModelRequest",
    "RequestInfo",
    "ScriptItem",
    "ScriptedModel",
    "call",
    "script_misfit",
]


def call(name: str, /, **arguments: Any) -> ToolCall:
    """A scripted tool call: ``call("multiply_numbers", a=12, b=8)``.

    The scripted model gives it an id (``call_1``, ``call_2``...) unless you set one with
    ``.with_id("...")``.
    """
    return ToolCall(name=name, arguments=arguments)


#: A scripted response: text, one call, several calls (one parallel message), a full
#: message or response, or an exception (instance or class) to raise from the model.
ScriptItem = (
    str
    | ToolCall
    | Sequence[ToolCall]
    | Message
    | ModelResponse
    | BaseException
    | type[BaseException]
)


def script_misfit(call: ToolCall, tools: Sequence[ToolDefinition]) -> str | None:
    """Why a scripted call does not fit the tools offered to the model (``None``: it fits).

    The one rule for scripts, whatever runs the agent: a scripted call names a tool offered
    in the request it answers, with arguments that tool's JSON Schema accepts. (A call
    that is wrong on purpose is written as a whole message, or ``unchecked: true`` in a
    suite, and sent as written.)
    """
    offered = {t.name: t for t in tools}
    found = offered.get(call.name)
    if found is None:
        names = ", ".join(offered) or "none"
        return f"calls tool {call.name!r}, which is not bound to the model; offered tools: {names}"
    if call.arguments_error is not None:
        return None  # malformed arguments on purpose: the agent must cope with them
    import jsonschema

    try:
        validator = jsonschema.validators.validator_for(found.parameters)(found.parameters)
        problems = [
            f"{'.'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {e.message}"
            for e in validator.iter_errors(call.arguments)
        ]
    except (jsonschema.SchemaError, TypeError, ValueError):
        return None  # a schema that cannot be checked here: the agent's own checks apply
    if problems:
        return f"calls {call.signature()} with arguments the tool's schema rejects: " + "; ".join(
            problems[:5]
        )
    return None


class RequestView:
    """What a recorded model request shows of itself: the tools' names and the last message."""

    __slots__ = ()
    messages: list[Message]
    tools: list[ToolDefinition]

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered in this request."""
        return [t.name for t in self.tools]

    @property
    def last(self) -> Message:
        """The last message of the request."""
        return self.messages[-1]


@dataclass(slots=True)
class ModelRequest(RequestView):
    """One request a fake model received.

    Attributes:
        messages: The messages, system prompt first.
        tools: The tool definitions offered.
        settings: The generation settings.
    """

    messages: list[Message]
    tools: list[ToolDefinition]
    settings: ModelSettings


@dataclass(slots=True)
class RequestInfo:
    """What a :class:`FunctionModel`'s function receives besides the messages.

    Attributes:
        tools: The tool definitions offered.
        settings: The generation settings.
        step: 1-based number of this request to the model.
    """

    tools: list[ToolDefinition]
    settings: ModelSettings
    step: int
    tool_names: list[str] = field(default_factory=list)


class _Recording(Model):
    def __init__(self, name: str) -> None:
        self.name = name
        self.requests: list[ModelRequest] = []
        self._ids = 0
        # The last request's messages and its answer, their contents and the running sum of
        # their estimated tokens: the next request of the same run repeats them, so only new
        # messages are estimated (the estimate was quadratic in the steps of a run).
        self._seen: list[tuple[Message, str | None, list[ToolCall]]] = []
        self._sums: list[int] = [0]

    def _record(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> None:
        # The agent never mutates a message once built, so a shallow copy of the list is a
        # faithful record (and keeps scripted runs cheap).
        self.requests.append(ModelRequest(list(messages), list(tools), settings))

    def _respond(self, item: Any, messages: Sequence[Message], where: str | int) -> ModelResponse:
        """The response to ``item``; ``where`` names it in errors (an int: a script item)."""
        # The common items first, with records built by position (keyword arguments cost
        # about 40 ns each in a dataclass's __init__): the same response as the general path.
        kind = type(item)
        if kind is str:
            message = Message("assistant", item)
            return ModelResponse(message, self._estimate(messages, message), self.name, "stop")
        if kind is ToolCall:
            message = Message("assistant", None, [item if item.id else self._next_id(item)])
            usage = self._estimate(messages, message)
            return ModelResponse(message, usage, self.name, "tool_calls")
        if isinstance(where, int):
            where = f"script item {where}"
        if isinstance(item, BaseException) or (
            isinstance(item, type) and issubclass(item, BaseException)
        ):
            raise item
        if isinstance(item, ModelResponse):
            response = replace(item, message=self._with_ids(item.message))
            if response.usage.requests == 0 and response.usage.total_tokens == 0:
                response.usage = self._estimate(messages, response.message)
        else:
            message = self._with_ids(_to_message(item, where))
            response = ModelResponse(message, self._estimate(messages, message))
        if response.finish_reason is None:
            response.finish_reason = "tool_calls" if response.message.tool_calls else "stop"
        if response.model_name is None:
            response.model_name = self.name
        return response

    def _estimate(self, messages: Sequence[Message], answer: Message) -> Usage:
        """The estimated usage of one request: its messages in, the answer out."""
        seen, sums = self._seen, self._sums
        known = 0
        for message, (before, content, calls) in zip(messages, seen):  # noqa: B905 (shorter)
            # The same message object with the same parts (in case one was edited in place;
            # the agent never changes a message it built).
            if (
                message is not before
                or message.content is not content
                or message.tool_calls is not calls
            ):
                break
            known += 1
        del seen[known:], sums[known + 1 :]
        total = sums[known]
        for message in messages[known:]:
            tokens = estimate_message_tokens(message)
            total += tokens
            seen.append((message, message.content, message.tool_calls))
            sums.append(total)
        answered = estimate_message_tokens(answer)
        # The next request of the run repeats these messages followed by this answer.
        seen.append((answer, answer.content, answer.tool_calls))
        sums.append(total + answered)
        return Usage(total, answered - MESSAGE_OVERHEAD, 0, 0, 1, True)  # by position

    def _next_id(self, call: ToolCall) -> ToolCall:
        self._ids += 1
        return call.with_id(f"call_{self._ids}")

    def _with_ids(self, message: Message) -> Message:
        if not any(not c.id for c in message.tool_calls):
            return message
        calls = [c if c.id else self._next_id(c) for c in message.tool_calls]
        return Message(
            role="assistant", content=message.content, tool_calls=calls, reasoning=message.reasoning
        )


class ScriptedModel(_Recording):
    """A model that answers from a script, one item per request.

    Args:
        script: The responses in order (see ``ScriptItem``): text, ``call(...)``, a list of
            calls for parallel calls, a ``Message``, a ``ModelResponse``, or an exception.
        name: The name recorded in traces.
        check_calls: Refuse (``UserError``) a ``call(...)`` item that does not fit the
            tools offered in the request it answers (see :func:`script_misfit`); a
            ``Message`` or ``ModelResponse`` item is sent as written.

    Attributes:
        requests: Every request received, in order.

    Example:
        ```python
        model = ScriptedModel([call("multiply_numbers", a=12, b=8), "12 x 8 = 96"])
        ```
    """

    def __init__(
        self, script: Iterable[ScriptItem], *, name: str = "scripted", check_calls: bool = False
    ) -> None:
        super().__init__(name)
        self.script: list[ScriptItem] = list(script)
        self.check_calls = check_calls
        self.position = 0
        for index, item in enumerate(self.script, 1):
            _to_message(item, f"script item {index}", check_only=True)

    @property
    def remaining(self) -> int:
        """How many scripted responses have not been used."""
        return len(self.script) - self.position

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        """Record the request and return the next scripted response."""
        self.requests.append(ModelRequest(list(messages), list(tools), settings))  # as _record
        if self.position >= len(self.script):
            last = messages[-1] if messages else None
            seen = f" The last message it received was {last.role}: {_clip(last)}." if last else ""
            raise ScriptExhausted(
                f"ScriptedModel script ran out: request {len(self.requests)} asked for a response "
                f"but the script has only {len(self.script)}.{seen} Add a response to the script "
                "(a final text answer ends the run)."
            )
        item = self.script[self.position]
        self.position += 1
        if self.check_calls:
            calls: Sequence[Any] = [item] if isinstance(item, ToolCall) else []
            if isinstance(item, (list, tuple)):
                calls = item
            for scripted in calls:
                problem = script_misfit(scripted, tools)
                if problem is not None:
                    raise UserError(f"script item {self.position} {problem}")
        return self._respond(item, messages, self.position)


FunctionResult = str | ToolCall | Sequence[ToolCall] | Message | ModelResponse
ModelFunction = Callable[[list[Message], RequestInfo], FunctionResult | Awaitable[FunctionResult]]


class FunctionModel(_Recording):
    """A model whose every response is computed by a function.

    The function receives the messages and a :class:`RequestInfo` (tools, settings, step)
    and returns what a ``ScriptedModel`` script item may hold; it may be async.

    Example:
        ```python
        def respond(messages, info):
            if messages[-1].role == "tool":
                return f"The result is {messages[-1].content}."
            return call("multiply_numbers", a=12, b=8)

        model = FunctionModel(respond)
        ```
    """

    def __init__(self, function: ModelFunction, *, name: str = "function") -> None:
        if not callable(function):
            raise UserError(f"FunctionModel expects a function, got {function!r}")
        super().__init__(name)
        self.function = function

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        """Record the request and return the function's response."""
        self._record(messages, tools, settings)
        info = RequestInfo(list(tools), settings, len(self.requests), [t.name for t in tools])
        result = self.function(list(messages), info)
        if inspect.isawaitable(result):
            result = await result
        return self._respond(result, messages, f"FunctionModel response {len(self.requests)}")


def _to_message(item: Any, where: str, *, check_only: bool = False) -> Message:
    if isinstance(item, Message):
        if item.role != "assistant":
            raise UserError(
                f"{where}: a scripted message must have role 'assistant', not {item.role!r}"
            )
        return item
    if isinstance(item, str):
        return Message.assistant(item)
    if isinstance(item, ToolCall):
        return Message.assistant(None, [item])
    if isinstance(item, (list, tuple)) and item and all(isinstance(c, ToolCall) for c in item):
        return Message.assistant(None, list(item))
    if check_only and (
        isinstance(item, (ModelResponse, BaseException))
        or (isinstance(item, type) and issubclass(item, BaseException))
    ):
        return Message.assistant("")
    raise UserError(
        f"{where}: cannot use {item!r} as a model response; use text, call(...), a list of "
        "call(...), a Message, a ModelResponse or an exception"
    )


def _clip(message: Message, limit: int = 120) -> str:
    if message.content:
        text = message.content
    elif message.tool_calls:
        text = ", ".join(c.signature() for c in message.tool_calls)
    else:
        text = "(empty)"
    return repr(cut(text, limit))
