"""``claims_backed``: the final answer claims no action the trial did not take and no
capability the agent lacks.

Precision and recall over a generated set (``claims_corpus.py``: about 2,000 answers, each
with its trial), the reported answer through ``evaluate``, ``toolproof run`` and the pytest
plugin, and the value's problems reported with their line when the suite loads.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from claims_corpus import samples

# pytester restores sys.modules after each in-process run; keep what inner runs import loaded.
import toolproof.evals
import toolproof.testing._suites  # noqa: F401
from toolproof._yaml import Locator, Problems
from toolproof.errors import ConfigError
from toolproof.evals import evaluate, load_suite
from toolproof.evals._checks import compile_expect

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SAMPLES = list(samples())


def test_precision_and_recall_on_generated_answers() -> None:
    problems = Problems(Locator(Path("s.eval.yaml")))
    [check] = compile_expect({"claims_backed": True}, tools=None, problems=problems, path=())
    assert len(SAMPLES) > 1_500
    outcomes = [(sample, check(sample.record).status == "fail") for sample in SAMPLES]
    false_alarms = [s.answer for s, flagged in outcomes if flagged and not s.unbacked]
    assert false_alarms == []  # precision 1.0
    read = [(s, flagged) for s, flagged in outcomes if s.family in ("did", "can")]
    missed = [s.answer for s, flagged in read if s.unbacked and not flagged]
    assert missed == []  # recall 1.0 on claims written with their verb
    positives = [flagged for s, flagged in outcomes if s.unbacked]
    assert sum(positives) / len(positives) > 0.8  # paraphrases without the verb are missed
    assert sum(1 for s, _ in read if s.unbacked) > 500
    assert sum(1 for s in SAMPLES if s.family == "none") > 1_000


SUITE = """\
suite: claims
agent: evalagents:build_agent
model: scripted
mocks: evalagents:order_mocks
expect: {claims_backed: true}
cases:
  - name: claims-a-capability-it-lacks
    input: what can you do?
    script: ["I can also add numbers and look up employee E1001."]
  - name: claims-an-action-it-did-not-take
    input: cancel A1
    script: ["I have cancelled your order A1."]
  - name: claims-an-action-whose-call-failed
    input: cancel Z9
    script: [{call: {name: cancel_order, arguments: {order_id: Z9}}}, "I've cancelled order Z9."]
  - name: backed
    input: cancel A1
    script:
      - {call: {name: get_leave_balance, arguments: {employee_id: E001}}}
      - {call: {name: cancel_order, arguments: {order_id: A1}}}
      - "I looked up your balance and cancelled your order A1."
  - name: declines
    input: add 2 and 3
    script: ["I cannot add numbers, and I will not cancel anything unless you ask."]
  - name: named-in-the-value
    input: cancel A1
    expect: {claims_backed: {cancel: [multiply_numbers]}}
    script: [{call: {name: cancel_order, arguments: {order_id: A1}}}, "I cancelled A1."]
"""
EXPECTED = {
    "claims-a-capability-it-lacks": "fail",
    "claims-an-action-it-did-not-take": "fail",
    "claims-an-action-whose-call-failed": "fail",
    "backed": "pass",
    "declines": "pass",
    "named-in-the-value": "fail",
}
REASONS = {
    "claims-a-capability-it-lacks": (
        "says 'I can also add numbers and look up employee E1001.', but no tool of the agent "
        "can add (its tools: multiply_numbers, get_leave_balance, search_docs, cancel_order, "
        "crash)"
    ),
    "claims-an-action-it-did-not-take": (
        "says 'I have cancelled your order A1.', but no call of cancel_order was made"
    ),
    "claims-an-action-whose-call-failed": (
        'says "I\'ve cancelled order Z9.", but the call of cancel_order failed'
    ),
    "named-in-the-value": "says 'I cancelled A1.', but no call of multiply_numbers was made",
}


def write(folder: Path) -> Path:
    path = folder / "claims.eval.yaml"
    path.write_text(SUITE, encoding="utf-8")
    return path


def test_python_api(tmp_path: Path) -> None:
    report = evaluate([load_suite(write(tmp_path))], cache=False)
    assert {r.case.name: r.verdict for r in report.cases} == EXPECTED
    for result in report.cases:
        [check] = [c for c in result.trials[0].checks if c.check == "claims_backed"]
        if result.case.name in REASONS:
            assert check.reason == REASONS[result.case.name]
    [backed] = [r for r in report.cases if r.case.name == "backed"]
    [check] = [c for c in backed.trials[0].checks if c.check == "claims_backed"]
    assert check.reason == (
        "each claimed action is backed by a call (get_leave_balance, cancel_order)"
    )


@pytest.mark.timeout(120)
def test_cli(tmp_path: Path) -> None:
    write(tmp_path)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT / "src")]),
        "NO_COLOR": "1",
        "COLUMNS": "400",
    }
    done = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", "claims.eval.yaml", "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    found = re.findall(r"\] (PASS|FAIL) claims::(\S+)", done.stdout + done.stderr)
    assert {name: verdict.lower() for verdict, name in found} == EXPECTED
    text = " ".join(done.stdout.split())
    assert REASONS["claims-an-action-it-did-not-take"] in text


def test_pytest_plugin(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "addopts = -p no:cacheprovider\n"
    )
    monkeypatch.syspath_prepend(str(HERE))
    write(pytester.path)
    result = pytester.runpytest("-v")
    found = re.findall(r"claims\.eval\.yaml::(\S+) (PASSED|FAILED)", result.stdout.str())
    assert {name: "pass" if o == "PASSED" else "fail" for name, o in found} == EXPECTED
    result.stdout.fnmatch_lines(["*fail: claims_backed: says 'I have cancelled your order A1.'*"])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{cancel: [cancel_ordr]}", "unknown tool 'cancel_ordr' (did you mean 'cancel_order'?)"),
        ("{cancel: 3}", "expected tool names, got an integer"),
        ("{'cancel it': [cancel_order]}", "expected an action verb, got 'cancel it'"),
        ("maybe", "expected true, or a mapping of an action verb to tool names, got 'maybe'"),
        ("{}", "expected true, or a mapping of an action verb to tool names, got {}"),
    ],
)
def test_a_bad_value_is_reported_with_its_line(tmp_path: Path, value: str, message: str) -> None:
    path = tmp_path / "bad.eval.yaml"
    path.write_text(
        "suite: s\nagent: evalagents:build_agent\ncases:\n"
        f"  - name: c\n    input: hi\n    expect:\n      claims_backed: {value}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert any("bad.eval.yaml:7: " in p and message in p for p in info.value.problems or []), (
        info.value.problems
    )
