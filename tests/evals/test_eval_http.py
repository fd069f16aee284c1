"""Evals against a real OpenAI-compatible server on 127.0.0.1, through the real adapter.

Covers what only a real provider shows: retries after 503s, the response cache sparing the
server on a re-run, and rate limits spacing real requests.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import toolproof.models
from toolproof.evals import evaluate_async, load_suite
from toolproof.evals._ratelimit import RateLimiter


class Server:
    """Answers chat completions: a tool call first, then the tool's result as the answer."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.times: list[float] = []
        self.failures = 0  # answer this many requests with 503 first
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        self.times.append(time.monotonic())
        if self.failures:
            self.failures -= 1
            return web.json_response({"error": {"message": "overloaded"}}, status=503)
        last = body["messages"][-1]
        if last["role"] == "tool":
            message = {"role": "assistant", "content": f"The product is {last['content']}."}
        else:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{len(self.requests)}",
                        "type": "function",
                        "function": {"name": "multiply_numbers", "arguments": '{"a": 12, "b": 8}'},
                    }
                ],
            }
        return web.json_response(
            {
                "id": "x",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
            }
        )

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        runner = web.AppRunner(app)
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(runner.cleanup())
        self.loop.close()

    def __enter__(self) -> Server:
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    @property
    def model(self) -> str:
        return (
            f"openai-compatible:test-model?base_url=http://127.0.0.1:{self.port}/v1&max_retries=0"
        )


@pytest.fixture
def server() -> Iterator[Server]:
    with Server() as running, toolproof.models.override_allow_model_requests(True):
        yield running


def suite_file(tmp_path: Path, trials: int = 2) -> Path:
    path = tmp_path / "http.eval.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            suite: http
            agent: evalagents:build_agent
            trials: {trials}
            retries: 2
            cases:
              - name: multiply
                input: "12 times 8"
                expect:
                  calls: [{{name: multiply_numbers, arguments: {{a: 12, b: 8}}}}]
                  final_contains: "96"
            """
        )
    )
    return path


async def test_a_live_model_run_with_retries_and_the_cache(server: Server, tmp_path: Path) -> None:
    suite = load_suite(suite_file(tmp_path))
    cache = tmp_path / "cache"
    server.failures = 1  # the first request gets a 503: the trial is retried
    report = await evaluate_async(
        [suite], model=server.model, cache_dir=cache, retry_backoff=0.01, concurrency=1
    )
    [case] = report.cases
    assert case.verdict == "pass", case.reason
    assert [t.attempts for t in case.trials] == [2, 1]
    assert len(server.requests) == 5  # 503, then 2 requests per trial
    assert report.model_calls == 4
    assert server.requests[1]["model"] == "test-model"
    assert server.requests[1]["tools"][0]["function"]["name"] == "multiply_numbers"

    again = await evaluate_async([suite], model=server.model, cache_dir=cache)
    assert again.cases[0].verdict == "pass"
    assert (again.model_calls, again.cached_calls) == (0, 4)
    assert len(server.requests) == 5  # an unchanged case costs nothing on a re-run


async def test_rate_limits_space_real_requests(server: Server, tmp_path: Path) -> None:
    suite = load_suite(suite_file(tmp_path, trials=8))
    started = time.monotonic()
    report = await evaluate_async(
        [suite], model=server.model, cache=False, requests_per_minute=600, concurrency=8
    )
    assert report.cases[0].verdict == "pass"
    # 16 requests at 10 per second, one second booked ahead: the last waits 0.6 s or more.
    assert server.times[-1] - started >= 0.5
    assert len(server.requests) == 16


def test_rate_limiter_books_requests_and_tokens() -> None:
    now = [100.0]
    limiter = RateLimiter(requests_per_minute=60, tokens_per_minute=6000, clock=lambda: now[0])
    # 1 request/s and 100 tokens/s; up to one second of budget may be booked ahead.
    assert limiter.book(50) == 0.0
    assert limiter.book(50) == pytest.approx(1.0)  # requests booked until +2 s
    limiter.settle(50, 550)  # that request used 500 tokens more than booked
    assert limiter.book(10) == pytest.approx(5.1)  # tokens booked until +6.1 s
    now[0] += 20
    assert limiter.book(10) == 0.0
    assert limiter.waited_s == pytest.approx(6.1)
    fast = RateLimiter(requests_per_minute=600, clock=lambda: now[0])
    assert [fast.book(0) for _ in range(10)] == [0.0] * 10  # ten per second at once
    assert fast.book(0) == pytest.approx(0.1)
    for wrong in (0, -1.0, float("nan"), float("-inf")):  # NaN was once read as "no limit"
        with pytest.raises(ValueError, match="requests_per_minute must be positive"):
            RateLimiter(requests_per_minute=wrong)
        with pytest.raises(ValueError, match="tokens_per_minute must be positive"):
            RateLimiter(tokens_per_minute=wrong)


def test_report_json_is_valid_with_a_real_model(server: Server, tmp_path: Path) -> None:
    suite = load_suite(suite_file(tmp_path, trials=1))
    out = tmp_path / "r.json"
    report = asyncio.run(
        evaluate_async([suite], model=server.model, cache=False, reports=[f"json:{out}"])
    )
    data = json.loads(out.read_text())
    trace = data["cases"][0]["trials"][0]["traces"][0]
    assert trace["model"] == "openai-compatible:test-model"
    assert trace["usage"]["input_tokens"] == 100
    assert report.exit_code == 0
