"""SIGTERM stops ``toolproof serve`` at once, whatever a client is doing.

Containers and service managers stop a server with SIGTERM and kill it a little later: a
server that waits for a client holding a request loses what it recorded. Each test holds a
request open in a real ``toolproof serve`` process, sends SIGTERM, and checks that the
process exits cleanly and the held request is answered 503. A hang is caught by the
test's time limit, never by measuring the time taken.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _serving import serve_process

BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()


def _hold(port: int, *, query: str = "", half: bool = False) -> socket.socket:
    """A connection holding one chat request (all of it, or half of its body)."""
    sock = socket.create_connection(("127.0.0.1", port))
    head = (
        f"POST /v1/chat/completions{query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\n"
        "Connection: close\r\n\r\n"
    )
    sock.sendall(head.encode() + (BODY[: len(BODY) // 2] if half else BODY))
    return sock


def _status(sock: socket.socket) -> int | None:
    """The status the server answered on ``sock`` (``None``: it closed without one)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    return int(data.split(b" ", 2)[1]) if data else None


def _answered(base_url: str) -> int:
    """One ordinary request (a barrier: the server has read what was sent before)."""
    request = urllib.request.Request(
        base_url + "/chat/completions", data=BODY, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request) as reply:
        return int(reply.status)


@contextmanager
def _hung_upstream() -> Iterator[tuple[str, threading.Event]]:
    """An OpenAI-compatible upstream that takes every request and never answers."""
    from aiohttp import web

    seen = threading.Event()
    ready = threading.Event()
    state: dict[str, object] = {}

    async def chat(request: web.Request) -> web.Response:
        seen.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        state["url"] = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
        stop = asyncio.Event()
        state["stop"] = (asyncio.get_running_loop(), stop)
        ready.set()
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    ready.wait()
    try:
        yield str(state["url"]), seen
    finally:
        loop, stop = state["stop"]  # type: ignore[misc]
        loop.call_soon_threadsafe(stop.set)
        thread.join()


def _stop_and_check(process: object, held: socket.socket) -> None:
    import subprocess

    assert isinstance(process, subprocess.Popen)
    process.send_signal(signal.SIGTERM)
    status = _status(held)
    _, err = process.communicate()  # a hang here is caught by the test's time limit
    assert process.returncode == 0, err
    assert "stopped" in err
    assert status == 503, status  # the held request got an answer, not a silent hang


@pytest.mark.timeout(45)
@pytest.mark.parametrize("half", [False, True], ids=["an injected 600 s timeout", "half a body"])
def test_sigterm_stops_the_server_while_a_client_holds_a_request(
    tmp_path: Path, half: bool
) -> None:
    (tmp_path / "script.yaml").write_text("- hello\n- hello\n")
    with serve_process("--mode", "scripted", "--script", "script.yaml", cwd=tmp_path) as (
        url,
        process,
    ):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        held = _hold(port, query="" if half else "?fault=timeout:600", half=half)
        assert _answered(url) == 200  # the server is up and has read the held request
        _stop_and_check(process, held)


@pytest.mark.timeout(45)
def test_sigterm_stops_a_recording_server_while_the_model_is_answering(tmp_path: Path) -> None:
    with _hung_upstream() as (upstream, seen):
        model = f"openai-compatible:up?base_url={upstream}"
        args = ("--mode", "record", "--model", model, "--store", str(tmp_path / "t.db"))
        with serve_process(*args, cwd=tmp_path) as (url, process):
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            held = _hold(port)
            seen.wait()  # the request is with the model now
            _stop_and_check(process, held)
