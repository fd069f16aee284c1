"""The test suite's own rules: no test bounds wall-clock time, no test leaves a process behind.

* A busy machine makes code slower, not wrong: no ``assert`` may bound a measured time from
  above (``tests/_wallclock.py`` finds them). Hangs are caught by pytest-timeout; "linear" is
  measured as the growth of work (``tests/_work.py``).
* Every process a test starts is stopped on every path (``tests/_processes.py``): when the
  test fails, times out or forgets it, the safety net stops it and names it.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from _processes import running, stop
from _shared import ROOT
from _wallclock import scan, time_bounds
from _work import growth

pytest_plugins = ["pytester"]

#: Assertions left in tests of a scheduling mechanism that is being removed (each in a file
#: that goes with it); nothing may be added here.
KNOWN: set[tuple[str, str]] = {
    ("tests/core/test_run_sync_driver.py", "time.monotonic() - started < 4"),
    ("tests/core/test_thread_loop_wakeups.py", "elapsed < LIMIT"),
    ("tests/core/test_thread_loop_wakeups.py", "time.monotonic() - started < LIMIT"),
    ("tests/replay/test_recorder.py", "max(latencies) < 0.5"),
}


def test_no_test_bounds_wall_clock_time() -> None:
    found = []
    for line in scan(ROOT / "tests", ROOT / "examples"):
        path, _, text = line.partition(": ")
        relative = Path(path.rsplit(":", 1)[0]).relative_to(ROOT).as_posix()
        if (relative, text) not in KNOWN:
            found.append(line)
    assert found == [], (
        "assertions that bound a measured time fail on a busy machine: mark a possible hang "
        "with @pytest.mark.timeout(N), keep lower bounds, measure growth (tests/_work.py) or "
        "count work instead:\n" + "\n".join(found)
    )


PLANTED = {
    "elapsed directly": """
        import time
        def test_x():
            started = time.perf_counter()
            work()
            assert time.perf_counter() - started < 2.0
    """,
    "through a local variable": """
        import time
        def test_x():
            begin = time.monotonic()
            work()
            took = time.monotonic() - begin
            assert took <= 5, took
    """,
    "mirrored, chained, in a larger condition": """
        import time
        def test_x():
            began = time.process_time()
            assert ok() and 10 > time.process_time() - began >= 0
    """,
    "imported clock under another name": """
        from time import perf_counter as clock
        def test_x():
            t0 = clock()
            work()
            assert clock() - t0 < LIMIT * 5
    """,
    "helper that returns the seconds with the value": """
        import time
        def timed(text):
            started = time.perf_counter()
            value = parse(text)
            return value, time.perf_counter() - started
        def test_x():
            parsed, seconds = timed("x")
            assert seconds < 1.0, seconds
    """,
    "an event loop's clock": """
        import asyncio
        async def test_x():
            loop = asyncio.get_running_loop()
            started = loop.time()
            await work()
            assert loop.time() - started < 4
    """,
    "a deadline": """
        import time
        def test_x():
            deadline = time.monotonic() + 60
            work()
            assert time.monotonic() < deadline, "hung"
    """,
    "the slowest of several": """
        import time
        def test_x():
            latencies = []
            for item in items:
                begin = time.perf_counter()
                work(item)
                latencies.append(time.perf_counter() - begin)
            assert max(latencies) < 0.5
    """,
    "a rate": """
        import time
        def test_x():
            started = time.time()
            work(1000)
            assert 1000 / (time.time() - started) > 500
    """,
    "an approximate equality": """
        import time
        import pytest
        def test_x():
            started = time.perf_counter()
            work()
            assert time.perf_counter() - started == pytest.approx(0.5, abs=0.2)
    """,
    "a duration the code measured": """
        def test_x():
            result = run()
            assert result.trace.duration_ms < 4000
    """,
    "inside a nested function": """
        import time
        def test_x():
            started = time.perf_counter()
            def check():
                assert time.perf_counter() - started < 1
            check()
    """,
}

ALLOWED = {
    "a lower bound: the timeout did not fire early": """
        import time
        def test_x():
            started = time.monotonic()
            wait_for_timeout()
            elapsed = time.monotonic() - started
            assert 0.5 <= elapsed, elapsed
            assert elapsed >= 0.45
    """,
    "a ratio of two timings of the same test": """
        import time
        def seconds(text):
            started = time.perf_counter()
            check(text)
            return time.perf_counter() - started
        def test_x():
            small = min(seconds("a" * 1000) for _ in range(3))
            big = seconds("a" * 10000)
            assert big < 40 * small
            assert big / small < 40
    """,
    "the order of two measured instants": """
        import time
        def test_x():
            first = time.monotonic()
            work()
            second = time.monotonic()
            assert first <= second
    """,
    "a polling loop with a deadline": """
        import time
        def test_x():
            deadline = time.monotonic() + 30
            while not ready() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert ready()
    """,
    "other comparisons": """
        import datetime
        def test_x():
            assert len(text) < 512 and count <= 3
            assert result.trace.duration_ms >= 250
            assert back.duration_ms == pytest.approx(trace.duration_ms, abs=5)
            assert datetime.datetime.now().time() < limit
    """,
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_check_finds_a_planted_time_bound(name: str) -> None:
    found = time_bounds(textwrap.dedent(PLANTED[name]))
    assert len(found) == 1, found


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_the_check_allows_what_a_busy_machine_cannot_fail(name: str) -> None:
    assert time_bounds(textwrap.dedent(ALLOWED[name])) == []


def test_growth_tells_linear_from_quadratic_work() -> None:
    def linear(text: str) -> int:
        return sum(1 for _ in text)

    def quadratic(text: str) -> int:
        steps = range(0, len(text), 10)
        return sum(1 for _ in steps for _ in steps)

    assert growth(linear, "a" * 20_000, "a" * 200_000) < 40
    assert growth(quadratic, "a" * 2_000, "a" * 20_000) > 40


# -- processes ------------------------------------------------------------------------------------

#: A child that starts a grandchild in its group, prints both pids, and runs until stopped.
PARENT_AND_CHILD = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(600)\n"
)


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie still waiting for its parent counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _wait_gone(*pids: int) -> bool:
    for _ in range(200):  # the group's members may take a moment to exit
        if all(_gone(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.timeout(60)
def test_running_stops_the_whole_group_when_the_block_raises() -> None:
    import subprocess

    grandchild = 0
    with (  # noqa: PT012 - the failure must happen inside the block
        pytest.raises(RuntimeError, match="the test failed"),
        running([sys.executable, "-c", PARENT_AND_CHILD], stdout=subprocess.PIPE) as parent,
    ):
        assert parent.stdout is not None
        grandchild = int(parent.stdout.readline())
        assert not _gone(parent.pid) and not _gone(grandchild)
        raise RuntimeError("the test failed")
    assert parent.returncode is not None
    assert _wait_gone(parent.pid, grandchild)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.timeout(60)
def test_a_process_that_ignores_sigterm_is_killed() -> None:
    import subprocess

    ignoring = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print(1, flush=True)\n"
        "time.sleep(600)\n"
    )
    with running([sys.executable, "-c", ignoring], stdout=subprocess.PIPE) as process:
        assert process.stdout is not None
        process.stdout.readline()  # its handler is set
        stop(process, grace=0.5)
    assert process.returncode == -9


INNER_CONFTEST = """
from _processes import no_process_left_behind, no_process_left_by_the_test, pytest_runtest_setup
"""

INNER_TESTS = """
import subprocess, sys
from pathlib import Path

