"""A failed tool call reads as a failure, with its kind, in every way a model receives it.

Generated exception kinds and messages (and toolproof's own refusals: invalid arguments,
unknown tools, timeouts, rejected approvals) go through each adapter that hands tool
results to a model: the OpenAI-compatible adapter (on the wire, to a real local server),
the text protocol, LangChain's ``create_agent`` and the Agents SDK's function tools. The
model must read ``Error (<kind>): <message>``, the same text everywhere, and the trace must
keep ``status="error"`` with the kind.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from _openai_server import FakeOpenAIServer, Reply, tool_call
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof import Agent, ToolError, tool
from toolproof._messages import ToolResult, error_text
from toolproof.models import OpenAIChatModel, RetryPolicy, TextProtocolModel
from toolproof.testing import ScriptedModel, call

kinds = st.from_regex(r"\A[A-Z][A-Za-z0-9]{0,12}(Error|Exception|Failure|Problem)\Z")
messages = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=60)


def _failing_tool(kind: str, message: str) -> tuple[Any, str]:
    """A tool raising a declared exception of class ``kind``; and the kind the model reads."""
    if kind == "ToolError":
        error: type[Exception] = ToolError
    else:
        error = type(kind, (Exception,), {})

    @tool(errors=(error,))
    def fails(x: int) -> str:
        """Fail.

        Args:
            x: Anything.
        """
        raise error(message)

    return fails, kind


def _openai(server: FakeOpenAIServer, fails: Any, arguments: dict[str, Any]) -> tuple[str, Any]:
    server.reset()
    server.queue(
        Reply.completion(None, tool_calls=[tool_call("c1", fails.name, arguments)]),
        Reply.completion("done"),
    )
    model = OpenAIChatModel(
        "test-model", base_url=server.url + "/v1", api_key="sk-test", retry=RetryPolicy(0)
    )
    result = Agent(model, [fails]).run_sync("go")
    (sent,) = [m for m in server.last.body["messages"] if m["role"] == "tool"]
    return sent["content"], result.trace.tool_results[0]


def _text_protocol(fails: Any, arguments: dict[str, Any]) -> tuple[str, Any]:
    import json

    block = json.dumps({"name": fails.name, "arguments": arguments})
    inner = ScriptedModel([f"<tool_call>{block}</tool_call>", "done"])
    result = Agent(TextProtocolModel(inner), [fails]).run_sync("go")
    text = inner.requests[1].messages[-1].text
    found = re.search(r'<tool_result [^>]*status="error">\n(.*)\n</tool_result>', text, re.S)
    assert found is not None, text
    return found.group(1), result.trace.tool_results[0]


def _langchain(fails: Any, arguments: dict[str, Any]) -> tuple[str, Any]:
    from langchain.agents import create_agent

    from toolproof.integrations.langchain import LangChainAgent

    model = ScriptedModel([call(fails.name, **arguments), "done"])
    agent = LangChainAgent(
        lambda chat, tools: create_agent(chat, tools), model, [fails], tool_errors="message"
    )
    result = agent.run_sync("go")
    sent = model.requests[1].messages[-1]
    assert sent.role == "tool"
    return sent.text, result.trace.tool_results[0]


def _agents_sdk(fails: Any, arguments: dict[str, Any]) -> tuple[str, Any]:
    import json

    from agents.tool_context import ToolContext

    from toolproof.integrations.openai_agents import to_function_tool

    (function,) = to_function_tool(fails)
    raw = json.dumps(arguments)
    context = ToolContext(context=None, tool_name=fails.name, tool_call_id="c", tool_arguments=raw)
    text = asyncio.run(function.on_invoke_tool(context, raw))
    return text, None


ADAPTERS = ("openai", "text protocol", "langchain", "agents sdk")


def _everywhere(
    server: FakeOpenAIServer, fails: Any, arguments: dict[str, Any]
) -> dict[str, tuple[str, ToolResult | None]]:
    return {
        "openai": _openai(server, fails, arguments),
        "text protocol": _text_protocol(fails, arguments),
        "langchain": _langchain(fails, arguments),
        "agents sdk": _agents_sdk(fails, arguments),
    }


def _check(seen: dict[str, tuple[str, ToolResult | None]], kind: str, message: str | None) -> None:
    assert set(seen) == set(ADAPTERS)
    texts = {name: text for name, (text, _) in seen.items()}
    expected = texts["openai"]
    assert expected.startswith(f"Error ({kind}): ")
    if message is not None:
        assert expected == error_text(kind, message)
    assert texts == dict.fromkeys(ADAPTERS, expected), "one text in every adapter"
    for name, (_, result) in seen.items():
        if result is not None:
            assert (result.status, result.error_type) == ("error", kind), name
            assert result.content == expected, name


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kind=st.one_of(kinds, st.sampled_from(["KeyError", "ValueError", "ToolError"])),
    message=messages,
)
def test_a_raised_error_reads_as_an_error_of_its_kind_in_every_adapter(
    server: FakeOpenAIServer, kind: str, message: str
) -> None:
    fails, shown = _failing_tool(kind, message)
    _check(_everywhere(server, fails, {"x": 1}), shown, message)


def test_toolproofs_own_refusals_read_as_errors_of_their_kind(server: FakeOpenAIServer) -> None:
    fails, _ = _failing_tool("ValueError", "never raised")
    _check(_everywhere(server, fails, {"x": "not a number"}), "ValidationError", None)
    _check(_everywhere(server, fails, {"x": 1, "y": 2}), "ValidationError", None)

    @tool(timeout=0.01)
    async def slow(x: int) -> str:
        """Too slow.

        Args:
            x: Anything.
        """
        await asyncio.sleep(5)
        return "late"

    _check(_everywhere(server, slow, {"x": 1}), "Timeout", "Tool 'slow' timed out after 0.01 s.")

    @tool(requires_approval=True)
    def guarded(x: int) -> str:
        """Needs approval.

        Args:
            x: Anything.
        """
        return "ran"

    seen = _everywhere(server, guarded, {"x": 1})
    _check(seen, "Rejected", None)
    assert "no approver is configured" in seen["openai"][0]


def test_an_unknown_tool_reads_as_an_error(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply.completion(None, tool_calls=[tool_call("c1", "nope", {})]), Reply.completion("ok")
    )
    fails, _ = _failing_tool("ValueError", "x")
    model = OpenAIChatModel("test-model", base_url=server.url + "/v1", api_key="sk-test")
    result = Agent(model, [fails]).run_sync("go")
    (sent,) = [m for m in server.last.body["messages"] if m["role"] == "tool"]
    assert sent["content"] == "Error (UnknownTool): Unknown tool 'nope'. Available tools: fails."
    assert result.trace.tool_results[0].error_type == "UnknownTool"
