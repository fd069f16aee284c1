"""Per-run overhead of the agent loop, and `import toolproof` time.

One full run = 2 model calls + 1 tool call, with a scripted model, argument validation and
full tracing on (the defaults a user gets). Two hand-written baselines are measured in the
same process:

- the *minimal* loop (``bare_loop``): replies whose arguments are already Python dicts, no
  system prompt, no JSON, no record of anything; the least any loop can do;
- the *same-work* loop (``bare_loop_same_work``): what every real agent loop must do with the
  same inputs, written plainly: OpenAI-shaped replies (``tool_calls`` with JSON-text
  arguments and a ``usage`` dict), a system and a user message, ``json.loads`` of the
  arguments, the tool looked up by name (unknown name or exception -> an error text for the
  model), ``json.dumps`` of the result, a list of step dicts with start and end times, calls,
  results and usage, and the usage summed at the end. No validation, no pydantic.

``run_sync`` is measured beside ``await agent.run``, and so is the harness alone: the same
agent with a model that returns two prebuilt responses (no record of the request, no usage
estimate), which shows what the scripted model costs and what the loop costs without it.
Times are the process's CPU time (``time.process_time``): the same as wall time for this
single-threaded loop on an idle machine, and far steadier when other work shares the cores.

    python bench/bench_core.py               # prints a table; about 30 s
    python bench/bench_core.py --callgrind   # instructions, cache misses under valgrind; ~3 min

The callgrind mode runs the bare loop, ``await agent.run`` and ``run_sync`` in child
processes under ``valgrind --tool=callgrind`` and counts the instructions of N runs after a
warm-up, and the simulated first-level cache misses: they do not depend on what else the
machine is doing. The gap between ``run_sync`` and ``await agent.run`` in time is more in
their cache misses than in their instructions: the loop's code run around each call evicts
the run's.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from _callgrind import marked_events

from toolproof import Agent, Message, ToolCall, tool
from toolproof.models import Model, ModelResponse, Usage
from toolproof.testing import ScriptedModel, call

RUNS_PER_BATCH = 200
clock = time.process_time  # CPU time: see the module docstring
BATCHES = 25
ROUNDS = 5
CALLGRIND_RUNS = 200


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


async def bare_loop_same_work(
    script: list[dict[str, Any]], tools: dict[str, Any], system: str, question: str
) -> tuple[str, dict[str, Any]]:
    """A minimal loop that does the observable work of an agent loop, and records it."""
    perf = time.perf_counter
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": question},
    ]
    steps: list[dict[str, Any]] = []
    position = 0

    async def model(msgs: list[dict[str, Any]]) -> dict[str, Any]:
        nonlocal position
        reply = script[position]
        position += 1
        return reply

    output = ""
    for _ in range(5):
        started = perf()
        reply = await model(messages)
        message = reply["choices"][0]["message"]
        step: dict[str, Any] = {
            "started": started,
            "ended": perf(),
            "message": message,
            "usage": reply["usage"],
            "results": [],
        }
        steps.append(step)
        messages.append(message)
        tool_calls = message.get("tool_calls")
        if not tool_calls:
            output = message["content"] or ""
            break
        for tc in tool_calls:
            function = tc["function"]
            name = function["name"]
            called = perf()
            fn = tools.get(name)
            arguments = None
            if fn is None:
                ok, content = False, f"unknown tool {name!r}"
            else:
                try:
                    arguments = json.loads(function["arguments"])
                    ok, content = True, json.dumps(fn(**arguments))
                except Exception as exc:
                    ok, content = False, f"{type(exc).__name__}: {exc}"
            step["results"].append(
                {
                    "id": tc["id"],
                    "name": name,
                    "arguments": arguments,
                    "ok": ok,
                    "content": content,
                    "started": called,
                    "ended": perf(),
                }
            )
            messages.append({"role": "tool", "tool_call_id": tc["id"], "content": content})
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    for step in steps:
        usage["prompt_tokens"] += step["usage"]["prompt_tokens"]
        usage["completion_tokens"] += step["usage"]["completion_tokens"]
    return output, {"steps": steps, "usage": usage, "output": output}


def scripted_agent(parallel: int, runs: int) -> Agent:
    calls = [call("multiply_numbers", a=12, b=8 + i) for i in range(parallel)]
    first: Any = calls[0] if parallel == 1 else calls
    model = ScriptedModel([first, "12 x 8 = 96"] * runs)
    return Agent(model, [multiply_numbers], system_prompt="You are an HR assistant.", max_steps=5)


class CannedModel(Model):
    """The cheapest model a run can have: two prebuilt responses, taken in turn.

    It records nothing and estimates nothing (a ``ScriptedModel`` keeps every request and
    estimates each request's tokens); the run's own work is all that is left.
    """

    name = "canned"

    def __init__(self, parallel: int) -> None:
        calls = [
            ToolCall("multiply_numbers", {"a": 12, "b": 8 + i}, f"call_{i + 1}")
            for i in range(parallel)
        ]
        self._responses = (
            ModelResponse(
                Message("assistant", None, calls),
                Usage(input_tokens=40, output_tokens=12, requests=1),
                "canned",
                "tool_calls",
            ),
            ModelResponse(
                Message("assistant", "12 x 8 = 96"),
                Usage(input_tokens=60, output_tokens=6, requests=1),
                "canned",
                "stop",
            ),
        )
        self._turn = 0

    async def request(self, messages: Any, tools: Any, settings: Any) -> ModelResponse:
        self._turn ^= 1
        return self._responses[1 - self._turn]


def canned_agent(parallel: int) -> Agent:
    model = CannedModel(parallel)
    return Agent(model, [multiply_numbers], system_prompt="You are an HR assistant.", max_steps=5)


def bare_runner(parallel: int) -> Callable[[], Awaitable[str]]:
    script = [
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
    tools = {"multiply_numbers": bare_multiply}
    return lambda: bare_loop(script, tools, "What is 12 times 8?")


def same_work_runner(parallel: int) -> Callable[[], Awaitable[Any]]:
    calls = [
        {
            "id": f"call_{i + 1}",
            "type": "function",
            "function": {
                "name": "multiply_numbers",
                "arguments": json.dumps({"a": 12, "b": 8 + i}),
            },
        }
        for i in range(parallel)
    ]
    script = [
        {
            "choices": [
                {
                    "message": {"role": "assistant", "content": None, "tool_calls": calls},
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 40, "completion_tokens": 12},
        },
        {
            "choices": [
                {
                    "message": {"role": "assistant", "content": "12 x 8 = 96"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 60, "completion_tokens": 6},
        },
    ]
    tools = {"multiply_numbers": bare_multiply}
    return lambda: bare_loop_same_work(
        script, tools, "You are an HR assistant.", "What is 12 times 8?"
    )


def _check(agent: Agent, result: Any, parallel: int) -> None:
    assert result.stop_reason == "final"
    assert len(result.trace.tool_results) == parallel
    requests: list[Any] = getattr(agent.model, "requests", [])
    if len(requests) > 1000:
        requests.clear()


async def _async_batch(agent: Agent, parallel: int, runs: int) -> float:
    started = clock()
    for _ in range(runs):
        _check(agent, await agent.run("What is 12 times 8?"), parallel)
    return (clock() - started) / runs * 1e6


async def _bare_batch(parallel: int, runs: int, same_work: bool = False) -> float:
    run = same_work_runner(parallel) if same_work else bare_runner(parallel)
    started = clock()
    for _ in range(runs):
        await run()
    return (clock() - started) / runs * 1e6


def _sync_batch(agent: Agent, parallel: int, runs: int) -> float:
    started = clock()
    for _ in range(runs):
        _check(agent, agent.run_sync("What is 12 times 8?"), parallel)
    return (clock() - started) / runs * 1e6


def measure_round(parallel: int) -> dict[str, float]:
    """One round: medians over batches of the async run, run_sync and the bare loops.

    The batches take turns (an async batch, a run_sync batch, the two bare ones), so a
    change of load on the machine weighs on all of them alike; ``sync/run`` is the median
    of each turn's own ratio.
    """
    total = (2 * BATCHES + 4) * RUNS_PER_BATCH
    agent = scripted_agent(parallel, total)
    canned = canned_agent(parallel)
    loop = asyncio.new_event_loop()  # the async side's loop, kept across its batches
    try:
        loop.run_until_complete(_async_batch(agent, parallel, RUNS_PER_BATCH))  # warm up
        _sync_batch(agent, parallel, RUNS_PER_BATCH)
        loop.run_until_complete(_async_batch(canned, parallel, RUNS_PER_BATCH))
        loop.run_until_complete(_bare_batch(parallel, RUNS_PER_BATCH))
        loop.run_until_complete(_bare_batch(parallel, RUNS_PER_BATCH, same_work=True))
        ours, sync, alone, bare, same = [], [], [], [], []
        for _ in range(BATCHES):
            ours.append(loop.run_until_complete(_async_batch(agent, parallel, RUNS_PER_BATCH)))
            sync.append(_sync_batch(agent, parallel, RUNS_PER_BATCH))
            alone.append(loop.run_until_complete(_async_batch(canned, parallel, RUNS_PER_BATCH)))
            bare.append(loop.run_until_complete(_bare_batch(parallel, RUNS_PER_BATCH)))
            same.append(loop.run_until_complete(_bare_batch(parallel, RUNS_PER_BATCH, True)))
    finally:
        loop.close()
    return {
        "async": statistics.median(ours),
        "sync": statistics.median(sync),
        "alone": statistics.median(alone),
        "bare": statistics.median(bare),
        "same": statistics.median(same),
        "sync/run": statistics.median(s / o for s, o in zip(sync, ours, strict=True)),
    }


def _spread(values: list[float]) -> str:
    middle = statistics.median(values)
    return f"{middle:7.1f}us ±{(max(values) - min(values)) / 2:4.1f}"


def import_time() -> tuple[float, float]:
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


# -- callgrind --------------------------------------------------------------------------------


def _child(kind: str, runs: int) -> None:
    """Under valgrind: warm up, then ``runs`` runs between two ``os.getppid()`` markers.

    ``--dump-before=getppid`` makes callgrind write its counters at each marker, so the
    second dump holds exactly the instructions of the measured runs.
    """
    warm_up = 20
    if kind in ("bare", "same"):
        run = bare_runner(1) if kind == "bare" else same_work_runner(1)

        async def bare_all() -> None:
            for _ in range(warm_up):
                await run()
            os.getppid()
            for _ in range(runs):
                await run()
            os.getppid()

        asyncio.run(bare_all())
        return
    if kind == "empty":  # run_sync's own part: one call of an empty coroutine
        from toolproof._thread_loop import run_in_thread_loop

        async def empty() -> None:
            return None

        for _ in range(warm_up):
            run_in_thread_loop(empty())
        os.getppid()
        for _ in range(runs):
            run_in_thread_loop(empty())
        os.getppid()
        return
    agent = scripted_agent(1, runs + warm_up)
    if kind == "sync":
        for _ in range(warm_up):
            agent.run_sync("What is 12 times 8?")
        os.getppid()
        for _ in range(runs):
            agent.run_sync("What is 12 times 8?")
        os.getppid()
        return

    async def all_runs() -> None:
        for _ in range(warm_up):
            await agent.run("What is 12 times 8?")
        os.getppid()
        for _ in range(runs):
            await agent.run("What is 12 times 8?")
        os.getppid()

    asyncio.run(all_runs())


def _events(kind: str, runs: int) -> dict[str, float]:
    """Per run: instructions, and first-level instruction and data cache misses."""
    events = marked_events(__file__, "--child", kind, str(runs), cache_sim=True)
    return {name: events[name] / runs for name in ("Ir", "I1mr", "D1mr", "D1mw")}


def callgrind(runs: int = CALLGRIND_RUNS) -> None:
    print(f"per run under callgrind (mean of {runs} runs after 20 warm-up runs)")
    print(
        f"{'':<44}{'instructions':>13}{'/minimal':>10}{'/same-work':>12}"
        f"{'L1i misses':>12}{'L1d misses':>12}"
    )
    per_run: dict[str, dict[str, float]] = {}
    for kind, label in (
        ("bare", "minimal bare loop"),
        ("same", "same-work bare loop"),
        ("async", "await agent.run, 2 model calls + 1 tool"),
        ("sync", "agent.run_sync, same run"),
        ("empty", "run_sync's own part (an empty coroutine)"),
    ):
        found = per_run[kind] = _events(kind, runs)
        minimal = found["Ir"] / per_run["bare"]["Ir"]
        same = f"{found['Ir'] / per_run['same']['Ir']:>11.1f}x" if "same" in per_run else ""
        print(
            f"{label:<44}{found['Ir']:>13,.0f}{minimal:>9.1f}x{same:>12}"
            f"{found['I1mr']:>12,.0f}{found['D1mr'] + found['D1mw']:>12,.0f}"
        )
    sync, ours = per_run["sync"], per_run["async"]
    print(
        f"run_sync / await run: {sync['Ir'] / ours['Ir']:.2f}x instructions, "
        f"{sync['I1mr'] / ours['I1mr']:.2f}x L1i misses, "
        f"{(sync['D1mr'] + sync['D1mw']) / (ours['D1mr'] + ours['D1mw']):.2f}x L1d misses"
    )


def main() -> None:
    runs = RUNS_PER_BATCH * BATCHES
    print(
        f"python {sys.version.split()[0]}, CPU time per run; {runs} runs per figure and round "
        f"(median of {BATCHES} batches); median of {ROUNDS} rounds ± half their range"
    )
    print(
        "baselines: 'minimal' = bare_loop (dict arguments, no JSON, no record); "
        "'same-work' = bare_loop_same_work (OpenAI-shaped replies, JSON, a trace of dicts)"
    )
    print(
        f"{'scenario':<30}{'await run':>16}{'run_sync':>16}{'minimal loop':>16}"
        f"{'same-work loop':>16}{'run/min':>9}{'run/same':>10}{'sync/run':>10}"
    )
    harness: list[str] = []
    for parallel in (1, 3):
        rounds = [measure_round(parallel) for _ in range(ROUNDS)]
        ours = [r["async"] for r in rounds]
        sync = [r["sync"] for r in rounds]
        bare = [r["bare"] for r in rounds]
        same = [r["same"] for r in rounds]
        label = "2 model calls + 1 tool call" if parallel == 1 else "2 model calls + 3 parallel"
        run_ratio = statistics.median(r["async"] / r["bare"] for r in rounds)
        same_ratio = statistics.median(r["async"] / r["same"] for r in rounds)
        sync_ratios = [r["sync/run"] for r in rounds]
        sync_ratio = statistics.median(sync_ratios)
        print(
            f"{label:<30}{_spread(ours):>16}{_spread(sync):>16}{_spread(bare):>16}"
            f"{_spread(same):>16}{run_ratio:>8.1f}x{same_ratio:>9.1f}x{sync_ratio:>9.2f}x"
            f" ({min(sync_ratios):.2f}-{max(sync_ratios):.2f})"
        )
        alone = [r["alone"] for r in rounds]
        alone_ratio = statistics.median(r["alone"] / r["same"] for r in rounds)
        share = 1 - statistics.median(alone) / statistics.median(ours)
        harness.append(
            f"  {label:<28}{_spread(alone):>16}  {alone_ratio:.1f}x the same-work loop; the "
            f"scripted model's share of the run: {share:.0%}"
        )
    print("the harness alone, `await run` with a model returning 2 prebuilt responses:")
    print("\n".join(harness))
    imported, bare_python = import_time()
    print(
        f"python -c 'import toolproof': {imported:.0f} ms (python -c 'pass': {bare_python:.0f} ms)"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["--callgrind"]:
        callgrind(int(sys.argv[2]) if len(sys.argv) > 2 else CALLGRIND_RUNS)
    else:
        main()
