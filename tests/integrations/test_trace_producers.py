"""Every producer of a trace agrees: the same conversation gives the same trace skeleton.

One conversation (a system prompt, a user message, model answers with tool calls, their
results, token counts, and either a final answer or a stop right after tool calls) is fed
through every producer: the agent loop, the wire server (a real local HTTP server and the
openai client), the OpenAI-format import, LangChain capture (a real LangChain chat model and
tools), the Agents SDK (its real ``Runner``), OpenTelemetry import (spans the exporter
wrote) and the MCP server (the real MCP client). Each gives the same step numbering, the
same pairing of calls with results, the same usage sums, the same tool-schema hashes and
the same end. Conversations are generated from seeds; the quick producers take many.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from toolproof import Agent, Toolset, Trace, tool
from toolproof._messages import Message, ModelResponse, ToolCall, Usage
from toolproof._trace import schema_hash
from toolproof.models.fake import ScriptedModel


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"lookup:{key}"


@tool
def weigh(key: str) -> str:
    """Weigh an item.

    Args:
        key: The item.
    """
    return f"weigh:{key}"


TOOLS = [lookup, weigh]
MCP_TESTS = str(Path(__file__).resolve().parents[1] / "mcp")  # (their HTTP server helper)
RESULTS = {"lookup": lookup.function, "weigh": weigh.function}


@dataclass
class Turn:
    """One model answer: its text, its calls (name, key) and its token counts."""

    text: str | None
    calls: list[tuple[str, str]]
    tokens: tuple[int, int]


@dataclass
class Conversation:
    system: str
    user: str
    turns: list[Turn] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether it ends with an answer (else right after the last turn's tool calls)."""
        return not self.turns[-1].calls

    def call_id(self, step: int, position: int) -> str:
        return f"call_{step}_{position}"

    def responses(self) -> list[ModelResponse]:
        """The model's answers, as a scripted model gives them."""
        out = []
        for step, turn in enumerate(self.turns, 1):
            calls = [
                ToolCall(name, {"key": key}, self.call_id(step, i))
                for i, (name, key) in enumerate(turn.calls)
            ]
            message = Message.assistant(turn.text if calls else (turn.text or ""), calls)
            usage = Usage(input_tokens=turn.tokens[0], output_tokens=turn.tokens[1], requests=1)
            reason = "tool_calls" if calls else "stop"
            out.append(ModelResponse(message, usage, "scripted", reason))
        return out

    def openai_messages(self) -> list[dict[str, Any]]:
        """The conversation as OpenAI chat messages (the import's input)."""
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user},
        ]
        for step, turn in enumerate(self.turns, 1):
            calls = [
                {
                    "id": self.call_id(step, i),
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps({"key": key})},
                }
                for i, (name, key) in enumerate(turn.calls)
            ]
            message: dict[str, Any] = {"role": "assistant", "content": turn.text}
            if calls:
                message["tool_calls"] = calls
            messages.append(message)
            if step == len(self.turns):
                break  # an incomplete conversation stops right after its last calls
            for i, (name, key) in enumerate(turn.calls):
                content = RESULTS[name](key)
                messages.append(
                    {"role": "tool", "tool_call_id": self.call_id(step, i), "content": content}
                )
        return messages


_WORDS = ["refund", "A-1", "ünïcode", "line\nbreak", '{"json": 1}', "", "x" * 40]


def conversation(seed: int, *, complete: bool | None = None) -> Conversation:
    """A conversation made from ``seed``: 0 to 3 tool steps of 1 to 3 calls, then its end."""
    rng = random.Random(seed)
    convo = Conversation(system=f"You help. ({rng.choice(_WORDS)})", user=rng.choice(_WORDS))
    for _ in range(rng.randint(0, 3)):
        calls = [
            (rng.choice(["lookup", "weigh"]), rng.choice(_WORDS) or "k")
            for _ in range(rng.randint(1, 3))
        ]
        text = rng.choice([None, "Let me check."])
        convo.turns.append(Turn(text, calls, (rng.randint(0, 500), rng.randint(0, 80))))
    ends = rng.random() < 0.7 if complete is None else complete
    if ends or not convo.turns:
        final = rng.choice(["Done.", "It is ünïcode.", "line\nbreak"])
        convo.turns.append(Turn(final, [], (rng.randint(0, 500), rng.randint(1, 80))))
    return convo


# -- what every producer must agree on ----------------------------------------------------------


