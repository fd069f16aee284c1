"""One long-lived event loop per thread, for the synchronous entry points (``run_sync``).

``asyncio.run`` builds and tears down a loop on every call (~90 µs, more than a scripted
run). Here each thread keeps its own loop for as long as it lives, so a synchronous call
costs one ``run_until_complete``.

What ``asyncio.run`` promised still holds after each call: it ran in a task with a copy of
the caller's context; nothing of it keeps running (leftover tasks are cancelled); async
generators it started are finalized (so HTTP models close their sessions, as they do when
``asyncio.run`` returns); an interrupt (``KeyboardInterrupt``) cancels the run before it is
re-raised, so the run still ends with a trace.

Threads never share a loop. A forked child never touches a loop inherited from its parent
(the epoll instance and wake-up pipe are shared with the parent, so closing it would
unregister the parent's sockets): it makes its own.

The first loop pass of a call (where a run that never waits, a scripted one, ends) goes
through ``_one_pass``: what ``loop.stop(); loop.run_forever()`` does, with run_forever's
set-up and ``_run_once`` inlined (the same hooks and running loop while callbacks run, the
same timers dropped and run, the same callbacks, the same poll). asyncio's own path runs
instead in debug mode, on a loop that is not ours (another policy's, Windows), and on a
Python whose asyncio lacks a private part the driver uses (``_drivable``); a run that waits
goes on in ``run_forever``. tests/core/test_run_sync_driver.py checks that both paths leave
the same record.

The first loop pass of a call skips its poll when it could find nothing (``_Selector``):
the loop has work ready, so it would poll without waiting, and the only file it watches is
its own wake-up pipe, whose callbacks are already queued (``call_soon_threadsafe`` queues
the callback before it writes to the pipe). The pipe is read at the next poll, as before;
with a signal handler, a socket or a pipe registered, every poll happens.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Coroutine
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

__all__ = ["run_in_thread_loop"]

_T = TypeVar("_T")

_local = threading.local()
_inherited: list[Any] = []  # loops of a parent process: kept alive, never closed in the child
_atexit_registered = False
_process = [0]  # bumped in a forked child: loops made before belong to the parent


def _forked() -> None:
    _process[0] += 1


if hasattr(os, "register_at_fork"):  # POSIX; cheaper than comparing os.getpid() every call
    os.register_at_fork(after_in_child=_forked)


class _ThreadLoop:
    """A thread's loop; closed when the thread ends (or at exit for the main thread)."""

    __slots__ = ("drivable", "generators", "loop", "pid", "process", "selector")

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None
        self.loop, self.selector = _new_loop()
        # Ours, on a Python whose asyncio has the parts its one-pass driver uses.
        self.drivable = self.selector is not None and _drivable(self.loop)
        self.pid = os.getpid()
        self.process = _process[0]
        # The references of the loop's weak set of live async generators (None: unknown, so
        # every call looks); the set object lives as long as the loop.
        found = getattr(getattr(self.loop, "_asyncgens", None), "data", None)
        self.generators: Any = found if isinstance(found, set) else None

    def close(self) -> None:
        loop, self.loop = self.loop, None
        if loop is None or loop.is_closed() or loop.is_running():
            return
        if self.pid != os.getpid():  # inherited through fork: the parent's to close
            _inherited.append(loop)
            return
        from asyncio.events import _get_running_loop

        if _get_running_loop() is not None:
            # Collected late, inside another loop's callback (something kept this past its
            # thread's end): no loop can run here, closing is what is left to do.
            with contextlib.suppress(Exception):  # its sockets may have gone first
                loop.close()
            return
        try:
            _cancel_leftovers(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())  # closes HTTP sessions
            loop.run_until_complete(loop.shutdown_default_executor())
        except Exception:  # pragma: no cover - closing must not fail a thread's exit
            pass
        finally:
            loop.close()

    def __del__(self) -> None:
        self.close()


def _holder() -> _ThreadLoop:
    """This thread's loop, made on first use (or after a fork, or if someone closed it)."""
    holder: _ThreadLoop | None = getattr(_local, "holder", None)
    if holder is not None and holder.loop is not None:
        if holder.process == _process[0] and not holder.loop.is_closed():
            return holder
        holder.close()  # forked (kept alive, untouched) or closed by someone
    holder = _local.holder = _ThreadLoop()
    if threading.current_thread() is threading.main_thread():
        _close_main_at_exit()
    return holder


