"""The airline agent in conversation with its users.

Offline (always): the scripted users of ``airline.eval.yaml`` against the scripted agent,
through the CLI and the Python API. Live (``--toolproof-live`` with ``DEEPSEEK_API_KEY``):
``airline.live.eval.yaml``, where a model plays each passenger::

    DEEPSEEK_API_KEY=... pytest examples/airline --toolproof-live -k live
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolproof.evals import evaluate

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parents[1]


def test_the_scripted_conversations_pass_from_the_cli(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolproof",
            "run",
            str(HERE / "airline.eval.yaml"),
            "--model",
            "scripted",
            "--report",
            f"json:{report}",
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(report.read_text())
    assert data["summary"]["trials_passed"] == 4
    by_case = {c["name"]: c["trials"][0]["traces"] for c in data["cases"]}
    # The user's turns are in the traces, with who wrote them and how the conversation ended.
    change = by_case["change_flight"]
    assert [t["input"] for t in change] == [
        "Hi, can I move to an earlier flight today?",
        "Sure, it's ABC123.",
        "Yes, please move me to AC099.",
    ]
    assert change[-1]["metadata"]["conversation"] == {"ended_by": "user", "turns": 3}
    cancel = by_case["cancel_with_function_user"]
    assert [t["metadata"]["user"]["source"] for t in cancel] == ["function"] * 3
    assert cancel[1]["input"] == "It's QRS789."  # given only once the agent asked
    transfer = by_case["lost_luggage_transfer"]
    assert len(transfer) == 1  # the transfer ended it: the second turn was never sent
    assert transfer[-1]["metadata"]["conversation"]["ended_by"] == "agent_ended"


def test_a_wrong_agent_fails_the_conversation_checks(tmp_path: Path) -> None:
    """The same users with an agent that changes the flight without asking: caught."""
    suite = (HERE / "airline.eval.yaml").read_text(encoding="utf-8")
    hasty = suite.replace(
        '      - "Of course. What is your booking code?"\n',
        "      - call: {name: change_flight, arguments: {code: ABC123, flight: AC099}}\n"
        '      - "Moved you to AC099."\n',
        1,
    )
    path = tmp_path / "hasty.eval.yaml"
    path.write_text(hasty, encoding="utf-8")
    report = evaluate([path], model="scripted", cache=False)
    change = next(c for c in report.cases if c.case.name == "change_flight")
    assert change.verdict == "fail"
    assert "tools_not_called@turn1" in change.reason
    assert "tools_called" in change.reason  # two changes where one was expected


MODEL = "deepseek:deepseek-chat"


@pytest.mark.live_model(MODEL)
def test_live_simulated_passengers(live_model: object) -> None:
    report = evaluate([HERE / "airline.live.eval.yaml"], trials=1, cache=False)
    for case in report.cases:
        assert case.verdict in ("pass", "fail", "error"), case.reason
        for trial in case.trials:
            assert trial.status != "error", trial.error
    assert report.count("pass") >= 1, [c.reason for c in report.cases]