def skeleton(trace: Trace, *, tokens: bool = True) -> dict[str, Any]:
    """What every producer's trace of the conversation must agree on."""
    steps = trace.steps
    summed = (
        sum(s.usage.input_tokens for s in steps),
        sum(s.usage.output_tokens for s in steps),
    )
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == summed  # the sum rule
    for info in trace.tools:  # the one hashing rule
        assert info.schema_hash == schema_hash(info.name, info.description, info.parameters)
    return {
        "steps": [s.index for s in steps],
        "pairs": [
            (s.index, c.id, c.name, None if r is None else (r.call_id, r.name, r.content))
            for s in steps
            for c, r in zip(s.response.tool_calls, _results_in_order(s), strict=True)
        ],
        "usage": summed if tokens else None,
        "system_prompt_hash": trace.system_prompt_hash,
        "end": (trace.stop_reason, trace.output),
    }


def _results_in_order(step: Any) -> list[Any]:
    by_id = {r.call_id: r for r in step.tool_results}
    assert [r.call_id for r in step.tool_results] == [
        c.id for c in step.response.tool_calls if c.id in by_id
    ], "results follow the calls' order"
    return [by_id.get(c.id) for c in step.response.tool_calls]


def expected(convo: Conversation, *, tokens: bool = True) -> dict[str, Any]:
    """The skeleton every producer must give for ``convo``."""
    from toolproof._trace import stable_hash

    pairs = []
    last = len(convo.turns)
    for step, turn in enumerate(convo.turns, 1):
        for i, (name, key) in enumerate(turn.calls):
            answered = step < last
            result = (convo.call_id(step, i), name, RESULTS[name](key)) if answered else None
            pairs.append((step, convo.call_id(step, i), name, result))
    final = convo.turns[-1]
    return {
        "steps": list(range(1, last + 1)),
        "pairs": pairs,
        "usage": (sum(t.tokens[0] for t in convo.turns), sum(t.tokens[1] for t in convo.turns))
        if tokens
        else None,
        "system_prompt_hash": stable_hash(convo.system),
        "end": ("final", final.text or "") if convo.complete else ("cancelled", None),
    }


TOOL_HASHES = {t.name: t.schema_hash for t in TOOLS}


def tool_hashes(trace: Trace) -> dict[str, str]:
    return {info.name: info.schema_hash for info in trace.tools}


# -- the producers ------------------------------------------------------------------------------


def via_agent(convo: Conversation) -> Trace:
    # (generated conversations may repeat a call: the loop's repeat limit is not the subject)
    agent = Agent(
        ScriptedModel(convo.responses()),
        TOOLS,
        system_prompt=convo.system,
        max_repeated_calls=None,
    )
    return agent.run_sync(convo.user).trace


def via_import(convo: Conversation) -> Trace:
    from toolproof.replay._import import conversation_to_traces, load_tool_infos

    definitions = [t.definition.to_openai() for t in TOOLS]
    (trace,) = conversation_to_traces(convo.openai_messages(), tools=load_tool_infos(definitions))
    return trace


def via_otel(convo: Conversation) -> Trace:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolproof.integrations.otel import export_trace, otlp_json, traces_from_otlp_json

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    export_trace(via_import_with_usage(convo), tracer_provider=provider, capture_content=True)
    (trace,) = traces_from_otlp_json(otlp_json(list(exporter.get_finished_spans())))
    return trace


def via_import_with_usage(convo: Conversation) -> Trace:
    """The imported trace with the model's token counts: what the exporter is given."""
    trace = via_import(convo)
    for step, response in zip(trace.steps, convo.responses(), strict=True):
        step.usage = response.usage
    trace.usage = Usage(
        input_tokens=sum(s.usage.input_tokens for s in trace.steps),
        output_tokens=sum(s.usage.output_tokens for s in trace.steps),
        requests=len(trace.steps),
    )
    return trace


async def via_wire(convo: Conversation) -> Trace:
    import openai

    from toolproof.server import ToolproofServer

    server = ToolproofServer(lambda: ScriptedModel([]))
    await server.start()
    try:
        channel = server.open_channel(lambda: ScriptedModel(convo.responses()))
        client = openai.AsyncOpenAI(base_url=server.base_url(channel), api_key="k")
        try:
            tools = [t.definition.to_openai() for t in TOOLS]
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": convo.system},
                {"role": "user", "content": convo.user},
            ]
            for step in range(len(convo.turns)):
                reply = await client.chat.completions.create(
                    model="m", messages=messages, tools=tools
                )
                message = reply.choices[0].message
                if not message.tool_calls or step == len(convo.turns) - 1:
                    break
                messages.append(message.model_dump(exclude_none=True))
                for c in message.tool_calls:
                    key = json.loads(c.function.arguments)["key"]
                    content = RESULTS[c.function.name](key)
                    messages.append({"role": "tool", "tool_call_id": c.id, "content": content})
        finally:
            await client.close()
        (trace,) = channel.traces()
        return trace
    finally:
        await server.aclose()


