"""One long-lived event loop per thread, for the synchronous entry points (``run_sync``).

``asyncio.run`` builds and tears down a loop on every call (~90 µs, more than a scripted
run). Here each thread keeps its own loop for as long as it lives, and a call is one
``loop.run_until_complete``: asyncio's own loop, driven through its public API only.

What ``asyncio.run`` promised still holds after each call: it ran in a task with a copy of
the caller's context; nothing of it keeps running (leftover tasks are cancelled); async
generators it started are closed (so HTTP models close their sessions, as they do when
``asyncio.run`` returns); an interrupt (``KeyboardInterrupt``) cancels the run before it is
re-raised, so the run still ends with a trace.

Threads never share a loop. A forked child never touches a loop inherited from its parent
(the epoll instance and wake-up pipe are shared with the parent, so closing it would
unregister the parent's sockets): it makes its own.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import weakref
from collections.abc import AsyncGenerator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from toolproof.errors import UserError

if TYPE_CHECKING:
    import asyncio

__all__ = ["blocking", "no_running_loop", "run_in_thread_loop", "run_to_end"]

_T = TypeVar("_T")
_P = ParamSpec("_P")

_local = threading.local()
_inherited: list[asyncio.AbstractEventLoop] = []  # a parent's loops: kept, never closed here
_atexit_registered = False
_process = [0]  # bumped in a forked child: loops made before belong to the parent


def _forked() -> None:
    _process[0] += 1


if hasattr(os, "register_at_fork"):  # POSIX; cheaper than comparing os.getpid() every call
    os.register_at_fork(after_in_child=_forked)


class _ThreadLoop:
    """A thread's loop; closed when the thread ends (or at exit for the main thread)."""

    __slots__ = ("generators", "hooks", "loop", "process")

    def __init__(self) -> None:
        import asyncio  # (on first use: ``import toolproof`` does not load asyncio)

        self.loop: asyncio.AbstractEventLoop | None = asyncio.new_event_loop()
        self.process = _process[0]
        # The async generators the current call started (see ``_track_generators``).
        self.generators: list[weakref.ref[AsyncGenerator[Any, Any]]] = []
        self.hooks: Any = None  # the loop's own first-iteration hook, while a call runs

    def first_iteration(self, generator: AsyncGenerator[Any, Any]) -> None:
        """The loop's first-iteration hook, which also notes the generator for the call."""
        self.generators.append(weakref.ref(generator))
        if self.hooks is not None:
            self.hooks(generator)

    def close(self) -> None:
        loop, self.loop = self.loop, None
        if loop is None or loop.is_closed() or loop.is_running():
            return
        if self.process != _process[0]:  # inherited through fork: the parent's to close
            _inherited.append(loop)
            return
        if _running_loop() is not None:
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
        with contextlib.suppress(Exception):  # (at interpreter exit, modules may be gone)
            self.close()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


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
    # Queued before the task's first step, so it runs first, once the loop has installed
    # its async generator hooks.
    loop.call_soon(_track_generators, holder)
    # The task is named after the coroutine ("Agent.run"), and runs in a copy of the
    # caller's context (create_task copies the current one).
    task = loop.create_task(coroutine, name=getattr(coroutine, "__qualname__", None))
    try:
        return loop.run_until_complete(task)
    except BaseException:
        if task.done() and not task.cancelled():  # the run raised it: the caller sees it
            task.exception()  # so no "exception was never retrieved" (as asyncio.run)
        with contextlib.suppress(BaseException):  # the caller sees the first one, below
            # Interrupted while the loop waited: the run ends as cancelled (its own task
            # among the leftovers, as asyncio.run cancels them). An interrupt in the middle
            # of a loop pass leaves callbacks queued: one more pass runs them, as the loop
            # asyncio.run closes runs them.
            _cancel_leftovers(loop, task)
            loop.stop()
            loop.run_forever()
        raise
    finally:
        try:
            _cancel_leftovers(loop, task)
            _close_generators(loop, holder)
        finally:
            # A traceback keeps this frame: it must not keep the thread's loop past the
            # thread (which closes it when it ends), nor the task and its exception in a
            # cycle. (Even when the leftovers raise, an interrupt among them.)
            holder = task = None  # type: ignore[assignment]


