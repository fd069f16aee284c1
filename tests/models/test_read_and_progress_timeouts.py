"""A read timeout as long as the progress timeout (``timeout=N``) still bounds every request.

The adapter leaves such a read timeout to its own progress deadline (which starts earlier
and which keep-alives do not push back) rather than to aiohttp's timer per chunk. These
tests stall a real server every way it can and check that each request still ends, with
the progress error, within a wide margin of the timeout; a shorter read timeout still
fires as the read timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from _handlers_server import blank_lines, serve_handlers, silent
from aiohttp import web

from toolproof._messages import Message, ModelSettings
from toolproof.errors import ModelConnectionError
from toolproof.models import OpenAIChatModel, Timeout


async def _headers_then_nothing(request: web.Request) -> web.StreamResponse:
    await request.read()
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    await response.write(b'{"choices": [')
    await asyncio.sleep(3600)
    raise AssertionError("unreachable")


async def _sse_comments(request: web.Request) -> web.StreamResponse:
    await request.read()
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    while True:
        await response.write(b": waiting\n\n")
        await asyncio.sleep(0.05)


HANDLERS: dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]]] = {
    "silent": silent,
    "blank": blank_lines,
    "cut": _headers_then_nothing,
    "comments": _sse_comments,
}


@pytest.fixture
async def stalling_server() -> AsyncIterator[str]:
    async with serve_handlers(HANDLERS) as url:
        yield url


@pytest.mark.timeout(60)  # a stall that no timeout ends fails here
@pytest.mark.parametrize("name", sorted(HANDLERS))
@pytest.mark.parametrize("timeout", [0.5, Timeout(read=0.8, progress=0.5)])
async def test_a_stalled_request_ends_with_the_progress_timeout(
    stalling_server: str, name: str, timeout: float | Timeout, allow_requests: None
) -> None:
    model = OpenAIChatModel(
        "m", base_url=f"{stalling_server}/{name}/v1", timeout=timeout, retry=0, stream=True
    )
    started = time.monotonic()
    with pytest.raises(ModelConnectionError, match=r"for 0\.5 s: .*\(progress timeout\)"):
        await model.request([Message.user("hi")], [], ModelSettings())
    elapsed = time.monotonic() - started
    await model.aclose()
    assert elapsed >= 0.45, elapsed  # not before its 0.5 s


@pytest.mark.timeout(60)
async def test_a_shorter_read_timeout_still_fires_as_the_read_timeout(
    stalling_server: str, allow_requests: None
) -> None:
    model = OpenAIChatModel(
        "m",
        base_url=f"{stalling_server}/silent/v1",
        timeout=Timeout(read=0.3, progress=30),
        retry=0,
    )
    with pytest.raises(ModelConnectionError, match=r"within the read timeout \(0\.3 s\)"):
        await model.request([Message.user("hi")], [], ModelSettings())
    await model.aclose()
