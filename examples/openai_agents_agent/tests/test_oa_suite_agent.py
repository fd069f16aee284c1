"""The SDK agent as a toolproof agent: suites from the CLI, run_agent, errors, sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from examples.openai_agents_agent.agent import TOOLS, build_suite_agent
from toolproof import Toolset, tool
from toolproof.errors import ToolCrashed, UnmockedToolCall
from toolproof.testing import Fault, ScriptedModel, assert_tool_called, call

ROOT = Path(__file__).resolve().parents[3]


def test_the_suite_passes_from_the_command_line(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    env.pop("OPENAI_API_KEY", None)
    done = subprocess.run(
        [
            sys.executable, "-m", "toolproof", "run",
            str(ROOT / "examples" / "openai_agents_agent" / "support.eval.yaml"),
            "--model", "scripted", "--report", f"json:{report}",
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "trace export" not in done.stdout + done.stderr  # the SDK's exporter stayed off
    cases = json.loads(report.read_text())["cases"]
    assert {c["name"]: c["verdict"] for c in cases} == {
        "order_status": "pass",
        "refund_after_lookup": "pass",
        "unknown_order": "pass",
    }
    (refund,) = [c for c in cases if c["name"] == "refund_after_lookup"]
    results = [r for s in refund["trials"][0]["traces"][0]["steps"] for r in s["tool_results"]]
    assert [(r["name"], r["mocked"]) for r in results] == [
        ("get_order", False),
        ("refund_order", True),
    ]


def test_run_agent_with_faults(run_agent) -> None:
    result = run_agent(
        build_suite_agent(ScriptedModel([])),
        "Where is A-1?",
        script=[call("get_order", order_id="A-1"), "The order service is down."],
        faults=[Fault.raises("get_order", KeyError("service down"))],
    )
    (failed,) = result.trace.tool_results
    assert (failed.status, failed.error_type) == ("error", "KeyError")
    assert result.output == "The order service is down."


def test_a_refused_real_call_stops_the_run_with_its_trace(run_agent) -> None:
    @tool(side_effects=True)
    def refund_order(order_id: str, amount: float) -> str:
        """Refund an order.

        Args:
            order_id: The order id.
            amount: The amount.
        """
        raise AssertionError("must not run")

    agent = build_suite_agent(ScriptedModel([]), Toolset([TOOLS[0], refund_order]))
    with pytest.raises(UnmockedToolCall) as caught:
        run_agent(agent, "Refund A-1", script=[call("refund_order", order_id="A-1", amount=1.0)],
                  mode="mock")  # fmt: skip
    trace = caught.value.trace
    assert trace is not None and trace.stop_reason == "error"
    assert trace.error is not None and trace.error.tool_name == "refund_order"


def test_a_tool_bug_is_a_tool_crash(run_agent) -> None:
    with pytest.raises(ToolCrashed) as caught:
        run_agent(
            build_suite_agent(ScriptedModel([])),
            "Where is A-1?",
            script=[call("get_order", order_id="A-1"), "never"],
            faults=[Fault.raises("get_order", RuntimeError("bug"))],
        )
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert caught.value.trace is not None and caught.value.trace.tool_names == ["get_order"]


def test_too_many_turns_is_max_steps_not_an_error() -> None:
    script = [call("get_order", order_id="A-1")] * 3
    agent = build_suite_agent(ScriptedModel(script))
    agent.max_steps = 2
    result = agent.run_sync("Loop forever")
    assert result.stop_reason == "max_steps" and result.output is None


def test_a_session_sends_the_earlier_turns(run_agent) -> None:
    model = ScriptedModel([call("get_order", order_id="A-2"), "A-2 shipped.", "Yes, A-2."])
    session = build_suite_agent(model).session()
    session.run_sync("Where is A-2?")
    session.run_sync("Which order was that?")
    roles = [m.role for m in model.requests[2].messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert_tool_called(session.traces[0], "get_order", order_id="A-2")
    assert session.traces[1].tool_calls == []
