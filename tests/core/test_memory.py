"""Memory: token estimates, trimming by whole turn groups, summaries, sessions."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolproof import Agent, Memory, Message, ToolCall, ToolResult, Usage, UserError, tool
from toolproof._memory import MemoryState, estimate_message_tokens, estimate_tokens, turn_groups
from toolproof.models import ModelResponse
from toolproof.testing import ScriptedModel, call


def test_estimator_counts_ascii_by_four_and_cjk_by_one() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_tokens("查询员工年假") == 6
    assert estimate_tokens("E001的年假") == 1 + 3
    message = Message.assistant(None, [ToolCall("f", {"a": 1}, "c1")])
    assert estimate_message_tokens(message) == 4 + 0 + 4 + 1 + estimate_tokens('{"a": 1}')


def _tool_turn(i: int) -> list[Message]:
    calls = [
        ToolCall("lookup", {"q": f"query {i} " * 5}, f"c{i}a"),
        ToolCall("lookup", {"q": str(i)}, f"c{i}b"),
    ]
    return [
        Message.user(f"question {i} " * 10),
        Message.assistant(None, calls),
        *[Message.tool(ToolResult(c.id, c.name, "ok", f"result {c.id} " * 10)) for c in calls],
        Message.assistant(f"answer {i} " * 10),
    ]


def test_turn_groups_keep_calls_with_their_results() -> None:
    messages = _tool_turn(1)
    assert turn_groups(messages) == [[0], [1, 2, 3], [4]]


def _check_no_orphans(messages: list[Message]) -> None:
    open_ids: set[str] = set()
    for message in messages:
        if message.role == "tool":
            assert message.tool_call_id in open_ids, f"orphaned tool message {message.tool_call_id}"
            open_ids.discard(message.tool_call_id or "")
        else:
            assert not open_ids, f"tool_calls {open_ids} without results"
            open_ids = {c.id for c in message.tool_calls}
    assert not open_ids


def _prepare(memory: Memory, conversation: list[Message], protect: int) -> Any:
    counts = [memory.count(m) for m in conversation]
    return asyncio.run(
        memory.prepare(Message.system("sys"), conversation, counts, MemoryState(), protect=protect)
    )


def test_trimming_drops_oldest_whole_groups_and_keeps_system_and_current_input() -> None:
    conversation = _tool_turn(1) + _tool_turn(2) + [Message.user("current question")]
    memory = Memory(max_tokens=100)
    prepared = _prepare(memory, conversation, protect=len(conversation) - 1)
    assert prepared.messages[0].content == "sys"
    assert prepared.messages[-1].content == "current question"
    assert prepared.trimmed > 0
    _check_no_orphans(prepared.messages[1:])
    assert prepared.estimated_tokens <= 100


def test_summarizer_replaces_dropped_turns() -> None:
    summarizer = ScriptedModel(["User asked about E001 (5 days)."])
    memory = Memory(max_tokens=60, summarizer=summarizer)
    conversation = [*_tool_turn(1), Message.user("and E002?")]
    prepared = _prepare(memory, conversation, protect=len(conversation) - 1)
    assert prepared.summarized
    assert (
        prepared.messages[0].content
        == "sys\n\nSummary of the earlier conversation:\nUser asked about E001 (5 days)."
    )
    transcript = summarizer.requests[0].messages[-1].content or ""
    assert "question 1" in transcript and "tool lookup result" in transcript


def test_memory_in_a_long_session_trims_and_records_it() -> None:
    @tool
    def lookup(q: str) -> str:
        """Look up.

        Args:
            q: Query.
        """
        return "x" * 200

    script: list[Any] = []
    for i in range(6):
        script += [call("lookup", q=f"q{i}"), f"answer {i}"]
    model = ScriptedModel(script)
    agent = Agent(model, [lookup], system_prompt="sys", memory=Memory(max_tokens=250))
    chat = agent.session()
    for i in range(6):
        result = chat.run_sync(f"question {i}")
        assert result.output == f"answer {i}"
    for request in model.requests:
        _check_no_orphans(request.messages[1:])
        assert request.messages[0].content == "sys"
    last = chat.traces[-1].steps[-1].request
    assert last.trimmed_messages > 0 and last.message_count < 2 + 4 * 6


def test_reported_usage_calibrates_the_estimate() -> None:
    # The provider says the first request cost 4x the estimate: memory trims sooner after it.
    big = ModelResponse(
        Message.assistant(None, [call("f", x=1)]),
        Usage(input_tokens=400, output_tokens=5, requests=1),
    )

    @tool
    def f(x: int) -> str:
        """F.

        Args:
            x: X.
        """
        return "y" * 100

    state = MemoryState()
    agent = Agent(ScriptedModel([big, "done"]), [f], memory=Memory(max_tokens=150))
    asyncio.run(agent.run("q" * 40, memory_state=state))
    assert state.calibration > 2.0


def test_bad_memory_settings() -> None:
    with pytest.raises(UserError, match="must be positive"):
        Memory(max_tokens=0)
    with pytest.raises(UserError, match="estimator"):
        Memory(max_tokens=10, estimator=3)
