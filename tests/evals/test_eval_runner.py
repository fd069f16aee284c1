"""The runner: trials and pass rules, infrastructure errors, mocks per trial, judge, cache."""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from evalagents import Counting, FlakyConnection, Slow

from toolproof import Message
from toolproof.errors import ModelConnectionError, UserError
from toolproof.evals import EvalReport, Suite, evaluate, evaluate_async, load_suite
from toolproof.models import Model, ModelResponse, ModelSettings, ToolDefinition
from toolproof.testing import FunctionModel, RequestInfo


def make_suite(tmp_path: Path, text: str, name: str = "s.eval.yaml") -> Suite:
    path = tmp_path / name
    if text.startswith(HEAD):  # the cases are written indented in the tests
        text = HEAD + textwrap.dedent(text[len(HEAD) :])
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_suite(path)


async def run(suite: Suite, **options: Any) -> EvalReport:
    options.setdefault("cache", False)
    options.setdefault("keep_traces", True)
    options.setdefault("retry_backoff", 0.001)
    return await evaluate_async([suite], **options)


HEAD = "suite: s\nagent: evalagents:build_agent\n"


class Alternating(Model):
    """Answers 'yes' to every other request."""

    def __init__(self) -> None:
        self.name = "alternating"
        self.requests = 0

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        self.requests += 1
        return ModelResponse(Message.assistant("yes" if self.requests % 2 else "no"))


@pytest.mark.parametrize(
    ("rule", "verdict"),
    [("all", "fail"), ("any", "pass"), ("{at_least: 2}", "pass"), ("{rate: 0.75}", "fail")],
)
async def test_trials_statistics_and_pass_rules(tmp_path: Path, rule: str, verdict: str) -> None:
    suite = make_suite(
        tmp_path,
        HEAD + f"trials: 4\npass_rule: {rule}\n"
        "cases: [{name: c, input: hi, expect: {final_contains: 'yes'}}]\n",
    )
    report = await run(suite, model=Alternating(), concurrency=1)
    [case] = report.cases
    assert [t.status for t in case.trials] == ["pass", "fail", "pass", "fail"]
    assert case.verdict == verdict
    stats = case.stats
    assert stats is not None
    assert (stats.n, stats.c, stats.classification) == (4, 2, "flaky")
    assert stats.pass_hat[2] == pytest.approx(1 / 6)
    assert stats.pass_at[2] == pytest.approx(5 / 6)
    failing = case.trials[1].failed_checks[0]
    assert failing.reason == "expected the final answer to contain 'yes'; it was 'no'"
    if verdict == "fail":
        assert case.reason.startswith("2/4 trials passed, ")
        assert "final_contains (x2): expected the final answer to contain 'yes'" in case.reason
    assert report.exit_code == (1 if verdict == "fail" else 0)
    summary = report.summary()
    assert summary["stats"]["pass_hat_k"]["4"] == 0.0
    assert summary["trials_passed"] == 2


async def test_infrastructure_errors_are_retried_then_reported_as_errors(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, HEAD + "retries: 2\ncases: [{name: c, input: hi}]\n")
    recovering = FlakyConnection(failures=2)
    report = await run(suite, model=recovering)
    [case] = report.cases
    assert case.verdict == "pass"
    assert case.trials[0].attempts == 3 and recovering.requests == 3

    down = FlakyConnection(failures=100)
    report = await run(suite, model=down)
    [case] = report.cases
    assert (case.verdict, report.exit_code) == ("error", 3)
    trial = case.trials[0]
    assert (trial.status, trial.attempts, trial.error_type) == ("error", 3, "ModelConnectionError")
    assert case.reason == (
        "1 of 1 trials hit infrastructure errors, so pass_rule all cannot decide (0/1 trials "
        "passed): ModelConnectionError: connection refused (127.0.0.1:9)"
    )
    assert trial.traces and trial.traces[0].stop_reason == "error"  # the partial trace is kept


