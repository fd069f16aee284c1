"""The live path end to end: a live_model test talking to a real local HTTP server.

An OpenAI-compatible server on 127.0.0.1 stands in for DeepSeek (``DEEPSEEK_BASE_URL``), so
the marker, the key check, the ``live_model`` fixture, the real adapter, the request switch
and the grounding assertion all run for real, without the internet or a real key.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class _Completions(BaseHTTPRequestHandler):
    answer = "12 x 8 = 96."
    requests: list[dict] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers["Authorization"]})
        last = body["messages"][-1]
        if last["role"] == "tool":
            message = {"role": "assistant", "content": type(self).answer}
            finish = "stop"
        else:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_live_1",
                        "type": "function",
                        "function": {"name": "multiply_numbers", "arguments": '{"a": 12, "b": 8}'},
                    }
                ],
            }
            finish = "tool_calls"
        payload = json.dumps(
            {
                "id": "cmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def fake_deepseek(monkeypatch) -> Iterator[type[_Completions]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Completions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Completions.requests = []
    _Completions.answer = "12 x 8 = 96."
    monkeypatch.setenv("DEEPSEEK_BASE_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-local-test")
    try:
        yield _Completions
    finally:
        server.shutdown()
        server.server_close()


LIVE_TEST = '''
import pytest
from toolproof import Agent, tool
from toolproof.testing import assert_grounded, assert_tool_called

@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: First factor.
        b: Second factor.
    """
    return a * b

@pytest.mark.live_model("deepseek:deepseek-chat")
def test_route(live_model, run_agent):
    result = run_agent(Agent(live_model, [multiply_numbers]), "12 x 8?")
    assert_tool_called(result, "multiply_numbers", a=12, b=8)
    assert result.trace.tool_results[0].value == 96.0
    assert_grounded(result)
'''


def test_live_test_runs_against_the_model_server(inner, fake_deepseek):
    inner.makepyfile(LIVE_TEST)
    inner.runpytest("--toolproof-live").assert_outcomes(passed=1)
    assert [r["path"] for r in fake_deepseek.requests] == ["/chat/completions"] * 2
    assert fake_deepseek.requests[0]["auth"] == "Bearer sk-local-test"


def test_live_answer_with_an_invented_id_fails_the_grounding_check(inner, fake_deepseek):
    fake_deepseek.answer = "12 x 8 = 96. I can also look up employee E1001 for you."
    inner.makepyfile(LIVE_TEST)
    result = inner.runpytest("--toolproof-live")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *AssertionError: the final answer mentions 'E1001', found in neither the input "
            "nor any tool result:",
            "*- toolproof traces -*",
            "trace * model=deepseek:deepseek-chat  stop=final",
        ]
    )


def test_without_the_switch_no_request_reaches_the_server(inner, fake_deepseek):
    inner.makepyfile(LIVE_TEST)
    inner.runpytest().assert_outcomes(skipped=1)
    assert fake_deepseek.requests == []
