"""Working memory: fit the conversation into a token budget by whole turn groups.

A *turn group* is a user message, an assistant message without tool calls, or an assistant
message with tool calls together with the tool results that answer it. Groups are dropped
oldest first and never split: an orphaned ``tool`` message (or a ``tool_calls`` message
without its results) makes real APIs answer 400.

Token counts: the offline estimator below, calibrated by the provider's reported usage when
there is one (``input_tokens`` of the last request / estimate of that request).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from toolproof._messages import Message, ModelSettings
from toolproof._tokens import estimate_message_tokens, estimate_tokens
from toolproof.errors import UserError
from toolproof.models._base import Model

__all__ = ["Memory", "MemoryState", "estimate_message_tokens", "estimate_tokens", "turn_groups"]

SUMMARY_PROMPT = (
    "Summarize the conversation below for an assistant that will continue it. Keep every "
    "fact, number, id, tool result and open question; drop pleasantries. Answer with the "
    "summary only."
)


def turn_groups(messages: Sequence[Message]) -> list[list[int]]:
    """Split a conversation (without system prompt) into turn groups of message indexes."""
    groups: list[list[int]] = []
    for index, message in enumerate(messages):
        if message.role == "tool" and groups:
            groups[-1].append(index)  # results stay with the call message before them
        else:
            groups.append([index])
    return groups


@dataclass(slots=True)
class MemoryState:
    """What memory remembers between requests of one run or session."""

    calibration: float = 1.0
    summary: str | None = None
    summarized_until: int = 0
    summary_usage_tokens: int = 0


@dataclass(slots=True)
class Prepared:
    """The messages a step sends, and what memory did to fit them."""

    messages: list[Message]
    trimmed: int
    summarized: bool
    estimated_tokens: int


@dataclass
class Memory:
    """Keep the system prompt and trim the oldest history to a token budget.

    Args:
        max_tokens: Budget for the request's messages (system prompt included).
        summarizer: A model that condenses dropped turns into a summary appended to the
            system prompt; without one, dropped turns are simply left out.
        estimator: Counts a message's tokens; defaults to :func:`estimate_message_tokens`.

    Example:
        ```python
        agent = Agent(model, tools, memory=Memory(max_tokens=6000))
        ```
    """

    max_tokens: int
    summarizer: Model | None = None
    estimator: object = field(default=estimate_message_tokens, repr=False)

    def __post_init__(self) -> None:
        if self.max_tokens <= 0:
            raise UserError(f"Memory(max_tokens=...) must be positive, got {self.max_tokens}")
        if not callable(self.estimator):
            raise UserError("Memory(estimator=...) must be a function Message -> int")

    def count(self, message: Message) -> int:
        """Estimated tokens of one message."""
        return int(self.estimator(message))  # type: ignore[operator]

    async def prepare(
        self,
        system: Message | None,
        conversation: Sequence[Message],
        counts: Sequence[int],
        state: MemoryState,
        *,
        protect: int,
    ) -> Prepared:
        """The messages to send: system prompt plus as much recent conversation as fits.

        Args:
            system: The system prompt message.
            conversation: Everything after the system prompt.
            counts: Estimated tokens of each conversation message.
            state: Calibration and summary carried between requests.
            protect: Index of the current user input, which is never dropped.
        """
        scale = state.calibration
        system_tokens = self.count(system) if system is not None else 0
        total = system_tokens + sum(counts)
        if total * scale <= self.max_tokens:
            return self._assemble(system, conversation, 0, state, False, total)

        groups = turn_groups(conversation)
        sizes = [sum(counts[i] for i in group) for group in groups]
        budget = self.max_tokens / scale - system_tokens
        keep = [True] * len(groups)
        used = sum(sizes)
        # Drop oldest first, never the group holding the current input, never the last group.
        for gi, group in enumerate(groups):
            if used <= budget:
                break
            if gi == len(groups) - 1 or protect in group:
                continue
            keep[gi] = False
            used -= sizes[gi]
        dropped = [i for gi, group in enumerate(groups) if not keep[gi] for i in group]
        kept = [conversation[i] for gi, group in enumerate(groups) if keep[gi] for i in group]
        summarized = False
        if dropped and self.summarizer is not None:
            await self._summarize(conversation, dropped, state)
            summarized = state.summary is not None
        return self._assemble(system, kept, len(dropped), state, summarized, system_tokens + used)

    def _assemble(
        self,
        system: Message | None,
        conversation: Sequence[Message],
        trimmed: int,
        state: MemoryState,
        summarized: bool,
        estimated: int,
    ) -> Prepared:
        messages: list[Message] = []
        if summarized and state.summary:
            base = system.content if system is not None and system.content else ""
            text = f"{base}\n\nSummary of the earlier conversation:\n{state.summary}".strip()
            messages.append(Message.system(text))
        elif system is not None:
            messages.append(system)
        messages.extend(conversation)
        return Prepared(messages, trimmed, summarized, int(estimated * state.calibration))

    async def _summarize(
        self, conversation: Sequence[Message], dropped: list[int], state: MemoryState
    ) -> None:
        # Only what was dropped since the last summary is sent, together with that summary.
        assert self.summarizer is not None
        newly = [conversation[i] for i in dropped if i >= state.summarized_until]
        if not newly and state.summary is not None:
            return
        lines = []
        if state.summary:
            lines.append(f"Earlier summary: {state.summary}")
        for message in newly:
            lines.append(_transcript_line(message))
        response = await self.summarizer.request(
            [Message.system(SUMMARY_PROMPT), Message.user("\n".join(lines))], [], ModelSettings()
        )
        state.summary = (response.message.content or "").strip() or state.summary
        state.summarized_until = max(dropped) + 1
        state.summary_usage_tokens += response.usage.total_tokens


def _transcript_line(message: Message) -> str:
    if message.role == "tool":
        return f"tool {message.name} result: {message.content}"
    if message.tool_calls:
        calls = "; ".join(
            f"{call.name}({json.dumps(call.arguments, ensure_ascii=False)})"
            for call in message.tool_calls
        )
        return f"assistant called: {calls}" + (
            f" and said: {message.content}" if message.content else ""
        )
    return f"{message.role}: {message.content or ''}"
