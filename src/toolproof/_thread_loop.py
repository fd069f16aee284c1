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

    __slots__ = ("generators", "loop", "pid", "process", "selector")

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None
        self.loop, self.selector = _new_loop()
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

    class _Selector(selectors.DefaultSelector):
        """Skips the first poll of a call when it could find nothing (module docstring)."""

        skip = False  # set before each call's first loop pass
        signals = False  # a signal handler writes to the wake-up pipe: always poll

        def select(self, timeout: float | None = None) -> list[tuple[Any, int]]:
            if self.skip:
                self.skip = False
                if timeout == 0 and not self.signals and len(self.get_map()) == 1:
                    return []  # only the wake-up pipe is watched, and work is ready
            result: list[tuple[Any, int]] = super().select(timeout)
            return result

    class _Loop(asyncio.SelectorEventLoop):
        def __init__(self, selector: _Selector) -> None:
            super().__init__(selector)
            self._toolproof_selector = selector

        def add_signal_handler(self, sig: int, callback: Any, *args: Any) -> None:  # type: ignore[override]
            self._toolproof_selector.signals = True  # from now on, every poll happens
            super().add_signal_handler(sig, callback, *args)

    return _Selector, _Loop


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
    holder = _holder()
    loop = holder.loop
    assert loop is not None
    task = loop.create_task(coroutine)
    if holder.selector is not None:
        holder.selector.skip = True  # the first pass: the task's first step is ready
    stopping = False
    try:
        # Stopped before it runs, the loop makes one pass (documented): the task's first
        # step. A run that never waits (a scripted model) ends in it.
        loop.stop()
        loop.run_forever()
        if not task.done():
            stopping = True
            task.add_done_callback(_stop_loop)
            loop.run_forever()  # until the task ends and the callback stops the loop
        return task.result()
    except BaseException:
        if not task.done():  # interrupted while the loop waited: let the run end properly
            task.cancel()
            if not stopping:
                task.add_done_callback(_stop_loop)
            with contextlib.suppress(BaseException):  # the caller sees the interrupt below
                loop.run_forever()
        raise
    finally:
        # What is left to do, looked at inline (two calls that return at once cost ~0.3 µs).
        if _every_task is None or _every_task is False or len(_every_task) > 1:
            _cancel_leftovers(loop)
        if holder.generators is None or holder.generators:
            _finalize_async_generators(loop)


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
