"""Work budgets of the agent loop, counted rather than timed (no clock, so no flaky margins).

A scripted run with ``k`` steps of ``p`` parallel calls is instrumented with counters; each
test asserts a fixed budget per run, per step or per call, and that the work grows linearly
with the number of steps (a regression that rescans or copies the whole conversation at
every step would grow quadratically and fail here long before anyone notices it in a
benchmark).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from toolproof import Agent, Message, Trace, tool
from toolproof._run import Run
from toolproof.events import (
    Event,
    ModelResponded,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolStarted,
)
from toolproof.testing import ScriptedModel, call


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


def script(steps: int, parallel: int) -> list[Any]:
    items: list[Any] = []
    for i in range(steps):
        calls = [call("multiply_numbers", a=i, b=j) for j in range(parallel)]
        items.append(calls[0] if parallel == 1 else calls)
    return [*items, "done"]


def make_agent(steps: int, parallel: int, **options: Any) -> Agent:
    return Agent(
        ScriptedModel(script(steps, parallel)),
        [multiply_numbers],
        system_prompt="You multiply.",
        max_steps=steps + 1,
        **options,
    )


class CountingList(list):  # type: ignore[type-arg]
    """A list that counts full scans (iteration, copies, slices) of itself."""

    scans = 0

    def __iter__(self) -> Iterator[Any]:
        CountingList.scans += 1
        return super().__iter__()

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            CountingList.scans += 1
        return super().__getitem__(index)


@pytest.fixture
def counters(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the agent's work: validations, token estimates, scans, events, timers."""
    import toolproof._run as run_module

    counts: Counter[str] = Counter()
    tool_validate = type(multiply_numbers).validate

    def validate(self: Any, arguments: dict[str, Any]) -> dict[str, Any]:
        counts["tool validations"] += 1
        return tool_validate(self, arguments)

    monkeypatch.setattr(type(multiply_numbers), "validate", validate)
    schema = multiply_numbers._args_model
    validator = schema.__pydantic_validator__

    class CountingValidator:
        def validate_python(self, value: Any, *args: Any, **kwargs: Any) -> Any:
            counts["schema validations"] += 1
            return validator.validate_python(value, *args, **kwargs)

    monkeypatch.setattr(schema, "__pydantic_validator__", CountingValidator())
    estimate = run_module.estimate_message_tokens

    def estimate_message_tokens(message: Message) -> int:
        counts["token estimates"] += 1
        return estimate(message)

    monkeypatch.setattr(run_module, "estimate_message_tokens", estimate_message_tokens)
    args_key = run_module._args_key

    def counted_args_key(c: Any) -> str:
        counts["argument encodings"] += 1
        return args_key(c)

    monkeypatch.setattr(run_module, "_args_key", counted_args_key)
    init = Run.__init__

    def run_init(self: Run, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.conversation = CountingList(self.conversation)

    monkeypatch.setattr(Run, "__init__", run_init)
    to_dict = Trace.to_dict

    def counted_to_dict(self: Trace) -> dict[str, Any]:
        counts["trace serializations"] += 1
        return to_dict(self)

    monkeypatch.setattr(Trace, "to_dict", counted_to_dict)
    CountingList.scans = 0
    return counts


def run_counted(agent: Agent, counts: Counter[str]) -> Any:
    """Run in a fresh loop whose timers are counted; return the result."""
    loop = asyncio.new_event_loop()
    call_at = loop.call_at

    def counted_call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        counts["timers"] += 1
        return call_at(when, callback, *args, **kwargs)

    loop.call_at = counted_call_at  # type: ignore[method-assign]
    try:
        result = loop.run_until_complete(agent.run("multiply"))
    finally:
        loop.close()
    counts["conversation scans"] = CountingList.scans
    return result


SHAPES = [(1, 1), (4, 1), (4, 3), (16, 3), (32, 2)]


@pytest.mark.parametrize(("steps", "parallel"), SHAPES)
def test_fixed_budgets_per_call_per_message_and_per_run(
    counters: Counter[str], steps: int, parallel: int
) -> None:
    events: list[Event] = []
    result = run_counted(make_agent(steps, parallel, on_event=events.append), counters)
    assert result.stop_reason == "final"
    tool_calls = steps * parallel
    messages = 1 + steps + tool_calls + 1  # the input, each answer, each result, the final answer
    assert len(result.trace.tool_results) == tool_calls

    # Arguments are validated exactly once per call, by one schema validation.
    assert counters["tool validations"] == tool_calls
    assert counters["schema validations"] == tool_calls
    # Each message's tokens are estimated once when it joins (plus the system prompt, whose
    # estimate is kept between runs), never re-estimated at every step.
    assert counters["token estimates"] <= messages + 1
    # One full scan of the conversation per model request (the request's copy), one for the
    # history handed back: nothing per message, nothing quadratic.
    assert counters["conversation scans"] <= (steps + 1) + 1
    # Repeated-call detection encodes arguments only for consecutive calls to the same tool.
    assert counters["argument encodings"] <= tool_calls + 1
    # At most one wall-clock timer (the loop's, shared by its runs: test_shared_timer.py),
    # however many steps and calls the run makes.
    assert counters["timers"] <= 1
    # Nothing is serialized on the run's path without a recorder.
    assert counters["trace serializations"] == 0
    # Events: start and end, one per model response, two per tool call.
    kinds = Counter(type(e) for e in events)
    assert kinds == {
        RunStarted: 1,
        ModelResponded: steps + 1,
        ToolStarted: tool_calls,
        ToolFinished: tool_calls,
        RunFinished: 1,
    }
    assert len(result.trace.steps) == steps + 1


def test_work_grows_linearly_with_the_number_of_steps(counters: Counter[str]) -> None:
    totals = {}
    for steps in (8, 16, 32):
        counters.clear()
        CountingList.scans = 0
        run_counted(make_agent(steps, 2), counters)
        totals[steps] = dict(counters)
    for name in ("token estimates", "conversation scans", "schema validations"):
        growth_first = totals[16][name] - totals[8][name]
        growth_second = totals[32][name] - totals[16][name]
        assert growth_second == 2 * growth_first, (name, totals)  # a straight line in k


def test_no_events_are_built_when_nobody_listens(
    counters: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolproof._run as run_module

    built: Counter[str] = Counter()
    for name in ("RunStarted", "ModelResponded", "ToolStarted", "ToolFinished", "RunFinished"):
        original = getattr(run_module, name)

        def counting(*args: Any, _original: Any = original, _name: str = name) -> Any:
            built[_name] += 1
            return _original(*args)

        monkeypatch.setattr(run_module, name, counting)
    run_counted(make_agent(4, 3), counters)
    assert built == {}
    run_counted(make_agent(4, 3, on_event=lambda event: None), counters)
    assert sum(built.values()) == 2 + 5 + 2 * 12


@pytest.mark.parametrize(("steps", "parallel"), [(1, 1), (8, 3)])
def test_system_calls_and_records_per_run(
    monkeypatch: pytest.MonkeyPatch, steps: int, parallel: int
) -> None:
    """One running-loop lookup per run (a getpid system call on Python 3.11), no task
    lookup without the loop, random bytes read once for many runs, two usage records."""
    import os

    import toolproof._run as run_module
    import toolproof._run_clock as clock_module
    import toolproof._trace_build as build_module

    counts: Counter[str] = Counter()
    get_running_loop = asyncio.get_running_loop
    current_task = asyncio.current_task
    urandom = os.urandom
    usage = run_module.Usage

    def counted_loop() -> Any:
        counts["running loop lookups"] += 1
        return get_running_loop()

    def counted_task(loop: Any = None) -> Any:
        counts["task lookups without the loop" if loop is None else "task lookups"] += 1
        return current_task(loop)

    def counted_urandom(size: int) -> bytes:
        counts["random reads"] += 1
        return urandom(size)

    sum_usage = build_module.sum_usage

    def counted_usage(*args: Any) -> Any:
        counts["usage records"] += 1  # the trace's, before the run ends
        return usage(*args)

    def counted_sum(usages: Any) -> Any:
        counts["usage records"] += 1  # the run's sum, when it ends
        return sum_usage(usages)

    monkeypatch.setattr(asyncio, "get_running_loop", counted_loop)
    monkeypatch.setattr(asyncio, "current_task", counted_task)
    # The run binds both once (an import statement per call costs more): count them there.
    monkeypatch.setattr(clock_module, "_asyncio", [counted_loop, counted_task])
    monkeypatch.setattr(os, "urandom", counted_urandom)
    monkeypatch.setattr(run_module, "Usage", counted_usage)
    monkeypatch.setattr(build_module, "sum_usage", counted_sum)  # (the trace builder sums)
    runs = 20
    agents = [make_agent(steps, parallel) for _ in range(runs)]

    async def all_runs() -> None:
        for agent in agents:
            assert (await agent.run("multiply")).stop_reason == "final"

    asyncio.run(all_runs())
    assert counts["running loop lookups"] == runs
    assert counts["task lookups without the loop"] == 0
    assert counts["task lookups"] == runs
    assert counts["random reads"] <= 2  # one read serves 64 runs
    assert counts["usage records"] <= 2 * runs


@pytest.mark.parametrize(("steps", "parallel"), [(1, 1), (4, 3)])
def test_each_message_is_estimated_once_by_the_run_and_the_scripted_model_together(
    monkeypatch: pytest.MonkeyPatch, steps: int, parallel: int
) -> None:
    """The model estimates its answer, the run then records it (and the run a tool result,
    the model then reads it): the second of each pair is the estimator's kept answer."""
    import toolproof._run as run_module
    import toolproof._tokens as tokens_module
    import toolproof.models.fake as fake_module

    counts: Counter[str] = Counter()
    estimate = tokens_module.estimate_message_tokens

    def counted(message: Message) -> int:
        counts["estimates"] += 1
        if tokens_module._last[0] is not message:
            counts["computed"] += 1
        return estimate(message)

    monkeypatch.setattr(run_module, "estimate_message_tokens", counted)
    monkeypatch.setattr(fake_module, "estimate_message_tokens", counted)
    agent = make_agent(steps, parallel)
    agent.model = ScriptedModel(script(steps, parallel) * 2)
    asyncio.run(agent.run("multiply"))  # the system prompt's estimate is kept from here on
    counts.clear()
    result = asyncio.run(agent.run("multiply"))
    messages = 1 + steps + steps * parallel + 1  # the input, each answer, each result, the final
    assert len(result.trace.steps) == steps + 1
    assert counts["estimates"] == 2 * messages  # each message by the run and by the model
    # ... computed once; only the results of parallel calls twice (the estimator keeps its
    # last answer only, and the model reads the results after the run recorded them all).
    twice = steps * parallel if parallel > 1 else 0
    assert counts["computed"] == messages + twice


def _calls_made(function: Any, *arguments: Any) -> Counter[str]:
    """The calls (Python functions, and C functions by name) made by ``function(...)``.

    The garbage collector is off meanwhile: a cycle collected in the middle (a finished task)
    would add asyncio's weak-set bookkeeping at a moment that depends on the machine.
    """
    import gc
    import sys

    made: Counter[str] = Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            made[f"py {frame.f_code.co_name}"] += 1
        elif event == "c_call":
            made[f"c {getattr(arg, '__name__', arg)}"] += 1

    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    sys.setprofile(profile)
    try:
        function(*arguments)
    except StopIteration:  # a coroutine stepped to its end
        pass
    finally:
        sys.setprofile(None)
        if collecting:
            gc.enable()
    made.pop("c setprofile", None)
    # The trace's timestamps reuse the text of the current second: crossing into the next
    # second while measuring refills it once (a moment of the clock, not work of the run).
    for refill in ("c gmtime", "c strftime"):
        made.pop(refill, None)
    return made


def test_run_sync_adds_a_fixed_number_of_calls_to_a_run() -> None:
    """``run_sync`` costs a task and asyncio's ``run_until_complete`` over ``await agent.run``.

    The same number of calls whatever the run does (one step, or four with three parallel
    calls each): nothing of it grows with the run. (Python 3.11: 122 calls, 67 of them
    Python functions, most of them asyncio's own.)
    """
    extras = []
    for steps, parallel in ((1, 1), (4, 3)):
        agent = make_agent(steps, parallel)
        agent.model = ScriptedModel(script(steps, parallel) * 10)
        for _ in range(2):
            agent.run_sync("multiply")  # warm up
        sync = _calls_made(agent.run_sync, "multiply")

        async def awaited(agent: Agent = agent) -> Counter[str]:
            await agent.run("multiply")  # warm up
            run = agent.run("multiply")  # stepped in this task: the same run, awaited
            return _calls_made(run.send, None)

        extras.append(sync - asyncio.run(awaited()))
    assert extras[0] == extras[1], extras
    assert sum(extras[0].values()) <= 150, extras[0]