def via_langchain(convo: Conversation) -> Trace:
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

    from toolproof.integrations.langchain import ScriptedChatModel, capture_trace, to_langchain

    lc_tools = {t.name: t for t in to_langchain(Toolset(TOOLS))}
    model = ScriptedChatModel(convo.responses()).bind_tools(list(lc_tools.values()))
    messages: list[Any] = [SystemMessage(convo.system), HumanMessage(convo.user)]
    with capture_trace() as captured:
        for step in range(len(convo.turns)):
            answer = model.invoke(messages)
            if not answer.tool_calls or step == len(convo.turns) - 1:
                break
            messages.append(answer)
            for c in answer.tool_calls:
                out = lc_tools[c["name"]].invoke({**c, "type": "tool_call"})
                assert isinstance(out, ToolMessage)
                messages.append(out)
    return captured.trace


def via_agents_sdk(convo: Conversation) -> tuple[Trace, Trace]:
    """``trace_from_result`` and the ``TraceProcessor``'s trace of one real SDK run."""
    from agents import Agent as SdkAgent
    from agents import Runner, set_trace_processors

    from toolproof.integrations.openai_agents import (
        AgentsModel,
        TraceProcessor,
        to_function_tool,
        trace_from_result,
    )

    processor = TraceProcessor()
    set_trace_processors([processor])
    try:
        model = AgentsModel(ScriptedModel(convo.responses()))
        agent = SdkAgent(
            name="sdk", instructions=convo.system, model=model, tools=to_function_tool(TOOLS)
        )
        result = asyncio.run(Runner.run(agent, convo.user))
    finally:
        set_trace_processors([])
    return trace_from_result(result, tools=TOOLS), processor.traces[-1]


# -- the differential tests ------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
@example(seed=171)  # (a conversation that repeats one call three times in a row)
def test_the_loop_the_import_and_otel_give_the_same_trace(seed: int) -> None:
    convo = conversation(seed)
    want = expected(convo)
    imported = via_import(convo)
    assert skeleton(imported, tokens=False) == expected(convo, tokens=False)
    assert tool_hashes(imported) == TOOL_HASHES
    otel = via_otel(convo)
    assert skeleton(otel) == want
    assert tool_hashes(otel) == TOOL_HASHES
    if convo.complete:  # (the loop runs every call it is asked for)
        looped = via_agent(convo)
        assert skeleton(looped) == want
        assert tool_hashes(looped) == TOOL_HASHES


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", range(8))
async def test_the_wire_server_gives_the_same_trace(seed: int) -> None:
    convo = conversation(seed, complete=seed % 3 != 2)
    trace = await via_wire(convo)
    assert skeleton(trace) == expected(convo)
    assert tool_hashes(trace) == TOOL_HASHES


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", range(8))
def test_langchain_capture_gives_the_same_trace(seed: int) -> None:
    convo = conversation(seed, complete=seed % 3 != 2)
    trace = via_langchain(convo)
    assert skeleton(trace) == expected(convo)
    assert tool_hashes(trace) == TOOL_HASHES


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", range(6))
def test_the_agents_sdk_gives_the_same_trace(seed: int) -> None:
    convo = conversation(seed, complete=True)  # (the SDK runs every call it is asked for)
    from_result, processed = via_agents_sdk(convo)
    want = expected(convo)
    assert skeleton(from_result) == want
    assert tool_hashes(from_result) == TOOL_HASHES
    assert skeleton(processed) == want


@pytest.mark.timeout(300)
async def test_mcp_sessions_pair_calls_and_hash_tools_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("mcp")
    monkeypatch.syspath_prepend(MCP_TESTS)
    from mcp import Client
    from mcp_helpers import http_server

    from toolproof.integrations.mcp import McpSessions

    convos: dict[tuple[tuple[str, str], ...], Conversation] = {}
    for seed in range(12):  # (conversations with calls; equal call lists once)
        convo = conversation(seed, complete=True)
        calls = tuple(call for turn in convo.turns for call in turn.calls)
        if calls:
            convos.setdefault(calls, convo)
    sessions = McpSessions(Toolset(TOOLS))
    with http_server(Toolset(TOOLS), sessions) as url:
        for convo in convos.values():
            async with Client(url) as client:
                for turn in convo.turns:
                    for name, key in turn.calls:
                        await client.call_tool(name, {"key": key})
        # Ended sessions finish in the server's thread: bounded by the test's time limit.
        while len(sessions.traces) < len(convos):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    by_calls = {
        tuple((c.name, c.arguments["key"]) for c in t.tool_calls): t for t in sessions.traces
    }
    assert set(by_calls) == set(convos)
    for calls, trace in by_calls.items():
        assert [s.index for s in trace.steps] == list(range(1, len(calls) + 1))
        assert [(r.name, r.content) for r in trace.tool_results] == [
            (name, RESULTS[name](key)) for name, key in calls
        ]
        assert [r.call_id for r in trace.tool_results] == [c.id for c in trace.tool_calls]
        assert tool_hashes(trace) == TOOL_HASHES
