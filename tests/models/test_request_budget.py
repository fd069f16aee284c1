"""Work budget of the OpenAI-compatible adapter per model call: counted, not timed.

The HTTP request path is most of a ``toolproof run``'s CPU. Each model call builds its body
once, encodes it once, sends one request and parses one response; a retry resends the same
bytes. Counting those calls catches a regression on any machine, however busy.
"""

from __future__ import annotations

import json
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
    for name in ("build_body", "_attempt", "_parse_completion", "_wire_messages"):
        _count(monkeypatch, found, OpenAIChatModel, name)
    real_dumps = json.dumps

    class _Json:
        """``json`` as the adapter sees it, counting encodes of whole request bodies."""

        def __getattr__(self, name: str) -> Any:
            return getattr(json, name)

        @staticmethod
        def dumps(value: Any, **kwargs: Any) -> str:
            if isinstance(value, dict) and "messages" in value:
                found["body_encodes"] += 1
            return real_dumps(value, **kwargs)

    monkeypatch.setattr(openai_module, "json", _Json())
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
        build_body=2, _wire_messages=2, body_encodes=2, _attempt=2, _parse_completion=2
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
        build_body=1, _wire_messages=1, body_encodes=1, _attempt=2, _parse_completion=1
    ), counts
