"""A recorded conversation replays its user turns against a changed agent.

The recording is a trial of a JSON report (``{traces: [...]}``). While the agent does what
it did when recorded, the recorded user turns fit; once it departs, the replay stops with
"diverged at turn N", or hands the user over to the simulator.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import useragents
from test_simulated_users import SIMULATED, suite

from toolproof.evals import evaluate, load_suite


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    """Three user turns of a simulated conversation, as the JSON report holds them."""
    report_path = tmp_path / "report.json"
    user = useragents.user_model(["What is my booking?", "Is it on time?", "Cancel it please"])
    report = evaluate(
        [load_suite(suite(tmp_path, SIMULATED))],
        model=useragents.agent_model("XK-1"),
        user_model=user,
        reports=[f"json:{report_path}"],
        cache=False,
    )
    assert report.cases[0].verdict == "pass", report.cases[0].reason
    trial = json.loads(report_path.read_text())["cases"][0]["trials"][0]
    out = tmp_path / "conversation.json"
    out.write_text(json.dumps(trial))
    return out


def replay(tmp_path: Path, recording: Path, secret: str) -> Any:
    case_yaml = f"""\
    - name: replayed
      user:
        recorded: {recording.name}
        instructions: You want to know about your booking, then cancel it.
    """
    report = evaluate(
        [load_suite(suite(tmp_path, case_yaml))],
        model=useragents.agent_model(secret),
        keep_traces=True,
        cache=False,
    )
    [case] = report.cases
    return case


def test_the_same_agent_replays_every_recorded_user_turn(tmp_path: Path, recording: Path) -> None:
    case = replay(tmp_path, recording, "XK-1")
    assert case.verdict == "pass", case.reason
    traces = case.trials[0].traces or []
    assert [t.input for t in traces] == [
        "What is my booking?",
        "Is it on time?",
        "Cancel it please",
    ]
    assert {t.metadata["user"]["source"] for t in traces} == {"recorded"}
    assert not any(c.check == "recorded_user" for c in case.trials[0].checks)


def test_a_changed_agent_stops_the_replay_naming_the_turn(tmp_path: Path, recording: Path) -> None:
    case = replay(tmp_path, recording, "ZZ-9")
    assert case.verdict == "fail"
    assert "recorded_user (x1): diverged at turn 1: the recording called lookup(" in case.reason
    assert '"XK-1"' in case.reason and '"ZZ-9"' in case.reason
    traces = case.trials[0].traces or []
    assert len(traces) == 1  # no recorded turn was sent after the departure
    assert traces[-1].metadata["conversation"]["ended_by"] == "diverged"


def test_a_changed_agent_can_go_on_with_the_simulator(tmp_path: Path, recording: Path) -> None:
    user = useragents.user_model(["Please cancel it.", "###DONE###"])
    case_yaml = f"""\
    - name: replayed
      user:
        recorded: {recording.name}
        on_divergence: simulate
        instructions: You want to know about your booking, then cancel it.
      expect: {{tools_called: [cancel]}}
    """
    report = evaluate(
        [load_suite(suite(tmp_path, case_yaml))],
        model=useragents.agent_model("ZZ-9"),
        user_model=user,
        keep_traces=True,
        cache=False,
    )
    [case] = report.cases
    traces = case.trials[0].traces or []
    assert [t.metadata["user"]["source"] for t in traces] == ["recorded", "simulated"]
    assert traces[1].input == "Please cancel it."
    reasons = {c.check: c.reason for c in case.trials[0].checks}
    assert reasons["recorded_user"].startswith("diverged at turn 1")
    assert "the simulated user went on from there" in reasons["recorded_user"]
    assert case.verdict == "pass", case.reason
