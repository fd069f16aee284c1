"""The run contract: every entry point of every agent takes the same run options, whole.

The options of a run (history, metadata, tags, settings, memory state, budget) are generated,
and each entry point (``run``, ``run_sync``, ``iter``, ``Session``, the ``run_agent`` fixture
both ways) must hand every one of them to the run: the traces and the memory state they leave
are compared field by field. Agents toolproof did not build keep the same contract without
being ``Agent`` subclasses, and an object that only implements it runs wherever an agent does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Agent, Budget, Message, ModelSettings, RunResult, Trace, tool
from toolproof._agent import BaseAgent, Runnable, RunOptions, Session
from toolproof._memory import Memory, MemoryState
from toolproof._messages import Usage
from toolproof._toolset import Toolset
from toolproof.models import ModelResponse
from toolproof.models._base import Model
from toolproof.testing import FunctionModel, RequestInfo, ScriptedModel, call
from toolproof.testing.plugin import AgentRunner


@tool
def echo(text: str) -> str:
    """Echo the text.

    Args:
        text: The text.
    """
    return text


def _model() -> FunctionModel:
    """A tool call, then an answer; each response reports 3x the tokens memory estimated."""

    def respond(messages: list[Message], info: RequestInfo) -> Any:
        usage = Usage(input_tokens=300 * info.step, output_tokens=5, requests=1)
        if messages[-1].role == "tool":
            return ModelResponse(Message.assistant("done"), usage)
        return ModelResponse(Message.assistant(None, [call("echo", text="x")]), usage)

    return FunctionModel(respond)


def _agent() -> Agent:
    return Agent(_model(), [echo], memory=Memory(max_tokens=100_000))


async def _drain(agent: Agent, text: str, options: dict[str, Any]) -> RunResult:
    async with agent.iter(text, **options) as run:
        async for _ in run:
            pass
    assert run.result is not None
    return run.result


ENTRY_POINTS: dict[str, Callable[[Agent, str, dict[str, Any]], RunResult]] = {
    "run": lambda a, t, o: asyncio.run(a.run(t, **o)),
    "run_sync": lambda a, t, o: a.run_sync(t, **o),
    "iter": lambda a, t, o: asyncio.run(_drain(a, t, o)),
    "run_with": lambda a, t, o: asyncio.run(a.run_with(t, RunOptions(**o))),
    "run_agent": lambda a, t, o: AgentRunner([])(a, t, **o),
    "run_agent.run": lambda a, t, o: asyncio.run(AgentRunner([]).run(a, t, **o)),
}

texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
histories = st.lists(texts, max_size=4).map(
    lambda said: [
        Message.user(t) if i % 2 == 0 else Message.assistant(t) for i, t in enumerate(said)
    ]
)
run_options = st.fixed_dictionaries(
    {
        "history": histories,
        "metadata": st.dictionaries(texts.filter(lambda k: k != "agent"), texts, max_size=3),
        "tags": st.lists(texts, max_size=3),
        "settings": st.builds(
            ModelSettings,
            temperature=st.none() | st.floats(0, 2),
            max_tokens=st.none() | st.integers(1, 4096),
            seed=st.none() | st.integers(0, 99),
        ),
        "memory_state": st.floats(0.5, 2.0).map(lambda c: MemoryState(calibration=c)),
        "budget": st.sampled_from([None, Budget(max_model_calls=1)]),
    }
)

VOLATILE = {"id", "started_at", "ended_at", "duration_ms"}


def _comparable(trace: Trace) -> dict[str, Any]:
    data = trace.to_dict()
    for key in VOLATILE:
        data.pop(key, None)
    for step in data.get("steps", []):
        step.pop("offset_ms", None)
        step.pop("latency_ms", None)
        for result in step.get("tool_results", []):
            result.pop("duration_ms", None)
    return data


@settings(max_examples=25)
@given(options=run_options)
def test_every_entry_point_hands_every_run_option_to_the_run(options: dict[str, Any]) -> None:
    start = options["memory_state"].calibration
    seen: dict[str, tuple[dict[str, Any], MemoryState]] = {}
    for name, entry in ENTRY_POINTS.items():
        state = MemoryState(calibration=start)
        result = entry(_agent(), "question", {**options, "memory_state": state})
        trace = result.trace
        assert trace.history == options["history"], name
        assert trace.metadata == options["metadata"], name
        assert trace.tags == options["tags"], name
        assert trace.settings == options["settings"].to_dict(), name
        expected = "budget" if options["budget"] is not None else "final"
        assert trace.stop_reason == expected, name
        assert state.calibration != start, f"{name} did not carry the memory state"
        seen[name] = (_comparable(trace), state)
    first = next(iter(seen.values()))
    for name, found in seen.items():
        assert found == first, name


def test_a_session_hands_its_options_and_keeps_its_memory_state() -> None:
    chat = Session(_agent())
    chat.run_sync("one", metadata={"k": "v"}, tags=["t"], settings=ModelSettings(seed=3))
    calibrated = chat.memory_state.calibration
    assert calibrated != 1.0
    before = list(chat.history)
    assert [m.content for m in before] == ["one", None, "x", "done"]
    second = chat.run_sync("two", budget=Budget(max_model_calls=1))
    assert second.trace.history == before
    assert second.stop_reason == "budget"
    first = chat.traces[0]
    assert (first.metadata, first.tags, first.settings["seed"]) == ({"k": "v"}, ["t"], 3)


def test_an_unknown_run_option_is_refused_by_every_entry_point() -> None:
    for name, entry in ENTRY_POINTS.items():
        with pytest.raises(TypeError, match="histroy"):
            entry(_agent(), "question", {"histroy": []})
        assert name


# -- agents that only keep the contract ----------------------------------------------------------


class EchoAgent:
    """Keeps the run contract without any toolproof base class: answers with its model."""

    def __init__(self, model: Model, tools: Toolset) -> None:
        self.model = model
        self.toolset = tools
        self.recorder = None
        self.name: str | None = "echo"
        self.swapped: list[Model] = []

    @contextlib.contextmanager
    def override(self, *, model: Model | None = None, tools: Any = None) -> Iterator[None]:
        before = self.model
        if model is not None:
            self.model, self.swapped = model, [*self.swapped, model]
        try:
            yield
        finally:
            self.model = before

    async def run_with(self, input: str, options: RunOptions) -> RunResult:
        inner = Agent(self.model, self.toolset)
        return await inner.run_with(input, options)


def test_an_object_keeping_the_contract_is_runnable_and_runs_in_a_session() -> None:
    agent = EchoAgent(ScriptedModel(["one", "two"]), Toolset([echo]))
    assert isinstance(agent, Runnable)
    chat = Session(agent)
    assert chat.run_sync("a").output == "one"
    assert chat.run_sync("b").output == "two"
    assert [m.content for m in chat.history] == ["a", "one", "b", "two"]


def test_the_run_agent_fixture_swaps_the_model_of_any_runnable() -> None:
    agent = EchoAgent(ScriptedModel([]), Toolset([echo]))
    traces: list[Trace] = []
    result = AgentRunner(traces)(agent, "hi", script=["scripted answer"], tags=["x"])
    assert result.output == "scripted answer" and traces[0].tags == ["x"]
    assert len(agent.swapped) == 1


def _foreign_classes() -> Sequence[type]:
    from toolproof.server import ExternalAgent

    found: list[type] = [ExternalAgent]
    with contextlib.suppress(ImportError):
        from toolproof.integrations.langchain import LangChainAgent

        found.append(LangChainAgent)
    with contextlib.suppress(ImportError):
        from toolproof.integrations.openai_agents import AgentsSDKAgent

        found.append(AgentsSDKAgent)
    return found


@pytest.mark.parametrize("cls", _foreign_classes(), ids=lambda c: c.__name__)
def test_agents_toolproof_did_not_build_keep_the_contract_without_being_agents(
    cls: type,
) -> None:
    assert not issubclass(cls, Agent)
    assert issubclass(cls, BaseAgent)
    assert cls.run_with is not BaseAgent.run_with
    assert "iter_with" not in vars(cls)  # they yield only the result, as BaseAgent does
