"""The pytest plugin, tested in-process with pytester."""

from __future__ import annotations

import json
import subprocess
import sys

import toolproof.models as models

TOOLS_SOURCE = '''
from toolproof import Agent, tool

@tool(errors=(KeyError,))
def get_leave_balance(employee_id: str) -> int:
    """Look up remaining annual leave.

    Args:
        employee_id: Employee id such as E001.
    """
    return {"E001": 5}[employee_id]

@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: First factor.
        b: Second factor.
    """
    return a * b

TOOLS = [get_leave_balance, multiply_numbers]
'''


def test_import_toolproof_alone_activates_nothing():
    code = (
        "import sys, toolproof, toolproof.testing, toolproof.models as m; "
        "print(m.ALLOW_MODEL_REQUESTS, 'toolproof.testing.plugin' in sys.modules, "
        "'pytest' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["True", "False", "False"]


def test_plugin_is_loaded_through_the_entry_point(inner):
    inner.makepyfile(
        """
        def test_loaded(request):
            manager = request.config.pluginmanager
            assert manager.has_plugin("toolproof")
            assert manager.has_plugin("toolproof-suites")
        """
    )
    inner.runpytest().assert_outcomes(passed=1)


def test_markers_and_options_are_registered(inner):
    result = inner.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.live_model(model, **options):*"])
    result.stdout.fnmatch_lines(["@pytest.mark.tool_mock(*"])
    help_text = inner.runpytest("--help").stdout.str()
    assert "--toolproof-live" in help_text
    assert "--toolproof-update-snapshots" in help_text


def test_real_model_requests_are_blocked_for_the_session_and_restored(inner):
    before = models.ALLOW_MODEL_REQUESTS
    inner.makepyfile(
        """
        import pytest
        import toolproof.models as models
        from toolproof.errors import ModelRequestsDisabled

        def test_blocked():
            assert models.ALLOW_MODEL_REQUESTS is False
            with pytest.raises(ModelRequestsDisabled, match="ALLOW_MODEL_REQUESTS is False"):
                models.check_allow_model_requests("deepseek:deepseek-chat")
        """
    )
    with models.override_allow_model_requests(True):
        inner.runpytest().assert_outcomes(passed=1)
        assert models.ALLOW_MODEL_REQUESTS is True  # restored after the inner session
    assert models.ALLOW_MODEL_REQUESTS is before


def test_live_option_and_env_switch_allow_requests(inner, monkeypatch):
    inner.makepyfile(
        """
        import toolproof.models as models

        def test_allowed():
            assert models.ALLOW_MODEL_REQUESTS is True
        """
    )
    with models.override_allow_model_requests(True):
        inner.runpytest("--toolproof-live").assert_outcomes(passed=1)
        monkeypatch.setenv("TOOLPROOF_LIVE", "1")
        inner.runpytest().assert_outcomes(passed=1)


LIVE_TEST = """
import pytest
import toolproof.models as models

@pytest.mark.live_model("deepseek:deepseek-chat")
def test_routing(live_model):
    assert models.ALLOW_MODEL_REQUESTS is True
    assert "deepseek-chat" in live_model.name
"""


def test_live_test_is_skipped_without_the_switch(inner, monkeypatch):
    monkeypatch.delenv("TOOLPROOF_LIVE", raising=False)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-not-used")
    inner.makepyfile(LIVE_TEST)
    result = inner.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*live model test (deepseek:deepseek-chat): run with --toolproof-live or "
            "TOOLPROOF_LIVE=1 to enable"
        ]
    )


def test_live_test_is_skipped_without_the_key(inner, monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    inner.makepyfile(LIVE_TEST)
    result = inner.runpytest("-rs", "--toolproof-live")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["*live model test (deepseek:deepseek-chat): DEEPSEEK_API_KEY is not set"]
    )


def test_live_test_runs_with_the_switch_and_the_key(inner, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-not-used")
    inner.makepyfile(LIVE_TEST)
    inner.runpytest("--toolproof-live").assert_outcomes(passed=1)


def test_live_marker_misuse(inner):
    inner.makepyfile(
        """
        import pytest

        @pytest.mark.live_model("nosuchprovider:model")
        def test_unknown():
            pass

        @pytest.mark.live_model
        def test_no_model():
            pass
        """
    )
    result = inner.runpytest("--toolproof-live")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["@pytest.mark.live_model('nosuchprovider:model'): unknown *"])
    result.stdout.fnmatch_lines(["@pytest.mark.live_model needs one model string*"])
    assert "During handling" not in result.stdout.str()
    assert "plugin.py" not in result.stdout.str()


