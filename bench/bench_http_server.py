"""A local OpenAI-compatible server for bench_http.py, run in its own process.

Every request is answered after a fixed delay (50 ms by default): a tool call when the
last message is the user's, a final answer once a tool result has come back. It prints
its port on the first line of stdout and serves until killed.

    python bench/bench_http_server.py --delay 0.05

Benchmarks start it with :func:`start_server`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
from pathlib import Path

from aiohttp import web

TOOL_CALL = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": "bench-model",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {
                                "name": "multiply_numbers",
                                "arguments": '{"a": 12, "b": 8}',
                            },
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140},
    }
).encode()

ANSWER = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": "bench-model",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "12 x 8 = 96"},
            }
        ],
        "usage": {"prompt_tokens": 160, "completion_tokens": 10, "total_tokens": 170},
    }
).encode()


def as_stream(body: bytes) -> bytes:
    """The same completion as server-sent events: a content/tool-call chunk, then usage."""
    data = json.loads(body)
    choice = data["choices"][0]
    delta = dict(choice["message"])
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": i, **tc} for i, tc in enumerate(delta["tool_calls"])]
    head = {k: v for k, v in data.items() if k not in ("choices", "usage")}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        {**head, "choices": [], "usage": data["usage"]},
    ]
    events = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return events.encode()


STREAMED = {TOOL_CALL: as_stream(TOOL_CALL), ANSWER: as_stream(ANSWER)}


def build_app(delay: float) -> web.Application:
    async def completions(request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        last = body["messages"][-1]
        await asyncio.sleep(delay)
        reply = ANSWER if last["role"] == "tool" else TOOL_CALL
        if body.get("stream"):
            return web.Response(body=STREAMED[reply], content_type="text/event-stream")
        return web.Response(body=reply, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    return app


async def serve(delay: float, port: int) -> None:
    runner = web.AppRunner(build_app(delay), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    await site.start()
    server = site._server
    assert server is not None
    print(server.sockets[0].getsockname()[1], flush=True)  # type: ignore[attr-defined]
    await asyncio.Event().wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds before each answer")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.delay, args.port))
    return 0


def start_server(delay: float) -> tuple[subprocess.Popen[str], int]:
    """Start this server in its own process; return the process and its port."""
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--delay", str(delay)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.strip().isdigit():
        process.kill()
        raise SystemExit(f"the bench server did not start (printed {line!r})")
    return process, int(line)


if __name__ == "__main__":
    sys.exit(main())
