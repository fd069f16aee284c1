"""Cases that converse with a user: what the user sees, how it ends, whose mistake it is.

The agent and the user models are FunctionModels (models are the one thing tests mock);
everything else is the real runner, the real reports and the real CLI.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import useragents
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.errors import ConfigError, ModelHTTPError
from toolproof.evals import CaseResult, evaluate, load_suite
from toolproof.models import Model
from toolproof.testing import FunctionModel

HERE = Path(__file__).parent


def suite(tmp_path: Path, case: str, **top: Any) -> Path:
    """A suite of one case (``case``: its YAML, indented under ``cases:``)."""
    lines = [
        "suite: talk",
        "agent: useragents:build_agent",
        "mocks: [useragents:Bookings]",
        *(f"{k}: {json.dumps(v)}" for k, v in top.items()),
        "cases:",
        textwrap.indent(textwrap.dedent(case), "  "),
    ]
    path = tmp_path / "talk.eval.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _one_case(tmp_path: Path, case_yaml: str, user: Model | None = None) -> CaseResult:
    """The result of the suite's one case, run by the booking agent with its traces kept."""
    report = evaluate(
        [load_suite(suite(tmp_path, case_yaml))],
        model=useragents.agent_model(),
        user_model=user,
        keep_traces=True,
        cache=False,
    )
    [case] = report.cases
    return case


SIMULATED = """\
- name: talk
  user:
    persona: A passenger.
    instructions: You want to know about your booking, then cancel it.
    knows: {booking_code: ABC123}
    reveal_when_asked: [booking_code]
    max_turns: 4
"""

texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=6,
    max_size=40,
).filter(lambda s: s.strip() and "###" not in s)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(secret=texts, replies=st.lists(texts, min_size=1, max_size=3))
def test_the_user_model_sees_the_conversation_as_a_user_would(
    tmp_path: Path, secret: str, replies: list[str]
) -> None:
    """No system prompt, no tool call, no tool argument or result reaches the user model."""
    secret = f"«{secret}»"  # (a generated word such as "change" is also in the user's prompt)
    agent, user = useragents.agent_model(secret), useragents.user_model(replies)
    report = evaluate(
        [load_suite(suite(tmp_path, SIMULATED))],
        model=agent,
        user_model=user,
        keep_traces=True,
        cache=False,
    )
    [case] = report.cases
    traces = case.trials[0].traces or []
    assert [t.input for t in traces] == [r.strip() for r in replies][: len(traces)]
    assert any(t.tool_calls for t in traces)  # the agent did call tools with the secret
    # One user model request per user turn, plus the one that ended the conversation.
    assert len(user.requests) == len(traces) + (1 if len(traces) < 4 else 0)
    for request in user.requests:
        assert request.tools == []
        assert request.messages[0].role == "system"
        assert "instructions" not in request.messages[0].content  # (the user's own prompt)
        assert "You want to know about your booking" in request.messages[0].content
        for message in request.messages:
            assert message.role in ("system", "user", "assistant")
            assert not message.tool_calls
            text = message.content or ""
            assert useragents.SYSTEM_MARKER not in text
            assert useragents.RESULT_MARKER not in text
            assert secret not in text or secret in " ".join(replies)
        # The user speaks once per agent answer: roles alternate after the opening.
        roles = [m.role for m in request.messages[1:]]
        assert all(a != b for a, b in itertools.pairwise(roles))
    assert traces[0].history == []  # one opening turn, never two


def test_a_last_message_sent_with_done_still_reaches_the_agent(tmp_path: Path) -> None:
    """A user who confirms and leaves in one breath does not stop the agent's write call."""
    user = useragents.user_model(["What is my booking?", "Yes, cancel it please ###DONE###"])
    case_yaml = SIMULATED + "  expect: {tools_called: [cancel], state: {cancelled: [XK-1]}}\n"
    case = _one_case(tmp_path, case_yaml, user)
    assert case.verdict == "pass", case.reason
    traces = case.trials[0].traces or []
    assert [t.input for t in traces] == ["What is my booking?", "Yes, cancel it please"]
    assert traces[-1].metadata["conversation"] == {"ended_by": "user", "turns": 2}
    assert [t.metadata["user"] for t in traces] == [
        {"turn": 1, "source": "simulated"},
        {"turn": 2, "source": "simulated"},
    ]


@pytest.mark.parametrize(
    ("replies", "extra", "ended_by", "turns"),
    [
        (["hello"] * 9, "", "max_turns", 4),
        (
            ["hello", "a human please", "hello"],
            "    end_tools: [transfer_to_human]\n",
            "agent_ended",
            2,
        ),
        (["hello", "hello"], "", "agent_stopped", 1),
        (["hello", "###DONE###"], "", "user", 1),
        (["hello", ""], "", "user", 1),  # an empty reply ends the conversation, never the run
    ],
)
def test_how_a_conversation_ends(
    tmp_path: Path, replies: list[str], extra: str, ended_by: str, turns: int
) -> None:
    agent_options = {"max_steps": 1} if ended_by == "agent_stopped" else {}
    report = evaluate(
        [load_suite(suite(tmp_path, SIMULATED + extra, agent_options=agent_options))],
        model=useragents.agent_model(),
        user_model=useragents.user_model(replies),
        keep_traces=True,
        cache=False,
    )
    traces = report.cases[0].trials[0].traces or []
    assert len(traces) == turns
    assert traces[-1].metadata["conversation"]["ended_by"] == ended_by