def test_tool_mock_fixture_reports_unused_fixtures_at_teardown(inner):
    inner.makepyfile(tools=TOOLS_SOURCE)
    inner.makepyfile(
        """
        import pytest
        from toolproof import Agent, Toolset
        from toolproof.testing import call
        from tools import TOOLS

        def test_unused(tool_mock, run_agent):
            tool_mock.add("get_leave_balance", {"employee_id": "E001"}, returns=5)
            tool_mock.add("get_leave_balance", {"employee_id": "E404"}, returns=0)
            agent = Agent("scripted", TOOLS) if False else None
            result = run_agent(
                Agent_factory(),
                "leave?",
                script=[call("get_leave_balance", employee_id="E001"), "5 days"],
                mocks=[tool_mock],
            )
            assert result.output == "5 days"

        @pytest.mark.tool_mock(assert_all_used=False)
        def test_opt_out(tool_mock):
            tool_mock.add("get_leave_balance", None, returns=1)

        def Agent_factory():
            from toolproof.testing import ScriptedModel
            return Agent(ScriptedModel(["unused"]), TOOLS)
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*1 fixture of this ToolMock was never used:",
            "*  - fixture #2: get_leave_balance(employee_id='E404')",
            "*pass assert_all_used=False to ToolMock(...) (for the tool_mock fixture: "
            "@pytest.mark.tool_mock(assert_all_used=False))*",
        ]
    )


def test_failing_test_does_not_add_teardown_noise_and_shows_traces(inner):
    inner.makepyfile(tools=TOOLS_SOURCE)
    inner.makepyfile(
        """
        from toolproof import Agent
        from toolproof.testing import ScriptedModel, assert_tool_called, call
        from tools import TOOLS

        def test_wrong_arguments(tool_mock, run_agent):
            tool_mock.add("get_leave_balance", None, returns=5)
            tool_mock.add("multiply_numbers", None, returns=1)  # unused: not reported
            agent = Agent(ScriptedModel(["never"]), TOOLS)
            result = run_agent(
                agent,
                "leave of E002?",
                script=[call("get_leave_balance", employee_id="E002"), "E002 has 5 days"],
                mocks=[tool_mock],
            )
            assert_tool_called(result, "get_leave_balance", employee_id="E001")
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "E *AssertionError: expected a call to get_leave_balance(employee_id='E001'), "
            "but none matched.",
            "E *Closest call: get_leave_balance(employee_id='E002')",
            "E *✗ employee_id: expected 'E001', got 'E002'",
            "E *Tool calls in this run (1):",
            "E *1. get_leave_balance(employee_id='E002') -> ok: '5'",
            "*- toolproof traces -*",
            "trace * model=scripted  stop=final",
        ]
    )
    assert "was never used" not in output
    assert "_assertions.py" not in output  # the helper's frames are hidden


