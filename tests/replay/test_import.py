"""Importing traces: toolproof JSONL and OpenAI-format conversations (the τ-bench runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from replay_helpers import user_trace

from _shared import shared_path
from toolproof import Trace, UserError
from toolproof._trace import stable_hash
from toolproof.replay._import import conversation_to_traces, load_tool_infos, read_trace_file


@pytest.fixture(scope="module")
def tau() -> Path:
    return shared_path("datasets", "tau-bench-airline-gpt4o")


def test_tau_bench_runs_become_one_trace_per_answered_turn(tau: Path) -> None:
    runs = json.loads((tau / "gpt-4o-airline.json").read_text())
    tools = load_tool_infos(tau / "tools.json")
    traces = list(read_trace_file(tau / "gpt-4o-airline.json", tools=tools, model="openai:gpt-4o"))

    answered_turns = 0
    for run in runs:
        traj = run["traj"]
        users = [i for i, m in enumerate(traj) if m["role"] == "user"]
        ends = [*users[1:], len(traj)]
        answered_turns += sum(1 for start, end in zip(users, ends, strict=True) if end > start + 1)
    assert len(traces) == answered_turns == 1341
    assert len({t.id for t in traces}) == len(traces)
    # every tool call of the dataset is in exactly one trace's steps
    assert sum(len(t.tool_calls) for t in traces) == 1164
    assert {c.name for t in traces for c in t.tool_calls} <= {tool.name for tool in tools}
    assert all(not c.arguments_error for t in traces for c in t.tool_calls)

    first_run = [
        t for t in traces if t.metadata["conversation"] == traces[0].metadata["conversation"]
    ]
    assert [t.metadata["turn"] for t in first_run] == list(range(1, len(first_run) + 1))
    assert first_run[0].input == runs[0]["traj"][1]["content"]
    assert first_run[0].history == []
    assert first_run[0].system_prompt == runs[0]["traj"][0]["content"]
    assert first_run[0].system_prompt_hash == stable_hash(runs[0]["traj"][0]["content"])
    assert first_run[1].history[0].content == runs[0]["traj"][1]["content"]
    assert first_run[0].metadata["task_id"] == 0
    assert first_run[0].tags == ["reward:0"]
    assert sum(1 for t in traces if "reward:1" in t.tags) > 0

    with_calls = next(t for t in first_run if t.tool_calls)
    call, result = next(iter(with_calls.calls_and_results()))
    assert result is not None
    assert result.name == call.name
    assert isinstance(result.value, (dict, list))
    assert json.loads(result.content) == result.value
    # schema hashes are computed as for @tool
    info = next(tool for tool in tools if tool.name == "get_user_details")
    assert info.schema_hash == stable_hash(
        {"name": info.name, "description": info.description, "parameters": info.parameters}
    )
    # runs that end on a transfer to a human have no final answer
    transfers = [
        t for t in traces if t.tool_names and t.tool_names[-1] == "transfer_to_human_agents"
    ]
    assert transfers
    assert all(
        t.output is None and t.stop_detail for t in transfers if not t.steps[-1].response.content
    )


def test_last_turn_only(tau: Path) -> None:
    every = list(read_trace_file(tau / "gpt-4o-airline.json"))
    last_turn: dict[str, int] = {}
    for trace in every:
        key = trace.metadata["conversation"]
        last_turn[key] = max(last_turn.get(key, 0), trace.metadata["turn"])
    traces = list(read_trace_file(tau / "gpt-4o-airline.json", turns="last"))
    assert len(traces) == 200
    assert {t.metadata["conversation"]: t.metadata["turn"] for t in traces} == last_turn
    for trace in traces:
        same = next(t for t in every if t.id == trace.id)
        assert same == trace  # the same trace as in the all-turns import


def test_toolproof_jsonl_round_trip(tmp_path: Path) -> None:
    traces = [user_trace(1), user_trace(2)]
    path = tmp_path / "export.jsonl"
    path.write_text("".join(t.to_json() + "\n" for t in traces))
    assert list(read_trace_file(path)) == traces


def test_bare_message_list_and_jsonl_conversations(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+2?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": {"a": 2, "b": 2}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
        {"role": "assistant", "content": "4"},
    ]
    bare = tmp_path / "one.json"
    bare.write_text(json.dumps(messages))
    (trace,) = read_trace_file(bare, model="m")
    assert trace.input == "2+2?"
    assert trace.output == "4"
    assert trace.tool_calls[0].arguments == {"a": 2, "b": 2}
    assert trace.tool_results[0].name == "add"
    assert trace.tool_results[0].value == 4
    lines = tmp_path / "many.jsonl"
    lines.write_text(
        "\n".join(json.dumps({"messages": messages, "model": "gpt-x", "id": n}) for n in range(3))
    )
    found = list(read_trace_file(lines))
    assert [t.model for t in found] == ["gpt-x"] * 3
    assert [t.metadata["id"] for t in found] == [0, 1, 2]


def test_bad_files_name_the_record(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"messages": []}\n{"nothing": 1}\n')
    with pytest.raises(UserError) as info:
        list(read_trace_file(path))
    assert str(info.value) == (
        f"{path}:2: neither a toolproof trace nor a conversation (expected a list of messages "
        "under one of: traj, messages, conversation)"
    )
    with pytest.raises(UserError, match=r"messages\[0\]: unknown role 'robot'"):
        conversation_to_traces([{"role": "robot", "content": "hi"}])
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(UserError, match="invalid JSON"):
        list(read_trace_file(broken))
    with pytest.raises(UserError, match="cannot read"):
        list(read_trace_file(tmp_path / "missing.json"))


def test_ids_are_deterministic_so_reimports_are_idempotent(tau: Path) -> None:
    first = [t.id for t in read_trace_file(tau / "gpt-4o-airline.json")]
    again = [t.id for t in read_trace_file(tau / "gpt-4o-airline.json")]
    assert first == again
    assert isinstance(
        Trace.from_json(next(iter(read_trace_file(tau / "gpt-4o-airline.json"))).to_json()), Trace
    )


def test_records_with_equal_messages_stay_separate_traces(tau: Path, tmp_path: Path) -> None:
    """Three τ-bench trials of one task that went the same way: three traces, not one."""
    run = json.loads((tau / "gpt-4o-airline.json").read_text())[0]
    trials = [{**run, "trial": n, "reward": float(n == 1)} for n in range(3)]
    path = tmp_path / "trials.json"
    path.write_text(json.dumps(trials))
    traces = list(read_trace_file(path, turns="last"))
    assert len({t.id for t in traces}) == 3
    assert [(t.metadata["trial"], t.tags) for t in traces] == [
        (0, ["reward:0"]),
        (1, ["reward:1"]),
        (2, ["reward:0"]),
    ]
    # the same file again gives the same ids; a copy elsewhere too
    copy = tmp_path / "copy.json"
    copy.write_text(path.read_text())
    assert [t.id for t in read_trace_file(copy, turns="last")] == [t.id for t in traces]
    # even records equal in every field are told apart by their place in the file
    same = tmp_path / "same.jsonl"
    same.write_text("\n".join(json.dumps(run) for _ in range(3)))
    assert len({t.id for t in read_trace_file(same, turns="last")}) == 3


def test_numbers_for_ids_and_names_are_read_as_text(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "2+2?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": 5, "function": {"name": "add", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": 5, "name": 7, "content": "4"},
        {"role": "assistant", "content": "4"},
    ]
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"messages": messages, "model": "m", "big": 10**30}))
    (trace,) = read_trace_file(path)
    assert trace.tool_calls[0].id == trace.tool_results[0].call_id == "5"
    assert trace.tool_results[0].name == "7"
    assert Trace.from_json(trace.to_json()) == trace


def test_cli_import_twice_is_idempotent_and_keeps_trials_apart(tau: Path, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    run = json.loads((tau / "gpt-4o-airline.json").read_text())[0]
    path = tmp_path / "trials.json"
    path.write_text(json.dumps([{**run, "trial": n} for n in range(3)]))
    db = tmp_path / "traces.db"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root / "src")}

    def toolproof(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "toolproof", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    first = toolproof("traces", "import", str(path), "--turns", "last", "--store", str(db))
    assert first.returncode == 0 and "Traceback" not in first.stderr, first.stderr
    assert first.stdout.startswith("imported 3 of 3 traces")
    again = toolproof("traces", "import", str(path), "--turns", "last", "--store", str(db))
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("imported 0 of 3 traces") and "3 already present" in again.stdout
    listing = toolproof("traces", "list", "--json", "--store", str(db))
    assert listing.returncode == 0 and listing.stderr == ""
    assert len(listing.stdout.splitlines()) == 3
