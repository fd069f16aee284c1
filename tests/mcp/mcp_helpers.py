"""Shared helpers of the MCP tests: paths, a child environment, an HTTP server thread."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
DEMO_TOOLS = str(HERE / "mcp_demo_tools.py")
DEMO_FIXTURES = str(HERE / "mcp_demo_fixtures.yaml")
DEMO_FAULTS = str(HERE / "mcp_demo_faults.yaml")
WEATHER = str(HERE / "mcp_weather_server.py")


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child process: this checkout's toolproof first on the path."""
    paths = [str(SRC), str(HERE), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in paths if p), **extra}


def serve_argv(*options: str) -> list[str]:
    """``python -m toolproof mcp serve DEMO_TOOLS OPTIONS...``."""
    return [sys.executable, "-m", "toolproof", "mcp", "serve", DEMO_TOOLS, *options]


@contextmanager
def http_server(toolset: Any, sessions: Any = None, **options: Any) -> Iterator[str]:
    """Serve ``toolset`` over streamable HTTP on a free port in a thread; yields the URL.

    ``options`` go to ``serve_mcp`` (``faults``, ``real_tools``...).
    """
    from toolproof.integrations.mcp import serve_mcp

    ready = threading.Event()
    state: dict[str, Any] = {}

    def on_ready(url: str) -> None:
        state["url"] = url
        ready.set()

    async def main() -> None:
        state["loop"] = asyncio.get_running_loop()
        state["task"] = asyncio.current_task()
        try:
            await serve_mcp(
                toolset, transport="http", port=0, sessions=sessions, on_ready=on_ready, **options
            )
        except asyncio.CancelledError:
            pass
        except BaseException as exc:  # pragma: no cover - reported by the assertion below
            state["error"] = exc
            ready.set()

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(30), "the MCP HTTP server did not start within 30 s"
    assert "error" not in state, state.get("error")
    try:
        yield state["url"]
    finally:
        state["loop"].call_soon_threadsafe(state["task"].cancel)
        thread.join(30)
        assert not thread.is_alive(), "the MCP HTTP server did not stop within 30 s"