import pytest

import _processes

SERVER = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "0"]


def note(process):
    Path("pids.txt").open("a").write(f"{process.pid}\\n")


@pytest.mark.timeout(1)
def test_times_out_while_its_server_runs():
    with _processes.running(SERVER, stdout=subprocess.DEVNULL) as server:
        note(server)
        server.wait()  # never returns: the timeout raises here


def test_fails_and_never_stops_its_server():
    note(_processes.start(SERVER, stdout=subprocess.DEVNULL))
    assert False, "the test failed"


def test_passes_and_forgets_its_server():
    note(_processes.start(SERVER, stdout=subprocess.DEVNULL))


@pytest.fixture(scope="session")
def shared_server():
    server = _processes.start(SERVER, until="session", stdout=subprocess.DEVNULL)
    note(server)
    yield server  # and never stopped


def test_uses_a_session_server_that_is_never_stopped(shared_server):
    assert shared_server.poll() is None
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.timeout(180)
def test_no_process_outlives_its_test_or_the_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    tests = Path(__file__).resolve().parents[1]
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])
    )
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_servers=INNER_TESTS)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-p",
        "no:langsmith_plugin",
        "-p",
        "no:xdist",
        "-o",
        "timeout_method=signal",
    )
    pids = [int(line) for line in (pytester.path / "pids.txt").read_text().split()]
    assert len(pids) == 4
    assert _wait_gone(*pids), [pid for pid in pids if not _gone(pid)]  # every one stopped
    output = result.stdout.str()
    # the timeout and the failure fail their tests; the forgotten servers are named
    result.assert_outcomes(passed=2, failed=2, errors=3)
    assert "Timeout" in output
    assert "the test failed" in output
    assert "processes were still running at the end of the test" in output
    assert "started by test_servers.py::test_passes_and_forgets_its_server" in output
    assert "processes were still running at the end of the session" in output
    assert "started by test_servers.py::test_uses_a_session_server_that_is_never_stopped" in output