async def test_errors_and_failures_together_follow_the_pass_rule(tmp_path: Path) -> None:
    class FailsThenDown(Model):
        name = "fails-then-down"
        requests = 0

        async def request(self, messages: Any, tools: Any, settings: Any) -> ModelResponse:
            self.requests += 1
            if self.requests == 1:
                return ModelResponse(Message.assistant("no"))
            raise ModelConnectionError("down")

    suite = make_suite(
        tmp_path,
        HEAD
        + "trials: 3\nretries: 0\ncases: [{name: c, input: hi, expect: {final_contains: y}}]\n",
    )
    report = await run(suite, model=FailsThenDown(), concurrency=1)
    [case] = report.cases
    assert [t.status for t in case.trials] == ["fail", "error", "error"]
    assert case.verdict == "fail"  # one failure decides "all", whatever the errors were
    assert report.exit_code == 1


async def test_scripted_provider_errors_and_non_retryable_statuses(tmp_path: Path) -> None:
    suite = make_suite(
        tmp_path,
        HEAD
        + """\
        retries: 1
        cases:
          - name: unauthorized
            input: hi
            script: [{raise: {type: ModelHTTPError, status: 401, message: invalid api key}}]
          - name: unreachable
            input: hi
            script: [{raise: ModelConnectionError}]
        """,
    )
    report = await run(suite, model="scripted")
    unauthorized, unreachable = report.cases
    assert unauthorized.verdict == "error" and unauthorized.trials[0].attempts == 1
    assert "ModelHTTPError: invalid api key" in unauthorized.reason
    assert unreachable.trials[0].attempts == 2
    assert report.exit_code == 3


async def test_agent_failures_are_not_infrastructure_errors(tmp_path: Path) -> None:
    suite = make_suite(
        tmp_path,
        HEAD
        + """\
        cases:
          - name: tool_bug
            input: hi
            script: [{call: {name: crash}}, "never"]
          - name: script_too_short
            input: "12 times 8"
            script: [{call: {name: multiply_numbers, arguments: {a: 12, b: 8}}}]
          - name: unmocked_side_effect
            input: cancel
            script: [{call: {name: cancel_order, arguments: {order_id: A1}}}, "done"]
        """,
    )
    report = await run(suite, model="scripted")
    verdicts = {c.case.name: c for c in report.cases}
    assert {n: c.verdict for n, c in verdicts.items()} == {
        "tool_bug": "fail",
        "script_too_short": "fail",
        "unmocked_side_effect": "fail",
    }
    crash = verdicts["tool_bug"].trials[0]
    assert crash.checks[0].check == "completed"
    assert crash.checks[0].reason.startswith(
        "the run stopped on an error of the agent or its tools at step 1: ZeroDivisionError: "
        "tool 'crash' raised ZeroDivisionError"
    )
    assert crash.checks[0].reason.endswith("evalagents.py:67 in crash)")
    assert crash.error_type == "ZeroDivisionError"
    shown = crash.traceback or ""
    assert 'raise ZeroDivisionError("division by zero")' in shown
    assert "_agent.py" not in shown and "_toolset.py" not in shown and "asyncio/" not in shown
    short = verdicts["script_too_short"].trials[0].checks[0].reason
    assert "ScriptExhausted" in short and "script ran out" in short
    unmocked = verdicts["unmocked_side_effect"].trials[0].checks[0].reason
    assert "UnmockedToolCall" in unmocked and "has side effects and no mock" in unmocked


async def test_stop_reasons_other_than_final_fail_unless_expected(tmp_path: Path) -> None:
    loop = (
        "["
        + ", ".join(
            f"{{call: {{name: search_docs, arguments: {{query: q{i}}}}}}}" for i in range(12)
        )
        + "]"
    )
    suite = make_suite(
        tmp_path,
        HEAD
        + f"""\
        cases:
          - name: loops
            input: hi
            script: {loop}
          - name: loops_on_purpose
            input: hi
            expect: {{stop_reason: max_steps}}
            script: {loop}
        """,
    )
    report = await run(suite, model="scripted")
    loops, on_purpose = report.cases
    assert loops.verdict == "fail"
    assert (
        loops.trials[0]
        .checks[0]
        .reason.startswith(
            "stopped with max_steps instead of a final answer (stopped after 10 model calls"
        )
    )
    assert on_purpose.verdict == "pass"


