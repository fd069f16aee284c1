"""``run_sync`` does what ``asyncio.run`` does, on a loop it keeps for the thread.

These tests try to make the two differ: generated programs of callbacks, timers, tasks,
stops, async generators and errors run through ``run_in_thread_loop`` and through
``asyncio.run`` must leave the same record; interrupts, timeouts, debug mode, thousands of
calls with wall-clock limits, a loop closed by someone else, and a user's loop policy.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Agent, Budget, Message, UserError, tool
from toolproof._thread_loop import _holder, run_in_thread_loop
from toolproof.events import RunFinished
from toolproof.models import Model, ModelResponse
from toolproof.testing import FunctionModel, RequestInfo, ScriptedModel, call

LIMIT = 20.0  # seconds a thread of these tests may take on a busy machine
needs_timeout = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="asyncio.timeout is Python 3.11+"
)


def in_fresh_thread(work: Callable[[], Any], *, limit: float = LIMIT) -> Any:
    """``work()`` in a new thread (so on a new loop)."""
    outcome: list[Any] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # handed to the test's thread
            failure.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=limit)
    assert not thread.is_alive(), "the thread did not finish: a call hung"
    if failure:
        raise failure[0]
    return outcome[0]


def running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


# -- the same record as asyncio.run -----------------------------------------------------------

OPERATIONS = (
    "soon",  # a callback queued with call_soon
    "later0",  # a timer due at once (it runs in the next pass)
    "later60",  # a timer far away, kept
    "cancel",  # cancel the last timer kept
    "task",  # a task that logs, yields once, logs again
    "sleeper",  # a task that sleeps far past the call (a leftover, cancelled after it)
    "yield",  # the run itself waits one pass
    "agen",  # an async generator started and left open
    "bad callback",  # a callback that raises (the loop's exception handler sees it)
    "threadsafe",  # call_soon_threadsafe from the loop's own thread
    "state",  # what the run sees of its loop
)
ENDINGS = ("return", "raise", "cancel itself", "keyboard interrupt")


Runner = Callable[[Coroutine[Any, Any, Any]], Any]


def program(operations: list[str], ending: str, runner: Runner) -> list[str]:
    """Run ``operations`` then ``ending`` in one call, then two plain calls; the record."""
    log: list[str] = []
    kept: list[asyncio.TimerHandle] = []
    started: list[asyncio.Task[None]] = []

    def note(text: str) -> Callable[[], None]:
        return lambda: log.append(text)

    def bad() -> None:
        raise ValueError("a callback failed")

    async def step_task(n: int) -> None:
        log.append(f"task {n} starts")
        await asyncio.sleep(0)
        log.append(f"task {n} ends")

    async def sleeper(n: int) -> None:
        try:
            await asyncio.sleep(60)
        finally:
            log.append(f"sleeper {n} cleaned")

    async def stream(n: int) -> Any:
        try:
            yield n
            await asyncio.sleep(60)
        finally:
            log.append(f"generator {n} closed")

    def heard(loop: Any, context: dict[str, Any]) -> None:
        if "task" not in context or "destroyed" not in context["message"]:  # not when gc runs
            log.append(f"handler: {context['message']}")

    async def run() -> str:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(heard)
        for n, operation in enumerate(operations):
            if operation == "soon":
                loop.call_soon(note(f"soon {n}"))
            elif operation == "later0":
                kept.append(loop.call_later(0, note(f"later0 {n}")))
            elif operation == "later60":
                kept.append(loop.call_later(60, note(f"later60 {n}")))
            elif operation == "cancel" and kept:
                kept.pop().cancel()
            elif operation == "task":
                started.append(loop.create_task(step_task(n)))
            elif operation == "sleeper":
                started.append(loop.create_task(sleeper(n)))
            elif operation == "stop":
                loop.stop()
            elif operation == "yield":
                await asyncio.sleep(0)
                log.append(f"resumed {n}")
            elif operation == "agen":
                await stream(n).__anext__()
            elif operation == "bad callback":
                loop.call_soon(bad)
            elif operation == "threadsafe":
                loop.call_soon_threadsafe(note(f"threadsafe {n}"))
            elif operation == "state":
                task = asyncio.current_task()
                log.append(
                    f"state running={loop.is_running()} task={task is not None} "
                    f"hooks={sys.get_asyncgen_hooks().firstiter is not None}"
                )
        if ending == "raise":
            raise LookupError("the run failed")
        if ending == "cancel itself":
            current = asyncio.current_task()
            assert current is not None
            current.cancel()
            await asyncio.sleep(0)
        if ending == "keyboard interrupt":
            raise KeyboardInterrupt
        return "value"

    async def plain(n: int) -> str:
        log.append(f"plain call {n}")
        return "plain"

    try:
        log.append(f"result {runner(run())}")
    except BaseException as exc:
        log.append(f"raised {type(exc).__name__}: {exc}")
    log.append(f"after: running loop {running_loop() is not None}")
    for n in range(2):
        log.append(f"result {runner(plain(n))}")
    return in_order(log)


def in_order(log: list[str]) -> list[str]:
    """``log`` with the leftover tasks' lines sorted (they are cancelled in set order)."""
    ordered: list[str] = []
    for line in log:
        if line.startswith("sleeper") and ordered and ordered[-1].startswith("sleeper"):
            group = [line]
            while ordered and ordered[-1].startswith("sleeper"):
                group.append(ordered.pop())
            ordered.extend(sorted(group))
        else:
            ordered.append(line)
    return ordered


