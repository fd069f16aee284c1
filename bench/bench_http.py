"""toolproof agents over HTTP: 200 runs at concurrency 50 against a local server.

Each run is 2 model calls + 1 tool call against an OpenAI-compatible server (started in a
separate process, so it does not steal the client's CPU) that answers every request after
50 ms. The ideal wall time is 200 / 50 runs x 2 calls x 50 ms = 0.40 s. The baseline is a
bare hand-written loop on aiohttp doing the same exchanges, measured in the same run.

    python bench/bench_http.py              # about 15 s; prints a table
    python bench/bench_http.py --stream     # the adapter with streamed responses
    python bench/bench_http.py --callgrind  # client instructions per run under valgrind; ~1 min

The callgrind mode counts the client's instructions for 100 runs, one at a time, against
the same server answering at once (it runs outside valgrind): a figure that other work on
the machine does not move, unlike wall and CPU time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from _callgrind import marked_instructions
from bench_http_server import start_server

import toolproof.models
from toolproof import Agent, tool
from toolproof.models import OpenAIChatModel

RUNS = 200
CONCURRENCY = 50
DELAY = 0.05
CALLS_PER_RUN = 2
IDEAL = RUNS / CONCURRENCY * CALLS_PER_RUN * DELAY


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


TOOLS_WIRE = [multiply_numbers.definition.to_openai()]


async def bare_run(session: aiohttp.ClientSession, url: str) -> str:
    """A minimal hand-written agent: POST, run the tool, POST again."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is 12 times 8?"}]
    for _ in range(5):
        body = {"model": "bench-model", "messages": messages, "tools": TOOLS_WIRE}
        async with session.post(url, json=body) as response:
            data = await response.json()
        message = data["choices"][0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            return str(message["content"])
        for tc in message["tool_calls"]:
            args = json.loads(tc["function"]["arguments"])
            result = multiply_numbers(**args)
            messages.append({"role": "tool", "tool_call_id": tc["id"], "content": str(result)})
    return ""


async def drive(one: Callable[[], Awaitable[str]]) -> tuple[float, float]:
    """RUNS runs by CONCURRENCY workers; returns (wall seconds, client CPU seconds)."""
    remaining = RUNS

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            output = await one()
            assert "96" in output, output

    cpu = time.process_time()
    wall = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return time.perf_counter() - wall, time.process_time() - cpu


async def measure_bare(url: str) -> tuple[float, float]:
    connector = aiohttp.TCPConnector(limit=100)
    async with aiohttp.ClientSession(connector=connector) as session:
        await bare_run(session, url)  # warm-up: connections, first-call costs
        return await drive(lambda: bare_run(session, url))


async def measure_toolproof(base_url: str, stream: bool) -> tuple[float, float]:
    model = OpenAIChatModel("bench-model", base_url=base_url, api_key="bench", stream=stream)
    agent = Agent(model, [multiply_numbers])

    async def one() -> str:
        result = await agent.run("What is 12 times 8?")
        return result.output or ""

    await one()
    try:
        return await drive(one)
    finally:
        await model.aclose()


# -- callgrind --------------------------------------------------------------------------------

CALLGRIND_RUNS = 100


def _child(kind: str, runs: int, base_url: str) -> None:
    """Under valgrind: warm up, then ``runs`` runs between two ``os.getppid()`` markers."""
    toolproof.models.ALLOW_MODEL_REQUESTS = True
    url = base_url + "/chat/completions"

    async def measured(one: Callable[[], Awaitable[str]]) -> None:
        for _ in range(10):
            assert "96" in await one()
        os.getppid()
        for _ in range(runs):
            await one()
        os.getppid()

    async def bare() -> None:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100)) as session:
            await measured(lambda: bare_run(session, url))

    async def adapter() -> None:
        model = OpenAIChatModel("bench-model", base_url=base_url, api_key="bench")
        agent = Agent(model, [multiply_numbers])

        async def one() -> str:
            return (await agent.run("What is 12 times 8?")).output or ""

        try:
            await measured(one)
        finally:
            await model.aclose()

    asyncio.run(bare() if kind == "bare" else adapter())


