"""Conversations read off the wire stay whole, however many identical ones run side by side.

Identical first messages are ordinary production traffic (a health check, a test suite run
in parallel, many users asking the same thing). Every conversation must come out as one
well-formed trace: its own steps, each tool result after its call, counts exact.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from toolproof import Agent, Toolset, tool
from toolproof.models.fake import ScriptedModel, call
from toolproof.server import ToolproofServer

openai = pytest.importorskip("openai")

TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("get_price", "multiply")
]
SCRIPT = [
    [call("get_price", item="apple"), call("multiply", a=3, b=1)],
    call("multiply", a=3, b=2),
    "3 apples cost 6 euros.",
]


def _result(name: str, arguments: dict[str, Any]) -> str:
    return "2" if name == "get_price" else str(arguments["a"] * arguments["b"])


@pytest.fixture
async def client() -> AsyncIterator[Callable[[str], Any]]:
    made: list[Any] = []

    def make(base_url: str, **options: Any) -> Any:
        # A connection of 200 at once may wait for the listen backlog: no short timeouts.
        options.setdefault("timeout", 90.0)
        made.append(openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0, **options))
        return made[-1]

    yield make
    for each in made:
        await each.close()


async def _agent_loop(sdk: Any, question: str, headers: dict[str, str] | None = None) -> str:
    """A plain tool loop, as an agent written with the OpenAI SDK runs it."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for _ in range(6):
        await asyncio.sleep(0)  # let the other conversations interleave
        reply = await sdk.chat.completions.create(
            model="m", messages=messages, tools=TOOLS, extra_headers=headers
        )
        message = reply.choices[0].message.model_dump(exclude_none=True)
        messages.append(message)
        if not message.get("tool_calls"):
            return str(message["content"])
        for c in message["tool_calls"]:
            import json

            arguments = json.loads(c["function"]["arguments"])
            content = _result(c["function"]["name"], arguments)
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": content})
    raise AssertionError("the conversation did not end")


def _well_formed(trace: Any) -> None:
    assert [s.index for s in trace.steps] == [1, 2, 3]
    assert [[c.name for c in s.response.tool_calls] for s in trace.steps] == [
        ["get_price", "multiply"],
        ["multiply"],
        [],
    ]
    for step in trace.steps:
        assert [r.call_id for r in step.tool_results] == [c.id for c in step.response.tool_calls]
    assert [r.content for r in trace.tool_results] == ["2", "3", "6"]
    assert trace.output == "3 apples cost 6 euros." and trace.stop_reason == "final"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("count", [20, 200])
async def test_identical_concurrent_conversations_each_make_one_whole_trace(
    count: int, client: Callable[..., Any]
) -> None:
    recorded: list[Any] = []
    server = ToolproofServer(lambda: ScriptedModel(SCRIPT), on_finished=recorded.append)
    await server.start()
    try:
        sdk = client(f"{server.url}/v1")
        answers = await asyncio.gather(
            *(_agent_loop(sdk, "What do 3 apples cost?") for _ in range(count))
        )
    finally:
        await server.aclose()
    assert answers == ["3 apples cost 6 euros."] * count
    assert len(recorded) == count  # exactly one trace per conversation, none merged or split
    assert len({t.id for t in recorded}) == count
    for trace in recorded:
        _well_formed(trace)
    assert sum(len(t.steps) for t in recorded) == 3 * count


async def test_the_conversation_header_keeps_conversations_apart_by_name(
    client: Callable[..., Any],
) -> None:
    server = ToolproofServer(lambda: ScriptedModel(SCRIPT))
    await server.start()
    try:
        sdk = client(f"{server.url}/v1")
        await asyncio.gather(
            *(
                _agent_loop(sdk, "same", {"X-Toolproof-Conversation": f"user-{n}"})
                for n in range(10)
            )
        )
    finally:
        await server.aclose()
    traces = server.default.traces()
    assert len(traces) == 10
    for trace in traces:
        _well_formed(trace)


async def test_answers_to_the_pending_calls_of_several_conversations_start_a_new_one() -> None:
    # Two open conversations wait for the results of calls with the same id; a request
    # whose history matches neither (its client rewrote it) must not be guessed into one.
    server = ToolproofServer(lambda: ScriptedModel([call("f", x=1), "done"]))
    await server.start()
    url = f"{server.url}/v1/chat/completions"
    try:
        async with aiohttp.ClientSession() as session:
            for question in ("a", "b"):
                body = {"model": "m", "messages": [{"role": "user", "content": question}]}
                async with session.post(url, json=body) as reply:
                    assert reply.status == 200
            rewritten = [
                {"role": "user", "content": "c"},
                {"role": "assistant", "content": None, "tool_calls": []},
                {"role": "tool", "tool_call_id": "call_1", "content": "1"},
            ]
            async with session.post(url, json={"model": "m", "messages": rewritten}) as reply:
                assert reply.status == 200
    finally:
        await server.aclose()
    traces = server.default.traces()
    assert len(traces) == 3
    assert [len(t.steps) for t in traces] == [1, 1, 1]  # nothing was merged into a or b


@tool
def get_price(item: str) -> str:
    """The price of an item.

    Args:
        item: The item.
    """
    return "2"


@tool
def multiply(a: int, b: int) -> str:
    """Multiply.

    Args:
        a: One factor.
        b: The other.
    """
    return str(a * b)


async def test_a_wire_trace_numbers_its_steps_like_an_in_process_run(
    client: Callable[..., Any],
) -> None:
    local = await Agent(ScriptedModel(SCRIPT), Toolset([get_price, multiply])).run(
        "What do 3 apples cost?"
    )
    server = ToolproofServer(lambda: ScriptedModel(SCRIPT))
    await server.start()
    try:
        await _agent_loop(client(f"{server.url}/v1"), "What do 3 apples cost?")
    finally:
        await server.aclose()
    [wire] = server.default.traces()
    assert [s.index for s in wire.steps] == [s.index for s in local.trace.steps] == [1, 2, 3]
    assert [[c.name for c in s.response.tool_calls] for s in wire.steps] == [
        [c.name for c in s.response.tool_calls] for s in local.trace.steps
    ]
