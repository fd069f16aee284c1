"""The token estimator keeps its last answer: it must never give a stale one.

The agent and a fake model estimate the same message one after the other, so the second
estimate is a lookup. These tests edit messages between estimates (content, calls and
reasoning replaced, estimates from several threads interleaved) and compare every answer
with a fresh estimate.
"""

from __future__ import annotations

import threading
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import toolproof._tokens as tokens
from toolproof import Message
from toolproof._messages import ToolCall

texts = st.one_of(st.none(), st.text(max_size=40))
calls = st.lists(
    st.builds(
        ToolCall,
        name=st.sampled_from(["a", "lookup_employee", "ü"]),
        arguments=st.dictionaries(st.sampled_from(["x", "y"]), st.integers(), max_size=2),
    ),
    max_size=2,
)


def fresh(message: Message) -> int:
    saved = tokens._last
    tokens._last = (None, None, None, None, 0)
    try:
        return tokens.estimate_message_tokens(message)
    finally:
        tokens._last = saved


@settings(deadline=None, max_examples=150)
@given(
    first=texts,
    edits=st.lists(
        st.tuples(st.sampled_from(["content", "calls", "reasoning", "same"]), texts, calls),
        max_size=6,
    ),
)
def test_every_estimate_equals_a_fresh_one_whatever_was_edited(
    first: str | None, edits: list[tuple[str, str | None, list[ToolCall]]]
) -> None:
    message = Message("assistant", first)
    other = Message("user", "another message in between")
    for i, (part, text, new_calls) in enumerate(edits):
        if part == "content":
            message.content = text
        elif part == "calls":
            message.tool_calls = list(new_calls)
        elif part == "reasoning":
            message.reasoning = text
        assert tokens.estimate_message_tokens(message) == fresh(message)
        assert tokens.estimate_message_tokens(message) == fresh(message)  # the lookup
        if i % 2:
            assert tokens.estimate_message_tokens(other) == fresh(other)


def test_the_second_estimate_of_a_message_is_a_lookup() -> None:
    message = Message("assistant", "12 x 8 = 96")
    tokens.estimate_message_tokens(message)
    planted = (*tokens._last[:4], 12345)
    tokens._last = planted  # type: ignore[assignment]
    assert tokens.estimate_message_tokens(message) == 12345  # looked up, not computed
    message.content = "12 x 8 = 96"[:5]
    assert tokens.estimate_message_tokens(message) == fresh(message) != 12345


def test_threads_estimating_at_once_never_get_each_others_answer() -> None:
    messages = [Message("user", "x" * (4 * n)) for n in range(1, 40)]
    expected = [fresh(m) for m in messages]
    failures: list[Any] = []
    barrier = threading.Barrier(4)

    def worker(offset: int) -> None:
        barrier.wait(timeout=10)
        for _ in range(300):
            for i in range(offset, len(messages), 3):
                got = tokens.estimate_message_tokens(messages[i])
                if got != expected[i]:
                    failures.append((i, got, expected[i]))

    threads = [threading.Thread(target=worker, args=(k % 3,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert failures == []