async def test_advisory_cases_never_fail_the_run(tmp_path: Path) -> None:
    suite = make_suite(
        tmp_path,
        HEAD
        + """\
        cases:
          - name: guidance
            input: hi
            gate: advise
            expect: {final_contains: nope}
            script: [hello]
          - {name: gate, input: hi, script: [hello]}
        """,
    )
    report = await run(suite, model="scripted")
    assert [c.verdict for c in report.cases] == ["fail", "pass"]
    assert report.exit_code == 0
    assert report.summary()["advisory_failed"] == 1


async def test_mocks_are_fresh_for_every_trial(tmp_path: Path) -> None:
    (tmp_path / "leave.yaml").write_text(
        "fixtures:\n"
        "  - tool: get_leave_balance\n    arguments: {employee_id: E001}\n    returns: 7\n"
    )
    suite = make_suite(
        tmp_path,
        HEAD
        + """\
        trials: 3
        mocks: [leave.yaml, "evalagents:order_mocks"]   # later entries win
        cases:
          - name: cancel
            input: cancel A1
            expect:
              state: {orders.A1.status: cancelled, cancelled: [A1]}
              no_tool_errors: true
            script:
              - call: {name: cancel_order, arguments: {order_id: A1}}
              - call: {name: search_docs, arguments: {query: refunds}}
              - call: {name: get_leave_balance, arguments: {employee_id: E001}}
              - cancelled
        """,
    )
    report = await run(suite, model="scripted", concurrency=3)
    [case] = report.cases
    assert case.verdict == "pass", case.reason  # a leaked state would have A1 twice
    results = [r.content for r in case.trials[2].traces[0].tool_results]  # type: ignore[index]
    assert results == ["cancelled", '["mocked passage"]', "7"]


async def test_real_mode_runs_the_real_tools(tmp_path: Path) -> None:
    suite = make_suite(
        tmp_path,
        HEAD
        + """\
        tools: real
        cases:
          - name: real
            input: "12 times 8"
            expect: {final_contains: "96"}
            script: [{call: {name: multiply_numbers, arguments: {a: 12, b: 8}}}, "12 x 8 = 96"]
          - name: mocked_by_override
            input: cancel
            tool_modes: {cancel_order: mock}
            mocks: "evalagents:Orders"
            expect: {state: {cancelled: [A1]}}
            script: [{call: {name: cancel_order, arguments: {order_id: A1}}}, done]
        """,
    )
    report = await run(suite, model="scripted")
    assert [c.verdict for c in report.cases] == ["pass", "pass"]
    real = report.cases[0].trials[0].traces[0]  # type: ignore[index]
    assert real.tool_mode == "real" and not real.tool_results[0].mocked


async def test_multi_turn_sessions(tmp_path: Path) -> None:
    suite = make_suite(
        tmp_path,
        HEAD
        + """\
        metadata: {team: hr}
        cases:
          - name: follow_up
            metadata: {situation: chat}
            turns:
              - input: "E001?"
                expect: {args: {get_leave_balance: {employee_id: E001}}}
              - input: "And E003?"
                expect: {final_contains: "12"}
            expect: {tools_called: {get_leave_balance: 2}}
            script:
              - call: {name: get_leave_balance, arguments: {employee_id: E001}}
              - "5 days"
              - call: {name: get_leave_balance, arguments: {employee_id: E003}}
              - "12 days"
        """,
    )
    report = await run(suite, model="scripted")
    [case] = report.cases
    assert case.verdict == "pass", case.reason
    trial = case.trials[0]
    assert [c.label for c in trial.checks] == [
        "completed",
        "tools_called",
        "args@turn1",
        "final_contains@turn2",
    ]
    first, second = trial.traces  # type: ignore[misc]
    assert [m.content for m in second.history if m.role == "user"] == ["E001?"]
    assert first.metadata == {
        "team": "hr",
        "situation": "chat",
        "eval": {"suite": "s", "case": "follow_up", "trial": 0},
    }


