"""``toolproof serve`` as a process: scripted, record through it, then replay the recording."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from _serving import serving

from toolproof.replay._store import TraceStore

openai = pytest.importorskip("openai")

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "lookup_user",
            "parameters": {"type": "object", "properties": {"email": {"type": "string"}}},
        },
    }
]
SCRIPT = """\
- {call: {name: lookup_user, arguments: {email: ada@example.com}}}
- "Ada's id is 7."
"""


def tool_loop(base_url: str, question: str, *, stream: bool = False) -> list[Any]:
    """The hand-written loop most teams have: answer every tool call until a final text."""
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    messages: list[Any] = [{"role": "user", "content": question}]
    for _ in range(4):
        if stream:
            text, calls = "", {}
            usage = None
            for chunk in client.chat.completions.create(
                model="m",
                messages=messages,
                tools=TOOLS,
                stream=True,
                stream_options={"include_usage": True},
            ):
                usage = chunk.usage or usage
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                text += delta.content or ""
                for piece in delta.tool_calls or []:
                    slot = calls.setdefault(piece.index, {"id": piece.id, "name": "", "args": ""})
                    slot["name"] += piece.function.name or ""
                    slot["args"] += piece.function.arguments or ""
            assert usage is not None and usage.total_tokens > 0
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["args"]},
                    }
                    for c in calls.values()
                ]
        else:
            reply = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
            message = reply.choices[0].message.model_dump(exclude_none=True)
        messages.append(message)
        if not message.get("tool_calls"):
            return messages
        for call in message["tool_calls"]:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": '{"id": 7}'})
    raise AssertionError("no final answer")


def test_record_through_the_server_then_replay_without_the_upstream(tmp_path: Path) -> None:
    (tmp_path / "script.yaml").write_text(SCRIPT)
    store = tmp_path / "traces.db"
    question = "What is the id of ada@example.com?"
    with serving("--mode", "scripted", "--script", "script.yaml", cwd=tmp_path) as upstream:
        model = f"openai-compatible:up?base_url={upstream}"
        with serving(
            "--mode", "record", "--model", model, "--store", str(store), cwd=tmp_path
        ) as recording:
            recorded = tool_loop(recording, question)
            streamed = tool_loop(recording, question, stream=True)
    assert recorded[-1]["content"] == streamed[-1]["content"] == "Ada's id is 7."
    with TraceStore(store) as opened:
        traces = list(opened.query(newest_first=False))
    assert len(traces) == 2
    trace = traces[0]
    assert trace.tool_names == ["lookup_user"]
    assert trace.tool_results[0].call_id == trace.tool_calls[0].id
    assert trace.output == "Ada's id is 7." and trace.stop_reason == "final"
    # Redacted as the recorder redacts: the e-mail address never reaches the store.
    assert "ada@example.com" not in trace.to_json()

    # Replay answers the same conversation with the upstream gone.
    with serving("--mode", "replay", "--store", str(store), cwd=tmp_path) as replaying:
        replayed = tool_loop(replaying, question)
        assert replayed[-1]["content"] == "Ada's id is 7."
        assert replayed[1]["tool_calls"][0]["function"]["name"] == "lookup_user"
        client = openai.OpenAI(base_url=replaying, api_key="sk-test", max_retries=0)
        with pytest.raises(openai.NotFoundError) as caught:
            client.chat.completions.create(
                model="m",
                messages=[
                    {"role": "user", "content": "What is the id of bob@example.com, the new one?"}
                ],
                tools=TOOLS,
            )
    error = caught.value.body
    assert error["type"] == "toolproof_no_recording"
    shown = json.dumps(error)
    assert "bob@example.com" not in shown  # the request is shown masked
    assert error["request"][0]["role"] == "user"
    assert error["closest"]["similarity"] > 0.5
    assert "What is the id of" in error["closest"]["request"][0]["content"]
    assert error["closest"]["answer"]["tool_calls"][0]["name"] == "lookup_user"


def test_a_recording_server_stopped_with_sigterm_writes_what_it_recorded(tmp_path: Path) -> None:
    # Containers and service managers stop a server with SIGTERM, not Ctrl-C: it stops as
    # cleanly, and the recorder writes every conversation it was handed.
    (tmp_path / "script.yaml").write_text(SCRIPT)
    store = tmp_path / "traces.db"
    with serving("--mode", "scripted", "--script", "script.yaml", cwd=tmp_path) as upstream:
        model = f"openai-compatible:up?base_url={upstream}"
        with serving(
            "--mode",
            "record",
            "--model",
            model,
            "--store",
            str(store),
            cwd=tmp_path,
            stop=signal.SIGTERM,
        ) as recording:
            for n in range(5):
                tool_loop(recording, f"What is the id of user {n}?")
    with TraceStore(store) as opened:
        assert opened.count() == 5
