"""One timer per event loop keeps the deadlines of all waiting requests: tried against it.

The adapter does not schedule a timer per request; a watch per loop keeps one, at the
nearest deadline of the requests waiting. These tests try to make it miss a deadline
(stalled requests among many quick ones, deadlines armed out of order, later ones pushed
back by progress), turn someone else's cancellation into a timeout, or schedule a timer
per request, against real local aiohttp servers.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _handlers_server import serve_handlers, silent
from aiohttp import web

from toolproof._messages import Message, ModelSettings
from toolproof.errors import ModelConnectionError
from toolproof.models import OpenAIChatModel, Timeout
from toolproof.models._http import Deadlines, Stalled, Watch

ANSWER = {
    "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "ok"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}


async def _quick(request: web.Request) -> web.Response:
    await request.read()
    return web.json_response(ANSWER)


async def _after(request: web.Request) -> web.Response:
    """Answers after the number of seconds the last message says."""
    body = await request.json()
    await asyncio.sleep(float(body["messages"][-1]["content"]))
    return web.json_response(ANSWER)


@pytest.fixture
async def base() -> AsyncIterator[str]:
    async with serve_handlers({"quick": _quick, "silent": silent, "after": _after}) as url:
        yield url


def _model(base: str, name: str, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel("m", base_url=f"{base}/{name}/v1", retry=0, **options)


async def _ask(model: OpenAIChatModel, text: str = "hi") -> str:
    response = await model.request([Message.user(text)], [], ModelSettings())
    return response.message.content or ""


@pytest.mark.timeout(60)  # a deadline that never fires leaves the stalled requests waiting
async def test_stalled_requests_among_quick_ones_end_at_their_deadline(
    base: str, allow_requests: None
) -> None:
    # the quick ones get a long deadline of their own: on a busy machine an answer may take
    # longer than 0.4 s, and they share the watch with the stalled ones all the same
    quick = _model(base, "quick", timeout=30)
    stalled = _model(base, "silent", timeout=0.4)
    started = time.monotonic()
    outcomes = await asyncio.gather(
        *(_ask(quick) for _ in range(30)),
        *(_ask(stalled) for _ in range(5)),
        *(_ask(quick) for _ in range(30)),
        return_exceptions=True,
    )
    elapsed = time.monotonic() - started
    await quick.aclose()
    await stalled.aclose()
    answers = outcomes[:30] + outcomes[35:]
    failures = outcomes[30:35]
    assert answers == ["ok"] * 60
    for failure in failures:
        assert isinstance(failure, ModelConnectionError), failure
        assert "for 0.4 s" in str(failure) and "(progress timeout)" in str(failure)
    assert elapsed >= 0.35, elapsed  # the stalled ones did not end before their 0.4 s


@pytest.mark.timeout(60)
async def test_deadlines_armed_out_of_order_on_one_watch_each_end_on_time() -> None:
    """A later wait with a nearer deadline moves the timer forward; progress pushes back."""
    watch = Watch(asyncio.get_running_loop())

    async def stalled_for(progress: float, pushes: int = 0) -> tuple[str, float]:
        deadlines = Deadlines(Timeout(progress=progress), watch)
        started = time.monotonic()

        async def push() -> None:
            for _ in range(pushes):
                await asyncio.sleep(progress / 3)
                deadlines.progress()

        pusher = asyncio.ensure_future(push())
        try:
            await deadlines.wait(asyncio.sleep(30))
        except Stalled as exc:
            return exc.kind, time.monotonic() - started
        finally:
            pusher.cancel()
        raise AssertionError("the wait did not stall")

    slow, fast, pushed = await asyncio.gather(
        stalled_for(1.5), stalled_for(0.2), stalled_for(0.3, pushes=6)
    )
    assert fast[0] == slow[0] == pushed[0] == "progress"
    assert fast[1] >= 0.15 and slow[1] >= 1.4, (fast, slow)  # none ended before its deadline
    # ... and the nearer deadline was not held until the earlier-armed, later one (1.5 s):
    # compared with the slow wait of the same run, so a busy machine delays both alike
    assert fast[1] < 0.8 * slow[1], (fast, slow)
    assert pushed[1] >= 0.55, pushed  # six pushes every 0.1 s kept it going past 0.3 s
    assert not watch._waiting


@pytest.mark.timeout(60)
async def test_one_model_shares_one_watch_and_a_nearer_deadline_fires_first(
    base: str, allow_requests: None
) -> None:
    model = _model(base, "after", timeout=Timeout(read=30, progress=0.6))
    started = time.monotonic()
    outcomes = await asyncio.gather(
        _ask(model, "5"), _ask(model, "0.1"), _ask(model, "0.2"), return_exceptions=True
    )
    elapsed = time.monotonic() - started
    await model.aclose()
    assert outcomes[1:] == ["ok", "ok"]
    assert isinstance(outcomes[0], ModelConnectionError), outcomes[0]
    assert "for 0.6 s" in str(outcomes[0])
    assert elapsed >= 0.55, elapsed  # the 5 s request ended by its 0.6 s progress timeout


async def test_another_cancellation_is_not_turned_into_a_timeout(
    base: str, allow_requests: None
) -> None:
    model = _model(base, "silent", timeout=30)
    task = asyncio.ensure_future(_ask(model))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # An outer time limit ends the request with its own error, not the adapter's.
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(_ask(model), 0.3)
    # The watch forgot both: the next request on the same loop is answered.
    quick = _model(base, "quick", timeout=30)
    assert await _ask(quick) == "ok"
    await model.aclose()
    await quick.aclose()


async def test_a_watched_wait_past_its_deadline_raises_stalled_and_uncancels() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines(Timeout(progress=0.05), Watch(loop))
    assert deadlines.watched == (sys.version_info >= (3, 11))  # 3.10: a timer per wait
    with pytest.raises(Stalled) as caught:
        await deadlines.wait(asyncio.sleep(5))
    assert (caught.value.kind, caught.value.seconds) == ("progress", 0.05)
    task: Any = asyncio.current_task()
    if sys.version_info >= (3, 11):
        assert task.cancelling() == 0  # nothing left to cancel this task
    await asyncio.sleep(0.01)  # and it is not cancelled later either


async def test_requests_do_not_schedule_a_timer_each(
    base: str, allow_requests: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.get_running_loop()
    scheduled: list[Any] = []
    real_call_at = loop.call_at

    def call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        owner = getattr(callback, "__self__", None)  # the server's keep-alive timers aside
        if isinstance(owner, (Watch, getattr(asyncio, "Timeout", Watch))):
            scheduled.append(callback)  # a deadline timer: the watch's, or asyncio.timeout's
        return real_call_at(when, callback, *args, **kwargs)

    model = _model(base, "quick", timeout=300)
    # The session, its watch and 20 connections exist (connecting has a timer of its own).
    assert await asyncio.gather(*(_ask(model) for _ in range(20))) == ["ok"] * 20
    monkeypatch.setattr(loop, "call_at", call_at)
    before = len(scheduled)
    for _ in range(20):
        assert await _ask(model) == "ok"
    assert await asyncio.gather(*(_ask(model) for _ in range(20))) == ["ok"] * 20
    await model.aclose()
    # Deadlines only grow later, so the watch's first timer keeps them all.
    assert len(scheduled) == before == 0, scheduled
