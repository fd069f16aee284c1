"""Working memory: fit the conversation into a token budget by whole turn groups.

A *turn group* is a user message, an assistant message without tool calls, or an assistant
message with tool calls together with the tool results that answer it. Groups of earlier
turns are dropped oldest first and never split: an orphaned ``tool`` message (or a
``tool_calls`` message without its results) makes real APIs answer 400.

The current turn (the user input being answered and every message after it) is never
dropped: a model that no longer sees its own calls of this turn calls them again. When it
does not fit on its own, its tool results are shortened, each to no less than
``MIN_RESULT_CHARS`` characters and with a note saying so; when even that does not fit,
the request is not sent and the run stops with ``budget``.

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

#: A tool result of the current turn is never shortened below this many characters.
MIN_RESULT_CHARS = 200

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
    overflow: str | None = None  # why the current turn cannot fit (nothing is to be sent)


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
            protect: Index of the current user input: it and everything after it (the
                current turn) are never dropped.
        """
        scale = state.calibration
        system_tokens = self.count(system) if system is not None else 0
        total = system_tokens + sum(counts)
        if total * scale <= self.max_tokens:
            return self._assemble(system, conversation, 0, state, False, total)

        groups = turn_groups(conversation[:protect])  # the earlier turns
        sizes = [sum(counts[i] for i in group) for group in groups]
        budget = self.max_tokens / scale - system_tokens
        used = total - system_tokens
        cut = 0  # groups[:cut] are dropped, oldest first
        while cut < len(groups) and used > budget:
            used -= sizes[cut]
            cut += 1
        dropped = [i for group in groups[:cut] for i in group]
        kept = conversation[len(dropped) :]
        if used > budget:  # the current turn alone is over: shorten its tool results
            turn, turn_counts = conversation[protect:], counts[protect:]
            current = self._shorten(turn, turn_counts, budget)
            if current is None:
                need = system_tokens + self._cut(turn, turn_counts, MIN_RESULT_CHARS)[1]
                return Prepared([], len(dropped), False, total, self._overflow(need * scale))
            kept = current
            used = sum(self.count(m) for m in kept)
        summarized = False
        if dropped and self.summarizer is not None:
            await self._summarize(conversation, dropped, state)
            summarized = state.summary is not None
        return self._assemble(system, kept, len(dropped), state, summarized, system_tokens + used)

    def _shorten(
        self, turn: Sequence[Message], counts: Sequence[int], budget: float
    ) -> list[Message] | None:
        """``turn`` with its longest tool results cut to one length so that it fits ``budget``.

        The length is the largest that fits, and never under ``MIN_RESULT_CHARS``; ``None``
        when the turn does not fit even then.
        """
        longest = max((len(m.content or "") for m in turn if m.role == "tool"), default=0)
        if longest <= MIN_RESULT_CHARS:
            return None
        low, high = MIN_RESULT_CHARS, longest  # the answer is in [low, high)
        best: list[Message] | None = None
        while low < high:  # binary search on the kept length: O(log n) estimates
            middle = (low + high) // 2
            shortened, tokens = self._cut(turn, counts, middle)
            if tokens <= budget:
                best, low = shortened, middle + 1
            else:
                high = middle
        return best

    def _cut(
        self, turn: Sequence[Message], counts: Sequence[int], keep: int
    ) -> tuple[list[Message], int]:
        """``turn`` with every tool result longer than ``keep`` characters cut to ``keep``."""
        out: list[Message] = []
        tokens = 0
        for message, count in zip(turn, counts, strict=True):
            content = message.content or ""
            if message.role == "tool" and len(content) > keep:
                note = (
                    f"\n[toolproof shortened this result to fit Memory(max_tokens="
                    f"{self.max_tokens}): {len(content) - keep} of its {len(content)} "
                    "characters are left out]"
                )
                message = Message(
                    "tool",
                    content[:keep] + note,
                    [],
                    message.tool_call_id,
                    message.name,
                    None,
                    message.status,
                )
                count = self.count(message)
            out.append(message)
            tokens += count
        return out, tokens

    def _overflow(self, need: float) -> str:
        return (
            f"the current turn does not fit in Memory(max_tokens={self.max_tokens}): with "
            f"earlier turns left out and its tool results shortened to {MIN_RESULT_CHARS} "
            f"characters, the request still needs about {round(need)} tokens; raise "
            "Memory(max_tokens=...)"
        )

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