def _new_loop() -> tuple[asyncio.AbstractEventLoop, Any]:
    """A new loop, and its selector when it is ours (POSIX, asyncio's default policy)."""
    import asyncio
    import warnings

    with warnings.catch_warnings():  # policies are deprecated from Python 3.14, still honoured
        warnings.simplefilter("ignore", DeprecationWarning)
        default = type(asyncio.get_event_loop_policy()) is getattr(
            asyncio, "DefaultEventLoopPolicy", None
        )
    if sys.platform == "win32" or not default:
        return asyncio.new_event_loop(), None  # a proactor loop, or the policy's (uvloop...)
    selector_class, loop_class = _classes()
    selector = selector_class()
    return loop_class(selector), selector


@cache
def _classes() -> tuple[type[Any], type[Any]]:
    """The selector and loop classes, made with the first loop (asyncio loads with it)."""
    import asyncio
    import selectors

    _Handle = asyncio.Handle

    class _Selector(selectors.DefaultSelector):
        """Skips the first poll of a call when it could find nothing (module docstring)."""

        skip = False  # set before each call's first loop pass
        signals = False  # a signal handler writes to the wake-up pipe: always poll
        watched = 0  # the files registered (a counter: ``len(get_map())`` is two calls)

        def register(self, fileobj: Any, events: int, data: Any = None) -> Any:
            key = super().register(fileobj, events, data)
            self.watched += 1
            return key

        def unregister(self, fileobj: Any) -> Any:
            key = super().unregister(fileobj)
            self.watched -= 1
            return key

        def select(self, timeout: float | None = None) -> list[tuple[Any, int]]:
            if self.skip:
                self.skip = False
                if timeout == 0 and not self.signals and self.watched == 1:
                    return []  # only the wake-up pipe is watched, and work is ready
            result: list[tuple[Any, int]] = super().select(timeout)
            return result

    class _Loop(asyncio.SelectorEventLoop):
        def __init__(self, selector: _Selector) -> None:
            super().__init__(selector)
            self._toolproof_selector = selector
            self._toolproof_drivable = False  # set by _drivable once its parts are checked
            self._toolproof_thread = threading.get_ident()  # a thread's loop is made there
            # The hooks run_forever installs, bound once: a fresh bound method each call,
            # and keyword arguments (which make a dict), cost ~1,500 instructions a call.
            self._toolproof_hooks = (
                getattr(self, "_asyncgen_firstiter_hook", None),
                getattr(self, "_asyncgen_finalizer_hook", None),
            )

        def call_soon(self, callback: Any, *args: Any, context: Any = None) -> Any:  # type: ignore[override]
            """The same as asyncio's ``call_soon``, without its two inner calls."""
            me: Any = self
            if me._debug or me._closed or not self._toolproof_drivable:
                return super().call_soon(callback, *args, context=context)
            handle = _Handle(callback, args, self, context)
            me._ready.append(handle)
            return handle

        def add_signal_handler(self, sig: int, callback: Any, *args: Any) -> None:  # type: ignore[override]
            self._toolproof_selector.signals = True  # from now on, every poll happens
            super().add_signal_handler(sig, callback, *args)

    return _Selector, _Loop


# asyncio's private parts ``_one_pass`` uses, found by ``_drivable``.
_get_hooks = sys.get_asyncgen_hooks
_set_hooks = sys.set_asyncgen_hooks
_set_running_loop: Any = None
_Task: Any = None
_heapify: Any = None
_heappop: Any = None
_MIN_TIMERS: Any = 100
_MIN_CANCELLED: Any = 0.5


def _drivable(loop: Any) -> bool:
    """Whether ``loop`` has what its one-pass driver relies on (else asyncio's path runs).

    The driver inlines ``run_forever`` and ``_run_once`` over asyncio's private state; a
    Python whose asyncio lacks a part of it, or a loop whose class drives itself its own
    way, runs through ``run_forever`` as before.
    """
    global _set_running_loop, _MIN_TIMERS, _MIN_CANCELLED, _Task, _heapify, _heappop
    import asyncio
    import heapq
    from asyncio import base_events, events
    from collections import deque

    base = base_events.BaseEventLoop
    parts = (
        getattr(events, "_set_running_loop", None),
        getattr(base_events, "_MIN_SCHEDULED_TIMER_HANDLES", None),
        getattr(base_events, "_MIN_CANCELLED_TIMER_HANDLES_FRACTION", None),
    )
    found = (
        None not in parts
        and None not in getattr(loop, "_toolproof_hooks", (None,))
        and isinstance(getattr(loop, "_ready", None), deque)
        and isinstance(getattr(loop, "_scheduled", None), list)
        and all(
            hasattr(loop, name)
            for name in (
                "_stopping",
                "_closed",
                "_task_factory",
                "_thread_id",
                "_debug",
                "_timer_cancelled_count",
                "_clock_resolution",
                "_process_events",
                "_selector",
            )
        )
        and all(hasattr(asyncio.Handle, name) for name in ("_run", "_cancelled"))
        and all(hasattr(asyncio.TimerHandle, name) for name in ("_when", "_scheduled"))
        and type(loop).run_forever is base.run_forever
        and type(loop)._run_once is base._run_once  # type: ignore[attr-defined]
    )
    if found:
        _set_running_loop, _MIN_TIMERS, _MIN_CANCELLED = parts
        _Task = asyncio.Task
        _heapify, _heappop = heapq.heapify, heapq.heappop
        loop._toolproof_drivable = True
    return found


