"""HTTP plumbing of the real adapters: timeouts, retry policy, one aiohttp session per loop.

aiohttp is imported only when a request is sent, so ``import toolproof`` stays light.

A ``ClientSession`` belongs to the event loop it was created in, and ``Agent.run_sync`` runs
each call in a fresh loop (``asyncio.run``). So a model keeps one session per running loop,
created on first use. Each session is closed when its loop shuts down: a small async
generator is registered with the loop, and ``asyncio.run`` (like every well-behaved runner)
finalizes async generators before closing the loop, which closes the session.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolproof.errors import UserError

if TYPE_CHECKING:
    import asyncio
    from collections.abc import AsyncGenerator

    import aiohttp

__all__ = [
    "Deadlines",
    "LoopState",
    "RetryPolicy",
    "SessionPool",
    "Stalled",
    "Timeout",
    "Watch",
    "env_proxy",
    "parse_retry_after",
    "rejects_request",
]


@dataclass(frozen=True, slots=True)
class Timeout:
    """Time limits of one HTTP attempt, in seconds (``None`` means no limit).

    Attributes:
        connect: Opening the TCP/TLS connection.
        read: Waiting for the next bytes of the response (the first byte included). Long
            enough for reasoning models that think before answering; DeepSeek keeps the
            connection alive with blank lines while it thinks.
        progress: Waiting for the next part of the answer itself: a data event of a
            stream, or the body of a plain response. Keep-alives (SSE comments, blank
            lines) do not count, so a server that only keeps the connection alive fails
            after this long instead of holding the request forever.
        total: The whole attempt, from sending to the last byte; nothing resets it.
    """

    connect: float | None = 10.0
    read: float | None = 300.0
    progress: float | None = 300.0
    total: float | None = None

    def __post_init__(self) -> None:
        for name in ("connect", "read", "progress", "total"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
            ):
                raise UserError(
                    f"Timeout({name}=...) must be a positive number of seconds or None, "
                    f"got {value!r}"
                )

    @classmethod
    def coerce(cls, value: float | Timeout | None) -> Timeout:
        """``Timeout`` from a number, a ``Timeout``, or ``None`` (defaults).

        A number is both the read and the progress timeout: no answer within that many
        seconds of silence or keep-alives fails the attempt.
        """
        if value is None:
            return cls()
        if isinstance(value, Timeout):
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise UserError(
                f"timeout must be a positive number of seconds or a Timeout(...), got {value!r}"
            )
        return cls(read=float(value), progress=float(value))


class Stalled(Exception):
    """An attempt saw no progress (or ran out of time) before its deadline."""

    def __init__(self, kind: str, seconds: float) -> None:
        super().__init__(kind, seconds)
        self.kind = kind  # "progress" or "total"
        self.seconds = seconds


class Deadlines:
    """The progress and total deadlines of one attempt, on the running loop's clock.

    ``wait(awaitable)`` awaits with the nearer deadline and raises :class:`Stalled` when it
    passes; ``progress()`` pushes the progress deadline back (a part of the answer came).

    With a :class:`Watch` (one per loop, from :meth:`SessionPool.state`), the deadline is kept
    by the watch's single timer instead of a timer (``asyncio.timeout_at``) per wait.
    """

    __slots__ = (
        "_cancelling",
        "_expired",
        "_loop",
        "_progress",
        "_progress_at",
        "_task",
        "_total",
        "_total_at",
        "_watch",
        "watched",
    )

    def __init__(self, timeout: Timeout, watch: Watch | None = None) -> None:
        if watch is None:
            import asyncio

            self._loop = asyncio.get_running_loop()
        else:
            self._loop = watch.loop
        now = self._loop.time()
        self._watch = watch
        #: Whether the watch keeps the deadlines, so that ``with deadlines:`` may be used.
        self.watched = watch is not None and _current_task is not None
        self._progress = timeout.progress
        self._total = timeout.total
        self._progress_at = None if timeout.progress is None else now + timeout.progress
        self._total_at = None if timeout.total is None else now + timeout.total
        self._task: Any = None  # the waiting asyncio.Task (uncancel() is Python 3.11+)
        self._cancelling = 0
        self._expired = False

    def progress(self) -> None:
        """A part of the answer arrived."""
        if self._progress is not None:
            self._progress_at = self._loop.time() + self._progress

    async def wait(self, awaitable: Awaitable[Any]) -> Any:
        """Await ``awaitable`` until the nearer deadline; :class:`Stalled` past it."""
        if not self.watched:
            return await self._wait_with_timer(awaitable)
        with self:
            return await awaitable

    def __enter__(self) -> Deadlines:
        """The awaits of the block end at the nearer deadline (with a watch only).

        ``with deadlines: await ...`` is :meth:`wait` without a coroutine of its own.
        """
        at = self._nearest()[1]
        if at is not None and self._watch is not None:
            task = _current_task()
            if task is not None:  # pragma: no branch - always awaited in a task
                self._cancelling = task.cancelling()
                self._task = task
                self._watch.arm(self, at)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: object, tb: object) -> None:
        task = self._task
        if task is None or self._watch is None:
            return
        self._task = None
        self._watch.disarm(self)
        if not self._expired:
            return
        self._expired = False
        # The watch cancelled the task: a deadline passed, unless something else asked for
        # the task to be cancelled too (then the cancellation goes on).
        ours = task.uncancel() <= self._cancelling
        if ours and kind is not None and issubclass(kind, _CancelledError):
            which = self._nearest()[0]
            seconds = self._progress if which == "progress" else self._total
            raise Stalled(which, seconds or 0.0) from None

    def _expire(self) -> None:
        """Called by the watch: the deadline of the current wait has passed."""
        task = self._task
        if task is not None and not self._expired:
            self._expired = True
            task.cancel()

    async def _wait_with_timer(self, awaitable: Awaitable[Any]) -> Any:
        import asyncio

        kind, at = self._nearest()
        if at is None:
            return await awaitable
        timeout_at = getattr(asyncio, "timeout_at", None)  # Python 3.11+
        try:
            if timeout_at is not None:
                # A timer on the running task: no task per await, as wait_for makes.
                async with timeout_at(at):
                    return await awaitable
            return await asyncio.wait_for(awaitable, max(at - self._loop.time(), 0.0))
        except asyncio.TimeoutError:
            kind, at = self._nearest()
            if at is not None and self._loop.time() >= at - 0.001:
                seconds = self._progress if kind == "progress" else self._total
                raise Stalled(kind, seconds or 0.0) from None
            raise

    def _nearest(self) -> tuple[str, float | None]:
        p, t = self._progress_at, self._total_at
        if p is None:
            return "total", t
        if t is None or p < t:
            return "progress", p
        return "total", t


class Watch:
    """The deadlines of one event loop's waiting attempts, kept by a single timer.

    A timer per request (``asyncio.timeout_at``) is scheduled, cancelled and left in the
    loop's heap for every request, though deadlines of minutes almost never pass. The watch
    keeps one timer, at the nearest deadline of the attempts waiting: arming a later
    deadline costs a set insertion. When the timer fires it cancels the tasks whose
    deadline has passed (their :meth:`Deadlines.wait` turns that into :class:`Stalled`)
    and sets itself for the nearest deadline left; deadlines pushed back by progress are
    found then.
    """

    __slots__ = ("_at", "_handle", "_waiting", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        global _current_task, _CancelledError
        if _current_task is None:
            _current_task, _CancelledError = _task_tools()
        self.loop = loop
        self._waiting: set[Deadlines] = set()
        self._handle: asyncio.TimerHandle | None = None
        self._at = _INFINITY

    def arm(self, deadlines: Deadlines, at: float) -> None:
        """Keep ``deadlines`` (whose current wait ends at ``at``) until :meth:`disarm`."""
        self._waiting.add(deadlines)
        if at < self._at:
            if self._handle is not None:
                self._handle.cancel()
            self._at = at
            self._handle = self.loop.call_at(at, self._fire)

    def disarm(self, deadlines: Deadlines) -> None:
        """The wait of ``deadlines`` ended (the timer stays: it finds nothing due)."""
        self._waiting.discard(deadlines)

    def _fire(self) -> None:
        self._handle = None
        self._at = _INFINITY
        # The loop runs timers due within its clock resolution: count those as passed.
        now = self.loop.time() + 0.001
        nearest = _INFINITY
        for deadlines in list(self._waiting):
            at = deadlines._nearest()[1]
            if at is None:  # pragma: no cover - armed only with a deadline
                continue
            if at <= now:
                self._waiting.discard(deadlines)
                deadlines._expire()
            elif at < nearest:
                nearest = at
        if nearest < self._at:
            self._at = nearest
            self._handle = self.loop.call_at(nearest, self._fire)


_INFINITY = float("inf")


def _task_tools() -> tuple[Any, Any]:
    """``asyncio.current_task`` and ``CancelledError`` when tasks can be uncancelled (3.11+)."""
    import asyncio

    if not hasattr(asyncio.Task, "uncancel"):  # pragma: no cover - Python 3.10
        return None, asyncio.CancelledError
    return asyncio.current_task, asyncio.CancelledError


_current_task: Any = None
_CancelledError: Any = BaseException
_running_loop: Any = None


def rejects_request(status: int, message: str | None, error_type: str | None) -> bool:
    """Whether a server error (5xx) says the request itself is bad, so resending cannot help.

    Some servers answer 500 for requests they cannot process, for example llama.cpp's
    ``"Failed to parse tool call arguments as JSON"``; retrying the same request fails the
    same way, so such answers are not retried.
    """
    if status < 500:
        return False
    if error_type and error_type.lower() in _BAD_REQUEST_TYPES:
        return True
    if not message:
        return False
    import re

    return re.search(_BAD_REQUEST_PATTERN, message[:2000], re.IGNORECASE) is not None


_BAD_REQUEST_TYPES = frozenset({"invalid_request_error", "invalid_request", "bad_request"})
_BAD_REQUEST_PATTERN = (
    r"\b(?:failed to parse|could not parse|cannot parse|unable to parse|parse error|"
    r"invalid (?:json|request|argument|arguments|parameter|value|tool|message|role|schema)|"
    r"malformed|not valid json|unsupported (?:parameter|value|content|role)|"
    r"does not support|is not supported|chat template|template error|"
    r"exceeds? the (?:available )?context|context (?:length|size|window)|too many tokens)"
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how long to wait before retrying a failed model request.

    Rate limits (429), server errors (5xx), timeouts and connection errors are retried;
    other errors are not, nor are server errors whose message says the request itself
    cannot be processed (``"Failed to parse tool call arguments as JSON"``). The wait
    doubles from ``initial_delay`` up to ``max_delay`` and is shortened by a random
    fraction up to ``jitter`` so that many clients do not retry in step. A ``Retry-After``
    (or ``retry-after-ms``) header from the provider replaces the computed wait. Retrying
    stops after ``max_retries`` retries, or when the next wait would end more than
    ``max_elapsed`` seconds after the first attempt started.

    Attributes:
        max_retries: Retries after the first attempt (0 disables retrying).
        initial_delay: Wait before the first retry, in seconds.
        max_delay: Longest computed wait.
        max_elapsed: Time budget for all attempts and waits together.
        jitter: Fraction (0 to 1) by which a computed wait is randomly shortened.
        sleep: The function that waits (``asyncio.sleep``); tests inject a fake one.

    Example:
        ```python
        OpenAIChatModel("gpt-4o-mini", retry=RetryPolicy(max_retries=6, max_elapsed=120))
        ```
    """

    max_retries: int = 3
    initial_delay: float = 0.5
    max_delay: float = 20.0
    max_elapsed: float = 90.0
    jitter: float = 0.5
    sleep: Callable[[float], Awaitable[Any]] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        problems = []
        if self.max_retries < 0:
            problems.append(f"max_retries must be >= 0, got {self.max_retries}")
        if self.initial_delay < 0 or self.max_delay < 0 or self.max_elapsed < 0:
            problems.append("delays and max_elapsed must be >= 0")
        if not 0 <= self.jitter <= 1:
            problems.append(f"jitter must be between 0 and 1, got {self.jitter}")
        if problems:
            raise UserError("invalid RetryPolicy: " + "; ".join(problems))

    @classmethod
    def coerce(cls, value: RetryPolicy | int | None) -> RetryPolicy:
        """``RetryPolicy`` from a policy, a retry count, or ``None`` (defaults)."""
        if value is None:
            return cls()
        if isinstance(value, RetryPolicy):
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise UserError(f"retry must be a RetryPolicy(...) or a retry count, got {value!r}")
        return cls(max_retries=value)

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """The wait before retry number ``retry`` (0-based), honouring ``retry_after``."""
        if retry_after is not None:
            return max(retry_after, 0.0)
        import random

        base: float = min(self.max_delay, self.initial_delay * 2.0**retry)
        return base * (1 - self.jitter * random.random())

    async def wait(self, seconds: float) -> None:
        """Sleep ``seconds`` with the configured sleep function."""
        if self.sleep is not None:
            await self.sleep(seconds)
            return
        import asyncio

        await asyncio.sleep(seconds)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    seconds: float = when.timestamp() - time.time()
    return max(seconds, 0.0)


