"""The time limits of all the runs on one event loop share one loop timer.

Each run joins and leaves the loop's set of clocks; the timer is armed for the earliest
deadline. These tests try to make a run escape its limit, or be cut before it: runs with
mixed limits at once, a shorter limit arriving after a longer one, a timer that fired with
nobody left to stop, and loops that come and go.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Agent, Budget, Message
from toolproof._run_clock import _loop_timers
from toolproof.testing import FunctionModel, RequestInfo, ScriptedModel


async def _hung(messages: list[Message], info: RequestInfo) -> str:
    await asyncio.sleep(8)  # far past every limit here; a run that escapes its limit fails
    return "escaped"


def _napping(seconds: float) -> FunctionModel:
    async def nap(messages: list[Message], info: RequestInfo) -> str:
        await asyncio.sleep(seconds)
        return "rested"

    return FunctionModel(nap)


async def _timed(agent: Agent, limit: float | None) -> tuple[str, float]:
    started = time.perf_counter()
    result = await agent.run("x", budget=Budget(max_seconds=limit))
    return result.stop_reason, time.perf_counter() - started


def test_many_runs_on_one_loop_arm_one_timer() -> None:
    agent = Agent(ScriptedModel(["ok"] * 50))
    loop = asyncio.new_event_loop()
    armed = 0
    call_at = loop.call_at

    def counted(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal armed
        armed += 1
        return call_at(when, callback, *args, **kwargs)

    loop.call_at = counted  # type: ignore[method-assign]

    async def runs() -> None:
        for _ in range(50):
            assert (await agent.run("x")).output == "ok"

    try:
        loop.run_until_complete(runs())
    finally:
        loop.close()
    assert armed == 1  # the first run's deadline is the earliest one for all 50


@pytest.mark.timeout(180)  # a limit that never fires leaves a hung model waiting: fails here
@settings(max_examples=8, deadline=None)
@given(st.lists(st.sampled_from([0.15, 0.3, 0.6, None]), min_size=2, max_size=5))
def test_runs_with_mixed_limits_on_one_loop_each_stop_at_their_own(
    limits: list[float | None],
) -> None:
    # Hung models with the limits given (None: the model naps 0.4 s and answers): a later,
    # shorter limit must re-arm the shared timer; an earlier expiry must not cut the others.
    async def all_runs() -> list[tuple[str, float]]:
        tasks = []
        for limit in limits:
            model = FunctionModel(_hung) if limit is not None else _napping(0.4)
            tasks.append(asyncio.create_task(_timed(Agent(model), limit)))
            await asyncio.sleep(0.01)  # later runs start later
        return list(await asyncio.gather(*tasks))

    for limit, (reason, took) in zip(limits, asyncio.run(all_runs()), strict=True):
        if limit is None:
            assert reason == "final"
        else:
            assert reason == "budget"
            assert limit * 0.9 <= took, (limit, took)  # not cut by an earlier run's expiry


@pytest.mark.timeout(60)  # the short run's model never answers: only its own limit ends it
def test_a_shorter_limit_after_a_long_one_is_kept() -> None:
    async def both() -> tuple[tuple[str, float], tuple[str, float]]:
        long_run = asyncio.create_task(_timed(Agent(_napping(0.5)), 600.0))
        await asyncio.sleep(0.01)
        short = await _timed(Agent(FunctionModel(_hung)), 0.1)
        return await long_run, short

    (long_reason, _), (short_reason, took) = asyncio.run(both())
    assert long_reason == "final"
    assert short_reason == "budget" and took >= 0.09


@pytest.mark.timeout(60)  # the model never answers: only the limit ends the run
def test_a_limit_still_holds_after_the_timer_fired_with_nobody_due() -> None:
    async def runs() -> tuple[str, float]:
        quick = Agent(ScriptedModel(["ok"]), budget=Budget(max_seconds=0.05))
        assert (await quick.run("x")).output == "ok"  # arms the timer for 0.05 s, then leaves
        await asyncio.sleep(0.15)  # the timer fires with no run left
        return await _timed(Agent(FunctionModel(_hung)), 0.1)

    reason, took = asyncio.run(runs())
    assert reason == "budget" and took >= 0.09


def test_limits_hold_on_new_loops_and_old_loops_are_not_kept() -> None:
    agent = Agent(FunctionModel(_hung))
    loops = []
    for _ in range(3):
        loop = asyncio.new_event_loop()
        try:
            reason, _ = loop.run_until_complete(_timed(agent, 0.1))
        finally:
            loop.close()
        assert reason == "budget"
        loops.append(weakref.ref(loop))
        del loop
    gc.collect()
    assert [ref() for ref in loops[:-1]] == [None, None]  # the timers do not keep a loop
    assert len(_loop_timers) <= 1


def test_run_sync_in_threads_each_keep_their_limit() -> None:
    outcomes: list[str] = []

    def worker(limit: float | None) -> None:
        model = FunctionModel(_hung) if limit is not None else _napping(0.3)
        outcomes.append(Agent(model).run_sync("x", budget=Budget(max_seconds=limit)).stop_reason)

    threads = [threading.Thread(target=worker, args=(limit,)) for limit in (0.1, None, 0.2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == ["budget", "budget", "final"]
