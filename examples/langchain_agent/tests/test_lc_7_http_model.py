"""The LangChain agent over a real HTTP model adapter, against a local OpenAI-compatible server.

This is the live layer's path without a key: ToolAgent's synchronous calls run in a worker
thread and go back to the run's event loop, where the adapter's connections live.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import toolproof.models
from examples.langchain_agent.agent import build_agent
from models._openai_server import FakeOpenAIServer, Reply, tool_call
from toolproof.models.openai import OpenAIChatModel
from toolproof.testing import assert_grounded, assert_tool_called


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with toolproof.models.override_allow_model_requests(True), FakeOpenAIServer() as running:
        yield running


def test_the_agent_talks_to_an_http_model_through_langchain(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply.completion(
            None, tool_calls=[tool_call("call_a", "multiply_numbers", {"a": 12, "b": 8})]
        ),
        Reply.completion("12 times 8 is 96."),
    )
    model = OpenAIChatModel("test-model", base_url=server.url + "/v1", api_key="test-key")
    result = build_agent(model).run_sync("What is 12 times 8?")

    assert result.output == "12 times 8 is 96."
    assert_tool_called(result, "multiply_numbers", a=12, b=8)
    assert_grounded(result)
    first, second = (r.body for r in server.requests)
    assert [t["function"]["name"] for t in first["tools"]] == [
        "get_leave_balance",
        "multiply_numbers",
    ]
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_a", "content": "96.0"}