async def test_timeouts_skips_and_missing_models(tmp_path: Path) -> None:
    suite = make_suite(
        tmp_path,
        HEAD
        + """\
        retries: 0
        cases:
          - {name: slow, input: hi, timeout: 0.05}
          - {name: later, input: hi, skip: waiting for the API}
          - {name: no_script, input: hi}
        """,
    )
    report = await run(suite, model=Slow(5.0), cases=["slow", "later"])
    slow, later = report.cases
    assert (slow.verdict, slow.trials[0].error) == (
        "error",
        "the trial took longer than its timeout (0.05 s)",
    )
    assert (later.verdict, later.reason) == ("skipped", "waiting for the API")
    report = await run(suite, model="scripted", cases=["no_script"])
    assert report.cases[0].reason == "no script: the scripted model needs the case's 'script:'"
    assert report.exit_code == 5  # nothing ran: never green
    with pytest.raises(UserError) as info:
        await run(suite)
    assert str(info.value) == (
        "no model for s::slow, s::no_script: set 'model:' in the suite or the case, or pass "
        "--model (--model scripted runs each case's script, offline)"
    )


async def test_missing_keys_and_blocked_requests_are_configuration_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found before anything runs: a missing key is not an outage of the provider.
    from toolproof.errors import MissingAPIKey, ModelRequestsDisabled

    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    suite = make_suite(tmp_path, HEAD + "cases: [{name: c, input: hi}]\n")
    with pytest.raises(MissingAPIKey) as missing:
        await run(suite, model="deepseek:deepseek-chat")
    assert str(missing.value) == (
        "model deepseek:deepseek-chat needs an API key: set the environment variable "
        "DEEPSEEK_API_KEY (or pass api_key=...)"
    )
    assert missing.value.variable == "DEEPSEEK_API_KEY"
    with pytest.raises(MissingAPIKey, match=r"^judge model deepseek:deepseek-chat needs"):
        await run(
            make_suite(tmp_path, HEAD + "cases: [{name: c, input: hi, judge: [polite]}]\n"),
            model=FunctionModel(lambda messages, info: "hi"),
            judge_model="deepseek:deepseek-chat",
        )
    import toolproof.models as models

    with models.override_allow_model_requests(False), pytest.raises(ModelRequestsDisabled):
        await run(suite, model="openai-compatible:m?base_url=http://127.0.0.1:9/v1")


async def test_concurrency_bounds_trials_in_flight(tmp_path: Path) -> None:
    in_flight = peak = 0

    async def respond(messages: list[Message], info: RequestInfo) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return "ok"

    suite = make_suite(tmp_path, HEAD + "trials: 12\ncases: [{name: c, input: hi}]\n")
    report = await run(suite, model=FunctionModel(respond), concurrency=3)
    assert report.cases[0].passes == 12
    assert peak == 3


def judge_model(verdicts: dict[str, str], seen: list[str]) -> FunctionModel:
    """A judge that answers by criterion keyword and records the prompts it got."""

    def respond(messages: list[Message], info: RequestInfo) -> str:
        prompt = messages[-1].content or ""
        seen.append(prompt)
        for keyword, answer in verdicts.items():
            if keyword in prompt.split("CRITERION:")[1]:
                return answer
        return "I am not sure."

    return FunctionModel(respond, name="judge")


JUDGED = (
    HEAD
    + """\
cases:
  - name: judged
    input: "12 times 8?"
    metadata: {situation: payroll question}
    expect: {final_contains: "96"}
    judge: ["Polite answer.", "Shows the product."]
    script: [{call: {name: multiply_numbers, arguments: {a: 12, b: 8}}}, "12 x 8 = 96"]
"""
)