def test_a_simulator_fault_is_kept_apart_in_every_report(tmp_path: Path) -> None:
    """The user reveals its code unasked in one trial of three: two trials judge the agent."""
    path = suite(tmp_path, SIMULATED + "  trials: 3\n")
    conversations = iter(
        [
            ["Hi, my booking code is ABC123.", "###DONE###"],  # the simulator's mistake
            ["Hi, what is my booking?", "###DONE###"],
            ["Hi, what is my booking?", "###DONE###"],
        ]
    )
    current: list[str] = []

    def respond(messages: list[Any], info: Any) -> str:
        nonlocal current
        if len(messages) <= 2:  # a new conversation starts
            current = list(next(conversations))
        return current.pop(0)

    reports = {f: tmp_path / f"r.{f}" for f in ("json", "xml", "md", "html")}
    specs = [f"json:{reports['json']}", f"junit:{reports['xml']}", f"markdown:{reports['md']}"]
    specs.append(f"html:{reports['html']}")
    report = evaluate(
        [load_suite(path)],
        model=useragents.agent_model(),
        user_model=FunctionModel(respond),
        reports=specs,
        concurrency=1,
        cache=False,
    )
    [case] = report.cases
    assert [t.status for t in case.trials] == ["simulator_fault", "pass", "pass"]
    assert case.verdict == "pass" and case.simulator_faults == 1
    assert case.stats is not None and case.stats.n == 2  # the faulty trial is no trial of the agent
    assert "revealed: turn 1 gives booking_code ('ABC123') before the agent asked" in case.reason
    data = json.loads(reports["json"].read_text())
    assert data["summary"]["trials_simulator_fault"] == 1
    assert data["cases"][0]["simulator_faults"] == 1
    assert data["cases"][0]["trials"][0]["status"] == "simulator_fault"
    assert "SIMULATOR FAULT" in reports["xml"].read_text()
    assert "simulator faults (trials)" in reports["md"].read_text()
    assert "trials with simulator faults" in reports["html"].read_text()


def test_the_cli_shows_simulator_faults_apart(tmp_path: Path) -> None:
    path = suite(tmp_path, SIMULATED)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.getcwd()])}
    env["COLUMNS"] = "400"  # the reason on one line of the table
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolproof",
            "run",
            str(path),
            "--model",
            "useragents:AGENT",
            "--user-model",
            "useragents:REVEALING",
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    out = done.stdout + done.stderr
    assert "1 with simulator faults (not counted for the agent)" in out, out
    assert "every trial's simulated user broke its instructions" in out, out
    assert "Traceback" not in out


def test_a_mixed_script_runs_fixed_function_and_simulated_turns_with_checks_between(
    tmp_path: Path,
) -> None:
    case_yaml = """\
    - name: mixed
      user:
        instructions: You want to cancel booking ABC123.
        knows: {booking_code: ABC123}
        script:
          - "Tell me about my booking."
          - expect: {tools_called: [lookup], tools_not_called: [cancel]}
          - reply: useragents:say_code_when_asked
          - simulate: 1
            expect: {tools_called: [cancel]}
          - "Thanks!"
          - expect: {tools_called: [lookup]}
      expect: {state: {cancelled: [XK-1]}}
    """
    user = useragents.user_model(["Please cancel it."])
    case = _one_case(tmp_path, case_yaml, user)
    trial = case.trials[0]
    traces = trial.traces or []
    sources = [t.metadata["user"]["source"] for t in traces]
    assert sources == ["fixed", "function", "simulated", "fixed"]
    assert traces[1].input == "It is ABC123."
    labels = {c.label: c.status for c in trial.checks}
    assert labels["tools_called@turn1"] == "pass"
    assert labels["tools_not_called@turn1"] == "pass"
    assert labels["tools_called@turn3"] == "pass"
    assert labels["tools_called@turn4"] == "pass"
    assert case.verdict == "pass", case.reason


def test_a_user_function_returning_none_ends_the_conversation(tmp_path: Path) -> None:
    case_yaml = """\
    - name: ends
      user:
        script:
          - reply: useragents:say_code_when_asked
          - "never sent"
    """
    case = _one_case(tmp_path, case_yaml)
    assert case.trials[0].traces == []
    assert case.verdict == "fail"  # nothing ran: the completion check says so


