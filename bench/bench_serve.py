"""Throughput of ``toolproof serve``, and the cost of recording through it.

1. Replay mode on one core, driven by a load generator in another process (an aiohttp
   client loop, bounded by count and time, loopback only): requests per second and p99
   latency, beside a bare aiohttp handler returning a canned completion, in the same run.
2. Record mode: the latency of a request proxied (and recorded, redacted) through
   ``serve --mode record`` versus the same request sent directly to the upstream (a local
   ``serve --mode scripted``), in the same run.

    python bench/bench_serve.py            # prints a table; about 1 min
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BODY = {"model": "m", "messages": [{"role": "user", "content": "What is 12 times 8?"}]}
CANNED = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "96"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }
).encode()


def _one_core() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})


def _start(argv: list[str]) -> tuple[subprocess.Popen[str], str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, text=True, env=env, preexec_fn=_one_core
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line:
        raise SystemExit(f"{argv} did not start")
    return process, line.rsplit(" ", 1)[-1]


def _serve(*args: str) -> tuple[subprocess.Popen[str], str]:
    return _start([sys.executable, "-m", "toolproof", "serve", *args, "--port", "0"])


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.communicate(timeout=30)


# -- the bare handler and the load generator (child processes) ------------------------------


def bare() -> None:
    """A bare aiohttp handler answering every request with a canned completion."""
    from aiohttp import web

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=CANNED, content_type="application/json")

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        print(f"bare: http://127.0.0.1:{runner.addresses[0][1]}/v1", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def load(url: str, seconds: float, count: int, concurrency: int) -> None:
    """Send ``count`` requests (at most ``seconds``), print rps and latencies as JSON."""
    import aiohttp

    latencies: list[float] = []

    async def worker(session: aiohttp.ClientSession, deadline: float) -> None:
        payload = json.dumps(BODY).encode()
        headers = {"Content-Type": "application/json"}
        while len(latencies) < count and time.perf_counter() < deadline:
            started = time.perf_counter()
            async with session.post(url + "/chat/completions", data=payload, headers=headers) as r:
                await r.read()
                assert r.status == 200, r.status
            latencies.append(time.perf_counter() - started)

    async def main() -> float:
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:
            for _ in range(50):  # warm up
                async with session.post(url + "/chat/completions", json=BODY) as r:
                    await r.read()
            started = time.perf_counter()
            deadline = started + seconds
            await asyncio.gather(*(worker(session, deadline) for _ in range(concurrency)))
            return time.perf_counter() - started

    elapsed = asyncio.run(main())
    ordered = sorted(latencies)
    print(
        json.dumps(
            {
                "requests": len(ordered),
                "rps": len(ordered) / elapsed,
                "p50_ms": ordered[len(ordered) // 2] * 1000,
                "p99_ms": ordered[int(len(ordered) * 0.99)] * 1000,
            }
        )
    )


def _drive(url: str, seconds: float = 6, count: int = 20_000, concurrency: int = 16) -> Any:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--load",
            url,
            "--seconds",
            str(seconds),
            "--count",
            str(count),
            "--concurrency",
            str(concurrency),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def _sequential(url: str, count: int) -> list[float]:
    """Latencies of ``count`` requests one after another (each a new conversation)."""
    import aiohttp

    async def main() -> list[float]:
        out: list[float] = []
        async with aiohttp.ClientSession() as session:
            for index in range(count + 20):
                body = {"model": "m", "messages": [{"role": "user", "content": f"q{index}"}]}
                started = time.perf_counter()
                async with session.post(url + "/chat/completions", json=body) as r:
                    await r.read()
                    assert r.status == 200, await r.text()
                if index >= 20:
                    out.append(time.perf_counter() - started)
        return out

    return asyncio.run(main())


# -- the driver ----------------------------------------------------------------------------


def _store(path: Path) -> None:
    """A replay store holding the benchmark's conversation among 500 others."""
    sys.path.insert(0, str(ROOT / "src"))
    from toolproof._messages import Message, ModelResponse, Usage
    from toolproof.replay._store import TraceStore
    from toolproof.server._conversation import Conversation

    traces = []
    for index in range(501):
        question = BODY["messages"][0]["content"] if index == 0 else f"question {index}"
        conv = Conversation(model=None)
        conv.add(
            [Message("user", question)],
            [],
            ModelResponse(Message("assistant", "96"), Usage(10, 1, requests=1), "bench", "stop"),
            time.perf_counter(),
        )
        traces.append(conv.trace())
    with TraceStore(path, create=True) as store:
        store.add_many(traces)


def main() -> None:
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "traces.db"
        _store(store)
        bare_process, bare_url = _start([sys.executable, __file__, "--bare"])
        replay_process, replay_url = _serve("--mode", "replay", "--store", str(store))
        try:
            # Alternated, best of three each: other work on the machine hits both alike.
            rounds = [(_drive(bare_url, 4), _drive(replay_url, 4)) for _ in range(3)]
            baseline = max((b for b, _ in rounds), key=lambda r: r["rps"])
            replayed = max((r for _, r in rounds), key=lambda r: r["rps"])
        finally:
            _stop(bare_process)
            _stop(replay_process)
        share = replayed["rps"] / baseline["rps"]
        rows.append(
            (
                "bare aiohttp handler (canned answer, 1 core)",
                f"{baseline['rps']:,.0f} req/s, p99 {baseline['p99_ms']:.1f} ms",
            )
        )
        rows.append(
            (
                "serve --mode replay (1 core, 501 recordings)",
                f"{replayed['rps']:,.0f} req/s, p99 {replayed['p99_ms']:.1f} ms "
                f"({share:.0%} of bare)",
            )
        )
        script = Path(folder) / "script.yaml"
        script.write_text('- "96"\n')
        up_process, up_url = _serve("--mode", "scripted", "--script", str(script))
        model = f"openai-compatible:up?base_url={up_url}"
        record_process, record_url = _serve(
            "--mode", "record", "--model", model, "--store", str(Path(folder) / "rec.db")
        )
        try:
            direct = statistics.median(_sequential(up_url, 300))
            proxied = statistics.median(_sequential(record_url, 300))
        finally:
            _stop(record_process)
            _stop(up_process)
        rows.append(
            (
                "serve --mode record, per proxied request",
                f"+{(proxied - direct) * 1000:.2f} ms median "
                f"({direct * 1000:.2f} ms direct, {proxied * 1000:.2f} ms through record)",
            )
        )
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--bare", action="store_true")
    parser.add_argument("--load")
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    if args.bare:
        bare()
    elif args.load:
        load(args.load, args.seconds, args.count, args.concurrency)
    else:
        main()