async def test_the_judge_grades_each_rubric_line(tmp_path: Path) -> None:
    seen: list[str] = []
    judge = judge_model(
        {
            "Polite": '{"verdict": "PASS", "reason": "It is courteous."}',
            "product": '```json\n{"verdict": "FAIL", "reason": "No product shown."}\n```',
        },
        seen,
    )
    suite = make_suite(tmp_path, JUDGED)
    report = await run(suite, model="scripted", judge_model=judge)
    [case] = report.cases
    judged = [c for c in case.trials[0].checks if c.kind == "judged"]
    assert [(c.criterion, c.status) for c in judged] == [
        ("Polite answer.", "pass"),
        ("Shows the product.", "fail"),
    ]
    assert judged[1].reason == "FAIL (judge, judge-v2): No product shown."
    assert case.verdict == "fail" and case.judge_model == "judge"
    prompt = seen[0]
    assert 'SITUATION: {"situation": "payroll question"}' in prompt
    assert "ASSISTANT called multiply_numbers(a=12, b=8)" in prompt
    assert "TOOL multiply_numbers returned: 96" in prompt
    assert "ASSISTANT: 12 x 8 = 96" in prompt


async def test_the_judge_runs_only_when_objective_checks_pass(tmp_path: Path) -> None:
    seen: list[str] = []
    judge = judge_model({"": '{"verdict": "PASS", "reason": "ok"}'}, seen)
    text = JUDGED.replace('final_contains: "96"', 'final_contains: "97"')
    report = await run(make_suite(tmp_path, text), model="scripted", judge_model=judge)
    judged = [c for c in report.cases[0].trials[0].checks if c.kind == "judged"]
    assert {c.status for c in judged} == {"skip"}
    assert judged[0].reason.startswith("not judged: the objective checks failed")
    assert seen == []
    always = text.replace("cases:", "judge_when: always\ncases:")
    report = await run(make_suite(tmp_path, always), model="scripted", judge_model=judge)
    assert len(seen) == 2


async def test_inconclusive_verdicts(tmp_path: Path) -> None:
    seen: list[str] = []
    judge = judge_model({"Polite": "INCONCLUSIVE: the transcript is empty"}, seen)
    report = await run(make_suite(tmp_path, JUDGED), model="scripted", judge_model=judge)
    judged = [c for c in report.cases[0].trials[0].checks if c.kind == "judged"]
    assert [c.status for c in judged] == ["inconclusive", "inconclusive"]
    assert judged[0].reason == "INCONCLUSIVE (judge, judge-v2): the transcript is empty"
    assert judged[1].reason == (
        "INCONCLUSIVE (judge, judge-v2): the judge's answer could not be read as a verdict "
        "(names no verdict): 'I am not sure.'"
    )
    assert report.cases[0].verdict == "fail"
    # judge_inconclusive: pass lets the judge's own INCONCLUSIVE pass, never an answer that
    # could not be read.
    lenient = JUDGED.replace("cases:", "judge_inconclusive: pass\ncases:")
    report = await run(make_suite(tmp_path, lenient), model="scripted", judge_model=judge)
    judged = [c for c in report.cases[0].trials[0].checks if c.kind == "judged"]
    assert [c.status for c in judged] == ["pass", "inconclusive"]
    assert report.cases[0].verdict == "fail"
    sure = judge_model({"Polite": "INCONCLUSIVE: the transcript is empty", "": "PASS"}, seen)
    report = await run(make_suite(tmp_path, lenient), model="scripted", judge_model=sure)
    assert report.cases[0].verdict == "pass"


async def test_judge_verdicts_are_cached_by_content(tmp_path: Path) -> None:
    seen: list[str] = []
    judge = judge_model({"": '{"verdict": "PASS", "reason": "ok"}'}, seen)
    suite = make_suite(tmp_path, JUDGED.replace("cases:", "trials: 3\ncases:"))
    cache = tmp_path / "cache"
    report = await run(suite, model="scripted", judge_model=judge, cache=True, cache_dir=cache)
    assert report.cases[0].verdict == "pass"
    # Three identical scripted transcripts, two rubric lines: two judge calls in all.
    assert (len(seen), report.judge_calls) == (2, 2)
    report = await run(suite, model="scripted", judge_model=judge, cache=True, cache_dir=cache)
    assert (len(seen), report.judge_calls) == (2, 0)


