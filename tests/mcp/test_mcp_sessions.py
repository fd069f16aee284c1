"""Over HTTP every MCP client gets a session: its own trace, its own fault counts.

The official SDK's client (2.x) first tries the sessionless protocol; the server offers the
session handshake instead, so each client gets an ``Mcp-Session-Id``. A session's trace is
written when the client ends it, or when it goes quiet, not only when the server stops.
Waiting for a trace is a loop bounded by the test's time limit, never a measured time.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import mcp_demo_tools
from mcp import Client
from mcp_helpers import child_env, http_server, serve_argv

from toolproof import Toolset
from toolproof._trace import Trace
from toolproof.integrations.mcp import McpSessions
from toolproof.testing import Fault


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def _client(url: str, first: int, second: int) -> tuple[Any, Any]:
    async with Client(url) as client:
        one = await client.call_tool("add", {"a": first})
        two = await client.call_tool("add", {"a": second})
        return one, two


async def _until(condition: Any) -> None:
    # The condition changes in the server's thread or process: bounded by the test's limit.
    while not condition():  # noqa: ASYNC110
        await asyncio.sleep(0.05)


@pytest.mark.timeout(120)
async def test_two_sdk_clients_get_a_session_trace_and_fault_counts_each() -> None:
    toolset = Toolset(mcp_demo_tools.TOOLS, mode="mock")
    written: list[Trace] = []
    lock = threading.Lock()

    def on_trace(trace: Trace) -> None:
        with lock:
            written.append(trace)

    sessions = McpSessions(toolset, on_trace=on_trace)
    faults = [Fault.raises("add", on_call=1)]  # each session's first call of add fails
    with http_server(toolset, sessions, faults=faults) as url:
        (one_a, one_b), (two_a, two_b) = await asyncio.gather(
            _client(url, 1, 10), _client(url, 2, 20)
        )
        # Both sessions ended (the clients closed them): their traces are written while
        # the server keeps running.
        await _until(lambda: len(written) == 2)
        assert len(sessions.traces) == 2
    assert one_a.is_error and two_a.is_error  # call 1 of each session failed
    assert not one_b.is_error and not two_b.is_error  # call 2 of each session ran
    assert one_b.structured_content == {"result": 11}
    assert two_b.structured_content == {"result": 21}
    by_first = sorted(written, key=lambda t: t.tool_calls[0].arguments["a"])
    assert [[c.arguments["a"] for c in t.tool_calls] for t in by_first] == [[1, 10], [2, 20]]
    assert [[r.status for r in t.tool_results] for t in by_first] == [["error", "ok"]] * 2


@pytest.mark.timeout(120)
async def test_a_client_pinned_to_the_sessionless_protocol_is_told_how_to_connect() -> None:
    from mcp.shared.exceptions import MCPError

    toolset = Toolset(mcp_demo_tools.TOOLS, mode="mock")
    with http_server(toolset) as url, pytest.raises(BaseException) as caught:
        async with Client(url, mode="2026-07-28") as client:
            await client.call_tool("add", {"a": 1})
    error: BaseException = caught.value
    while getattr(error, "exceptions", None):  # inside anyio's exception groups
        error = error.exceptions[0]  # type: ignore[attr-defined]
    assert isinstance(error, MCPError)
    assert "keeps a trace per client session" in str(error)


@pytest.mark.timeout(120)
async def test_a_session_left_open_is_written_once_it_goes_quiet() -> None:
    from mcp.client.streamable_http import streamable_http_client

    toolset = Toolset(mcp_demo_tools.TOOLS, mode="mock")
    written: list[Trace] = []
    sessions = McpSessions(toolset, on_trace=written.append, idle=0.5)
    with http_server(toolset, sessions) as url:
        # A client that goes away without ending its session (no DELETE).
        async with Client(streamable_http_client(url, terminate_on_close=False)) as client:
            await client.call_tool("add", {"a": 5})
        await _until(lambda: len(written) == 1)
    [trace] = written
    assert [c.arguments for c in trace.tool_calls] == [{"a": 5}]


@pytest.mark.timeout(120)
def test_the_command_writes_each_session_when_it_ends(tmp_path: Path) -> None:
    trace_file = tmp_path / "calls.jsonl"
    faults = tmp_path / "faults.yaml"
    faults.write_text("faults:\n  - {tool: add, raises: ToolError, on_call: 1}\n")
    argv = serve_argv("--http", "--port", "0", "--faults", str(faults))
    argv += ["--trace-file", str(trace_file)]
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**child_env(), "PATH": "/usr/bin:/bin"},
        start_new_session=True,
    )
    try:
        assert process.stderr is not None
        found = re.search(r"on (http://127\.0\.0\.1:\d+/mcp)$", process.stderr.readline().strip())
        assert found

        async def both() -> list[tuple[Any, Any]]:
            answers = await asyncio.gather(
                _client(found.group(1), 1, 10), _client(found.group(1), 2, 20)
            )

            def lines() -> int:
                return len(trace_file.read_text().splitlines()) if trace_file.exists() else 0

            await _until(lambda: lines() == 2)  # written while the server runs
            return answers

        answers = asyncio.run(both())
        process.send_signal(signal.SIGTERM)
        assert process.wait() == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    assert [(a.is_error, b.is_error) for a, b in answers] == [(True, False), (True, False)]
    traces = [Trace.from_json(line) for line in trace_file.read_text().splitlines()]
    assert sorted(len(t.tool_calls) for t in traces) == [2, 2]


@pytest.mark.timeout(120)
def test_the_command_warns_when_it_listens_beyond_this_machine() -> None:
    process = subprocess.Popen(
        serve_argv("--http", "--host", "0.0.0.0", "--port", "0"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**child_env(), "PATH": "/usr/bin:/bin"},
        start_new_session=True,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert "warning: serving on 0.0.0.0, not a loopback address" in first
        assert "on http://0.0.0.0:" in process.stderr.readline()
    finally:
        process.kill()
        process.communicate()
