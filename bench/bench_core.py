"""Per-run overhead of the agent loop, and `import toolproof` time.

One full run = 2 model calls + 1 tool call, with a scripted model, argument validation and
full tracing on. The baseline is a bare hand-written loop doing the same work on plain
dicts, measured in the same process; the figure that matters is the difference.

    python bench/bench_core.py            # prints a table; about 20 s
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from typing import Any

from toolproof import Agent, tool
from toolproof.testing import ScriptedModel, call

RUNS_PER_BATCH = 200
BATCHES = 25


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


def bare_multiply(a: float, b: float) -> float:
    return a * b


async def bare_loop(script: list[dict[str, Any]], tools: dict[str, Any], question: str) -> str:
    """What a minimal hand-written agent loop does: no validation, no trace."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    position = 0

    async def model(msgs: list[dict[str, Any]]) -> dict[str, Any]:
        nonlocal position
        reply = script[position]
        position += 1
        return reply

    for _ in range(5):
        reply = await model(messages)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return str(reply["content"])
        for tc in reply["tool_calls"]:
            result = tools[tc["name"]](**tc["arguments"])
            messages.append({"role": "tool", "tool_call_id": tc["id"], "content": str(result)})
    return ""


async def time_batches(make_run: Any) -> list[float]:
    """Median-friendly samples: microseconds per run, one sample per batch."""
    samples = []
    for _ in range(BATCHES):
        started = time.perf_counter()
        for _ in range(RUNS_PER_BATCH):
            await make_run()
        samples.append((time.perf_counter() - started) / RUNS_PER_BATCH * 1e6)
    return samples


async def measure(parallel: int) -> tuple[float, float]:
    calls = [call("multiply_numbers", a=12, b=8 + i) for i in range(parallel)]
    first: Any = calls[0] if parallel == 1 else calls
    total = (BATCHES + 1) * RUNS_PER_BATCH
    model = ScriptedModel([first, "12 x 8 = 96"] * total)
    agent = Agent(model, [multiply_numbers], system_prompt="You are an HR assistant.", max_steps=5)

    async def toolproof_run() -> None:
        result = await agent.run("What is 12 times 8?")
        assert result.stop_reason == "final"
        assert len(result.trace.tool_results) == parallel
        if len(model.requests) > 1000:
            model.requests.clear()

    bare_script = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"c{i}", "name": "multiply_numbers", "arguments": {"a": 12, "b": 8 + i}}
                for i in range(parallel)
            ],
        },
        {"role": "assistant", "content": "12 x 8 = 96"},
    ]

    async def bare_run() -> None:
        await bare_loop(bare_script, {"multiply_numbers": bare_multiply}, "What is 12 times 8?")

    for _ in range(RUNS_PER_BATCH):  # warm up both
        await toolproof_run()
        await bare_run()
    ours = statistics.median(await time_batches(toolproof_run))
    bare = statistics.median(await time_batches(bare_run))
    return ours, bare


def import_time() -> float:
    samples = []
    for _ in range(15):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import toolproof"], check=True)
        samples.append((time.perf_counter() - started) * 1000)
    baseline = []
    for _ in range(15):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        baseline.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), statistics.median(baseline)


def main() -> None:
    runs = RUNS_PER_BATCH * BATCHES
    print(f"python {sys.version.split()[0]}, {runs} runs per figure (median of {BATCHES} batches)")
    print(f"{'scenario':<32}{'toolproof':>12}{'bare loop':>12}{'overhead':>12}{'ratio':>8}")
    for parallel in (1, 3):
        ours, bare = asyncio.run(measure(parallel))
        label = "2 model calls + 1 tool call" if parallel == 1 else "2 model calls + 3 parallel"
        print(
            f"{label:<32}{ours:>10.1f}us{bare:>10.1f}us{ours - bare:>10.1f}us{ours / bare:>7.1f}x"
        )
    imported, bare_python = import_time()
    print(
        f"python -c 'import toolproof': {imported:.0f} ms (python -c 'pass': {bare_python:.0f} ms)"
    )


if __name__ == "__main__":
    main()
