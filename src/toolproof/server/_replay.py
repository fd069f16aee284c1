"""Replay mode: answers from recorded traces, never a live call."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from toolproof._messages import Message, ModelResponse, ModelSettings, ToolDefinition
from toolproof.errors import NoRecording
from toolproof.models._base import Model
from toolproof.server._conversation import message_key

if TYPE_CHECKING:
    from toolproof._trace import Trace
    from toolproof.replay._redact import Redactor

__all__ = ["NoRecording", "RecordedModel"]

_CLOSEST_SCAN = 5000


def _show(message: Message) -> dict[str, Any]:
    item: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        item["tool_calls"] = [
            {"name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id:
        item["tool_call_id"] = message.tool_call_id
    return item


def _text(keys: Sequence[tuple[Any, ...]]) -> str:
    return "\n".join(f"{k[0]}: {k[1]} {k[2]}" for k in keys)


class RecordedModel(Model):
    """A model that answers each request with the recorded answer to the same request.

    Requests are compared with ids left out and sensitive values redacted the way the
    recorder redacted the traces, so a recording made through ``record`` mode answers the
    same conversation again.

    Args:
        traces: The recordings.
        redactor: The recorder's redactor (default: toolproof's default rules).
    """

    name = "replay"

    def __init__(self, traces: Iterable[Trace], redactor: Redactor | None = None) -> None:
        from toolproof.replay._redact import Redactor

        self.redactor = redactor if redactor is not None else Redactor()
        self.answers: dict[tuple[Any, ...], ModelResponse] = {}
        for trace in traces:
            messages: list[Message] = []
            if trace.system_prompt:
                messages.append(Message("system", trace.system_prompt))
            messages.extend(trace.history)
            messages.append(Message("user", trace.input))
            for step in trace.steps:
                key = tuple(message_key(m, ids=False) for m in messages)
                self.answers.setdefault(
                    key,
                    ModelResponse(
                        step.response,
                        step.usage,
                        step.model_name or trace.model,
                        step.finish_reason,
                    ),
                )
                messages.append(step.response)
                messages.extend(
                    Message("tool", r.content, tool_call_id=r.call_id) for r in step.tool_results
                )

    def _redacted(self, message: Message) -> Message:
        from toolproof._messages import ToolCall

        content = self.redactor.redact_text(message.content) if message.content else message.content
        calls = [
            ToolCall(c.name, self.redactor.redact_value(c.arguments), c.id)
            for c in message.tool_calls
        ]
        return Message(message.role, content, tool_calls=calls, tool_call_id=message.tool_call_id)

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        """The recorded answer.

        Raises:
            NoRecording: Nothing recorded answers these messages.
        """
        redacted = [self._redacted(m) for m in messages]
        key = tuple(message_key(m, ids=False) for m in redacted)
        found = self.answers.get(key)
        if found is not None:
            return found
        closest: Any = None
        target = _text(key)
        best = 0.0
        for count, (recorded, answer) in enumerate(self.answers.items()):
            if count >= _CLOSEST_SCAN:
                break
            matcher = difflib.SequenceMatcher(None, target, _text(recorded), autojunk=False)
            if matcher.real_quick_ratio() <= best or matcher.quick_ratio() <= best:
                continue
            ratio = matcher.ratio()
            if ratio > best:
                best = ratio
                closest = {
                    "similarity": round(ratio, 3),
                    "request": [
                        {"role": k[0], "content": k[1], "tool_calls": [list(c[:2]) for c in k[2]]}
                        for k in recorded
                    ],
                    "answer": _show(answer.message),
                }
        raise NoRecording(
            f"no recorded answer for this request ({len(messages)} messages, "
            f"{len(self.answers)} recorded requests); replay never calls a live model",
            [_show(m) for m in redacted],
            closest,
        )


def recorded_model_from_store(location: str) -> RecordedModel:
    """A :class:`RecordedModel` over every trace of the store at ``location``.

    ``location`` is a store file or a ``postgresql://`` URL: what ``toolproof serve --mode
    replay --store`` and the ``replay:STORE`` model spec read.

    Raises:
        UserError: There is no store there (nothing is created).
    """
    from toolproof.replay._store import open_store

    with open_store(location) as store:
        return RecordedModel(store.query(newest_first=False))
