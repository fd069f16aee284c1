"""Generated hostile calls: whatever a client sends, the server answers and keeps serving."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")

import mcp_demo_tools
from mcp import Client

from toolproof import Toolset
from toolproof.integrations.mcp import McpSessions, mcp_server

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
NAMES = st.sampled_from(["get_order", "cancel_order", "add", "", "nope", "add\x00", "é" * 50])


@pytest.mark.timeout(300)
@settings(max_examples=40)
@given(name=NAMES, arguments=st.dictionaries(st.text(max_size=10), JSON, max_size=5))
def test_generated_calls_get_an_answer_and_never_run_side_effects(
    name: str, arguments: dict[str, Any]
) -> None:
    ran: list[dict[str, Any]] = []
    toolset = Toolset(mcp_demo_tools.TOOLS, mode="mock")
    sessions = McpSessions(toolset)

    async def exchange() -> tuple[Any, Any]:
        async with Client(mcp_server(toolset, sessions=sessions)) as client:
            answered = await client.call_tool(name, arguments)
            after = await client.call_tool("add", {"a": 1, "b": 2})
            return answered, after

    original = mcp_demo_tools.cancel_order.function
    mcp_demo_tools.cancel_order.function = lambda **kwargs: ran.append(kwargs)
    try:
        answered, after = asyncio.run(exchange())
    finally:
        mcp_demo_tools.cancel_order.function = original
    assert ran == [], "a side-effecting tool ran its real code in mock mode"
    if name not in ("get_order", "add"):
        assert answered.is_error
    if answered.is_error:  # the one error text every adapter sends: "Error (Kind): ..."
        text = " ".join(getattr(block, "text", "") for block in answered.content)
        assert re.match(r"Error \([A-Za-z]+\): ", text), text
    assert after.structured_content == {"result": 3}  # the server still serves
    sessions.end_all()
    (trace,) = sessions.traces
    assert trace.tool_names == [name, "add"]
    first = trace.tool_results[0]
    if first.status == "error":
        assert first.content.startswith(f"Error ({first.error_type}): ")
    if name == "cancel_order":  # refused in mock mode: recorded as a call that did not run
        assert not first.ran