def _finish(closer: AsyncGenerator[None, None]) -> None:
    """Run a closer whose loop is gone; its session is already closed, so nothing awaits."""
    step = closer.aclose()
    try:
        step.send(None)
    except StopIteration:
        return
    step.close()


def env_proxy(url: str) -> str | None:
    """The proxy the environment sets for ``url`` (``*_PROXY``, honouring ``NO_PROXY``).

    Looked up once per session rather than per request (aiohttp's ``trust_env`` reads the
    environment on every request, which costs more than the rest of the client's work).
    """
    from urllib.parse import urlsplit
    from urllib.request import getproxies, proxy_bypass

    parts = urlsplit(url)
    proxy = getproxies().get(parts.scheme)
    if not proxy or (parts.hostname and proxy_bypass(parts.hostname)):
        return None
    return proxy


class LoopState:
    """What a model keeps per event loop: its HTTP session and the watch of its deadlines."""

    __slots__ = ("closer", "loop", "session", "watch")

    def __init__(self, loop: asyncio.AbstractEventLoop, session: aiohttp.ClientSession) -> None:
        self.loop = loop
        self.session = session
        self.watch = Watch(loop)
        self.closer: AsyncGenerator[None, None] | None = None


class SessionPool:
    """One ``aiohttp.ClientSession`` per running event loop, closed with its loop.

    Args:
        timeout: Time limits of each attempt.
        headers: Headers sent with every request (authorization, content type).
        max_connections: Most open connections per loop (the pool is reused across
            requests, so concurrency above it waits for a free connection).
        url: The URL the requests go to; the proxy for it is looked up in the environment
            (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``) once per session.
    """

    def __init__(
        self,
        *,
        timeout: Timeout,
        headers: Mapping[str, str],
        max_connections: int,
        url: str | None = None,
    ) -> None:
        if max_connections < 1:
            raise UserError(f"max_connections must be at least 1, got {max_connections}")
        self.timeout = timeout
        self.headers = dict(headers)
        self.max_connections = max_connections
        self.url = url
        self._states: dict[int, tuple[asyncio.AbstractEventLoop, LoopState]] = {}
        self._last: LoopState | None = None

    async def session(self) -> aiohttp.ClientSession:
        """The session of the running loop, created on first use."""
        return (await self.state()).session

    def current(self) -> LoopState | None:
        """The state of the running loop if it served the previous request, else ``None``.

        Every path that closes a state's session forgets it first, so it is open.
        """
        last = self._last
        if last is not None and _running_loop is not None and last.loop is _running_loop():
            return last
        return None

    async def state(self) -> LoopState:
        """The session and deadline watch of the running loop, created on first use."""
        global _running_loop
        if _running_loop is None:
            import asyncio

            _running_loop = asyncio.get_running_loop
        loop = _running_loop()
        last = self._last
        if last is not None and last.loop is loop:
            return last  # the loop of the previous request: no lookup (see current())
        entry = self._states.get(id(loop))
        if entry is not None and entry[0] is loop and not entry[1].session.closed:
            self._last = entry[1]
            return entry[1]
        self._forget_closed_loops()
        state = LoopState(loop, self._new_session())
        self._states[id(loop)] = (loop, state)
        closer = self._closer(loop, state)
        state.closer = closer
        await closer.__anext__()  # registers it with the loop's async-generator hooks
        self._last = state
        return state

    def _new_session(self) -> aiohttp.ClientSession:
        import aiohttp
        from yarl import URL

        connector = aiohttp.TCPConnector(
            limit=self.max_connections,
            limit_per_host=0,
            ttl_dns_cache=300,
        )
        t = self.timeout
        # A read timeout no shorter than the progress timeout can never fire first (bytes
        # arrive at least as often as parts of the answer, and the progress deadline starts
        # earlier): leave it to the adapter's deadline, without aiohttp's timer per chunk.
        read = t.read
        if read is not None and t.progress is not None and read >= t.progress:
            read = None
        proxy = env_proxy(self.url) if self.url else None
        has_agent = any(name.lower() == "user-agent" for name in self.headers)
        return aiohttp.ClientSession(
            connector=connector,
            headers=self.headers,
            # The total and progress deadlines are kept by the adapter (Deadlines), which can tell
            # keep-alives from progress and say which limit was reached.
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=t.connect, sock_read=read),
            # aiohttp adds no User-Agent of its own when the headers have one; asking it to
            # skip one costs a copy of the headers on every request.
            skip_auto_headers=None if has_agent else ("User-Agent",),
            proxy=proxy,
            proxy_auth=aiohttp.BasicAuth.from_url(URL(proxy)) if proxy else None,
        )

    async def _closer(
        self, loop: asyncio.AbstractEventLoop, state: LoopState
    ) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            entry = self._states.get(id(loop))
            if entry is not None and entry[1] is state:
                del self._states[id(loop)]
            if self._last is state:
                self._last = None
            await state.session.close()

    def _forget_closed_loops(self) -> None:
        for key, (loop, state) in list(self._states.items()):
            if loop.is_closed():
                # The loop ended without finalizing async generators: its connections are
                # already unusable; drop the transports without awaiting anything.
                if self._states.pop(key, None) is None:
                    continue  # another thread got there first
                if self._last is state:
                    self._last = None
                connector = state.session.connector
                if connector is not None:
                    with contextlib.suppress(RuntimeError):  # the dead loop cannot run a task
                        connector._close()
                closer, state.closer = state.closer, None
                if closer is not None:
                    _finish(closer)

    async def aclose(self) -> None:
        """Close the session of the running loop (others close with their loops)."""
        import asyncio

        loop = asyncio.get_running_loop()
        entry = self._states.pop(id(loop), None)
        self._forget_closed_loops()
        if entry is None or entry[0] is not loop:
            return
        state = entry[1]
        if self._last is state:
            self._last = None
        closer, state.closer = state.closer, None
        if closer is not None:
            await closer.aclose()  # runs the finally: closes the session
        else:
            await state.session.close()