def test_a_check_between_turns_fails_naming_its_turn(tmp_path: Path) -> None:
    case_yaml = """\
    - name: wrong
      user:
        script:
          - "Tell me about my booking."
          - "Now cancel it."
          - expect: {tools_not_called: [cancel]}
    """
    report = evaluate(
        [load_suite(suite(tmp_path, case_yaml))], model=useragents.agent_model(), cache=False
    )
    [case] = report.cases
    assert case.verdict == "fail"
    assert "tools_not_called@turn2" in case.reason


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ("{knows: {a: 1}, reveal_when_asked: [b], script: [hi]}", "'b' is not a key of 'knows'"),
        ("{end_tools: [transfer], script: [hi]}", "unknown tool 'transfer'"),
        ("{script: [{sya: hi}]}", "unknown key 'sya'"),
        ("{script: [{simulate: 0}], instructions: x}", "expected a positive integer, got 0"),
        ("{script: [{expect: {tools_called: [lookup]}}]}", "checks between turns follow a turn"),
        ("{max_turns: 3}", "a simulated user needs 'instructions'"),
        ("{script: [{reply: 'useragents:nothing_here'}]}", "nothing_here"),
        ("{recorded: missing.json}", "cannot read the recorded conversation missing.json"),
        ("{script: [hi], max_turns: 0}", "expected a positive integer, got 0"),
        ("[hi]", "expected a mapping"),
    ],
)
def test_a_bad_user_names_what_to_fix_with_its_line(
    tmp_path: Path, user: str, message: str
) -> None:
    path = suite(tmp_path, f"- name: bad\n  user: {user}\n")
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    text = str(caught.value)
    assert message in text, text
    assert "talk.eval.yaml:6" in text or "talk.eval.yaml:7" in text, text


def test_a_user_beside_input_is_a_problem(tmp_path: Path) -> None:
    path = suite(tmp_path, "- name: both\n  input: hi\n  user: {script: [hi]}\n")
    with pytest.raises(ConfigError, match="give 'input', 'turns' or 'user', not several"):
        load_suite(path)


def test_a_scripted_run_skips_a_simulated_user_but_runs_a_scripted_one(tmp_path: Path) -> None:
    case_yaml = """\
    - name: simulated
      user: {instructions: cancel, user_model: "deepseek:deepseek-chat"}
      script: ["ok"]
    - name: scripted
      user: {script: ["hello"]}
      script: [{call: {name: lookup, arguments: {code: A}}}, "Found it."]
      expect: {tools_called: [lookup]}
    """
    report = evaluate([load_suite(suite(tmp_path, case_yaml))], model="scripted", cache=False)
    verdicts = {c.case.name: (c.verdict, c.reason) for c in report.cases}
    assert verdicts["simulated"][0] == "skipped"
    assert "its user is simulated by a model" in verdicts["simulated"][1]
    assert verdicts["scripted"][0] == "pass", verdicts


def test_a_failing_user_model_is_an_error_not_a_failure_of_the_agent(tmp_path: Path) -> None:
    def broken(messages: list[Any], info: Any) -> str:
        raise ModelHTTPError("the provider is down", status=503)

    report = evaluate(
        [load_suite(suite(tmp_path, SIMULATED))],
        model=useragents.agent_model(),
        user_model=FunctionModel(broken),
        retry_backoff=0.0,
        cache=False,
    )
    [case] = report.cases
    assert case.verdict == "error"
    assert case.trials[0].status == "error"
    assert "the user model failed" in (case.trials[0].error or "")


def test_the_judge_sees_the_whole_conversation(tmp_path: Path) -> None:
    seen: list[str] = []

    def judge(messages: list[Any], info: Any) -> str:
        seen.append("\n".join(m.content or "" for m in messages))
        return "PASS: fine"

    case_yaml = SIMULATED + '  judge: "The agent was polite."\n'
    user = useragents.user_model(["first turn alpha", "second turn beta", "third turn gamma"])
    report = evaluate(
        [load_suite(suite(tmp_path, case_yaml))],
        model=useragents.agent_model(),
        user_model=user,
        judge_model=FunctionModel(judge),
        cache=False,
    )
    assert report.cases[0].verdict == "pass", report.cases[0].reason
    assert seen and all(word in seen[0] for word in ("alpha", "beta", "gamma"))


def test_pass_hat_k_counts_conversations(tmp_path: Path) -> None:
    """Four conversations, the agent cancels in two: pass^k is computed over conversations."""
    count = 0

    def user(messages: list[Any], info: Any) -> str:
        nonlocal count
        if len(messages) <= 2:
            count += 1
            return "cancel it" if count % 2 else "hello"
        return "###DONE###"

    case_yaml = (
        SIMULATED + "  trials: 4\n  pass_rule: {at_least: 1}\n  expect: {tools_called: [cancel]}\n"
    )
    report = evaluate(
        [load_suite(suite(tmp_path, case_yaml))],
        model=useragents.agent_model(),
        user_model=FunctionModel(user),
        concurrency=1,
        cache=False,
    )
    [case] = report.cases
    assert [t.status for t in case.trials] == ["pass", "fail", "pass", "fail"]
    assert case.stats is not None and case.stats.n == 4 and case.stats.c == 2
    assert case.stats.pass_hat[2] == pytest.approx(1 / 6)