@settings(max_examples=100, deadline=None)
@given(
    operations=st.lists(st.sampled_from(OPERATIONS), max_size=8),
    ending=st.sampled_from(ENDINGS),
)
def test_a_call_leaves_the_same_record_as_asyncio_run(operations: list[str], ending: str) -> None:
    ours = in_fresh_thread(lambda: program(operations, ending, run_in_thread_loop))
    theirs = in_fresh_thread(lambda: program(operations, ending, asyncio.run))
    assert ours == theirs


# -- what a run sees -------------------------------------------------------------------------


@needs_timeout
def test_the_run_has_its_task_its_running_loop_and_timeouts_work() -> None:
    seen: dict[str, Any] = {}

    async def inside() -> str:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        seen["running"] = loop.is_running()
        seen["task"] = task
        seen["all tasks"] = task in asyncio.all_tasks()
        async with asyncio.timeout(5):
            await asyncio.sleep(0)
            seen["within timeout"] = True
        try:
            async with asyncio.timeout(0.02):
                await asyncio.sleep(5)
        except TimeoutError:
            seen["timed out"] = True
        assert task is not None
        return task.get_name()

    name = run_in_thread_loop(inside())
    assert seen["running"] and seen["all tasks"] and seen["within timeout"] and seen["timed out"]
    assert isinstance(seen["task"], asyncio.Task) and seen["task"].done()
    assert name.endswith(".inside")  # named after its coroutine
    # Between calls, nothing runs: no running loop, and the thread's loop is not running.
    with pytest.raises(RuntimeError, match="no running event loop"):
        asyncio.get_running_loop()
    loop = _holder().loop
    assert loop is not None and not loop.is_running()


@needs_timeout
def test_a_timeout_inside_a_run_that_never_waits_is_harmless() -> None:
    async def quick() -> str:
        async with asyncio.timeout(0.001):  # noqa: ASYNC100 - a run that never waits
            return "in time"

    for _ in range(3):
        assert run_in_thread_loop(quick()) == "in time"
        time.sleep(0.005)  # the timeout's timer would now be due: it was cancelled


def test_async_generators_are_finalized_and_the_callers_hooks_come_back() -> None:
    closed: list[int] = []
    firsts: list[Any] = []

    def first(generator: Any) -> None:
        firsts.append(generator)

    def finalizer(generator: Any) -> None:  # pragma: no cover - nothing is finalized outside
        pass

    async def stream(n: int) -> Any:
        try:
            yield n
            yield n + 1
        finally:
            closed.append(n)

    open_ones: list[Any] = []  # held, so only the call's own finalizing can close them

    async def leaves_one_open(n: int) -> int:
        hooks = sys.get_asyncgen_hooks()
        assert hooks.firstiter is not first  # the loop's hooks while the run runs
        open_ones.append(stream(n))
        return int(await open_ones[-1].__anext__())

    previous = sys.get_asyncgen_hooks()
    sys.set_asyncgen_hooks(first, finalizer)
    try:
        for n in (1, 2, 3):
            assert run_in_thread_loop(leaves_one_open(n)) == n
            assert closed == list(range(1, n + 1))  # closed as the call returned
            assert sys.get_asyncgen_hooks() == (first, finalizer)
    finally:
        sys.set_asyncgen_hooks(*previous)
    assert firsts == []  # the runs' generators were the loop's, not the caller's


