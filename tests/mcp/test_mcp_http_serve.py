"""The streamable HTTP server (and the in-process server) driven by the MCP SDK's client."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("mcp")

import mcp_demo_tools
from mcp import Client
from mcp_helpers import http_server

from toolproof import Toolset, tool
from toolproof.integrations.mcp import McpSessions, mcp_server
from toolproof.testing import Fault, ToolMock, with_faults


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, ToolMock, McpSessions]]:
    mock = ToolMock(assert_all_used=False)
    mock.add("get_order", {"order_id": "A1"}, returns={"status": "refunded"})
    mock.add("add", returns=7)
    toolset = with_faults(
        Toolset(mcp_demo_tools.TOOLS, mode="mock", mocks=[mock]),
        Fault.timeout("add", on_call=3),
    )
    sessions = McpSessions(toolset, label="demo")
    with http_server(toolset, sessions) as url:
        yield url, mock, sessions


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if hasattr(block, "text"))


async def test_http_lists_and_calls_mocked_tools(served: tuple[str, ToolMock, McpSessions]) -> None:
    url, mock, _ = served
    before = mock.count("get_order", order_id="A1")
    async with Client(url) as client:
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == ["get_order", "cancel_order", "add"]
        assert tools[0].input_schema == mcp_demo_tools.get_order.parameters
        answered = await client.call_tool("get_order", {"order_id": "A1"})
        assert answered.structured_content == {"status": "refunded"}
        again = await client.call_tool("get_order", {"order_id": "A1"})
        assert not again.is_error
        unmatched = await client.call_tool("get_order", {"order_id": "B2"})
        assert unmatched.is_error and "No fixture matches" in _text(unmatched)
    assert mock.count("get_order", order_id="A1") == before + 2
    assert mock.count("get_order", order_id="B2") == 1


async def test_http_session_trace_ends_with_the_session(
    served: tuple[str, ToolMock, McpSessions],
) -> None:
    url, _, sessions = served
    finished = len(sessions.traces)
    # The handshake era has sessions (Mcp-Session-Id); the client ends its session on exit.
    async with Client(url, mode="legacy") as client:
        for a in (1, 2, 3):
            await client.call_tool("add", {"a": a})
        refused = await client.call_tool("cancel_order", {"order_id": "A1"})
    assert refused.is_error
    for _ in range(100):
        if len(sessions.traces) > finished:
            break
        await asyncio.sleep(0.05)
    trace = sessions.traces[finished]
    assert [(c.name, c.arguments) for c in trace.tool_calls] == [
        ("add", {"a": 1}),
        ("add", {"a": 2}),
        ("add", {"a": 3}),
        ("cancel_order", {"order_id": "A1"}),
    ]
    results = trace.tool_results
    assert [r.status for r in results][:2] == ["ok", "ok"]
    assert results[0].value == 7
    assert results[2].error_type == "Timeout"  # the injected timeout fired on call 3
    assert results[2].content == "Error (Timeout): Tool 'add' timed out after 60 s."
    assert results[3].error_type == "MissingFixture"  # the strict mock answers every tool


@tool
def explode(x: int) -> int:
    """A tool with a bug."""
    raise RuntimeError("boom")


@tool
def unserializable() -> object:
    """A tool returning something JSON cannot hold."""
    return b"\xff\xfe"


async def test_in_process_server_survives_hostile_calls() -> None:
    toolset = Toolset([explode, unserializable, *mcp_demo_tools.TOOLS], mode="real")
    server = mcp_server(toolset)
    async with Client(server) as client:
        crashed = await client.call_tool("explode", {"x": 1})
        assert crashed.is_error and "RuntimeError" in _text(crashed) and "boom" in _text(crashed)
        bad_value = await client.call_tool("unserializable", {})
        assert bad_value.is_error and "cannot be turned into JSON" in _text(bad_value)
        missing = await client.call_tool("add", {})
        assert missing.is_error and "missing required argument 'a'" in _text(missing)
        nested = await client.call_tool("add", {"a": {"deep": [1, 2, {"x": None}]}})
        assert nested.is_error and "Invalid arguments" in _text(nested)
        huge = await client.call_tool("get_order", {"order_id": "x" * 100_000})
        assert huge.is_error and _text(huge).startswith("Error (KeyError): xxxx")  # declared
        # After all that, the server still answers.
        ok = await client.call_tool("add", {"a": 2, "b": 3})
        assert ok.structured_content == {"result": 5}
