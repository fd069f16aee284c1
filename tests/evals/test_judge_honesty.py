"""The judge and the summary say what happened: no silent judging by a scripted model, the
reason a judged check did not run, and no pass^k over scripted (deterministic) trials."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from toolproof import Message
from toolproof.evals import EvalReport, Suite, evaluate_async, load_suite
from toolproof.evals._report import markdown_report, print_summary
from toolproof.models import Model, ModelResponse, ModelSettings, ToolDefinition
from toolproof.testing import FunctionModel, RequestInfo

HEAD = "suite: s\nagent: evalagents:build_agent\n"


def make_suite(tmp_path: Path, text: str) -> Suite:
    path = tmp_path / "s.eval.yaml"
    path.write_text(HEAD + textwrap.dedent(text), encoding="utf-8")
    return load_suite(path)


async def run(suite: Suite, **options: Any) -> EvalReport:
    options.setdefault("cache", False)
    return await evaluate_async([suite], **options)


class Hello(Model):
    """A model written by hand (not a scripted fake): its trials are measured."""

    name = "hello-model"

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        return ModelResponse(Message.assistant("hello"))


def summary_text(report: EvalReport) -> str:
    console = Console(width=200, record=True, no_color=True)
    with console.capture() as captured:
        print_summary(report, console)
    return captured.get()


JUDGED = """\
trials: 2
cases:
  - name: c
    input: hi
    expect: {final_contains: "hello"}
    judge: [The answer is polite.]
"""


async def test_a_function_model_never_judges_its_own_trials(tmp_path: Path) -> None:
    requests: list[int] = []

    def respond(messages: list[Message], info: RequestInfo) -> str:
        requests.append(1)
        return "hello"

    model = FunctionModel(respond, name="mine")
    report = await run(make_suite(tmp_path, JUDGED), model=model)
    [case] = report.cases
    assert len(requests) == 2  # one answer per trial; nothing went to "judging"
    assert case.verdict == "pass" and case.judge_model is None
    [judged] = [c for c in case.trials[0].checks if c.kind == "judged"]
    assert judged.status == "skip"
    assert judged.reason == (
        "not judged: no judge model (the case's model (mine) is scripted in Python, so it cannot "
        "judge its own trials; set judge_model in the suite or pass --judge-model)"
    )
    text = summary_text(report)
    assert "2 judged checks not run (no judge model)" in text
    assert "inconclusive" not in text


async def test_judged_checks_skipped_after_a_failure_say_so(tmp_path: Path) -> None:
    judge = FunctionModel(lambda messages, info: '{"verdict": "PASS", "reason": "ok"}', name="j")
    model = FunctionModel(lambda messages, info: "bye", name="mine")
    report = await run(make_suite(tmp_path, JUDGED), model=model, judge_model=judge)
    assert report.exit_code == 1
    text = summary_text(report)
    assert "2 judged checks not run (the objective checks failed)" in text
    assert "no judge model" not in text


async def test_scripted_runs_say_they_check_wiring_and_report_no_pass_hat_k(
    tmp_path: Path,
) -> None:
    suite = make_suite(
        tmp_path,
        """\
        trials: 3
        cases:
          - {name: a, input: hi, script: [hello]}
          - {name: b, input: hi, script: [hello]}
        """,
    )
    report = await run(suite, model="scripted")
    assert report.exit_code == 0 and report.scripted
    assert all(c.scripted for c in report.cases)
    text = summary_text(report)
    assert "scripted: checks the wiring (tools, mocks, checks), not the model" in text
    [figures] = [line for line in text.splitlines() if "trials passed ·" in line]
    assert "pass^" not in figures and "pass@" not in figures and "flaky" not in figures
    assert report.summary()["stats"]["cases"] == 0  # no model was measured
    assert report.summary()["scripted_cases"] == 2
    markdown = markdown_report(report)
    assert "scripted: checks the wiring" in markdown and "pass^" not in markdown
    # A model's trials are measured as before.
    real = await run(suite, model=Hello())
    assert real.summary()["stats"]["cases"] == 2
    assert "pass^3 1.000" in summary_text(real)
