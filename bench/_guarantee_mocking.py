"""Guarantee figures: mock means mock, and hostile tool return values keep the trace.

``measure()`` tries random combinations of the agent's own tool mode and overrides, the
tools named as real, and honest or careless agent factories, through every mocked entry
point (``mock_tools``, the ``run_agent`` fixture, an eval suite, replay in model and tools
mode), and counts the real side effects of tools nobody named (the promise: zero). It also
returns hostile values and exits from tools and counts what escaped without a trace.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

N_COMBINATIONS = 60  # per entry point
SEED = 20260601

AGENTS_MODULE = '''
from toolproof import Agent, Toolset, tool

SIDE_EFFECTS = []

@tool(side_effects=True)
def refund(order_id: str, amount: float) -> str:
    """Refund an order.

    Args:
        order_id: The order.
        amount: How much.
    """
    SIDE_EFFECTS.append("refund")
    return "refunded"

@refund.mock
def _refund(order_id: str, amount: float) -> str:
    return "mock refund"

@tool(side_effects=True)
def send_slack(text: str) -> str:
    """Post to Slack (no mock).

    Args:
        text: The message.
    """
    SIDE_EFFECTS.append("send_slack")
    return "posted"

@tool
def get_weather(city: str) -> str:
    """The weather.

    Args:
        city: The city.
    """
    return "sunny"

TOOLS = [refund, send_slack, get_weather]

def own(mode="real", overrides=None):
    return Toolset(TOOLS, mode=mode, overrides=overrides or {})

def honest(model, tools=None, mode="real", overrides=None):
    return Agent(model, own(mode, overrides) if tools is None else tools)

def careless(model, tools=None, mode="real", overrides=None):
    return Agent(model, own(mode, overrides))

def listing(model, tools=None, mode="real", overrides=None):
    return Agent(model, list(tools) if tools is not None else TOOLS)
'''

SIDE_EFFECT_TOOLS = ("refund", "send_slack")


def _combination(rng: random.Random) -> dict[str, Any]:
    overrides = {
        name: rng.choice(["real", "mock"]) for name in SIDE_EFFECT_TOOLS if rng.random() < 0.7
    }
    real = sorted(n for n in (*SIDE_EFFECT_TOOLS, "get_weather") if rng.random() < 0.3)
    return {
        "mode": rng.choice(["real", "mock"]),
        "overrides": overrides,
        "real": real,
        "factory": rng.choice(["honest", "careless"]),
    }


def _run_entry(entry: str, combo: dict[str, Any], module: Any, folder: Path) -> str | None:
    """Run one combination; returns the error type that stopped it, if any."""
    from toolproof import Agent, Toolset
    from toolproof.errors import ToolproofError
    from toolproof.evals import evaluate
    from toolproof.replay import replay
    from toolproof.testing import ScriptedModel, call, mock_tools
    from toolproof.testing.plugin import AgentRunner

    script = [
        [call("refund", order_id="Z", amount=9.0), call("send_slack", text="hi")],
        "done",
    ]
    factory = getattr(module, combo["factory"])
    try:
        if entry == "mock_tools":
            agent = factory(ScriptedModel(script), None, combo["mode"], combo["overrides"])
            with mock_tools(agent, real=combo["real"]):
                agent.run_sync("go")
        elif entry == "run_agent":
            agent = factory(ScriptedModel(["unused"]), None, combo["mode"], combo["overrides"])
            AgentRunner([])(agent, "go", script=script, mode="mock", real=combo["real"])
        elif entry == "suite":
            options = json.dumps({"mode": combo["mode"], "overrides": combo["overrides"]})
            path = folder / f"combo{time.perf_counter_ns()}.eval.yaml"
            path.write_text(
                textwrap.dedent(
                    f"""\
                    suite: combo
                    agent: mockbench_agents:{combo["factory"]}
                    agent_options: {options}
                    model: scripted
                    real_tools: {json.dumps(combo["real"])}
                    cases:
                      - name: both
                        input: go
                        script:
                          - - {{call: {{name: refund, arguments: {{order_id: Z, amount: 9}}}}}}
                            - {{call: {{name: send_slack, arguments: {{text: hi}}}}}}
                          - done
                    """
                ),
                encoding="utf-8",
            )
            evaluate(path, cache=False)
        else:
            trace = Agent(ScriptedModel(script), Toolset(module.TOOLS)).run_sync("go").trace
            module.SIDE_EFFECTS.clear()
            if entry == "replay_model":
                replay(
                    [trace], mode="model", agent=factory, model="recorded", real_tools=combo["real"]
                )
            else:
                replay(
                    [trace],
                    mode="tools",
                    tools=module.own(combo["mode"], combo["overrides"]),
                    run_mocks=True,
                    real_tools=combo["real"],
                )
    except ToolproofError as exc:
        return type(exc).__name__
    return None


def _mocking_rows() -> list[tuple[str, str, str]]:
    rng = random.Random(SEED)
    entries = ["mock_tools", "run_agent", "suite", "replay_model", "replay_tools"]
    leaks = named_expected = named_ran = tried = 0
    careless_suites = careless_stopped = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "mockbench_agents.py").write_text(AGENTS_MODULE, encoding="utf-8")
        sys.path.insert(0, tmp)
        try:
            import mockbench_agents as module

            for entry in entries:
                for _ in range(N_COMBINATIONS):
                    combo = _combination(rng)
                    module.SIDE_EFFECTS.clear()
                    stopped = _run_entry(entry, combo, module, folder)
                    tried += 1
                    ran = set(module.SIDE_EFFECTS)
                    named = {n for n in combo["real"] if n in SIDE_EFFECT_TOOLS}
                    leaks += len(ran - named)
                    if entry == "suite" and combo["factory"] == "careless":
                        careless_suites += 1
                        careless_stopped += stopped == "MockBypassed" and not ran
                    else:
                        named_expected += len(named)
                        named_ran += len(ran & named)
        finally:
            sys.path.remove(tmp)
            sys.modules.pop("mockbench_agents", None)
    return [
        (
            "a tool with side effects never runs for real in a mocked run unless named",
            f"{tried} random mode/override/real-tool/factory combinations over 5 entry points "
            "(mock_tools, run_agent, eval suite, replay model, replay tools)",
            f"{leaks} unnamed real side effects; {named_ran}/{named_expected} named real tools ran",
        ),
        (
            "an agent factory that ignores its tools is stopped before any tool runs",
            f"{careless_suites} mocked suite runs with a factory ignoring `tools`",
            f"{careless_stopped}/{careless_suites} stopped with MockBypassed, 0 side effects",
        ),
    ]


def _hostile(make: Any, thread: bool) -> Any:
    from toolproof import tool

    @tool(thread=thread)
    def hostile() -> Any:
        """Return something hostile."""
        return make()

    return hostile


def _hostile_rows() -> list[tuple[str, str, str]]:
    from toolproof import Agent
    from toolproof.errors import ToolCrashed
    from toolproof.testing import ScriptedModel, call

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no str")

        __repr__ = __str__

    cycle: list[Any] = []
    cycle.append(cycle)
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]

    def exiting(error: BaseException) -> Any:
        def raise_it() -> Any:
            raise error

        return raise_it

    makers = [
        lambda: b"\xff\xfe",
        lambda: 10**5000,
        lambda: cycle,
        lambda: deep,
        Unprintable,
        lambda: {"k": [Unprintable()]},
        lambda: "\ud800",
        lambda: {"\udc00": "\ud800"},
        exiting(SystemExit(1)),
        exiting(KeyboardInterrupt()),
        exiting(GeneratorExit()),
    ]
    escaped = crashed = results = lost = 0
    slowest = 0.0
    for make in makers:
        for runs_in_thread in (False, True):
            agent = Agent(
                ScriptedModel([call("hostile"), "done"]), [_hostile(make, runs_in_thread)]
            )
            started = time.perf_counter()
            try:
                trace = asyncio.run(agent.run("go")).trace
                results += 1
            except ToolCrashed as exc:
                crashed += 1
                trace = exc.trace  # type: ignore[assignment]
            except BaseException:
                escaped += 1
                continue
            slowest = max(slowest, time.perf_counter() - started)
            try:
                trace.to_json().encode("utf-8")
            except Exception:
                lost += 1
    tried = len(makers) * 2
    return [
        (
            "hostile tool return values and exits never escape without a trace",
            f"{tried} runs: undecodable bytes, 10**5000, a cycle, 5000-deep nesting, unprintable "
            "objects, lone surrogates, SystemExit/KeyboardInterrupt/GeneratorExit (sync and "
            "in a thread)",
            f"{escaped} raw escapes, {lost} unwritable traces; {crashed} ToolCrashed, "
            f"{results} escaped results; max {slowest:.2f} s per input",
        )
    ]


def measure() -> list[tuple[str, str, str]]:
    """The rows (guarantee, what was tried, result) of the mocking guarantees."""
    return _mocking_rows() + _hostile_rows()


if __name__ == "__main__":  # pragma: no cover
    for row in measure():
        print(" | ".join(row))
