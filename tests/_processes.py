"""Long-lived processes that tests start (servers, browsers, databases), stopped on every path.

Start a child with :func:`start` (or :func:`running`, a context manager): it gets its own
process group (``start_new_session=True``) and is registered until :func:`stop` ends it,
which terminates the whole group, waits, and kills the group if it did not go. Call
:func:`stop` in a ``finally`` or a fixture finalizer: a test that times out (pytest-timeout's
signal method raises in the test) or fails still runs it. Something that is not a child
(a daemon, a driver with its own stop) registers its stop function with :func:`register`.

The safety net, loaded by ``tests/conftest.py``:

* after each test, a process it started (``until="test"``, the default) that is still
  running is stopped, and the test errors in its teardown, naming it;
* when the session ends (in each xdist worker), anything still registered (the servers of
  session fixtures, ``until="session"``) is stopped, and reported the same way as an error
  of the worker's last test, naming the test that started it;
* an ``atexit`` hook stops what is left if the worker exits another way.
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
    until: str
    started_by: str = field(default="")


_registry: dict[int, _Entry] = {}
_keys: dict[int, int] = {}  # a started process's pid -> its registry key
_current_test = ["(outside a test)"]


def register(
    what: str, alive: Callable[[], bool], stop: Callable[[], None], *, until: str = "session"
) -> int:
    """Register something to stop by the end of the test or session; the key to unregister."""
    entry = _Entry(what, alive, stop, until, _current_test[0])
    key = id(entry)
    _registry[key] = entry
    return key


def unregister(key: int) -> None:
    """Forget an entry whose owner stopped it."""
    _registry.pop(key, None)


def start(args: list[str], *, until: str = "test", **options: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, **options)`` in a new process group, registered until stopped.

    ``until``: ``"test"`` (a process of the test itself) or ``"session"`` (a fixture's server
    that outlives one test).
    """
    process: subprocess.Popen[Any] = subprocess.Popen(args, start_new_session=True, **options)
    _keys[process.pid] = register(
        " ".join(map(str, args))[:200],
        lambda: process.poll() is None,
        lambda: stop(process),
        until=until,
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
    process = start(args, until=options.pop("until", "test"), **options)
    try:
        yield process
    finally:
        stop(process)


def stop_all(until: str | None = None) -> list[str]:
    """Stop what is still registered (for ``until``, or all); what was still running."""
    left = []
    for key, entry in list(_registry.items()):
        if until is not None and entry.until != until:
            continue
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


def _fail_if(left: list[str], when: str) -> None:
    if left:
        pytest.fail(
            f"processes were still running at the end of {when} (now stopped); stop them in a "
            "finally or a fixture finalizer (tests/_processes.py):\n"
            + "\n".join(f"  {line}" for line in left),
            pytrace=False,
        )


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind() -> Iterator[None]:
    """Set up before every other fixture, so its check runs after all of them are torn down."""
    yield
    _fail_if(stop_all(), "the session")


@pytest.fixture(autouse=True)
def no_process_left_by_the_test() -> Iterator[None]:
    """After each test (and its fixtures), the processes it started are no longer running."""
    yield
    _fail_if(stop_all(until="test"), "the test")
