"""A model upgrade end to end: record production, upgrade model and tools, replay fails the gate,
and ``schema diff --store`` points at the cause.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from examples.ops_agent.demo import record
from examples.ops_agent.models import new_model, old_model
from toolproof.cli import main
from toolproof.replay import TraceFilter, TraceStore


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "traces.db"
    record(path, old_model, tags=["prod"], count=40)
    record(path, new_model, tags=["canary"], count=12)
    return path


def test_recorded_production_runs_hold_what_replay_needs(store: Path) -> None:
    with TraceStore(store) as traces:
        assert traces.count(TraceFilter(tags=["prod"])) == 40
        assert traces.count(TraceFilter(tags=["canary"])) == 12
        trace = next(iter(traces.query(TraceFilter(tags=["prod"], tools=["query_users"]))))
    assert trace.system_prompt_hash
    assert trace.model == "ops-model-v1"
    assert {t.name for t in trace.tools} == {"query_users", "get_service_status"}
    assert all(t.schema_hash for t in trace.tools)
    call, result = next(iter(trace.calls_and_results()))
    assert call.name == "query_users"
    assert set(call.arguments) == {"user_id"}
    assert result is not None and result.ok
    assert trace.output and trace.output.startswith(f"User {call.arguments['user_id']} is ")


def test_old_traffic_replays_cleanly_through_the_strict_tool(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "replay", "--store", str(store), "--tag", "prod", "--mode", "tools",
            "--agent", "examples.ops_agent.agent:build_agent_v2", "--gate", "0.05",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "replay (tools): 40 samples: 40 pass, 0 warn, 0 fail" in out


def test_the_model_upgrade_alone_goes_to_the_spot_check_list(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """New model, old lenient tool: `options` is accepted and dropped, so only warns."""
    code = main(
        [
            "replay", "--store", str(store), "--tag", "prod", "--mode", "model",
            "--agent", "examples.ops_agent.agent:build_agent",
            "--model", "examples.ops_agent.models:new_model", "--gate", "0.05",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "40 samples: 33 pass, 7 warn, 0 fail" in out
    assert "query_users: new argument 'options' (the schema accepts it)" in out


def test_model_and_tool_upgrade_fail_the_gate(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_path = tmp_path / "replay.json"
    junit_path = tmp_path / "replay.xml"
    code = main(
        [
            "replay", "--store", str(store), "--tag", "prod", "--mode", "model",
            "--agent", "examples.ops_agent.agent:build_agent_v2",
            "--model", "examples.ops_agent.models:new_model", "--gate", "0.05",
            "--report", f"json:{report_path}", "--report", f"junit:{junit_path}",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    assert "40 samples: 33 pass, 0 warn, 7 fail; failure rate 17.5%; gate 5.0%: FAILED" in out
    report = json.loads(report_path.read_text())
    gate = report["gate"]
    assert (gate["threshold"], gate["rate"], gate["passed"]) == (0.05, 0.175, False)
    assert gate["bound"] == "low" and gate["interval"]["low"] > 0.05  # decided by the low bound
    failed = [r for r in report["results"] if r["grade"] == "fail"]
    assert len(failed) == 7
    for result in failed:
        assert "account details" in result["input"]
        schema = next(f for f in result["findings"] if f["check"] == "schema")
        assert schema["message"] == (
            "today's schema rejects the call: Invalid arguments for tool 'query_users': "
            "unexpected argument 'options'. This tool accepts: user_id."
        )
        assert schema["recorded"] == 'query_users({"user_id": "***"})'
        assert schema["new"] == 'query_users({"options": {"format": "json"}, "user_id": "***"})'
    suite = ET.parse(junit_path).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "40"
    assert suite.get("failures") == "7"


def test_schema_diff_with_the_store_points_at_the_cause(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "schema", "diff", "examples.ops_agent.tools", "examples.ops_agent.tools_v2",
            "--store", str(store), "--examples", "1",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    assert "BREAKING   query_users: extra fields now forbidden" in out
    # the canary's account-details calls carried `options`; the v2 schema rejects them
    assert "2 of 52 would be rejected by the new schemas" in out
    assert "query_users: 2 of 44 rejected" in out
    assert (
        'query_users({"options": {"format": "json"}, "user_id": "***"}): Additional '
        "properties are not allowed ('options' was unexpected)" in out
    )
    assert "get_service_status: 0 of 8 rejected" in out
