"""Mock means mock: a tool with side effects never runs its real code in a mocked run.

Each test tries to make a real side effect happen through one entry point (the Python API,
``mock_tools``, an eval suite, ``toolproof run`` as a subprocess, replay in model and tools
mode from Python and from the CLI) and checks the detector: the real implementations in
``mockagents`` record everything they do, and the record must stay empty unless the test
named the tool as a real tool.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mockagents
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mockagents import SIDE_EFFECTS, TOOLS, build_agent, own_toolset

from toolproof import Agent, Toolset
from toolproof.cli import main
from toolproof.errors import ConfigError, MockBypassed, UnmockedToolCall, UserError
from toolproof.evals import evaluate, load_suite
from toolproof.evals._report import junit_suites, markdown_report, print_summary
from toolproof.replay import TraceStore, replay
from toolproof.testing import Fault, ScriptedModel, call, mock_tools

HERE = Path(__file__).resolve().parent
REFUND = call("refund", order_id="ZZZ", amount=999.0)
SLACK = call("send_slack", text="hi")


@pytest.fixture(autouse=True)
def clean_detector() -> Iterator[None]:
    SIDE_EFFECTS.clear()
    yield
    SIDE_EFFECTS.clear()


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# -- the Python API ------------------------------------------------------------------------


def test_with_mode_mock_drops_real_overrides_of_a_real_toolset() -> None:
    tools = own_toolset().with_mode("mock")
    result = Agent(ScriptedModel([REFUND, "done"]), tools).run_sync("refund ZZZ")
    assert result.trace.tool_results[0].content == "mock refund of 999.0 on ZZZ"
    assert result.trace.tool_results[0].mocked is True
    with pytest.raises(UnmockedToolCall, match="tool 'send_slack' has side effects and no mock"):
        Agent(ScriptedModel([SLACK, "done"]), tools).run_sync("post")
    assert SIDE_EFFECTS == []


def test_an_explicit_real_override_in_mock_mode_still_runs_outside_mocked_runs() -> None:
    tools = Toolset(TOOLS, mode="mock", overrides={"send_slack": "real"})
    result = Agent(ScriptedModel([SLACK, "done"]), tools).run_sync("post")
    assert SIDE_EFFECTS == ["slack hi"] and result.trace.tool_results[0].mocked is False


def test_mock_tools_drops_the_agents_real_overrides() -> None:
    agent = build_agent(ScriptedModel([REFUND, SLACK, "done"]))
    with mock_tools(agent), pytest.raises(UnmockedToolCall) as info:
        agent.run_sync("refund and tell the team")
    assert "mock_tools() refuses to run its real code" in str(info.value)
    assert "mock_tools(..., real=['send_slack'])" in str(info.value)
    trace = info.value.trace
    assert trace is not None and trace.stop_reason == "error"
    assert trace.tool_results[0].content == "mock refund of 999.0 on ZZZ"
    assert SIDE_EFFECTS == []


def test_mock_tools_runs_a_tool_for_real_only_when_named() -> None:
    agent = build_agent(ScriptedModel([[REFUND, SLACK], "done"]))
    with mock_tools(agent, real=["send_slack"]) as toolset:
        result = agent.run_sync("refund and tell the team")
    assert toolset.real_tools == ("send_slack",)
    assert SIDE_EFFECTS == ["slack hi"]
    assert [(r.name, r.mocked) for r in result.trace.tool_results] == [
        ("refund", True),
        ("send_slack", False),
    ]
    unknown = r"'send_slak' is unknown \(did you mean 'send_slack'\?\)"
    with pytest.raises(UserError, match=unknown), mock_tools(agent, real=["send_slak"]):
        pass


def test_faults_fall_back_to_the_mock_not_to_an_inherited_real_override() -> None:
    agent = build_agent(ScriptedModel([REFUND, REFUND, "done"]))
    with mock_tools(agent, faults=[Fault.raises("refund", on_call=1)]):
        result = agent.run_sync("refund twice")
    assert [r.status for r in result.trace.tool_results] == ["error", "ok"]
    assert result.trace.tool_results[1].content == "mock refund of 999.0 on ZZZ"
    assert SIDE_EFFECTS == []


def test_a_toolset_that_was_not_handed_out_is_refused_and_keeps_the_trace() -> None:
    agent = build_agent(ScriptedModel(["unused"]))
    stray = Agent(ScriptedModel([call("get_weather", city="Paris"), REFUND, "done"]), TOOLS)
    with mock_tools(agent), pytest.raises(MockBypassed) as info:
        stray.run_sync("refund")
    error = info.value
    assert isinstance(error, UserError) and error.tool_name == "refund"
    assert "Pass `tools` into `Agent(...)`" in str(error)
    assert error.trace is not None and error.trace.stop_reason == "error"
    assert [r.name for r in error.trace.tool_results] == ["get_weather"]
    assert SIDE_EFFECTS == []


def test_a_helper_agent_inside_a_tool_cannot_run_real_side_effects() -> None:
    agent = build_agent(ScriptedModel([call("delegate", task="refund it"), "done"]))
    with mock_tools(agent, real=["delegate"]), pytest.raises(MockBypassed):
        agent.run_sync("delegate")
    assert SIDE_EFFECTS == []


def test_the_same_code_outside_a_mocked_run_is_real() -> None:
    Agent(ScriptedModel([REFUND, "done"]), TOOLS).run_sync("refund")
    assert SIDE_EFFECTS == ["refund ZZZ 999.0"]


# -- eval suites ---------------------------------------------------------------------------


def suite_file(tmp_path: Path, factory: str = "build_agent", extra: str = "") -> Path:
    return write(
        tmp_path / "mocked.eval.yaml",
        f"""\
        suite: mocked
        agent: mockagents:{factory}
        model: scripted
        tools: mock
        {extra}
        cases:
          - name: refund
            input: refund ZZZ
            script: [{{call: {{name: refund, arguments: {{order_id: ZZZ, amount: 999.0}}}}}}, ok]
            expect: {{tools_called: [refund]}}
          - name: slack
            input: tell the team
            script: [{{call: {{name: send_slack, arguments: {{text: hi}}}}}}, ok]
            expect: {{tools_called: [send_slack]}}
        """,
    )


def test_a_mocked_suite_never_runs_real_side_effects(tmp_path: Path) -> None:
    report = evaluate(suite_file(tmp_path), cache=False)
    verdicts = {c.case.name: c for c in report.cases}
    assert verdicts["refund"].verdict == "pass"
    assert verdicts["slack"].verdict == "fail"
    assert "UnmockedToolCall" in verdicts["slack"].reason
    assert SIDE_EFFECTS == []


def test_real_tools_in_a_suite_are_explicit_and_reported(tmp_path: Path) -> None:
    path = suite_file(tmp_path, extra="real_tools: [send_slack]")
    report = evaluate(path, cache=False, reports=[f"json:{tmp_path / 'r.json'}"], keep_traces=True)
    assert [c.verdict for c in report.cases] == ["pass", "pass"]
    assert SIDE_EFFECTS == ["slack hi"]
    slack = report.cases[1].trials[0].traces
    assert slack is not None and slack[0].tool_results[0].mocked is False
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert [c["real_tools"] for c in data["cases"]] == [["send_slack"], ["send_slack"]]
    assert data["cases"][0]["trials"][0]["traces"][0]["steps"][0]["tool_results"][0]["mocked"]
    assert "real tools: `send_slack` (in 2 mocked cases)" in markdown_report(report)
    junit = junit_suites(report)[0].cases[0].system_out
    assert junit is not None and "real tools: send_slack" in junit
    from rich.console import Console

    console = Console(record=True, width=200)
    print_summary(report, console)
    assert "real tools: send_slack (in 2 mocked cases)" in console.export_text()


def test_real_tools_names_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_suite(suite_file(tmp_path, extra="real_tools: [send_slak]"))
    assert info.value.problems[0].endswith(
        "real_tools[0]: unknown tool 'send_slak' (did you mean 'send_slack'?); the agent's "
        "tools are: delegate, get_weather, refund, send_slack"
    )
    with pytest.raises(ConfigError, match="real_tools: expected a list of tool names"):
        load_suite(suite_file(tmp_path, extra="real_tools: send_slack"))


@pytest.mark.parametrize("factory", ["build_agent_ignoring_tools", "build_agent_from_list"])
def test_a_factory_that_ignores_its_tools_stops_the_run(tmp_path: Path, factory: str) -> None:
    with pytest.raises(MockBypassed) as info:
        evaluate(suite_file(tmp_path, factory), cache=False)
    message = str(info.value)
    assert f"agent factory mockagents:{factory} ignores its `tools` argument" in message
    assert "Pass `tools` into `Agent(...)`" in message
    assert info.value.factory == f"mockagents:{factory}"
    assert SIDE_EFFECTS == []


def test_a_real_side_effect_behind_a_tool_stops_the_suite(tmp_path: Path) -> None:
    path = write(
        tmp_path / "delegate.eval.yaml",
        """\
        suite: delegate
        agent: mockagents:build_agent
        model: scripted
        cases:
          - name: delegate
            input: refund via the helper
            script: [{call: {name: delegate, arguments: {task: refund}}}, ok]
            expect: {final_contains: ok}
        """,
    )
    with pytest.raises(MockBypassed) as info:
        evaluate(path, cache=False)
    assert "the eval case delegate::delegate (tools: mock)" in str(info.value)
    assert info.value.trace is not None and info.value.trace.stop_reason == "error"
    assert SIDE_EFFECTS == []


def run_cli(*args: str, cwd: Path, effects: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parents[1] / "src")]),
        "NO_COLOR": "1",
        "TOOLPROOF_SIDE_EFFECTS": str(effects),
    }
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_toolproof_run_with_a_factory_ignoring_tools_exits_2(tmp_path: Path) -> None:
    path = suite_file(tmp_path, "build_agent_ignoring_tools")
    effects = tmp_path / "effects.txt"
    result = run_cli("run", str(path), "--quiet", cwd=tmp_path, effects=effects)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith(
        "toolproof: error: agent factory mockagents:build_agent_ignoring_tools ignores its "
        "`tools` argument"
    )
    assert "Pass `tools` into `Agent(...)`" in lines[0]
    assert not effects.exists()


# -- replay --------------------------------------------------------------------------------


def recorded(script: list[Any], input: str = "refund ZZZ") -> Any:
    """A production trace: the real tools answered (recorded in a throwaway detector)."""
    agent = Agent(ScriptedModel(script), Toolset(TOOLS))
    trace = agent.run_sync(input).trace
    SIDE_EFFECTS.clear()
    return trace


@pytest.fixture
def traces() -> list[Any]:
    return [
        recorded([REFUND, "refunded"]),
        recorded([SLACK, "posted"], input="tell the team"),
    ]


@pytest.mark.parametrize("factory", [mockagents.build_agent, mockagents.build_agent_ignoring_tools])
def test_replay_model_mode_answers_from_the_recording(traces: list[Any], factory: Any) -> None:
    report = replay(traces, mode="model", agent=factory, model="recorded")
    assert [s.grade for s in report.samples] == ["pass", "pass"], report.render_text()
    assert SIDE_EFFECTS == []
    report = replay(traces, mode="model", agent=factory(ScriptedModel([])), model="recorded")
    assert SIDE_EFFECTS == [] and report.real_tools == []


def test_replay_model_mode_real_tools_are_explicit(traces: list[Any]) -> None:
    report = replay(
        traces, mode="model", agent=build_agent, model="recorded", real_tools=["send_slack"]
    )
    assert SIDE_EFFECTS == ["slack hi"]
    assert report.real_tools == ["send_slack"]
    assert report.summary().endswith("real tools: send_slack")
    assert report.to_dict()["real_tools"] == ["send_slack"]
    assert "real tools: `send_slack`" in report.render_markdown()
    assert "real tools: send_slack" in (report.junit_suites()[0].cases[0].system_out or "")
    with pytest.raises(UserError, match=r"did you mean 'send_slack'"):
        replay(traces, mode="model", agent=build_agent, model="recorded", real_tools=["slack"])


def test_replay_stops_when_a_real_tool_triggers_a_side_effect() -> None:
    trace = recorded([call("delegate", task="refund"), "done"], input="delegate")
    with pytest.raises(MockBypassed, match="replay \\(model mode\\) runs tools mocked"):
        replay([trace], mode="model", agent=build_agent, model="recorded", real_tools=["delegate"])
    assert SIDE_EFFECTS == []


def test_replay_tools_mode_runs_mocks_never_real_code(traces: list[Any]) -> None:
    report = replay(traces, mode="tools", tools=own_toolset(), run_mocks=True)
    assert [s.grade for s in report.samples] == ["pass", "pass"]
    assert SIDE_EFFECTS == []
    report = replay(traces, mode="tools", tools=TOOLS, run_mocks=True, real_tools=["refund"])
    assert SIDE_EFFECTS == ["refund ZZZ 999.0"] and report.real_tools == ["refund"]
    with pytest.raises(UserError, match="real tools need today's Python tools"):
        replay(traces, mode="tools", tools={"refund": {}}, real_tools=["refund"])


@pytest.fixture
def store(tmp_path: Path, traces: list[Any]) -> Path:
    path = tmp_path / "traces.db"
    with TraceStore(path) as db:
        db.add_many(traces)
    return path


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_replay_cli_model_and_tools_mode(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["replay", "--store", str(store), "--agent", "mockagents:build_agent_ignoring_tools"]
    code, out, _ = cli(capsys, *base, "--mode", "model", "--model", "recorded")
    assert code == 0, out
    code, out, _ = cli(capsys, *base, "--mode", "tools", "--run-mocks")
    assert code == 0, out
    assert SIDE_EFFECTS == []
    code, out, _ = cli(
        capsys, *base, "--mode", "model", "--model", "recorded", "--real-tool", "send_slack"
    )
    assert code == 0 and "real tools: send_slack" in out
    assert SIDE_EFFECTS == ["slack hi"]
    model = ["--mode", "model", "--model", "recorded"]
    code, out, err = cli(capsys, *base, *model, "--real-tool", "x")
    assert code == 2 and err.startswith("toolproof: error: replay: real tool 'x' is unknown")


def test_replay_cli_stops_with_exit_2_on_a_bypass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "delegate.db"
    with TraceStore(path) as db:
        db.add(recorded([call("delegate", task="refund"), "done"], input="delegate"))
    code, _, err = cli(
        capsys,
        "replay",
        "--store",
        str(path),
        "--mode",
        "model",
        "--agent",
        "mockagents:build_agent",
        "--model",
        "recorded",
        "--real-tool",
        "delegate",
    )
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "tool 'refund' has side effects and replay (model mode) runs tools mocked" in err
    assert SIDE_EFFECTS == []


# -- every combination ---------------------------------------------------------------------

MODES = st.sampled_from(["real", "mock"])
OVERRIDE = st.sampled_from([None, "real", "mock"])
OPT_INS = st.sets(st.sampled_from(["refund", "send_slack", "get_weather"]), max_size=3)


def _overrides(refund: str | None, slack: str | None) -> dict[str, str]:
    chosen = {"refund": refund, "send_slack": slack}
    return {name: mode for name, mode in chosen.items() if mode is not None}


@settings(max_examples=40)
@given(
    entry=st.sampled_from(["mock_tools", "suite", "replay_model", "replay_tools"]),
    base_mode=MODES,
    refund_override=OVERRIDE,
    slack_override=OVERRIDE,
    real=OPT_INS,
    honest=st.booleans(),
)
def test_real_side_effects_run_only_when_named(
    tmp_path_factory: pytest.TempPathFactory,
    entry: str,
    base_mode: str,
    refund_override: str | None,
    slack_override: str | None,
    real: set[str],
    honest: bool,
) -> None:
    SIDE_EFFECTS.clear()
    overrides = _overrides(refund_override, slack_override)
    factory = build_agent if honest else mockagents.build_agent_ignoring_tools
    script = [[REFUND, SLACK], "done"]
    raised: BaseException | None = None
    try:
        if entry == "mock_tools":
            agent = factory(ScriptedModel(script), None, base_mode, overrides)
            with mock_tools(agent, real=sorted(real)):
                agent.run_sync("refund and post")
        elif entry == "suite":
            folder = tmp_path_factory.mktemp("suite")
            options = json.dumps({"base_mode": base_mode, "base_overrides": overrides})
            path = write(
                folder / "combo.eval.yaml",
                f"""\
                suite: combo
                agent: mockagents:{factory.__name__}
                agent_options: {options}
                model: scripted
                tools: mock
                real_tools: {json.dumps(sorted(real))}
                cases:
                  - name: both
                    input: refund and post
                    script:
                      - - {{call: {{name: refund, arguments: {{order_id: ZZZ, amount: 999.0}}}}}}
                        - {{call: {{name: send_slack, arguments: {{text: hi}}}}}}
                      - done
                """,
            )
            evaluate(path, cache=False)
        else:
            trace = Agent(ScriptedModel(script), Toolset(TOOLS)).run_sync("refund and post").trace
            SIDE_EFFECTS.clear()
            if entry == "replay_model":
                replay([trace], mode="model", agent=factory, model="recorded", real_tools=real)
            else:
                tools = own_toolset(base_mode, overrides)
                replay([trace], mode="tools", tools=tools, run_mocks=True, real_tools=real)
    except (UnmockedToolCall, UserError) as exc:
        raised = exc
    ran = {line.split()[0] for line in SIDE_EFFECTS}
    named = {"slack" if n == "send_slack" else n for n in real if n != "get_weather"}
    if entry == "suite" and not honest:
        # The factory ignored the mocked tools: refused before any tool ran.
        assert isinstance(raised, MockBypassed) and ran == set()
    else:
        # Exactly the tools named as real ran for real; nothing else did.
        assert not isinstance(raised, MockBypassed), raised
        assert ran == named, (entry, ran, real, raised)
