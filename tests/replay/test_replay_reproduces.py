"""Replaying a recording against itself passes: every sample, both modes (τ-bench's 200 runs).

A recording replayed with its own model outputs (model mode, ``model="recorded"``) and its
own tool schemas (tools mode) must reproduce itself; anything else is a false alarm the
gate would raise on every pull request.
"""

from __future__ import annotations

from typing import Any

import pytest

from _shared import shared_path
from toolproof import Agent, Tool, tool
from toolproof._trace import ToolInfo, Trace
from toolproof.replay import ReplayRules, replay
from toolproof.replay._import import load_tool_infos, read_trace_file
from toolproof.testing import ScriptedModel

# The default rules, grounding included: what the recorded answer states is the baseline.
RULES = ReplayRules()


@pytest.fixture(scope="module")
def tau() -> tuple[list[ToolInfo], list[Trace]]:
    folder = shared_path("datasets", "tau-bench-airline-gpt4o")
    infos = load_tool_infos(folder / "tools.json")
    traces = list(read_trace_file(folder / "gpt-4o-airline.json", tools=infos, model="gpt-4o"))
    return infos, traces


def schema_tool(info: ToolInfo) -> Tool[..., Any]:
    """A Python tool with the schema's parameter names (its real code must never run)."""
    properties = list(info.parameters.get("properties", {}))
    required = set(info.parameters.get("required", []))
    ordered = [p for p in properties if p in required] + [
        p for p in properties if p not in required
    ]
    signature = ", ".join(f"{p}: Any" if p in required else f"{p}: Any = None" for p in ordered)
    args = "".join(f"        {p}: The {p}.\n" for p in ordered)
    source = (
        f"def {info.name}({signature}) -> Any:\n"
        f'    """Stands in for {info.name}.\n\n    Args:\n{args}    """\n'
        "    raise AssertionError('a replay must answer from the recording')\n"
    )
    namespace: dict[str, Any] = {"Any": Any}
    exec(source, namespace)
    return tool(namespace[info.name])


def test_the_tau_bench_import_keeps_turns_that_ended_on_a_tool_call_unanswered(
    tau: tuple[list[ToolInfo], list[Trace]],
) -> None:
    _, traces = tau
    ended = [t for t in traces if t.output is None]
    assert len(ended) == 51  # 48 of them hand the customer over to a human agent
    assert {t.stop_reason for t in ended} == {"cancelled"}
    assert all(t.steps[-1].response.tool_calls for t in ended)
    assert all(t.stop_reason == "final" for t in traces if t.output is not None)


@pytest.mark.timeout(120)  # about half a second on an idle machine
def test_model_mode_replays_every_recording_against_itself(
    tau: tuple[list[ToolInfo], list[Trace]],
) -> None:
    infos, traces = tau
    agent = Agent(
        ScriptedModel([]),
        tools=[schema_tool(i) for i in infos],
        system_prompt=traces[0].system_prompt,  # the same policy the recording ran with
        max_steps=100,
        # τ-bench's agent had no repeat limit: one recording retries a booking five times
        # between identical `think` calls (a cycle toolproof's default would stop at three).
        max_repeated_calls=None,
    )
    report = replay(traces, mode="model", agent=agent, model="recorded", rules=RULES)
    assert len(report.samples) == 1341
    failing = [(s.trace_id, s.findings) for s in report.samples if s.grade != "pass"]
    assert failing == []
    assert report.exit_code == 0


@pytest.mark.timeout(120)
def test_tools_mode_replays_every_recording_against_its_own_schemas(
    tau: tuple[list[ToolInfo], list[Trace]],
) -> None:
    infos, traces = tau
    report = replay(traces, mode="tools", tools=infos, rules=RULES)
    assert report.counts == {"pass": 1341, "warn": 0, "fail": 0, "error": 0}
    assert report.exit_code == 0


def test_a_cut_recording_still_fails_when_today_calls_differently(
    tau: tuple[list[ToolInfo], list[Trace]],
) -> None:
    # Stopping where the recording stops must not hide a real change: a model that now
    # answers instead of handing over is reported.
    infos, traces = tau
    ended = next(t for t in traces if t.output is None and len(t.steps) == 1)
    agent = Agent(ScriptedModel([]), tools=[schema_tool(i) for i in infos])
    today = ScriptedModel(["I can help you with that myself."])
    report = replay([ended], mode="model", agent=agent, model=today, rules=RULES)
    [sample] = report.samples
    assert sample.grade == "fail"
    assert [f.check for f in sample.findings] == ["tool_missing"]
    assert sample.findings[0].message.startswith(
        "tool 'transfer_to_human_agents' was called 1 time"
    )
