"""Replay's two entry points (tools mode, model mode) and ``replay(mode=...)``, their front.

Each generated set of recordings is replayed through the front and through the entry point of
its mode: the grades and findings are the same. Model mode runs any agent that keeps the run
contract, not only ``Agent``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Agent, Trace, tool
from toolproof._agent import RunOptions
from toolproof.errors import UserError
from toolproof.models._base import Model
from toolproof.replay import replay
from toolproof.replay._replay import ReplayOptions, replay_model, replay_tools
from toolproof.testing import ScriptedModel, call


@tool
def lookup(user_id: int) -> str:
    """Look a user up.

    Args:
        user_id: The numeric user id.
    """
    return f"user {user_id}"


def recorded(user_id: int, answer: str) -> Trace:
    agent = Agent(ScriptedModel([call("lookup", user_id=user_id), answer]), [lookup])
    return agent.run_sync(f"who is {user_id}?").trace


def graded(report: Any) -> list[tuple[str, str, list[str]]]:
    return [(s.trace_id, s.grade, sorted(f.check for f in s.findings)) for s in report.samples]


samples = st.lists(
    st.tuples(st.integers(-5, 10**6), st.text(min_size=1, max_size=20)), min_size=1, max_size=5
)


@settings(max_examples=15)
@given(runs=samples)
def test_the_front_and_the_tools_entry_point_grade_alike(runs: list[tuple[int, str]]) -> None:
    traces = [recorded(user, answer) for user, answer in runs]
    front = replay(traces, mode="tools", tools=[lookup])
    direct = asyncio.run(replay_tools(traces, [lookup], ReplayOptions.make()))
    assert front.mode == direct.mode == "tools"
    assert graded(front) == graded(direct)
    assert len(direct.samples) == len(runs)


@settings(max_examples=10)
@given(runs=samples)
def test_the_front_and_the_model_entry_point_grade_alike(runs: list[tuple[int, str]]) -> None:
    traces = [recorded(user, answer) for user, answer in runs]
    agent = Agent(ScriptedModel([]), [lookup])
    front = replay(traces, mode="model", agent=agent, model="recorded")
    direct = asyncio.run(replay_model(traces, agent, "recorded", ReplayOptions.make()))
    assert front.new_model == direct.new_model == "recorded"
    assert graded(front) == graded(direct)
    assert all(grade == "pass" for _, grade, _ in graded(direct))


class Wrapper:
    """An agent toolproof did not build: it keeps only the run contract."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.toolset = Agent(model, [lookup]).toolset
        self.recorder = None
        self.name: str | None = None
        self.ran: list[str] = []

    @contextlib.contextmanager
    def override(self, *, model: Model | None = None, tools: Any = None) -> Iterator[None]:
        before = (self.model, self.toolset)
        self.model = model or self.model
        self.toolset = tools or self.toolset
        try:
            yield
        finally:
            self.model, self.toolset = before

    async def run_with(self, input: str, options: RunOptions) -> Any:
        self.ran.append(input)
        return await Agent(self.model, self.toolset).run_with(input, options)


def test_model_mode_runs_any_runnable() -> None:
    traces = [recorded(3, "user 3"), recorded(4, "user 4")]
    agent = Wrapper(ScriptedModel([]))
    report = replay(traces, mode="model", agent=agent, model="recorded")
    assert agent.ran == ["who is 3?", "who is 4?"]
    assert [s.grade for s in report.samples] == ["pass", "pass"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": 0}, "concurrency must be at least 1"),
        ({"gate": 1.5}, "between 0 and 1"),
    ],
)
def test_bad_options_are_refused_before_anything_runs(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        ReplayOptions.make(**options)
    with pytest.raises(UserError, match=message):
        replay([], mode="tools", tools=[lookup], **options)
