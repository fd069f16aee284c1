"""A real aiohttp server on 127.0.0.1 whose routes run the handlers a test gives it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serve_handlers(handlers: Mapping[str, Handler]) -> AsyncIterator[str]:
    """Serve ``POST /NAME/v1/chat/completions`` with ``handlers[NAME]``; yields the base URL."""
    app = web.Application()
    for name, handler in handlers.items():
        app.router.add_post(f"/{name}/v1/chat/completions", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def silent(request: web.Request) -> web.StreamResponse:
    """Reads the request, then answers nothing, not even headers."""
    await request.read()
    await asyncio.sleep(3600)
    raise AssertionError("unreachable")


async def blank_lines(request: web.Request) -> web.StreamResponse:
    """200 application/json, then blank lines forever (how DeepSeek waits, minus the end)."""
    await request.read()
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    while True:
        await response.write(b"\n")
        await asyncio.sleep(0.05)
