"""``toolproof mcp serve`` as a real subprocess, driven by the MCP SDK's own client over stdio."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import mcp_demo_tools
from mcp import Client, StdioServerParameters
from mcp_helpers import DEMO_FAULTS, DEMO_FIXTURES, DEMO_TOOLS, child_env, serve_argv

import _processes as processes
from toolproof import Trace
from toolproof.cli import main
from toolproof.replay import TraceStore
from toolproof.testing import assert_tool_called


def _client(argv: list[str], **env: str) -> Client:
    return Client(StdioServerParameters(command=argv[0], args=argv[1:], env=child_env(**env)))


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if hasattr(block, "text"))


async def test_fixtures_faults_and_the_session_trace(tmp_path: Path) -> None:
    trace_file = tmp_path / "calls.jsonl"
    side_effects = tmp_path / "side_effects.txt"
    argv = serve_argv(
        "--fixtures", DEMO_FIXTURES, "--faults", DEMO_FAULTS, "--trace-file", str(trace_file)
    )
    async with _client(argv, MCP_DEMO_SIDE_EFFECTS=str(side_effects)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        # The schemas a client sees are exactly the toolproof tools' schemas.
        assert list(listed) == ["get_order", "cancel_order", "add"]
        for t in mcp_demo_tools.TOOLS:
            assert listed[t.name].input_schema == t.parameters
            assert listed[t.name].description == t.description
        assert listed["cancel_order"].annotations.read_only_hint is False
        assert listed["get_order"].annotations.read_only_hint is True

        found = await client.call_tool("get_order", {"order_id": "A1"})
        assert not found.is_error
        assert found.structured_content == {"order_id": "A1", "status": "refunded", "total": 30}
        declared = await client.call_tool("get_order", {"order_id": "ZZ"})
        assert declared.is_error and "no order ZZ" in _text(declared)
        malformed = await client.call_tool("get_order", {"order_id": "B2"})
        assert not malformed.is_error and "502 Bad Gateway" in _text(malformed)
        first = await client.call_tool("add", {"a": 1})
        assert first.structured_content == {"result": 42}
        second = await client.call_tool("add", {"a": 1})  # the fault fires on call 2
        assert second.is_error and "the adder is down" in _text(second)
        third = await client.call_tool("add", {"a": 2, "b": 5})
        assert third.structured_content == {"result": 42}
        # Hostile calls come back as error results; the server keeps serving.
        invalid = await client.call_tool("add", {"a": "not a number", "zzz": 1})
        assert invalid.is_error
        assert "Invalid arguments for tool 'add'" in _text(invalid)
        assert "'zzz'" in _text(invalid)
        unknown = await client.call_tool("drop_tables", {})
        assert unknown.is_error and "Unknown tool 'drop_tables'" in _text(unknown)
        refused = await client.call_tool("cancel_order", {"order_id": "A1"})
        assert refused.is_error and "cancel_order" in _text(refused)
        assert (await client.call_tool("add", {"a": 3})).structured_content == {"result": 42}
    assert not side_effects.exists(), "a side-effecting tool ran its real code in mock mode"

    for _ in range(200):  # the server writes the trace when the session ends: up to 10 s
        if trace_file.exists() and trace_file.read_text(encoding="utf-8").strip():
            break
        await asyncio.sleep(0.05)
    lines = trace_file.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    trace = Trace.from_json(lines[0])
    assert trace.tool_mode == "mock"
    assert [t.name for t in trace.tools] == ["get_order", "cancel_order", "add"]
    calls = [(c.name, c.arguments) for c in trace.tool_calls]
    assert calls == [
        ("get_order", {"order_id": "A1"}),
        ("get_order", {"order_id": "ZZ"}),
        ("get_order", {"order_id": "B2"}),
        ("add", {"a": 1}),
        ("add", {"a": 1}),
        ("add", {"a": 2, "b": 5}),
        ("add", {"a": "not a number", "zzz": 1}),
        ("drop_tables", {}),
        ("cancel_order", {"order_id": "A1"}),
        ("add", {"a": 3}),
    ]
    statuses = [r.status for r in trace.tool_results]
    assert statuses == ["ok", "error", "ok", "ok", "error", "ok", "error", "error", "error", "ok"]
    assert trace.tool_results[0].value == {"order_id": "A1", "status": "refunded", "total": 30}
    assert_tool_called(trace, "get_order", order_id="A1")  # graded like any agent's run
    assert_tool_called(trace, "add", times=5)
    assert [r.error_type for r in trace.tool_results if not r.ok] == [
        "KeyError",
        "ToolError",
        "ValidationError",
        "UnknownTool",
        "MissingFixture",
    ]


async def test_mock_mode_refuses_unmocked_side_effects_and_records(tmp_path: Path) -> None:
    store = tmp_path / "traces.db"
    side_effects = tmp_path / "side_effects.txt"
    trace_file = tmp_path / "calls.jsonl"
    argv = serve_argv("--record", str(store), "--trace-file", str(trace_file))
    async with _client(argv, MCP_DEMO_SIDE_EFFECTS=str(side_effects)) as client:
        refused = await client.call_tool(
            "cancel_order", {"order_id": "A1", "reason": "card 4111 1111 1111 1111"}
        )
        assert refused.is_error
        assert "cancel_order" in _text(refused) and "side effects" in _text(refused)
        # A tool without side effects and without a mock runs its real code in mock mode.
        real = await client.call_tool("get_order", {"order_id": "B2"})
        assert real.structured_content == {"order_id": "B2", "status": "shipped", "total": 12}
    assert not side_effects.exists()
    deadline = time.monotonic() + 15
    traces: list[Trace] = []
    while time.monotonic() < deadline:
        if store.exists():
            with TraceStore(store) as opened:
                traces = list(opened.query())
            if traces:
                break
        await asyncio.sleep(0.1)
    assert len(traces) == 1
    (trace,) = traces
    assert trace.tool_names == ["cancel_order", "get_order"]
    assert trace.tool_results[0].error_type == "UnmockedToolCall"
    stored = trace.to_json()
    assert "4111 1111 1111 1111" not in stored, "the recorder stored a card number unredacted"
    written = trace_file.read_text(encoding="utf-8")
    assert "cancel_order" in written
    assert "4111 1111 1111 1111" not in written, "the trace file holds a card number"


async def test_real_mode_and_stateful_mocks(tmp_path: Path) -> None:
    side_effects = tmp_path / "side_effects.txt"
    env = {"MCP_DEMO_SIDE_EFFECTS": str(side_effects)}
    async with _client(serve_argv("--mocks", f"{DEMO_TOOLS}:Orders"), **env) as client:
        first = await client.call_tool("cancel_order", {"order_id": "A1"})
        second = await client.call_tool("cancel_order", {"order_id": "B2"})
        missing = await client.call_tool("cancel_order", {"order_id": "nope"})
        assert "mock-cancelled A1 (1 so far)" in _text(first)
        assert "mock-cancelled B2 (2 so far)" in _text(second)  # the mock's state carried over
        assert missing.is_error and "order nope does not exist" in _text(missing)
    assert not side_effects.exists()
    async with _client(serve_argv("--mode", "real"), **env) as client:
        done = await client.call_tool("cancel_order", {"order_id": "A1", "reason": "late"})
        assert not done.is_error and "order A1 cancelled" in _text(done)
    assert side_effects.read_text(encoding="utf-8") == "cancelled A1: late\n"


def _cli(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**child_env(), "PATH": "/usr/bin:/bin"},
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["mcp", "serve", "no_such_module_xyz"], "cannot import 'no_such_module_xyz'"),
        (["mcp", "serve", f"{DEMO_TOOLS}:MISSING"], "has no attribute 'MISSING'"),
        (["mcp", "serve", f"{DEMO_TOOLS}:ORDERS"], "no tools found"),
        (["mcp", "serve", DEMO_TOOLS, "--fixtures", "nope.yaml"], "fixture file not found"),
        (["mcp", "serve", DEMO_TOOLS, "--mode", "real", "--fixtures", DEMO_FIXTURES], "mock mode"),
        (["mcp", "serve", DEMO_TOOLS, "--real", "nope"], "--real nope: no such tool"),
        (["mcp", "serve", DEMO_TOOLS, "--mocks", f"{DEMO_TOOLS}:ORDERS"], "no tool named A1"),
        (["mcp", "serve", DEMO_TOOLS, "--port", "70000", "--http"], "--port must be"),
        (["mcp", "serve", DEMO_TOOLS, "--trace-file", "/proc/nope/x.jsonl"], "cannot write"),
    ],
)
def test_bad_serve_options_exit_2_with_one_line(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert expected in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert out == ""


def test_a_bad_module_exits_2_from_the_command_line() -> None:
    done = _cli("mcp", "serve", "no_such_module_xyz")
    assert done.returncode == 2, done.stderr
    assert "cannot import 'no_such_module_xyz'" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("faults: [{tool: nope, raises: ToolError}]", "'tool' must name a served tool"),
        ("faults: [{tool: add}]", "exactly one of raises, malformed, timeout"),
        ("faults: [{tool: add, timeout: soon}]", "'timeout' must be seconds"),
        ("faults: [{tool: add, raises: ToolError, on_call: 0}]", "on_call must be"),
        ("faults: [{tool: add, raises: NoSuchError}]", "NoSuchError"),
        ("faults: [{tool: add, raises: ToolError, colour: red}]", "unknown key"),
        ("faults: {tool: add}", "expected a list of faults"),
        ("faults: [", "invalid YAML"),
    ],
)
def test_bad_faults_files_exit_2(
    tmp_path: Path, content: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text(content, encoding="utf-8")
    assert main(["mcp", "serve", DEMO_TOOLS, "--faults", str(path)]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert "Traceback" not in err


def test_faults_file_in_json(tmp_path: Path) -> None:
    from toolproof import Toolset
    from toolproof.cli._mcp import load_faults

    path = tmp_path / "faults.json"
    faults = [{"tool": "add", "timeout": 0}, {"tool": "get_order", "raises": "KeyError: gone"}]
    path.write_text(json.dumps({"faults": faults}), encoding="utf-8")
    loaded = load_faults(path, Toolset(mcp_demo_tools.TOOLS))
    assert [f.describe() for f in loaded] == ["timeout on add", "raises KeyError on get_order"]


async def test_a_module_with_one_toolset_serves_it_with_its_mocks() -> None:
    from mcp_helpers import HERE

    from toolproof import ToolCall
    from toolproof.cli import build_parser
    from toolproof.cli._mcp import build_toolset

    args = build_parser().parse_args(["mcp", "serve", str(HERE / "mcp_demo_toolset.py")])
    toolset, _, _, _ = build_toolset(args)
    assert toolset.mode == "mock"
    result = await toolset.execute(ToolCall("cancel_order", {"order_id": "A1"}, id="1"))
    assert result.value == "toolset mock" and result.mocked


def test_http_command_on_a_free_port_writes_the_trace_when_stopped(tmp_path: Path) -> None:
    import re
    import signal

    trace_file = tmp_path / "calls.jsonl"
    argv = serve_argv("--http", "--port", "0", "--fixtures", DEMO_FIXTURES)
    argv += ["--trace-file", str(trace_file)]
    process = processes.start(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**child_env(), "PATH": "/usr/bin:/bin"},
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # the server announces its URL once it listens
        found = re.search(r"on (http://127\.0\.0\.1:\d+/mcp)$", line.strip())
        assert found, line

        async def use() -> Any:
            async with Client(found.group(1)) as client:
                return await client.call_tool("get_order", {"order_id": "A1"})

        result = asyncio.run(use())
        assert result.structured_content == {"order_id": "A1", "status": "refunded", "total": 30}
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0  # a clean stop, not a kill
    finally:
        processes.stop(process)
    (line,) = trace_file.read_text(encoding="utf-8").splitlines()
    trace = Trace.from_json(line)
    assert [(c.name, c.arguments) for c in trace.tool_calls] == [("get_order", {"order_id": "A1"})]