def test_a_call_after_one_interrupted_before_its_loop_ran_still_closes_its_generators() -> None:
    """An interrupt between queuing a call's set-up and running the loop leaves the set-up
    queued: the next call runs it as well as its own, and its generators still close."""
    from toolproof._thread_loop import _track_generators

    def twice() -> list[int]:
        closed: list[int] = []

        async def stream() -> Any:
            try:
                yield 1
                yield 2
            finally:
                closed.append(1)

        kept: list[Any] = []

        async def uses() -> int:
            kept.append(stream())
            return int(await kept[-1].__anext__())

        holder = _holder()
        assert holder.loop is not None
        holder.loop.call_soon(_track_generators, holder)  # as the interrupted call left it
        assert run_in_thread_loop(uses()) == 1
        return closed

    assert in_fresh_thread(twice) == [1]


def test_exceptions_come_out_with_their_own_type_and_the_loop_stays_usable() -> None:
    class Custom(Exception):
        pass

    class Fatal(BaseException):
        pass

    async def raises(exc: BaseException) -> None:
        raise exc

    hooks = sys.get_asyncgen_hooks()
    for exc in (ValueError("v"), Custom("c"), Fatal("f"), SystemExit(3), asyncio.CancelledError()):
        with pytest.raises(type(exc)) as caught:
            run_in_thread_loop(raises(exc))
        assert caught.type is type(exc)
        assert caught.value is exc
        assert running_loop() is None
        assert sys.get_asyncgen_hooks() == hooks

        async def fine() -> str:
            return "fine"

        assert run_in_thread_loop(fine()) == "fine"


def test_run_sync_inside_a_run_is_the_clear_error() -> None:
    def nested() -> str:
        inner = Agent(ScriptedModel(["never"]))

        async def outer() -> str:
            try:
                inner.run_sync("x")
            except UserError as exc:
                return str(exc)
            return "not refused"

        return str(run_in_thread_loop(outer()))

    message = in_fresh_thread(nested)
    assert "cannot be called from a running event loop" in message


# -- interrupts ---------------------------------------------------------------------------------


def interrupted_agent(finished: list[Any], *, by_signal: bool, slept: list[bool]) -> Agent:
    """Calls a tool, then is interrupted in its second model call, before anything waits."""

    @tool
    def noop(x: int) -> int:
        """Return the input.

        Args:
            x: Input.
        """
        return x

    async def answer(messages: list[Message], info: RequestInfo) -> Any:
        if messages[-1].role == "user":
            return call("noop", x=1)
        if by_signal:
            os.kill(os.getpid(), signal.SIGINT)  # Python raises KeyboardInterrupt here
            time.sleep(5)  # noqa: ASYNC251  # pragma: no cover - interrupted
            slept.append(True)  # pragma: no cover - interrupted
        raise KeyboardInterrupt

    return Agent(FunctionModel(answer), [noop], on_event=finished.append)


@pytest.mark.parametrize("by_signal", [False, True])
def test_an_interrupt_in_the_first_pass_still_ends_the_run_with_a_trace(by_signal: bool) -> None:
    if by_signal and (
        not hasattr(signal, "SIGINT")
        or os.name == "nt"
        or threading.current_thread() is not threading.main_thread()
    ):
        pytest.skip("a signal interrupts the main thread only")
    finished: list[Any] = []
    slept: list[bool] = []
    agent = interrupted_agent(finished, by_signal=by_signal, slept=slept)
    with pytest.raises(KeyboardInterrupt):
        agent.run_sync("go")
    assert slept == []  # interrupted, not slept through
    ends = [event for event in finished if isinstance(event, RunFinished)]
    assert len(ends) == 1
    assert [c.name for c in ends[0].trace.tool_calls] == ["noop"]
    # The loop is left as asyncio leaves it: not running, and usable.
    assert running_loop() is None
    assert Agent(ScriptedModel(["fine"])).run_sync("x").output == "fine"


