"""``run_sync``'s long-lived loop loses no wake-up between or during calls.

The thread's loop lives across calls and sleeps in its poll while a run waits. Each test
gives it something to miss: a callback another thread queues with ``call_soon_threadsafe``
(during a call, or between calls), a future a thread resolves, bytes waiting on a real
127.0.0.1 socket, a reader registered by an earlier call, a signal handler. Every wait is
bounded, so a lost wake-up fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from toolproof import Agent, Budget, Message, tool
from toolproof._thread_loop import _holder, _local, run_in_thread_loop
from toolproof.testing import FunctionModel, RequestInfo, call

LIMIT = 10.0  # seconds a helper thread may take to start (on a busy machine)

#: A lost wake-up hangs a call that has no time limit of its own: the timeout catches it.
pytestmark = pytest.mark.timeout(120)


def one_tool_agent(t: Any, **arguments: Any) -> Agent:
    """Calls ``t`` once with ``arguments``, then answers with the tool's result."""

    async def answer(messages: list[Message], info: RequestInfo) -> Any:
        if messages[-1].role == "user":
            return call(t.name, **arguments)
        return f"got {messages[-1].content}"

    # A lost wake-up ends the run on this limit: its stop reason and output say so.
    return Agent(FunctionModel(answer), [t], budget=Budget(max_seconds=30))


async def nothing() -> None:
    """A call that never waits: it ends in the loop's first pass."""


def checked_run(agent: Agent, text: str = "go") -> Any:
    result = agent.run_sync(text)
    assert result.stop_reason == "final", f"{result.stop_detail}: a wake-up was lost"
    return result


def test_a_callback_another_thread_queues_wakes_the_waiting_run() -> None:
    @tool
    async def wait_for_thread(delay_ms: int) -> str:
        """Wait for a value another thread sets through call_soon_threadsafe.

        Args:
            delay_ms: How long the other thread waits first.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()

        def later() -> None:
            time.sleep(delay_ms / 1000)
            loop.call_soon_threadsafe(future.set_result, f"woken {delay_ms}")

        threading.Thread(target=later).start()
        return await future

    for delay in (0, 0, 1, 5, 0, 20):  # 0: the callback may be queued during the first pass
        agent = one_tool_agent(wait_for_thread, delay_ms=delay)
        assert checked_run(agent).output == f"got woken {delay}"


def test_a_callback_queued_between_calls_runs_in_the_next_call() -> None:
    """Bytes left in the wake-up pipe by a thread, with no call running, lose nothing."""
    run_in_thread_loop(asyncio.sleep(0))
    loop = _holder().loop
    assert loop is not None
    ran: list[int] = []
    for i in range(20):
        done = threading.Event()

        def queue(i: int = i, done: threading.Event = done) -> None:
            loop.call_soon_threadsafe(ran.append, i)
            done.set()

        threading.Thread(target=queue).start()
        assert done.wait(LIMIT)
        run_in_thread_loop(nothing())  # a call that never waits: one pass
        assert ran == list(range(i + 1))

    async def waits_for_a_thread() -> str:
        return await asyncio.to_thread(lambda: "from a thread")

    # The pipe was never read above: waiting still wakes up.
    assert run_in_thread_loop(waits_for_a_thread()) == "from a thread"


def test_a_future_resolved_by_a_worker_thread_wakes_the_run() -> None:
    @tool
    async def in_executor(x: int) -> int:
        """Compute in the loop's executor.

        Args:
            x: Input.
        """
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: x * 3)

    for x in range(15):
        assert checked_run(one_tool_agent(in_executor, x=x)).output == f"got {x * 3}"


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def echo_server() -> Iterator[tuple[str, int]]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[:2]  # type: ignore[misc]
    finally:
        server.shutdown()
        server.server_close()


def test_a_tool_talking_to_a_local_tcp_server_inside_run_sync(
    echo_server: tuple[str, int],
) -> None:
    host, port = echo_server

    @tool
    async def echo(text: str, size: int) -> str:
        """Send text to the echo server and read it back.

        Args:
            text: What to send.
            size: How many times to repeat it (large sends span many reads).
        """
        reader, writer = await asyncio.open_connection(host, port)
        payload = (text * size).encode()
        writer.write(payload)
        await writer.drain()
        received = await reader.readexactly(len(payload))
        writer.close()
        await writer.wait_closed()
        return f"{len(received)} {received[: len(text)].decode()}"

    for size in (1, 3, 1000, 200_000):
        result = checked_run(one_tool_agent(echo, text="ab", size=size))
        assert result.output == f"got {size * 2} ab"


def test_a_reader_left_registered_by_one_call_is_served_by_the_next() -> None:
    """With another file watched, the first pass polls: its ready reader runs at once."""
    run_in_thread_loop(asyncio.sleep(0))
    loop = _holder().loop
    assert loop is not None
    left, right = socket.socketpair()
    served: list[bytes] = []
    try:

        async def register() -> None:
            loop.add_reader(left.fileno(), lambda: served.append(left.recv(10)))

        run_in_thread_loop(register())
        right.send(b"x")  # readable now; nothing of the loop runs until the next call
        time.sleep(0.05)
        assert served == []
        run_in_thread_loop(nothing())  # one pass: it must poll, and serve the reader
        assert served == [b"x"]
    finally:
        loop.remove_reader(left.fileno())
        left.close()
        right.close()


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="POSIX signals")
def test_a_signal_handler_on_the_loop_is_served_by_calls_that_never_wait() -> None:
    """A signal noted in the wake-up pipe reaches its handler within two one-pass calls.

    asyncio reads the pipe among a pass's callbacks and runs the handler in the pass after:
    the next call's pass must poll, and the one after runs the handler. Were polls skipped,
    calls that never wait would never serve it.
    """
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers belong to the main thread")
    handled: list[int] = []
    previous = signal.getsignal(signal.SIGUSR1)
    try:

        async def install_and_signal() -> None:
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGUSR1, handled.append, 1)
            os.kill(os.getpid(), signal.SIGUSR1)  # noted in the pipe; the pass already polled

        run_in_thread_loop(install_and_signal())
        run_in_thread_loop(nothing())  # one pass, which must poll the pipe
        run_in_thread_loop(nothing())  # runs the handler that pass queued
        assert handled == [1]
    finally:
        holder = _holder()
        assert holder.loop is not None
        holder.loop.remove_signal_handler(signal.SIGUSR1)
        signal.signal(signal.SIGUSR1, previous)
        holder.close()  # the next call gets a fresh loop
        del _local.holder


def test_an_installed_event_loop_policy_still_makes_each_threads_loop() -> None:
    """A policy of the user's (uvloop's, an instrumented one) makes the loop, as before."""
    made: list[asyncio.AbstractEventLoop] = []

    class Policy(asyncio.DefaultEventLoopPolicy):
        def new_event_loop(self) -> asyncio.AbstractEventLoop:
            loop = super().new_event_loop()
            made.append(loop)
            return loop

    async def five() -> int:
        await asyncio.sleep(0)
        return 5

    seen: list[Any] = []

    def worker() -> None:
        seen.append(run_in_thread_loop(five()))
        seen.append(_holder().loop)

    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(Policy())
    try:
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(timeout=LIMIT)
    finally:
        asyncio.set_event_loop_policy(previous)
    assert seen[0] == 5
    assert seen[1] is made[0]
