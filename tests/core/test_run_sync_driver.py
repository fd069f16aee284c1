"""The first loop pass of a ``run_sync`` call runs through toolproof's one-pass driver.

``_one_pass`` does what ``loop.stop(); loop.run_forever()`` does, without run_forever's
set-up; a run that waits goes on in ``run_forever`` as before. These tests try to make the
two differ: the same programs of callbacks, timers, tasks, stops, async generators and
errors run on the driver and on asyncio's own path (forced) must leave the same record;
interrupts, timeouts, debug mode, thousands of calls with wall-clock limits, and loops that
are not ours (a user's policy, an asyncio without the parts the driver uses).
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
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Agent, Budget, Message, UserError, tool
from toolproof import _thread_loop as thread_loop
from toolproof._thread_loop import _holder, _local, run_in_thread_loop
from toolproof.events import RunFinished
from toolproof.testing import FunctionModel, RequestInfo, ScriptedModel, call

LIMIT = 20.0  # seconds a thread of these tests may take on a busy machine
needs_timeout = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="asyncio.timeout is Python 3.11+"
)


def in_fresh_thread(
    work: Callable[[], Any], *, asyncio_path: bool = False, limit: float = LIMIT
) -> Any:
    """``work()`` in a new thread (so on a new loop); on asyncio's path if asked."""
    outcome: list[Any] = []
    failure: list[BaseException] = []
    drivable = thread_loop._drivable

    def target() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # handed to the test's thread
            failure.append(exc)

    if asyncio_path:
        thread_loop._drivable = lambda loop: False  # type: ignore[assignment]
    try:
        thread = threading.Thread(target=target)
        thread.start()
        thread.join(timeout=limit)
    finally:
        thread_loop._drivable = drivable
    assert not thread.is_alive(), "the thread did not finish: a call hung"
    if failure:
        raise failure[0]
    return outcome[0]


