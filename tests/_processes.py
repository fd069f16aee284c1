"""Long-lived processes that tests start (servers, browsers, databases), stopped on every path.

Start a child with :func:`start` (or :func:`running`, a context manager): it gets its own
process group (``start_new_session=True``) and is registered until :func:`stop` ends it,
which terminates the whole group, waits, and kills the group if it did not go. Call
:func:`stop` in a ``finally`` or a fixture finalizer: a test that times out (pytest-timeout's
signal method raises in the test) or fails still runs it. Something that is not a child
(a daemon, a driver with its own stop) registers its stop function with :func:`register`.

The safety net, loaded by ``tests/conftest.py``: when the session ends (in each xdist
worker), anything still registered is stopped and reported as an error of the session's last
test, naming the test that started it; an ``atexit`` hook stops what is left if the worker
exits another way.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

#: How long a process is given to end after SIGTERM before its group is killed.
GRACE_SECONDS = 10.0


@dataclass
class _Entry:
    what: str
    alive: Callable[[], bool]
    stop: Callable[[], None]
    started_by: str = field(default="")


_registry: dict[int, _Entry] = {}
_keys: dict[int, int] = {}  # a started process's pid -> its registry key
_current_test = ["(outside a test)"]


def register(what: str, alive: Callable[[], bool], stop: Callable[[], None]) -> int:
    """Register something to stop by the end of the session; the key for :func:`unregister`."""
    entry = _Entry(what, alive, stop, _current_test[0])
    key = id(entry)
    _registry[key] = entry
    return key


def unregister(key: int) -> None:
    """Forget an entry whose owner stopped it."""
    _registry.pop(key, None)


def start(args: list[str], **options: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, **options)`` in a new process group, registered until stopped."""
    process: subprocess.Popen[Any] = subprocess.Popen(args, start_new_session=True, **options)
    _keys[process.pid] = register(
        " ".join(map(str, args))[:200], lambda: process.poll() is None, lambda: stop(process)
    )
    return process


def stop(process: subprocess.Popen[Any], grace: float = GRACE_SECONDS) -> None:
    """Terminate the process's group, wait up to ``grace`` seconds, then kill the group."""
    try:
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait(grace)
        # children that outlived the leader (still in its group) go too
        _signal_group(process, signal.SIGKILL)
    finally:
        key = _keys.pop(process.pid, None)
        if key is not None:
            unregister(key)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _signal_group(process: subprocess.Popen[Any], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


@contextlib.contextmanager
def running(args: list[str], **options: Any) -> Iterator[subprocess.Popen[Any]]:
    """:func:`start` the process, and :func:`stop` it when the block ends, however it ends."""
    process = start(args, **options)
    try:
        yield process
    finally:
        stop(process)


def stop_all() -> list[str]:
    """Stop everything still registered; what was still running, and which test started it."""
    left = []
    for key, entry in list(_registry.items()):
        try:
            if entry.alive():
                left.append(f"{entry.what} (started by {entry.started_by})")
            entry.stop()
        except Exception as exc:  # keep stopping the others
            left.append(f"{entry.what}: stopping it failed: {exc!r}")
        finally:
            _registry.pop(key, None)
    return left


atexit.register(stop_all)


# -- the pytest side: imported into tests/conftest.py ---------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _current_test[0] = item.nodeid


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind() -> Iterator[None]:
    """Set up before every other fixture, so its check runs after all of them are torn down."""
    yield
    left = stop_all()
    if left:
        pytest.fail(
            "processes started by tests were still running at the end of the session (now "
            "stopped); stop them in a finally or a fixture finalizer (tests/_processes.py):\n"
            + "\n".join(f"  {line}" for line in left),
            pytrace=False,
        )
