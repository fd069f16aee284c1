"""Work budget of the OpenAI-compatible adapter per model call: counted, not timed.

The HTTP request path is most of a ``toolproof run``'s CPU. Each model call builds its body
once, encodes it once, sends one request and parses one response, decoding its body once
(by pydantic-core; ``json`` only for what it refuses); a retry resends the same bytes; the
tools array, the same on every request, is encoded once per model and set of definitions
(and again only when a definition changes). No timer is scheduled per request
(``test_deadline_watch.py``). Counting those calls catches a regression on any machine,
however busy.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from _openai_server import FakeOpenAIServer, Reply, tool_call

from toolproof import Agent, tool
from toolproof.models import OpenAIChatModel, RetryPolicy
from toolproof.models import openai as openai_module


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


def _count(monkeypatch: pytest.MonkeyPatch, counts: Counter[str], owner: Any, name: str) -> None:
    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    found: Counter[str] = Counter()
    for name in ("_payload", "_attempt", "_parse_completion", "_wire_messages", "_decode_slowly"):
        _count(monkeypatch, found, OpenAIChatModel, name)
    _count(monkeypatch, found, openai_module, "_decode")
    real_dumps = openai_module._dumps

    def dumps(value: Any) -> str:
        """The adapter's encoder, counting encodes of request bodies and of tools arrays."""
        if isinstance(value, dict) and "messages" in value:
            found["body_encodes"] += 1
        elif isinstance(value, list) and value and value[0].get("type") == "function":
            found["tools_encodes"] += 1
        return real_dumps(value)

    monkeypatch.setattr(openai_module, "_dumps", dumps)
    real_encode = openai_module._encode

    def encode(value: Any) -> bytes:
        """The adapter's encoder of the messages part of a body (the tools are spliced in)."""
        if isinstance(value, dict) and "messages" in value:
            found["body_encodes"] += 1
        return real_encode(value)

    monkeypatch.setattr(openai_module, "_encode", encode)
    return found


def test_one_agent_run_builds_encodes_and_sends_one_request_per_model_call(
    server: FakeOpenAIServer, counts: Counter[str]
) -> None:
    server.queue(
        Reply.completion(None, tool_calls=[tool_call("c1", "multiply_numbers", {"a": 12, "b": 8})]),
        Reply.completion("96"),
    )
    model = OpenAIChatModel("test-model", base_url=server.url + "/v1")
    result = Agent(model, [multiply_numbers]).run_sync("12 x 8?")
    assert result.output == "96"
    assert counts == Counter(
        _payload=2,
        _wire_messages=2,
        body_encodes=2,
        tools_encodes=1,
        _attempt=2,
        _parse_completion=2,
        _decode=2,  # one read of each body, by pydantic-core; json reads none of them
    ), counts


def test_a_retry_resends_the_same_bytes_without_building_the_body_again(
    server: FakeOpenAIServer, counts: Counter[str]
) -> None:
    server.queue(Reply(status=503, json={"error": {"message": "busy"}}), Reply.completion("ok"))
    retry = RetryPolicy(max_retries=2, initial_delay=0.0, max_delay=0.0)
    model = OpenAIChatModel("test-model", base_url=server.url + "/v1", retry=retry)
    result = Agent(model, []).run_sync("hello")
    assert result.output == "ok"
    assert counts == Counter(
        _payload=1, _wire_messages=1, body_encodes=1, _attempt=2, _parse_completion=1, _decode=1
    ), counts


def test_the_tools_array_is_encoded_once_across_runs_of_one_model(
    server: FakeOpenAIServer, counts: Counter[str]
) -> None:
    runs = 4
    for _ in range(runs):
        server.queue(
            Reply.completion(
                None, tool_calls=[tool_call("c1", "multiply_numbers", {"a": 12, "b": 8})]
            ),
            Reply.completion("96"),
        )
    model = OpenAIChatModel("test-model", base_url=server.url + "/v1")
    agent = Agent(model, [multiply_numbers])
    for _ in range(runs):
        assert agent.run_sync("12 x 8?").output == "96"
    assert counts["tools_encodes"] == 1, counts
    assert counts["body_encodes"] == counts["_payload"] == 2 * runs, counts