def _one_pass(loop: Any) -> bool:
    """The loop pass ``loop.stop(); loop.run_forever()`` makes, without run_forever.

    ``run_forever``'s set-up and ``_run_once`` inlined, for a loop of ours that has work
    ready: while callbacks run, the loop's async generator hooks are installed and the
    loop is the running one (``is_running()``, ``get_running_loop()``); cancelled timers
    are dropped and due ones run as ``_run_once`` does; the poll is the selector's call
    (``_Selector`` skips it when it could find nothing, as before); the callbacks run are
    those ready when the pass starts. Returns False, having done nothing, when asyncio's
    own code must run: debug mode (slow-callback warnings, coroutine origins), a loop
    already running (run_forever raises its error), or a pending ``stop()``.
    """
    ready = loop._ready
    if loop._debug or loop._thread_id is not None or loop._stopping or not ready:
        return False
    hooks = _get_hooks()
    try:
        loop._thread_id = loop._toolproof_thread
        _set_hooks(*loop._toolproof_hooks)
        _set_running_loop(loop)
        # Timers (a run's wall-clock limit keeps one armed): as _run_once, looked at inline.
        scheduled = loop._scheduled
        if scheduled and (scheduled[0]._cancelled or len(scheduled) > _MIN_TIMERS):
            _drop_cancelled_timers(loop)
        found = loop._selector.select(0)  # work is ready: a poll that does not wait
        if found:
            loop._process_events(found)
        found = None  # as _run_once: no cycle through a traceback
        scheduled = loop._scheduled  # (a new heap if cancelled timers were dropped)
        if scheduled and scheduled[0]._when < loop.time() + loop._clock_resolution:
            _queue_due_timers(loop)
        todo = len(ready)  # callbacks these queue wait for the next pass
        while todo:
            todo -= 1
            handle = ready.popleft()
            if not handle._cancelled:
                handle._run()
        handle = None  # as _run_once: no cycle through a traceback
    finally:
        loop._stopping = False  # a stop() called during the pass is spent by it
        loop._thread_id = None
        _set_running_loop(None)
        _set_hooks(hooks[0], hooks[1])  # (``*hooks`` makes a tuple of the struct first)
    return True


def _drop_cancelled_timers(loop: Any) -> None:
    """Drop cancelled timers from the loop's heap, as ``_run_once`` does first."""
    scheduled = loop._scheduled
    count = len(scheduled)
    if count > _MIN_TIMERS and loop._timer_cancelled_count / count > _MIN_CANCELLED:
        kept = []
        for handle in scheduled:
            if handle._cancelled:
                handle._scheduled = False
            else:
                kept.append(handle)
        _heapify(kept)
        loop._scheduled = kept
        loop._timer_cancelled_count = 0
    else:
        while scheduled and scheduled[0]._cancelled:
            loop._timer_cancelled_count -= 1
            _heappop(scheduled)._scheduled = False


def _queue_due_timers(loop: Any) -> None:
    """Queue the timers that are due, as ``_run_once`` does after its poll."""
    scheduled = loop._scheduled
    end = loop.time() + loop._clock_resolution
    while scheduled and scheduled[0]._when < end:
        handle = _heappop(scheduled)
        handle._scheduled = False
        loop._ready.append(handle)


def _close_main_at_exit() -> None:
    global _atexit_registered
    if not _atexit_registered:
        _atexit_registered = True
        atexit.register(_close_this_thread)


def _close_this_thread() -> None:
    holder: _ThreadLoop | None = getattr(_local, "holder", None)
    if holder is not None:
        holder.close()