async def test_judge_failures_are_infrastructure_errors(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, JUDGED.replace("cases:", "retries: 0\ncases:"))
    report = await run(suite, model="scripted", judge_model=FlakyConnection(failures=10))
    [case] = report.cases
    assert case.verdict == "error"
    assert case.trials[0].error == ("the judge model failed: connection refused (127.0.0.1:9)")


async def test_the_response_cache_keeps_trials_independent(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, HEAD + "trials: 2\ncases: [{name: c, input: hi}]\n")
    cache = tmp_path / "cache"
    model = Counting()
    first = await run(suite, model=model, cache=True, cache_dir=cache, concurrency=1)
    outputs = [t.traces[0].output for t in first.cases[0].trials]  # type: ignore[index]
    assert outputs == ["answer 1", "answer 2"]  # trial 2 did not reuse trial 1's answer
    assert (first.model_calls, first.cached_calls) == (2, 0)
    again = await run(suite, model=model, cache=True, cache_dir=cache, concurrency=1)
    assert [t.traces[0].output for t in again.cases[0].trials] == outputs  # type: ignore[index]
    assert (again.model_calls, again.cached_calls, model.requests) == (0, 2, 2)
    assert (cache / ".gitignore").read_text().endswith("*\n")
    changed = make_suite(tmp_path, HEAD + "trials: 2\ncases: [{name: c, input: hello}]\n")
    third = await run(changed, model=model, cache=True, cache_dir=cache)
    assert third.model_calls == 2
    uncached = await run(suite, model=model, cache=False)
    assert uncached.model_calls == 2 and model.requests == 6


async def test_a_function_model_is_never_answered_from_the_cache(tmp_path: Path) -> None:
    """A function model's code may change between runs: a cached answer would hide the edit."""
    suite = make_suite(tmp_path, HEAD + "trials: 2\ncases: [{name: c, input: hi}]\n")
    cache = tmp_path / "cache"
    version = ["v1"]
    model = FunctionModel(lambda messages, info: f"answer {version[0]}", name="mine")
    first = await run(suite, model=model, cache=True, cache_dir=cache)
    version[0] = "v2"  # the user edits their function and runs again
    again = await run(suite, model=model, cache=True, cache_dir=cache)
    outputs = [t.traces[0].output for t in again.cases[0].trials]  # type: ignore[index]
    assert outputs == ["answer v2", "answer v2"]
    assert (first.cached_calls, again.cached_calls) == (0, 0)
    # A model of the same name behind the cache is still cached (the cache's purpose).
    counting = Counting(name="mine")
    await run(suite, model=counting, cache=True, cache_dir=cache)
    cached = await run(suite, model=counting, cache=True, cache_dir=cache)
    assert cached.cached_calls == 2 and counting.requests == 2


