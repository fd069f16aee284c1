"""toolproof beside other agent frameworks: the same scripted task in each, in this run.

The task: one agent run = 2 model calls (a tool call, then the answer) + 1 tool call,
with each framework's own fake or test model, so no model and no network is involved and
what is measured is the framework's own work per run. toolproof runs with its defaults
(argument validation and full tracing on).

| framework | fake model used |
|---|---|
| toolproof | ``toolproof.models.fake.FunctionModel`` |
| LangChain ``create_agent`` | ``GenericFakeChatModel`` (tools bound as-is) |
| pydantic-ai | ``pydantic_ai.models.function.FunctionModel`` |
| OpenAI Agents SDK | a ``agents.models.interface.Model`` answering from a script, tracing off |
| smolagents ``ToolCallingAgent`` | a ``smolagents.Model`` answering from a script |

Each framework runs in its own fresh interpreter (its import time is measured there too),
``--rounds`` times; every figure is the median over rounds, with min and max. A framework
that is not installed is reported as such. The peers are not toolproof's dependencies:
install them with ``pip install 'toolproof[peers]'`` (or into a separate virtualenv and pass
its interpreter with ``--python``; toolproof itself is taken from ``src/``).

Run: ``python bench/bench_peers.py`` (``--runs N`` per round, ``--rounds N``, ``--only NAME``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

QUESTION = "What is 12 times 8?"
ANSWER = "12 x 8 = 96"


def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


# -- one framework each: build() -> an async function running one whole agent run ----------


def build_toolproof() -> Callable[[], Any]:
    from toolproof import Agent, tool
    from toolproof.models.fake import FunctionModel, call

    def respond(messages: Any, info: Any) -> Any:
        if messages[-1].role == "tool":
            return ANSWER
        return call("multiply_numbers", a=12, b=8)

    agent = Agent(FunctionModel(respond), [tool(multiply_numbers)])

    async def one() -> str:
        return (await agent.run(QUESTION)).output or ""

    return one


def build_langchain() -> Callable[[], Any]:
    import itertools

    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    class FakeChat(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    replies = itertools.cycle(
        [
            AIMessage(
                content="",
                tool_calls=[{"name": "multiply_numbers", "args": {"a": 12, "b": 8}, "id": "c1"}],
            ),
            AIMessage(content=ANSWER),
        ]
    )
    agent = create_agent(FakeChat(messages=replies), tools=[tool(multiply_numbers)])

    async def one() -> str:
        state = await agent.ainvoke({"messages": [{"role": "user", "content": QUESTION}]})
        return str(state["messages"][-1].content)

    return one


def build_pydantic_ai() -> Callable[[], Any]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        if any(part.part_kind == "tool-return" for part in messages[-1].parts):
            return ModelResponse(parts=[TextPart(ANSWER)])
        return ModelResponse(parts=[ToolCallPart("multiply_numbers", {"a": 12, "b": 8})])

    agent = Agent(FunctionModel(respond), tools=[multiply_numbers])

    async def one() -> str:
        return str((await agent.run(QUESTION)).output)

    return one


def build_openai_agents() -> Callable[[], Any]:
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)

    class Scripted(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            given = kwargs.get("input", args[1] if len(args) > 1 else None)
            answered = isinstance(given, list) and any(
                isinstance(item, dict) and item.get("type") == "function_call_output"
                for item in given
            )
            output: list[Any]
            if answered:
                text = ResponseOutputText(type="output_text", text=ANSWER, annotations=[])
                output = [
                    ResponseOutputMessage(
                        id="m1",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[text],
                    )
                ]
            else:
                output = [
                    ResponseFunctionToolCall(
                        id="f1",
                        call_id="c1",
                        name="multiply_numbers",
                        arguments='{"a": 12, "b": 8}',
                        type="function_call",
                        status="completed",
                    )
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    agent = Agent(name="bench", model=Scripted(), tools=[function_tool(multiply_numbers)])

    async def one() -> str:
        return str((await Runner.run(agent, QUESTION)).final_output)

    return one


def build_smolagents() -> Callable[[], Any]:
    from smolagents import ToolCallingAgent, tool
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        Model,
    )

    def _call(name: str, arguments: dict[str, Any], call_id: str) -> ChatMessage:
        function = ChatMessageToolCallFunction(name=name, arguments=arguments)
        return ChatMessage(
            role="assistant",
            content="",
            tool_calls=[ChatMessageToolCall(id=call_id, type="function", function=function)],
        )

    class Scripted(Model):
        def generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatMessage:
            text = str(messages[-1])
            if "Observation" in text or "96" in text:
                return _call("final_answer", {"answer": ANSWER}, "c2")
            return _call("multiply_numbers", {"a": 12, "b": 8}, "c1")

    multiply = tool(multiply_numbers)
    agent = ToolCallingAgent(tools=[multiply], model=Scripted(), max_steps=3, verbosity_level=0)

    async def one() -> str:
        return str(agent.run(QUESTION))

    return one


FRAMEWORKS: dict[str, tuple[str, Callable[[], Callable[[], Any]]]] = {
    "toolproof": ("toolproof", build_toolproof),
    "langchain": ("LangChain create_agent", build_langchain),
    "pydantic-ai": ("pydantic-ai", build_pydantic_ai),
    "openai-agents": ("OpenAI Agents SDK", build_openai_agents),
    "smolagents": ("smolagents ToolCallingAgent", build_smolagents),
}


def worker(name: str, runs: int) -> dict[str, Any]:
    """In a fresh interpreter: import and build, then time ``runs`` runs."""
    import asyncio

    begin = time.perf_counter()
    try:
        one = FRAMEWORKS[name][1]()
    except ImportError as exc:
        return {"error": f"not installed ({exc.name or exc})"}
    built = time.perf_counter() - begin

    async def timed() -> tuple[float, str]:
        output = await one()  # warm-up: first-call costs
        for _ in range(min(20, runs)):
            output = await one()
        start = time.perf_counter()
        for _ in range(runs):
            output = await one()
        return (time.perf_counter() - start) / runs, output

    per_run, output = asyncio.run(timed())
    if "96" not in output:
        return {"error": f"unexpected answer {output!r}"}
    return {"import_build_s": built, "per_run_us": per_run * 1e6}


def _spread(values: list[float], scale: float, unit: str) -> str:
    mid = statistics.median(values) * scale
    return f"{mid:9.1f} {unit} ({min(values) * scale:.1f}-{max(values) * scale:.1f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="timed runs per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", default=sys.executable, help="interpreter with the peers")
    parser.add_argument("--only", action="append", choices=sorted(FRAMEWORKS))
    parser.add_argument("--worker", choices=sorted(FRAMEWORKS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.runs)))
        return 0
    src = Path(__file__).resolve().parent.parent / "src"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
    }
    names = args.only or list(FRAMEWORKS)
    if "toolproof" not in names:
        names.insert(0, "toolproof")
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for _ in range(args.rounds):  # interleaved, so drift affects all alike
        for name in names:
            done = subprocess.run(
                [args.python, __file__, "--worker", name, "--runs", str(args.runs)],
                env=env,
                capture_output=True,
                text=True,
            )
            lines = done.stdout.strip().splitlines()
            if done.returncode != 0 or not lines:
                tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
                found[name].append({"error": f"failed: {tail}"})
            else:
                found[name].append(json.loads(lines[-1]))
    print(
        f"one run = 2 model calls + 1 tool call, fake model; {args.runs} runs x {args.rounds} "
        f"rounds; median (min-max); {args.python}"
    )
    base = [r["per_run_us"] for r in found["toolproof"] if "per_run_us" in r]
    base_median = statistics.median(base) if base else float("nan")
    print(f"  {'framework':30} {'per run':>26} {'import + build':>26} {'vs toolproof':>13}")
    for name in names:
        label = FRAMEWORKS[name][0]
        good = [r for r in found[name] if "per_run_us" in r]
        if not good:
            print(f"  {label:30} {found[name][0]['error']}")
            continue
        runs = [r["per_run_us"] for r in good]
        imports = [r["import_build_s"] for r in good]
        ratio = statistics.median(runs) / base_median
        print(
            f"  {label:30} {_spread(runs, 1, 'µs'):>26} {_spread(imports, 1000, 'ms'):>26} "
            f"{ratio:12.1f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