def _track_generators(holder: _ThreadLoop) -> None:
    """Note the async generators the call starts, beside the loop's own bookkeeping.

    ``run_until_complete`` installs the loop's hooks for the call and puts the thread's
    back when it returns; this wraps the loop's first-iteration hook for the call.
    """
    firstiter, finalizer = sys.get_asyncgen_hooks()
    if firstiter == holder.first_iteration:  # (queued twice: an interrupt came in between)
        return
    holder.hooks = firstiter
    sys.set_asyncgen_hooks(firstiter=holder.first_iteration, finalizer=finalizer)


def _close_generators(loop: asyncio.AbstractEventLoop, holder: _ThreadLoop) -> None:
    """Close the async generators the call started, as ``asyncio.run`` does on return.

    ``loop.shutdown_asyncgens()`` would do it once and for all (later generators would
    not be tracked), so this closes those of the call and keeps the loop usable.
    """
    holder.hooks = None
    if not holder.generators:
        return
    import asyncio

    found = (ref() for ref in holder.generators)
    closing = [generator for generator in found if generator is not None]
    holder.generators.clear()

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


def _cancel_leftovers(
    loop: asyncio.AbstractEventLoop, call: asyncio.Task[Any] | None = None
) -> None:
    """Cancel the tasks left on the loop, as ``asyncio.run`` does, and let them finish.

    ``call``: the call's own task, whose outcome its caller takes (not reported here).
    """
    import asyncio

    leftovers = asyncio.all_tasks(loop)
    if not leftovers:
        return
    for task in leftovers:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
    for task in leftovers:
        error = None if task.cancelled() else task.exception()  # (now retrieved)
        if error is not None and task is not call:
            loop.call_exception_handler(
                {
                    "message": "unhandled exception in a task left behind by a run_sync call",
                    "exception": error,
                    "task": task,
                }
            )


def no_running_loop(what: str, instead: str = "`await ...run()`") -> None:
    """Raise a clear error when a synchronous wrapper is called inside an event loop."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise UserError(f"{what}() cannot be called from a running event loop; use {instead}")


def run_to_end(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` on a new event loop, like ``asyncio.run``, and return its result."""
    import asyncio

    found: list[_T] = []

    async def main() -> None:
        # The result is kept here, not as the task's result: asyncio.run (3.11) formats
        # its main task, result included, in full when it restores the SIGINT handler;
        # with a report of 10,000 cases that repr costs more than the run's reports.
        found.append(await coro)

    asyncio.run(main())
    return found[0]


def blocking(
    function: Callable[_P, Coroutine[Any, Any, _T]],
    name: str,
    instead: str,
    *,
    thread_loop: bool = False,
    doc: str | None = None,
) -> Callable[_P, _T]:
    """The synchronous twin of ``function``, with the very same parameters (one definition).

    Args:
        function: The coroutine function (a method too: the twin is a method then).
        name: The twin's name, as errors show it (``"Agent.run_sync"``).
        instead: What to call from a running event loop, named in the error.
        thread_loop: Run on this thread's long-lived loop (cheap per call, for runs) instead
            of a new loop per call (``asyncio.run``, for whole eval and replay runs).
        doc: The twin's docstring.
    """

    def twin(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        no_running_loop(name, instead)
        if thread_loop:
            return run_in_thread_loop(function(*args, **kwargs))
        return run_to_end(function(*args, **kwargs))

    import functools

    functools.update_wrapper(twin, function)  # its signature is the function's
    twin.__name__ = name.rpartition(".")[2]
    twin.__qualname__ = name
    twin.__doc__ = doc
    return twin