async def test_reports_are_written(tmp_path: Path) -> None:
    suite = make_suite(
        tmp_path,
        HEAD
        + """\
        trials: 2
        cases:
          - {name: good, input: hi, script: [hello]}
          - {name: bad, input: hi, expect: {final_contains: bye}, script: [hello]}
        """,
    )
    out = tmp_path / "out"
    report = await run(
        suite,
        model="scripted",
        keep_traces=False,
        reports=[f"json:{out}/r.json", f"junit:{out}/r.xml", f"markdown:{out}/r.md"],
    )
    data = json.loads((out / "r.json").read_text())
    assert (data["format"], data["version"], data["exit_code"]) == ("toolproof-eval-report", 1, 1)
    assert data["summary"]["failed"] == 1
    good, bad = data["cases"]
    assert (good["verdict"], bad["verdict"]) == ("pass", "fail")
    assert bad["stats"]["classification"] == "stable_fail"
    trial = bad["trials"][1]
    assert trial["index"] == 1 and trial["status"] == "fail"
    assert trial["checks"][1] == {
        "check": "final_contains",
        "kind": "objective",
        "status": "fail",
        "reason": "expected the final answer to contain 'bye'; it was 'hello'",
    }
    assert trial["traces"][0]["output"] == "hello" and trial["traces"][0]["version"] == 1
    assert all(t.traces is None for c in report.cases for t in c.trials)  # streamed, not kept
    junit = (out / "r.xml").read_text()
    assert '<testcase name="bad" classname="s"' in junit
    assert "expected the final answer to contain 'bye'" in junit
    markdown = (out / "r.md").read_text()
    assert markdown.startswith(
        "<!-- toolproof-evals -->\n## ❌ toolproof evals: 1 blocking case failed\n"
    )
    assert "| ❌ fail | `s::bad` | 0/2 |" in markdown


def test_evaluate_runs_the_example_suite_offline() -> None:
    root = Path(__file__).resolve().parents[2]
    report = evaluate(
        str(root / "examples/hr_assistant/hr.eval.yaml"), model="scripted", cache=False
    )
    assert report.exit_code == 0, [c.reason for c in report.cases if c.verdict != "pass"]
    assert len(report.cases) == 7 and all(len(c.trials) == 3 for c in report.cases)


async def test_rich_progress_shows_live_counts(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from toolproof.evals._progress import RichProgress

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=160, color_system=None)
    suite = make_suite(
        tmp_path,
        HEAD
        + """\
        trials: 3
        cases:
          - {name: good, input: hi, script: [hello]}
          - {name: bad, input: hi, expect: {final_contains: bye}, script: [hello]}
        """,
    )
    await run(suite, model="scripted", progress=RichProgress(console))
    output = buffer.getvalue()
    assert "trials  ✓ 3 ✗ 3 ! 0  cases 2/2" in output
    assert "6/6" in output and "ETA" in output
    assert "FAIL s::bad: 0/3 trials passed" in output  # failing cases are printed as they end


async def test_an_agent_object_as_the_target(tmp_path: Path) -> None:
    suite = make_suite(
        tmp_path,
        "suite: s\nagent: evalagents:AGENT\ncases: [{name: c, input: hi, script: [hello]}]\n",
    )
    report = await run(suite, model="scripted")
    trace = report.cases[0].trials[0].traces[0]  # type: ignore[index]
    assert report.cases[0].verdict == "pass"
    assert (trace.model, trace.system_prompt, trace.tool_mode) == ("scripted", "prebuilt", "mock")


async def test_trials_override_must_fit_the_pass_rule(tmp_path: Path) -> None:
    suite = make_suite(
        tmp_path, HEAD + "trials: 3\npass_rule: {at_least: 2}\ncases: [{name: c, input: hi}]\n"
    )
    with pytest.raises(UserError) as info:
        await run(suite, model="scripted", trials=1)
    assert str(info.value) == (
        "s::c needs at_least: 2 passing trials but runs only 1 (--trials is lower than its "
        "pass_rule): raise --trials"
    )


async def test_mocks_that_fail_to_start_fail_the_case(tmp_path: Path) -> None:
    # A mock factory is the user's code: its failure is the case's, never "infrastructure".
    from evalagents import FailingMocks

    FailingMocks.calls = 0
    suite = make_suite(
        tmp_path,
        HEAD + "mocks: evalagents:FailingMocks\nretries: 0\n"
        "cases: [{name: c, input: hi, script: [hello]}]\n",
    )
    report = await run(suite, model="scripted")
    [case] = report.cases
    assert (case.verdict, report.exit_code) == ("fail", 1)
    error = case.trials[0].error or ""
    assert error.startswith("creating the mocks failed: OSError: fixture service unavailable (")
    assert error.endswith("evalagents.py:205 in __new__)")
    assert 'raise OSError("fixture service unavailable")' in (case.trials[0].traceback or "")
