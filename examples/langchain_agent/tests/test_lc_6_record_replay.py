"""Runs of the LangChain agent are recorded and replayed like any toolproof agent's."""

from __future__ import annotations

from pathlib import Path

from examples.langchain_agent.agent import build_agent
from toolproof.replay import Recorder, TraceStore, replay
from toolproof.testing import ScriptedModel, call


def test_a_recorded_run_replays_through_todays_agent(tmp_path: Path) -> None:
    path = str(tmp_path / "traces.db")
    recorder = Recorder(path)
    agent = build_agent(ScriptedModel([call("multiply_numbers", a=12, b=8), "12 times 8 is 96."]))
    agent.recorder = recorder
    result = agent.run_sync("What is 12 times 8?")
    assert recorder.close()
    store = TraceStore(path)
    try:
        assert store.get(result.trace.id).tool_names == ["multiply_numbers"]
    finally:
        store.close()

    report = replay(path, mode="model", agent=build_agent, model="recorded")
    assert report.exit_code == 0, report.render_text()
    tools_report = replay(path, mode="tools", agent=build_agent)
    assert tools_report.exit_code == 0, tools_report.render_text()
