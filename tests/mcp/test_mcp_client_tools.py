"""MCP servers' tools as toolproof tools: used by an agent, mocked, schema-snapshotted."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import mcp_demo_tools
from mcp_helpers import WEATHER, child_env, http_server

from toolproof import Agent, ToolCall, Toolset
from toolproof.cli import main
from toolproof.errors import UnmockedToolCall, UserError
from toolproof.integrations.mcp import mcp_tools
from toolproof.testing import ScriptedModel, ToolMock, call

WEATHER_CMD = f"python {WEATHER}"


def model_call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(name, dict(arguments), id=f"{name}-1")


async def test_an_agent_uses_a_real_mcp_server_with_one_tool_mocked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedModel(
        [
            call("get_weather", city="Paris"),
            call("get_forecast", city="Paris", days=2),
            call("get_weather", city="Atlantis"),
            call("get_forecast", city=7),
            call("book_umbrella", city="Paris"),
            "Sunny now, rain later.",
        ]
    )
    forecast = ToolMock()
    forecast.add("get_forecast", {"city": "Paris", "days": 2}, returns={"outlook": "mocked"})
    async with mcp_tools(WEATHER_CMD, env=child_env()) as tools:
        assert [t.name for t in tools] == ["get_weather", "get_forecast", "book_umbrella"]
        assert "'weather.alerts', which toolproof cannot offer" in caplog.text
        assert tools["book_umbrella"].side_effects  # not marked read-only by the server
        assert not tools["get_weather"].side_effects
        toolset = tools.with_mode("real", overrides={"get_forecast": "mock"}, mocks=[forecast])
        result = await Agent(model, toolset).run("weather in Paris?")
    assert result.output == "Sunny now, rain later."
    results = result.trace.tool_results
    assert results[0].status == "ok" and results[0].content == "Sunny in Paris, 21 C"
    assert not results[0].mocked
    assert results[1].value == {"outlook": "mocked"} and results[1].mocked
    assert forecast.count("get_forecast", city="Paris", days=2) == 1
    # The server's error result (isError) reaches the model as a ToolError.
    assert results[2].status == "error" and results[2].error_type == "ToolError"
    assert "get_weather" in results[2].content
    # Invalid arguments are reported to the model without reaching the server.
    assert results[3].error_type == "ValidationError"
    assert "'city': 7 is not of type 'string'" in results[3].content
    assert results[4].status == "ok" and results[4].content == "umbrella booked for Paris"


async def test_mock_mode_never_reaches_the_server_for_side_effecting_tools() -> None:
    mocks = {"get_forecast": lambda city, days=3: {"outlook": "mocked", "days": days}}
    async with mcp_tools(WEATHER_CMD, mode="mock", mocks=mocks, env=child_env()) as tools:
        mocked = await tools.execute(model_call("get_forecast", city="Oslo"))
        assert mocked.value == {"outlook": "mocked", "days": 3} and mocked.mocked
        # A read-only tool without a mock runs for real (on the server) in mock mode...
        real = await tools.execute(model_call("get_weather", city="Oslo"))
        assert real.content == "Sunny in Oslo, 21 C" and not real.mocked
        # ...a tool the server does not mark read-only is refused before any request is sent.
        with pytest.raises(UnmockedToolCall, match="book_umbrella"):
            await tools.execute(model_call("book_umbrella", city="Oslo"))


async def test_tools_from_an_http_mcp_server() -> None:
    served = Toolset(mcp_demo_tools.TOOLS, mode="mock", mocks={"cancel_order": lambda **k: "ok"})
    with http_server(served) as url:
        async with mcp_tools(url, side_effects=["cancel_order"]) as tools:
            assert tools["add"].parameters == mcp_demo_tools.add.parameters
            assert tools["cancel_order"].side_effects and not tools["add"].side_effects
            added = await tools.execute(model_call("add", a=2))
            assert added.value == 3  # the optional b was left out: its default applied
            cancelled = await tools.execute(model_call("cancel_order", order_id="A1"))
            assert cancelled.value == "ok"
            invalid = await tools.execute(model_call("add", a=1, zzz=2))
            assert invalid.error_type == "ValidationError"


def test_schema_snapshot_of_an_mcp_server_and_a_breaking_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", child_env()["PYTHONPATH"])
    v1, v2 = tmp_path / "v1.json", tmp_path / "v2.json"
    assert main(["schema", "snapshot", f"mcp:{WEATHER_CMD}", "-o", str(v1)]) == 0
    assert main(["schema", "snapshot", f"mcp:{WEATHER_CMD} --v2", "-o", str(v2)]) == 0
    capsys.readouterr()
    assert main(["schema", "check", f"mcp:{WEATHER_CMD}", str(v1)]) == 0
    assert "up to date (3 tools)" in capsys.readouterr().out
    assert main(["schema", "diff", str(v1), str(v2)]) == 1
    out = capsys.readouterr().out
    assert "2 breaking, 1 compatible changes" in out
    assert "BREAKING   get_forecast: new required parameter 'units' (string)" in out
    assert "BREAKING   get_forecast: parameter 'days' is now required" in out
    assert main(["schema", "check", f"mcp:{WEATHER_CMD} --v2", str(v1)]) == 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("server", "expected"),
    [
        (f"{sys.executable} -c 'import sys; sys.exit(3)'", "cannot connect to the MCP server"),
        ("/no/such/command --flag", "command not found"),
        ("http://127.0.0.1:9/mcp", "cannot connect to the MCP server http://127.0.0.1:9/mcp"),
        ("", "command is empty"),
        ("python 'unbalanced", "cannot be read"),
    ],
)
async def test_servers_that_cannot_be_reached_fail_with_one_line(
    server: str, expected: str
) -> None:
    with pytest.raises(UserError) as caught:
        async with mcp_tools(server, connect_timeout=15):
            pass
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.timeout(60)
async def test_a_server_that_hangs_at_start_is_given_up_on() -> None:
    started = time.monotonic()
    with pytest.raises(UserError, match=r"did not answer within 1 s"):
        async with mcp_tools(
            [sys.executable, "-c", "import time; time.sleep(60)"], connect_timeout=1
        ):
            pass
    assert time.monotonic() - started >= 0.9  # its own 1 s, not an earlier give-up


@pytest.mark.timeout(120)
def test_schema_snapshot_of_a_hanging_server_exits_2() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolproof",
            "schema",
            "snapshot",
            f"mcp:{sys.executable} -c 'import time; time.sleep(60)'",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**child_env(TOOLPROOF_MCP_TIMEOUT="1"), "PATH": "/usr/bin:/bin"},
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert "did not answer within 1 s" in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_schema_snapshot_of_a_server_that_exits_at_start_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    crash = f"mcp:{sys.executable} -c 'import sys; sys.exit(3)'"
    assert main(["schema", "snapshot", crash]) == 2
    err = capsys.readouterr().err
    assert "cannot connect to the MCP server" in err and "did it exit?" in err
    assert len(err.strip().splitlines()) == 1
    assert main(["schema", "snapshot", "mcp:"]) == 2
    assert "names no MCP server" in capsys.readouterr().err
