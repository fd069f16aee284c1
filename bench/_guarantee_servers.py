"""Guarantee figures: the servers toolproof starts, and the programs it runs as agents.

``measure()`` sends hostile requests to ``toolproof serve`` (other hosts, other sites, bad
fault values, bodies over the limit) and counts those that reached the model; runs command
agents that leave children behind or hold their output open and counts the processes
still alive after their case; plants secrets in the environment and counts those a command
agent saw; measures the memory a server keeps after floods (``tracemalloc``: bytes still
allocated), and how long ``toolproof serve`` takes to exit on SIGTERM while a client holds
a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

SEED = 20261201
HOSTILE_REQUESTS = 400
AGENT_RUNS = 12
ROOT = Path(__file__).resolve().parents[1]

AGENT = r"""
import json, os, subprocess, sys, time, urllib.request
question = sys.stdin.read()
if question.startswith("env"):
    with open(os.environ["OUT"], "w") as out:
        json.dump(dict(os.environ), out)
if question.startswith(("orphan", "holder", "hang")):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
        stdout=None if question.startswith("holder") else subprocess.DEVNULL,
        stdin=subprocess.DEVNULL)
    with open(os.environ["PIDS"], "a") as out:
        out.write(f"{child.pid}\n")
if question.startswith("hang"):
    time.sleep(300)
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": question}]}).encode()
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
    headers={"Content-Type": "application/json",
             "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
with urllib.request.urlopen(request) as reply:
    print(json.load(reply)["choices"][0]["message"]["content"])
"""


def _hostile_requests(rng: random.Random) -> list[tuple[str, dict[str, str], bytes, str]]:
    """(kind, headers, body, query) of generated requests that must never reach the model."""
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = []
    for _ in range(HOSTILE_REQUESTS):
        kind = rng.choice(["host", "origin", "fault", "size"])
        name = "".join(rng.choice(letters) for _ in range(rng.randint(3, 10)))
        if kind == "host":
            host = rng.choice([f"{name}.example", f"127.0.0.1.{name}.example", f"localhost.{name}"])
            out.append((kind, {"Host": f"{host}:PORT"}, body, ""))
        elif kind == "origin":
            origin = rng.choice([f"http://{name}.example", "null", f"https://{name}.test"])
            out.append((kind, {"Origin": origin}, body, ""))
        elif kind == "fault":
            value = rng.choice(["inf", "nan", "1e9", "-1", name, "601", "1e999"])
            out.append((kind, {}, body, f"fault={rng.choice(['timeout', '429'])}:{value}"))
        else:
            big = b'{"messages": [{"role": "user", "content": "' + b"x" * (9 << 20) + b'"}]}'
            out.append((kind, {}, big, ""))
    return out


async def _serve_hostile() -> tuple[int, dict[str, int], dict[int, int]]:
    import aiohttp

    from toolproof.models.fake import ScriptedModel
    from toolproof.server import ToolproofServer

    models: list[ScriptedModel] = []

    def new() -> ScriptedModel:
        models.append(ScriptedModel(["hello"]))
        return models[-1]

    server = ToolproofServer(new)
    await server.start()
    kinds: dict[str, int] = {}
    statuses: dict[int, int] = {}
    try:
        async with aiohttp.ClientSession() as session:
            for kind, headers, body, query in _hostile_requests(random.Random(SEED)):
                kinds[kind] = kinds.get(kind, 0) + 1
                headers = {k: v.replace("PORT", str(server.port)) for k, v in headers.items()}
                url = f"{server.url}/v1/chat/completions" + (f"?{query}" if query else "")
                async with session.post(url, data=io.BytesIO(body), headers=headers) as reply:
                    statuses[reply.status] = statuses.get(reply.status, 0) + 1
    finally:
        await server.aclose()
    return sum(len(m.requests) for m in models), kinds, statuses


async def _agents(folder: Path) -> tuple[int, int, int, int]:
    """Runs of misbehaving command agents: (runs, children started, children alive, leaks)."""
    from toolproof.errors import AgentRunError
    from toolproof.models.fake import ScriptedModel
    from toolproof.server import ExternalAgent

    program = folder / "agent.py"
    program.write_text(AGENT)
    pids = folder / "pids"
    secrets = {f"PLANTED_{n}_TOKEN": f"planted-secret-{n}" for n in range(40)}
    secrets.update({"ANTHROPIC_API_KEY": "planted-a", "AWS_SECRET_ACCESS_KEY": "planted-b",
                    "DEEPSEEK_API_KEY": "planted-c", "GITHUB_TOKEN": "planted-d"})  # fmt: skip
    os.environ.update(secrets)
    leaks = 0
    try:
        for n in range(AGENT_RUNS):
            behaviour = ["orphan", "holder", "hang", "env"][n % 4]
            agent = ExternalAgent(
                ScriptedModel(["done"]),
                command=[sys.executable, str(program)],
                timeout=3,
                env={"PIDS": str(pids), "OUT": str(folder / "env.json")},
            )
            with contextlib.suppress(AgentRunError):
                await agent.run(behaviour)
            if behaviour == "env":
                seen = (folder / "env.json").read_text()
                leaks += sum(value in seen for value in secrets.values())
    finally:
        for name in secrets:
            os.environ.pop(name, None)
    children = [int(p) for p in pids.read_text().split()]
    return AGENT_RUNS, len(children), sum(map(_alive, children)), leaks


def _alive(pid: int) -> bool:
    """Whether a process runs (a zombie waiting for its parent counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def _memory() -> tuple[float, float, float, float]:
    """MB sent and kept: one long conversation, then a flood of open conversations."""
    import aiohttp

    from toolproof._messages import Message, ModelResponse, Usage
    from toolproof.models import Model
    from toolproof.models.fake import call
    from toolproof.server import ToolproofServer

    class Answers(Model):
        name = "answers"

        def __init__(self, answers: list[Any]) -> None:
            self.answers = list(answers)

        async def request(self, messages: Any, tools: Any, settings: Any) -> ModelResponse:
            item = self.answers.pop(0) if self.answers else "done"
            if isinstance(item, str):
                return ModelResponse(Message("assistant", item), Usage(1, 1))
            return ModelResponse(Message("assistant", None, [item]), Usage(1, 1))

    def kept() -> int:
        gc.collect()
        return tracemalloc.get_traced_memory()[0]

    async def post(session: Any, url: str, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode()
        async with session.post(url, data=io.BytesIO(data)) as reply:
            answer: dict[str, Any] = await reply.json()
            return answer

    steps = 40
    server = ToolproofServer(lambda: Answers([call("f", n=n) for n in range(steps)] + ["done"]))
    await server.start()
    url = f"{server.url}/v1/chat/completions"
    tracemalloc.start()
    try:
        async with aiohttp.ClientSession() as session:
            base = kept()
            messages: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
            sent = 0
            for _ in range(steps + 1):
                body = {"model": "m", "messages": messages}
                sent += len(json.dumps(body))
                message = (await post(session, url, body))["choices"][0]["message"]
                messages.append(message)
                for c in message.get("tool_calls") or []:
                    messages.append(
                        {"role": "tool", "tool_call_id": c["id"], "content": "r" * 50_000}
                    )
            own = sum(len(m.get("content") or "") + 200 for m in messages)
            long_kept = kept() - base - own
            del messages
            flood_base = kept()
            flood_sent = 0
            for n in range(300):
                text = f"{n:04d}" + "x" * (256 * 1024)
                flood_sent += len(text)
                await post(
                    session, url, {"model": "m", "messages": [{"role": "user", "content": text}]}
                )
            flood_kept = kept() - flood_base
    finally:
        tracemalloc.stop()
        await server.aclose()
    mb = 1024 * 1024
    return sent / mb, long_kept / mb, flood_sent / mb, flood_kept / mb


def _sigterm(folder: Path) -> float:
    """Seconds from SIGTERM to exit while a client holds a 600 s injected timeout."""
    import socket

    (folder / "script.yaml").write_text("- hello\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "toolproof", "serve", "--mode", "scripted", "--script",
         "script.yaml", "--port", "0"],
        cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        url = process.stdout.readline().rsplit(" ", 1)[-1].strip()
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(
            f"POST /v1/chat/completions?fault=timeout:600 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        time.sleep(0.5)
        started = time.perf_counter()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=180)
        took = time.perf_counter() - started
        sock.close()
        return took
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def measure() -> list[tuple[str, str, str]]:
    reached, kinds, statuses = asyncio.run(_serve_hostile())
    shown = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    codes = ", ".join(f"{count}×{code}" for code, count in sorted(statuses.items()))
    with tempfile.TemporaryDirectory() as tmp:
        runs, children, alive, leaks = asyncio.run(_agents(Path(tmp)))
    sent, long_kept, flood_sent, flood_kept = asyncio.run(_memory())
    with tempfile.TemporaryDirectory() as tmp:
        stop = _sigterm(Path(tmp))
    return [
        (
            "`serve` answers only programs on this machine, with bounded work",
            f"{HOSTILE_REQUESTS} generated hostile requests ({shown}: forged Host, another "
            "site's Origin, fault values out of range, 9 MiB bodies)",
            f"{reached} reached the model; answers {codes}",
        ),
        (
            "a command agent leaves nothing running and sees no secret",
            f"{runs} runs of agents leaving children behind, holding stdout open after "
            "answering, or hanging past a 3 s limit; 44 secrets planted in the environment",
            f"{alive} of {children} children alive after their case; {leaks} secrets seen",
        ),
        (
            "`serve` keeps memory in proportion to a conversation, and bounded under floods",
            f"one 41-request conversation resending its history ({sent:.0f} MB sent); 300 "
            f"open conversations of 256 KiB ({flood_sent:.0f} MB sent)",
            f"{long_kept:.1f} MB kept for the conversation; {flood_kept:.1f} MB kept after the "
            "flood (limit: 32 Mi characters)",
        ),
        (
            "SIGTERM stops `serve` while a client holds a request",
            "a request held by an injected 600 s timeout",
            f"exited in {stop:.2f} s (before: 60-122 s)",
        ),
    ]