def test_an_interrupt_the_run_raised_is_not_reported_again_when_its_task_goes() -> None:
    """The caller gets the interrupt; its task does not log it once more as never retrieved."""
    heard: list[str] = []
    loop = _holder().loop
    assert loop is not None
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: heard.append(context["message"]))

    async def interrupted() -> None:
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            run_in_thread_loop(interrupted())
        gc.collect()
    finally:
        loop.set_exception_handler(previous)
    assert heard == []


# -- many calls ----------------------------------------------------------------------------------


def test_thousands_of_calls_with_time_limits_hold_no_growing_state() -> None:
    """Each call's limit ends before the last one's: each call re-arms the loop's shared
    timer and cancels the one before, and leaves nothing else behind. The memory the calls
    hold, measured after 1,000 calls and after 5,000 more, does not grow with them (5,000
    cancelled timers kept would hold about a megabyte)."""
    calls = 6_000

    class Answers(Model):
        """Answers "ok" and keeps nothing (a ScriptedModel keeps every request)."""

        name = "answers"

        async def request(self, messages: Any, tools: Any, settings: Any) -> ModelResponse:
            return ModelResponse(Message.assistant("ok"))

    def many() -> tuple[int, int, int]:
        agent = Agent(Answers())
        limits = [Budget(max_seconds=600 - 0.01 * n) for n in range(calls)]
        threads = threading.active_count()
        held = []
        tracemalloc.start()
        try:
            for n in range(calls):
                assert agent.run_sync("x", budget=limits[n]).output == "ok"
                if n in (999, calls - 1):
                    gc.collect()
                    held.append(tracemalloc.get_traced_memory()[0])
        finally:
            tracemalloc.stop()
        loop = _holder().loop
        assert loop is not None
        leftovers = len(asyncio.all_tasks(loop))
        return held[1] - held[0], threading.active_count() - threads, leftovers

    growth, threads, leftovers = in_fresh_thread(many, limit=300)
    assert growth < 100_000, f"{growth:,} bytes more after 5,000 more calls"
    assert threads == 0 and leftovers == 0


# -- asyncio's own features ----------------------------------------------------------------------


def test_debug_mode_works_with_its_slow_callback_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def in_debug() -> str:
        loop = _holder().loop
        assert loop is not None
        loop.set_debug(True)
        loop.slow_callback_duration = 0.02

        async def slow() -> str:
            time.sleep(0.1)  # noqa: ASYNC251 - blocks the loop: asyncio warns in debug mode
            return "slow"

        try:
            with caplog.at_level(logging.WARNING, logger="asyncio"):
                return str(run_in_thread_loop(slow()))
        finally:
            loop.set_debug(False)

    assert in_fresh_thread(in_debug) == "slow"
    assert any("took" in record.getMessage() for record in caplog.records)


def test_a_stop_inside_a_run_ends_the_call_as_asyncio_run_ends_it() -> None:
    """``loop.stop()`` while the run still waits: the error asyncio.run raises, nothing left."""
    for operations in (["stop", "yield"], ["sleeper", "stop", "agen", "yield", "task"]):
        ours = in_fresh_thread(lambda o=operations: program(o, "return", run_in_thread_loop))
        theirs = in_fresh_thread(lambda o=operations: program(o, "return", asyncio.run))
        assert ours == theirs
        assert "raised RuntimeError: Event loop stopped before Future completed." in ours


def test_a_loop_closed_by_someone_else_is_replaced_at_the_next_call() -> None:
    def reopened() -> tuple[bool, int]:
        async def seven() -> int:
            return 7

        run_in_thread_loop(seven())
        first = _holder().loop
        assert first is not None
        first.close()  # as someone closing the thread's loop would
        value = run_in_thread_loop(seven())
        return _holder().loop is not first, value

    assert in_fresh_thread(reopened) == (True, 7)


def test_a_runs_task_is_named_after_what_it_runs() -> None:
    @tool
    def task_name() -> str:
        """The name of the task the tool runs in."""
        task = asyncio.current_task()
        return task.get_name() if task is not None else "no task"

    def named() -> str:
        model = ScriptedModel([call("task_name"), "done"])
        result = Agent(model, [task_name]).run_sync("x")
        return str(result.trace.tool_results[0].content)

    assert "Agent.run" in in_fresh_thread(named)
