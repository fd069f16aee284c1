"""A model server that sends numbers where text belongs, or negative token counts: the run's
trace is still written so that it reads back, and the CLI reads it (exit 0, no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _openai_server import FakeOpenAIServer, Reply

from toolproof import Agent, tool
from toolproof.errors import ModelFailed
from toolproof.models.openai import OpenAIChatModel
from toolproof.replay import Recorder, Redactor, TraceStore

ROOT = Path(__file__).resolve().parents[2]


@tool
def lookup(user_id: int) -> dict[str, int]:
    """Look a user up.

    Args:
        user_id: The user.
    """
    return {"user_id": user_id}


def completion(message: dict[str, object], **fields: object) -> Reply:
    body = {
        "id": 99,
        "model": 123,
        "choices": [{"index": 0, "message": message, "finish_reason": fields.pop("finish", 7)}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        **fields,
    }
    return Reply(json=body)


def toolproof_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_numbers_for_names_and_ids_are_recorded_as_text_and_read_back(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    call = {
        "id": 5,
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"user_id": 1}'},
    }
    server.queue(
        completion({"role": "assistant", "content": None, "tool_calls": [call]}),
        completion({"role": "assistant", "content": "User 1."}),
    )
    db = tmp_path / "traces.db"
    recorder = Recorder(db, redactor=Redactor.none())
    agent = Agent(OpenAIChatModel("m", base_url=server.url + "/v1"), [lookup], recorder=recorder)
    result = agent.run_sync("who is 1?")
    assert recorder.close()
    trace = result.trace
    assert [step.model_name for step in trace.steps] == ["123", "123"]
    assert trace.tool_calls[0].id == trace.tool_results[0].call_id
    with TraceStore(db) as store:
        assert store.get(trace.id) == trace
    shown = toolproof_cli("traces", "show", trace.id, "--store", str(db))
    assert shown.returncode == 0, shown.stderr
    assert "Traceback" not in shown.stderr and "lookup(user_id=1)" in shown.stdout


def test_negative_token_counts_stop_the_run_with_a_model_error_and_keep_its_trace(
    server: FakeOpenAIServer,
) -> None:
    server.queue(
        completion(
            {"role": "assistant", "content": "hi"},
            usage={"prompt_tokens": -10, "completion_tokens": 5},
        )
    )
    agent = Agent(OpenAIChatModel("m", base_url=server.url + "/v1"), [lookup])
    with pytest.raises(ModelFailed, match="input_tokens must not be negative, got -10") as info:
        agent.run_sync("hi")
    trace = info.value.trace
    assert trace is not None and trace.stop_reason == "error"
    assert type(trace).from_json(trace.to_json()) == trace