def _instructions(kind: str, runs: int, base_url: str) -> int:
    return marked_instructions(__file__, "--child", kind, str(runs), base_url)


def callgrind(runs: int = CALLGRIND_RUNS) -> None:
    process, port = start_server(0.0)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        bare = _instructions("bare", runs, base_url) / runs
        adapter = _instructions("toolproof", runs, base_url) / runs
    finally:
        process.terminate()
        process.wait(10)
    print(
        f"client instructions per run ({CALLS_PER_RUN} model calls + 1 tool call, one run at a "
        f"time, mean of {runs} after 10 warm-up runs, valgrind --tool=callgrind):"
    )
    print(f"  bare aiohttp loop  {bare:12,.0f}")
    print(
        f"  toolproof agent    {adapter:12,.0f}  ({adapter / bare:.2f}x, +{adapter - bare:,.0f}; "
        f"+{(adapter - bare) / CALLS_PER_RUN:,.0f} per model call; target <= 1.10x: "
        f"{'met' if adapter <= 1.10 * bare else 'NOT met'})"
    )


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return 0
    if sys.argv[1:2] == ["--callgrind"]:
        callgrind()
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5, help="measurements of each contender")
    parser.add_argument("--stream", action="store_true", help="streamed responses (SSE)")
    args = parser.parse_args()
    toolproof.models.ALLOW_MODEL_REQUESTS = True
    process, port = start_server(DELAY)
    base_url = f"http://127.0.0.1:{port}/v1"
    url = base_url + "/chat/completions"
    results: dict[str, list[tuple[float, float]]] = {"bare aiohttp loop": [], "toolproof": []}
    try:
        for _ in range(args.rounds):  # interleaved, so drift affects both alike
            results["bare aiohttp loop"].append(asyncio.run(measure_bare(url)))
            results["toolproof"].append(asyncio.run(measure_toolproof(base_url, args.stream)))
    finally:
        process.terminate()
        process.wait(10)

    mode = "streamed (SSE)" if args.stream else "plain JSON"
    print(
        f"{RUNS} runs x {CALLS_PER_RUN} model calls + 1 tool call, concurrency {CONCURRENCY}, "
        f"server delay {DELAY * 1000:.0f} ms, {mode}; ideal wall {IDEAL:.2f} s; "
        f"median of {args.rounds} rounds"
    )
    print(
        f"{'':20} {'wall s, median (min-max)':>26} {'x ideal':>8} {'CPU ms/run':>20} "
        f"{'CPU ms/request':>15}"
    )
    medians = {}
    for name, rows in results.items():
        walls = [r[0] for r in rows]
        cpus = [r[1] / RUNS * 1000 for r in rows]
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        medians[name] = (wall, cpu)
        print(
            f"{name:20} {f'{wall:.3f} ({min(walls):.3f}-{max(walls):.3f})':>26} "
            f"{wall / IDEAL:8.2f} {f'{cpu:.2f} ({min(cpus):.2f}-{max(cpus):.2f})':>20} "
            f"{cpu / CALLS_PER_RUN:15.2f}"
        )
    bare_cpu = medians["bare aiohttp loop"][1]
    tp_wall, tp_cpu = medians["toolproof"]
    ratios = [
        t[0] / b[0] for t, b in zip(results["toolproof"], results["bare aiohttp loop"], strict=True)
    ]
    print(
        f"toolproof / bare loop, round by round: wall {statistics.median(ratios):.2f}x "
        f"({min(ratios):.2f}-{max(ratios):.2f}; target <= 1.05x), client CPU "
        f"{tp_cpu / bare_cpu:.2f}x (+{tp_cpu - bare_cpu:.2f} ms/run); "
        f"target <= 1.5x ideal: {'met' if tp_wall <= 1.5 * IDEAL else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