def run_in_thread_loop(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` to completion on this thread's loop (the caller checked none runs)."""
    holder: _ThreadLoop | None = getattr(_local, "holder", None)
    loop: Any = holder.loop if holder is not None else None
    if (
        loop is None
        or holder.process != _process[0]  # type: ignore[union-attr]
        or (loop._closed if holder.drivable else loop.is_closed())  # type: ignore[union-attr]
    ):
        holder = _holder()
        loop = holder.loop
    assert holder is not None
    # The task is named after the coroutine ("Agent.run"): a "Task-N" name costs a C-level
    # format on Python 3.11 (~1,200 instructions and ~200 cache misses a call).
    name = getattr(coroutine, "__qualname__", None)
    if holder.drivable and loop._task_factory is None and not loop._debug:
        task = _Task(coroutine, loop=loop, name=name)  # create_task, without its checks
    else:
        task = loop.create_task(coroutine, name=name)
    if holder.selector is not None:
        holder.selector.skip = True  # the first pass: the task's first step is ready
    stopping = False
    try:
        # The task's first step, in one loop pass. A run that never waits (a scripted
        # model) ends in it.
        if not (holder.drivable and _one_pass(loop)):
            # Stopped before it runs, the loop makes one pass (documented).
            loop.stop()
            loop.run_forever()
        if not task.done():
            stopping = True
            task.add_done_callback(_stop_loop)
            loop.run_forever()  # until the task ends and the callback stops the loop
        return task.result()  # type: ignore[no-any-return]
    except BaseException:
        if not task.done():  # interrupted while the loop waited: let the run end properly
            task.cancel()
            if not stopping:
                task.add_done_callback(_stop_loop)
            with contextlib.suppress(BaseException):  # the caller sees the interrupt below
                loop.run_forever()
        elif not task.cancelled():  # the run raised it (an interrupt): the caller sees it
            task.exception()  # so no "exception was never retrieved" (as asyncio.run)
        raise
    finally:
        try:
            # What is left to do, looked at inline (two calls that return at once: ~0.3 µs).
            if _every_task is None or _every_task is False or len(_every_task) > 1:
                _cancel_leftovers(loop)
            if holder.generators is None or holder.generators:
                _finalize_async_generators(loop)
        finally:
            # A traceback keeps this frame: it must not keep the thread's loop past the
            # thread (which closes it when it ends), nor the task and its exception in a
            # cycle. (Even when the leftovers raise, an interrupt among them.)
            holder = task = None


def _stop_loop(task: asyncio.Task[Any]) -> None:
    task.get_loop().stop()


def _finalize_async_generators(loop: asyncio.AbstractEventLoop) -> None:
    """Close the async generators the call started, as ``asyncio.run`` does on return.

    ``loop.shutdown_asyncgens()`` would do it once and for all (later generators would not
    be tracked), so this closes those the loop tracks now and keeps the loop usable.
    """
    generators = getattr(loop, "_asyncgens", None)  # the loop's weak set of live generators
    if generators is None or not getattr(generators, "data", generators):  # (no __len__ call)
        return
    import asyncio

    closing = list(generators)
    generators.clear()

    async def close_all() -> list[Any]:
        return list(await asyncio.gather(*(g.aclose() for g in closing), return_exceptions=True))

    outcomes = loop.run_until_complete(close_all())
    for generator, outcome in zip(closing, outcomes, strict=True):
        if isinstance(outcome, Exception):
            loop.call_exception_handler(
                {
                    "message": "an async generator failed while closing after a run_sync call",
                    "exception": outcome,
                    "asyncgen": generator,
                }
            )


_every_task: Any = None  # the references of asyncio's weak set of every task, once found


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel tasks the call left behind, as ``asyncio.run`` does, and let them finish."""
    global _every_task
    if _every_task is None:
        import asyncio

        # All loops' tasks, weakly held (Python 3.10 and 3.11; later versions keep them
        # elsewhere, and the scan below always runs).
        found = getattr(asyncio.tasks, "_all_tasks", None)
        _every_task = getattr(found, "data", False)  # the weak set's own set of references
    if _every_task is not False and len(_every_task) <= 1:
        return  # only the call's own task exists anywhere (the scan below costs ~5 µs)
    import asyncio

    leftovers = asyncio.all_tasks(loop)
    if not leftovers:
        return
    for task in leftovers:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
    for task in leftovers:
        if not task.cancelled() and task.exception() is not None:
            loop.call_exception_handler(
                {
                    "message": "unhandled exception in a task left behind by a run_sync call",
                    "exception": task.exception(),
                    "task": task,
                }
            )