def test_missing_fixture_fails_the_test_with_the_diagnosis(inner):
    inner.makepyfile(tools=TOOLS_SOURCE)
    inner.makepyfile(
        """
        from toolproof import Agent
        from toolproof.testing import ScriptedModel, call
        from tools import TOOLS

        def test_missing(tool_mock, run_agent):
            tool_mock.add("multiply_numbers", {"a": 12, "b": 8}, returns=96.0)
            agent = Agent(ScriptedModel([call("multiply_numbers", a=12, b=9), "x"]), TOOLS)
            run_agent(agent, "12 x 9?", mocks=[tool_mock])
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *toolproof.errors.AgentRunError: No fixture matches the call "
            "multiply_numbers(a=12.0, b=9.0).",
            "E *Closest fixture (fixture #1: multiply_numbers(a=12, b=8)):",
            "E *✓ a",
            "E *✗ b: expected 8, got 9.0",
            "*- toolproof traces -*",
            "*stop=error*",
        ]
    )


def test_scripted_model_fixture_checks_leftover_responses(inner):
    inner.makepyfile(tools=TOOLS_SOURCE)
    inner.makepyfile(
        """
        from toolproof import Agent
        from toolproof.testing import call
        from tools import TOOLS

        def test_leftover(scripted_model):
            model = scripted_model([call("multiply_numbers", a=2, b=3), "6", "spare answer"])
            assert Agent(model, TOOLS).run_sync("2 x 3?").output == "6"

        def test_leftover_allowed(scripted_model):
            model = scripted_model(["hi", "spare"], assert_all_used=False)
            assert Agent(model, TOOLS).run_sync("hello").output == "hi"
        """
    )
    result = inner.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "E *AssertionError: scripted model 'scripted' was asked 2 times but its script "
            "has 3 responses; never used: 'spare answer'. Remove them, or pass "
            "assert_all_used=False to scripted_model(...)."
        ]
    )


def test_run_agent_in_async_tests_and_faults(inner):
    inner.makepyfile(tools=TOOLS_SOURCE)
    inner.makepyfile(
        """
        import pytest
        from toolproof import Agent
        from toolproof.errors import UserError
        from toolproof.testing import Fault, ScriptedModel, call
        from tools import TOOLS

        async def test_async(run_agent):
            agent = Agent(ScriptedModel(["unused"]), TOOLS)
            result = await run_agent.run(
                agent,
                "leave?",
                script=[call("get_leave_balance", employee_id="E001"), "failed"],
                faults=[Fault.raises("get_leave_balance")],
                mode="real",
            )
            assert result.trace.tool_results[0].error_type == "KeyError"
            assert run_agent.traces == [result.trace]
            with pytest.raises(UserError, match="run_agent.. cannot be called from a running"):
                run_agent(agent, "sync call inside a loop")
        """
    )
    inner.runpytest().assert_outcomes(passed=1)


def test_schema_snapshot_fixture_fails_on_change_and_updates_on_request(inner):
    inner.makepyfile(tools=TOOLS_SOURCE)
    inner.makepyfile(
        test_contract="""
        from tools import TOOLS

        def test_contract(schema_snapshot):
            schema_snapshot(TOOLS, "snapshots/tools.schema.json")
        """
    )
    missing = inner.runpytest()
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*schema snapshot */snapshots/tools.schema.json does not exist*"])
    inner.runpytest("--toolproof-update-snapshots").assert_outcomes(passed=1)
    snapshot_path = inner.path / "snapshots" / "tools.schema.json"
    snapshot = json.loads(snapshot_path.read_text())
    assert sorted(snapshot["tools"]) == ["get_leave_balance", "multiply_numbers"]
    inner.runpytest().assert_outcomes(passed=1)

    # A renamed parameter: the check fails with the classified change and a diff.
    changed = TOOLS_SOURCE.replace("employee_id", "staff_id")
    inner.makepyfile(tools=changed)
    result = inner.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *AssertionError: tool schemas differ from the snapshot */tools.schema.json:",
            "E *BREAKING   get_leave_balance: removed parameter 'employee_id'",
            "E *BREAKING   get_leave_balance: new required parameter 'staff_id' (string)",
            '*-* "employee_id"*',
            '*+* "staff_id"*',
            "E *If the change is intended, run pytest with --toolproof-update-snapshots*",
        ]
    )
    inner.runpytest("--toolproof-update-snapshots").assert_outcomes(passed=1)
    inner.runpytest().assert_outcomes(passed=1)
    assert "staff_id" in snapshot_path.read_text()


SIDE_EFFECTS_SOURCE = '''
from toolproof import Toolset, tool

DONE = []

@tool(side_effects=True)
def refund(order_id: str) -> str:
    """Refund an order.

    Args:
        order_id: The order.
    """
    DONE.append(f"refund {order_id}")
    return "refunded"

@refund.mock
def _refund(order_id: str) -> str:
    return "mock refund"

@tool(side_effects=True)
def post(text: str) -> str:
    """Post to the team channel (no mock).

    Args:
        text: The message.
    """
    DONE.append(f"post {text}")
    return "posted"

# The agent's own toolset says both run for real: run_agent's mock mode must not inherit it.
TOOLSET = Toolset([refund, post], overrides={"refund": "real", "post": "real"})
'''


def test_run_agent_never_runs_real_side_effects_unless_named(inner):
    inner.makepyfile(effects=SIDE_EFFECTS_SOURCE)
    inner.makepyfile(
        """
        import pytest
        from toolproof import Agent
        from toolproof.errors import MockBypassed, UnmockedToolCall
        from toolproof.testing import ScriptedModel, call
        from effects import DONE, TOOLSET

        @pytest.fixture(autouse=True)
        def clean():
            DONE.clear()
            yield
            DONE.clear()

        def agent():
            return Agent(ScriptedModel(["unused"]), TOOLSET)

        def test_mocked(run_agent):
            script = [call("refund", order_id="A"), "ok"]
            result = run_agent(agent(), "x", script=script, mode="mock")
            assert result.trace.tool_results[0].content == "mock refund"
            assert DONE == []

        def test_unmocked_side_effect_refused(run_agent):
            with pytest.raises(UnmockedToolCall, match="run_agent.. refuses to run its real code"):
                run_agent(agent(), "x", script=[call("post", text="hi"), "ok"], mode="mock")
            assert DONE == [] and run_agent.traces[-1].stop_reason == "error"

        def test_named_real_tool_runs(run_agent):
            result = run_agent(agent(), "x", script=[call("post", text="hi"), "ok"], real=["post"])
            assert DONE == ["post hi"] and result.trace.tool_results[0].mocked is False

        def test_a_stray_agent_inside_a_mock_is_refused(run_agent):
            async def sneaky(text):
                stray = Agent(ScriptedModel([call("refund", order_id="B"), "x"]), TOOLSET)
                return (await stray.run(text)).output

            with pytest.raises(MockBypassed, match="Pass `tools` into `Agent"):
                run_agent(
                    agent(), "x", script=[call("post", text="hi"), "ok"], mocks=[{"post": sneaky}]
                )
            assert DONE == []
        """
    )
    inner.runpytest().assert_outcomes(passed=4)