def counting_passes(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the driver's passes and asyncio's run_forever calls from now on."""
    counts = {"driver": 0, "run_forever": 0}
    one_pass = thread_loop._one_pass

    def counted(loop: Any) -> bool:
        done = one_pass(loop)
        counts["driver"] += done
        return done

    monkeypatch.setattr(thread_loop, "_one_pass", counted)
    holder = _holder()
    assert holder.loop is not None
    run_forever = holder.loop.run_forever

    def counted_forever() -> None:
        counts["run_forever"] += 1
        run_forever()

    monkeypatch.setattr(holder.loop, "run_forever", counted_forever)
    return counts


# -- the same record on both paths ------------------------------------------------------------

OPERATIONS = (
    "soon",  # a callback queued with call_soon
    "later0",  # a timer due at once (it runs in the next pass)
    "later60",  # a timer far away, kept
    "cancel",  # cancel the last timer kept
    "task",  # a task that logs, yields once, logs again
    "sleeper",  # a task that sleeps far past the call (a leftover, cancelled after it)
    "stop",  # loop.stop() during the pass
    "yield",  # the run itself waits one pass
    "agen",  # an async generator started and left open
    "bad callback",  # a callback that raises (the loop's exception handler sees it)
    "threadsafe",  # call_soon_threadsafe from the loop's own thread
    "state",  # what the run sees of its loop
)
ENDINGS = ("return", "raise", "cancel itself", "keyboard interrupt")


def program(operations: list[str], ending: str) -> list[str]:
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
                    f"state running={loop.is_running()} task={task and task.get_name()} "
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
        log.append(f"result {run_in_thread_loop(run())}")
    except BaseException as exc:
        log.append(f"raised {type(exc).__name__}: {exc}")
    log.append(f"after: running loop {asyncio.events._get_running_loop() is not None}")
    for n in range(2):
        log.append(f"result {run_in_thread_loop(plain(n))}")
    loop = _holder().loop
    assert loop is not None
    pending = [h for h in loop._scheduled if not h._cancelled]  # type: ignore[attr-defined]
    log.append(f"timers left {len(pending)}")
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


@settings(max_examples=40, deadline=None)
@given(
    operations=st.lists(st.sampled_from(OPERATIONS), max_size=8),
    ending=st.sampled_from(ENDINGS),
)
def test_the_driver_leaves_the_same_record_as_asyncios_own_loop_pass(
    operations: list[str], ending: str
) -> None:
    ours = in_fresh_thread(lambda: program(operations, ending))
    theirs = in_fresh_thread(lambda: program(operations, ending), asyncio_path=True)
    assert ours == theirs


def test_both_paths_are_the_ones_taken() -> None:
    """The record test above compares two different paths: the driver ran in one only."""

    def passes() -> tuple[bool, int]:
        counts = {"driver": 0}
        one_pass = thread_loop._one_pass

        def counted(loop: Any) -> bool:
            done = one_pass(loop)
            counts["driver"] += done
            return done

        thread_loop._one_pass = counted  # type: ignore[assignment]
        try:
            program(["soon", "later0", "task"], "return")
        finally:
            thread_loop._one_pass = one_pass  # type: ignore[assignment]
        return _holder().drivable, counts["driver"]

    assert in_fresh_thread(passes) == (True, 3)
    assert in_fresh_thread(passes, asyncio_path=True) == (False, 0)


# -- what a run sees -------------------------------------------------------------------------


def test_a_run_that_never_waits_ends_in_the_driver_and_one_that_waits_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_in_thread_loop(asyncio.sleep(0))
    counts = counting_passes(monkeypatch)

    async def at_once() -> int:
        return 1

    async def waits() -> int:
        await asyncio.sleep(0.01)  # a timer: the loop polls until it is due
        return 2

    assert run_in_thread_loop(at_once()) == 1
    assert counts == {"driver": 1, "run_forever": 0}
    assert run_in_thread_loop(waits()) == 2
    assert counts == {"driver": 2, "run_forever": 1}


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
        assert asyncio.events._get_running_loop() is None
        assert sys.get_asyncgen_hooks() == hooks

        async def fine() -> str:
            return "fine"

        assert run_in_thread_loop(fine()) == "fine"


def test_run_sync_inside_a_run_on_the_driver_is_the_clear_error() -> None:
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
    assert message == in_fresh_thread(nested, asyncio_path=True)
    assert "cannot be called from a running event loop" in message


# -- interrupts ---------------------------------------------------------------------------------


def interrupted_agent(finished: list[Any], *, by_signal: bool) -> Agent:
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
    agent = interrupted_agent(finished, by_signal=by_signal)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        agent.run_sync("go")
    assert time.monotonic() - started < 4  # interrupted, not slept through
    ends = [event for event in finished if isinstance(event, RunFinished)]
    assert len(ends) == 1
    assert [c.name for c in ends[0].trace.tool_calls] == ["noop"]
    # The loop is left as asyncio leaves it: not running, and usable.
    assert asyncio.events._get_running_loop() is None
    assert Agent(ScriptedModel(["fine"])).run_sync("x").output == "fine"


def test_an_interrupt_leaves_the_same_trace_on_both_paths() -> None:
    def reason() -> tuple[str, str]:
        finished: list[Any] = []
        with pytest.raises(KeyboardInterrupt):
            interrupted_agent(finished, by_signal=False).run_sync("go")
        trace = finished[-1].trace
        return trace.stop_reason, str(trace.stop_detail)

    assert in_fresh_thread(reason) == in_fresh_thread(reason, asyncio_path=True)


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


# -- timers over many calls --------------------------------------------------------------------


def test_ten_thousand_calls_with_time_limits_leave_the_timer_heap_as_small() -> None:
    """Each call's limit ends before the last one's: each call re-arms the loop's shared
    timer and cancels the one before. The driver sweeps cancelled timers out of the heap as
    asyncio's pass does (more than 100, half of them cancelled: rebuilt), so it stays small."""
    calls = 10_000

    def many() -> tuple[list[int], int, float]:
        agent = Agent(ScriptedModel(["ok"] * calls))
        limits = [Budget(max_seconds=600 - 0.01 * n) for n in range(calls)]
        loop: Any = _holder().loop
        sizes = []
        started = time.monotonic()
        for n in range(calls):
            assert agent.run_sync("x", budget=limits[n]).output == "ok"
            if n % 250 == 0:
                sizes.append(len(loop._scheduled))
        elapsed = time.monotonic() - started
        return sizes, loop._timer_cancelled_count, elapsed

    sizes, cancelled, elapsed = in_fresh_thread(many, limit=300)
    assert max(sizes) <= 210, sizes  # asyncio's own bound: 100 timers, half of them live
    assert 0 <= cancelled <= max(sizes)
    assert elapsed < 120, f"{calls} calls took {elapsed:.0f} s"


def test_many_cancelled_timers_are_swept_as_asyncio_sweeps_them() -> None:
    """Over 100 timers, most of them cancelled: the pass rebuilds the heap (as _run_once)."""

    def sweep() -> tuple[int, int]:
        async def schedule() -> None:
            loop = asyncio.get_running_loop()
            handles = [loop.call_later(60, lambda: None) for _ in range(300)]
            for handle in handles[:250]:
                handle.cancel()

        async def nothing() -> None:
            return None

        run_in_thread_loop(schedule())
        run_in_thread_loop(nothing())
        loop: Any = _holder().loop
        return len(loop._scheduled), loop._timer_cancelled_count

    assert in_fresh_thread(sweep) == in_fresh_thread(sweep, asyncio_path=True) == (50, 0)


# -- asyncio's own path ------------------------------------------------------------------------


def test_debug_mode_runs_asyncios_own_pass_with_its_slow_callback_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def in_debug() -> tuple[int, int]:
        counts = counting_passes(monkeypatch)
        loop = _holder().loop
        assert loop is not None
        loop.set_debug(True)
        loop.slow_callback_duration = 0.02

        async def slow() -> str:
            time.sleep(0.1)  # noqa: ASYNC251 - blocks the loop: asyncio warns in debug mode
            return "slow"

        with caplog.at_level(logging.WARNING, logger="asyncio"):
            assert run_in_thread_loop(slow()) == "slow"
        loop.set_debug(False)
        return counts["driver"], counts["run_forever"]

    assert in_fresh_thread(in_debug) == (0, 1)
    assert any("took" in record.getMessage() for record in caplog.records)


@needs_timeout
def test_a_users_policy_with_a_plain_asyncio_loop_runs_asyncios_own_pass() -> None:
    """A policy of the user's is foreign, even one returning a plain asyncio loop subclass."""
    made: list[asyncio.AbstractEventLoop] = []

    class UserLoop(asyncio.SelectorEventLoop):
        pass

    class Policy(asyncio.DefaultEventLoopPolicy):
        def new_event_loop(self) -> asyncio.AbstractEventLoop:
            loop = UserLoop()
            made.append(loop)
            return loop

    def runs() -> tuple[bool, str, bool]:
        async def inside() -> str:
            async with asyncio.timeout(5):
                await asyncio.sleep(0)
            task = asyncio.current_task()
            assert task is not None
            return type(asyncio.get_running_loop()).__name__

        holder = _holder()
        return holder.drivable, run_in_thread_loop(inside()), holder.selector is None

    called: list[Any] = []
    one_pass = thread_loop._one_pass
    thread_loop._one_pass = lambda loop: bool(called.append(loop))  # type: ignore[assignment]
    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(Policy())
    try:
        assert in_fresh_thread(runs) == (False, "UserLoop", True)
    finally:
        asyncio.set_event_loop_policy(previous)
        thread_loop._one_pass = one_pass  # type: ignore[assignment]
    assert called == []
    assert len(made) == 1


def test_an_asyncio_without_the_parts_the_driver_uses_runs_its_own_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A future Python may rename asyncio's private parts: the loop then runs as asyncio's."""
    import asyncio.base_events
    import asyncio.events

    def runs() -> tuple[bool, int]:
        async def inside() -> int:
            await asyncio.sleep(0)
            return 7

        return _holder().drivable, run_in_thread_loop(inside())

    monkeypatch.delattr(asyncio.base_events, "_MIN_CANCELLED_TIMER_HANDLES_FRACTION")
    assert in_fresh_thread(runs) == (False, 7)
    monkeypatch.undo()
    selector_class, loop_class = thread_loop._classes()

    class DrivesItself(loop_class):  # type: ignore[misc, valid-type]
        def _run_once(self) -> None:  # pragma: no cover - never run here
            super()._run_once()

    loop = DrivesItself(selector_class())
    try:
        assert thread_loop._drivable(loop) is False
    finally:
        loop.close()
    monkeypatch.undo()
    assert in_fresh_thread(runs) == (True, 7)


def test_a_stop_before_the_call_is_spent_as_before() -> None:
    """``loop.stop()`` called between calls: the next call still runs to its end."""

    def stopped() -> list[int]:
        got = []

        async def waits(n: int) -> int:
            await asyncio.sleep(0)
            await asyncio.sleep(0.001)
            return n

        for n in range(3):
            loop = _holder().loop
            assert loop is not None
            loop.stop()
            got.append(run_in_thread_loop(waits(n)))
        return got

    assert in_fresh_thread(stopped) == in_fresh_thread(stopped, asyncio_path=True) == [0, 1, 2]


def run_coroutine(make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    return run_in_thread_loop(make())


def test_the_loop_made_after_a_closed_one_is_driven_again() -> None:
    def reopened() -> tuple[bool, int]:
        async def seven() -> int:
            return 7

        run_coroutine(seven)
        holder = _holder()
        assert holder.loop is not None
        holder.close()  # as someone closing the thread's loop would
        del _local.holder
        return _holder().drivable, run_coroutine(seven)

    assert in_fresh_thread(reopened) == (True, 7)


def test_a_runs_task_is_named_after_what_it_runs_on_both_paths() -> None:
    @tool
    def task_name() -> str:
        """The name of the task the tool runs in."""
        task = asyncio.current_task()
        return task.get_name() if task is not None else "no task"

    def named() -> str:
        model = ScriptedModel([call("task_name"), "done"])
        result = Agent(model, [task_name]).run_sync("x")
        return str(result.trace.tool_results[0].content)

    assert in_fresh_thread(named) == in_fresh_thread(named, asyncio_path=True)
    assert "Agent.run" in in_fresh_thread(named)
