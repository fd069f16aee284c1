"""``run_sync`` on a long-lived loop per thread: threads at once, fork, and what asyncio.run kept.

Each thread keeps its own event loop for its synchronous calls; these tests try to make two
threads share one, a forked child reuse its parent's, or a call leave work running behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
import warnings
from typing import Any

import pytest

from toolproof import Agent, Budget, Message, UserError, tool
from toolproof.errors import ModelFailed
from toolproof.testing import FunctionModel, RequestInfo, call


@tool
async def through_a_thread(x: int) -> int:
    """Compute in a worker thread (its result wakes the loop through its self-pipe).

    Args:
        x: Input.
    """
    return await asyncio.to_thread(lambda: x * 2)


def echo_agent(**options: Any) -> Agent:
    """Asks for one tool call on the number in the question, then answers with the result."""

    async def answer(messages: list[Message], info: RequestInfo) -> Any:
        await asyncio.sleep(0)  # suspend, like a real model
        if messages[-1].role == "user":
            question = messages[-1].content or ""
            return call("through_a_thread", x=int(question.split()[-1]))
        return f"result {messages[-1].content}"

    options.setdefault("budget", Budget(max_seconds=20))
    return Agent(FunctionModel(answer), [through_a_thread], **options)


@pytest.mark.timeout(180)
def test_many_threads_call_run_sync_at_once_each_on_its_own_loop() -> None:
    agent = echo_agent()
    loops: dict[int, set[int]] = {}
    failures: list[BaseException] = []
    barrier = threading.Barrier(6)

    def worker(number: int) -> None:
        try:
            barrier.wait(timeout=20)
            for i in range(30):
                value = number * 1000 + i
                result = agent.run_sync(f"double {value}")
                assert result.output == f"result {value * 2}", result.output
                loops.setdefault(number, set()).add(id(_thread_loop()))
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()  # (a hang is caught by the test's timeout)
    assert failures == []
    assert all(len(ids) == 1 for ids in loops.values())  # one loop per thread, kept
    assert len({next(iter(ids)) for ids in loops.values()}) == 6  # never shared


def _thread_loop() -> asyncio.AbstractEventLoop:
    from toolproof._thread_loop import _local

    loop = _local.holder.loop
    assert loop is not None
    return loop


def test_the_loop_is_kept_between_calls_and_closed_with_its_thread() -> None:
    seen: list[asyncio.AbstractEventLoop] = []

    def worker() -> None:
        agent = echo_agent()
        agent.run_sync("double 1")
        seen.append(_thread_loop())
        agent.run_sync("double 2")
        seen.append(_thread_loop())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=30)
    assert len(seen) == 2 and seen[0] is seen[1]
    del thread
    for _ in range(50):  # the thread's state is released shortly after it ends
        if seen[0].is_closed():
            break
        time.sleep(0.02)
    assert seen[0].is_closed()


@pytest.mark.timeout(120)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_run_sync_works_in_a_forked_child_and_the_parent_keeps_working() -> None:
    agent = echo_agent()
    assert agent.run_sync("double 3").output == "result 6"
    parent_loop = _thread_loop()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # the child: must not reuse, close or unregister the parent's loop
        code = 1
        try:
            result = agent.run_sync("double 4")
            if result.output == "result 8" and _thread_loop() is not parent_loop:
                code = 0
        finally:
            os._exit(code)
    try:  # a hung child fails by the test's timeout, and is killed
        _, status = os.waitpid(pid, 0)
    finally:
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG) == (0, 0):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # The parent's loop still wakes up for worker threads (its self-pipe is still registered).
    result = agent.run_sync("double 5")
    assert result.stop_reason == "final" and result.output == "result 10"
    assert _thread_loop() is parent_loop


def test_nothing_of_a_call_keeps_running_after_it_returns() -> None:
    leftovers: list[asyncio.Task[Any]] = []
    cleaned: list[str] = []

    @tool
    async def fire_and_forget(x: int) -> int:
        """Start background work and return at once.

        Args:
            x: Input.
        """

        async def background() -> None:
            try:
                await asyncio.sleep(60)
            finally:
                cleaned.append("task")

        async def stream() -> Any:
            try:
                yield 1
                await asyncio.sleep(60)
            finally:
                cleaned.append("generator")

        leftovers.append(asyncio.get_running_loop().create_task(background()))
        await asyncio.sleep(0)  # let it start
        started = stream()
        await started.__anext__()  # an async generator left open
        leftovers.append(started)  # type: ignore[arg-type]
        return x

    async def answer(messages: list[Message], info: RequestInfo) -> Any:
        return call("fire_and_forget", x=1) if info.step == 1 else "done"

    agent = Agent(FunctionModel(answer), [fire_and_forget])
    assert agent.run_sync("go").output == "done"
    assert sorted(cleaned) == ["generator", "task"]
    assert leftovers[0].cancelled()


def test_the_callers_context_is_seen_by_the_run() -> None:
    import contextvars

    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")

    async def answer(messages: list[Message], info: RequestInfo) -> str:
        return marker.get()

    agent = Agent(FunctionModel(answer))
    for value in ("first", "second"):
        token = marker.set(value)
        try:
            assert agent.run_sync("x").output == value
        finally:
            marker.reset(token)


async def test_run_sync_inside_a_running_loop_is_still_a_clear_error() -> None:
    with pytest.raises(UserError, match="cannot be called from a running event loop"):
        echo_agent().run_sync("double 1")


def test_an_error_in_one_call_leaves_the_loop_usable() -> None:
    calls = {"n": 0}

    async def flaky(messages: list[Message], info: RequestInfo) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("reset")
        return "fine"

    agent = Agent(FunctionModel(flaky))
    with pytest.raises(ModelFailed, match="reset"):
        agent.run_sync("x")
    assert agent.run_sync("x").output == "fine"


@pytest.mark.timeout(60)
@pytest.mark.skipif(not hasattr(os, "kill") or os.name == "nt", reason="POSIX signals")
def test_ctrl_c_while_waiting_cancels_the_run_keeps_its_trace_and_the_loop() -> None:

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    finished: list[Any] = []

    @tool
    async def wait_long(x: int) -> int:
        """Wait.

        Args:
            x: Input.
        """
        await asyncio.sleep(30)
        return x

    async def answer(messages: list[Message], info: RequestInfo) -> Any:
        return call("wait_long", x=1) if messages[-1].role == "user" else "done"

    agent = Agent(
        FunctionModel(answer), [wait_long], on_event=finished.append, budget=Budget(max_seconds=20)
    )
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:  # the run's own limit is 20 s: only the interrupt ends it as cancelled
        with pytest.raises(KeyboardInterrupt):
            agent.run_sync("go")
    finally:
        timer.cancel()
    trace = finished[-1].trace
    assert trace.stop_reason == "cancelled" and [c.name for c in trace.tool_calls] == ["wait_long"]
    # The thread's loop is still usable afterwards.
    assert echo_agent().run_sync("double 21").output == "result 42"
