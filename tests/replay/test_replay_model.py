"""Model mode: today's agent answers recorded questions; tools answer from the recording."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolproof import Agent, Message, Trace, tool
from toolproof.errors import ModelHTTPError
from toolproof.models.fake import RequestInfo
from toolproof.replay import ReplayRules, mock_from_trace, replay
from toolproof.testing import FunctionModel, ScriptedModel, call

LIVE_CALLS: list[dict[str, Any]] = []


@tool(extra="ignore")
def lookup_user(user_id: int) -> dict[str, Any]:
    """Look up a user.

    Args:
        user_id: The numeric user id.
    """
    LIVE_CALLS.append({"user_id": user_id})
    return {"user_id": user_id, "name": f"user{user_id}", "plan": "pro", "seats": 7 * user_id}


@tool
def lookup_user_strict(user_id: int) -> dict[str, Any]:
    """Look up a user.

    Args:
        user_id: The numeric user id.
    """
    LIVE_CALLS.append({"user_id": user_id})
    return {}


@tool
def list_invoices(user_id: int, limit: int = 10) -> list[dict[str, Any]]:
    """List a user's invoices.

    Args:
        user_id: The numeric user id.
        limit: At most this many.
    """
    LIVE_CALLS.append({"invoices": user_id})
    return []


TOOLS = [lookup_user, list_invoices]


def answer(data: dict[str, Any]) -> str:
    return f"User {data['user_id']} is {data['name']} with {data['seats']} seats."


def recorded(user_id: int = 12) -> Trace:
    """A production run: look the user up, answer from the result."""
    agent = Agent(
        ScriptedModel([call("lookup_user", user_id=user_id), answer(lookup_user(user_id))]),
        TOOLS,
        system_prompt="You are an ops agent.",
    )
    trace = agent.run_sync(f"Tell me about user {user_id}").trace
    LIVE_CALLS.clear()
    return trace


def model(
    *,
    arguments: dict[str, Any] | None = None,
    reply: Any = None,
    tool_name: str = "lookup_user",
    extra_calls: list[Any] | None = None,
) -> FunctionModel:
    """Today's model: calls a tool with ``arguments``, then answers with ``reply(data)``."""

    def respond(messages: list[Message], info: RequestInfo) -> Any:
        last = messages[-1]
        if last.role == "user":
            user_id = int((last.content or "").split()[-1])
            calls = [call(tool_name, **(arguments or {"user_id": user_id}))]
            return calls + list(extra_calls or [])
        if last.status == "error":
            return f"Lookup failed: {last.content}"
        data = json.loads(next(m.content for m in messages if m.role == "tool") or "{}")
        return (reply or answer)(data)

    return FunctionModel(respond, name="new-model")


def factory(tools: list[Any]) -> Any:
    def build(model: Any, toolset: Any = None) -> Agent:
        return Agent(model, toolset or tools, system_prompt="You are an ops agent, v2.")

    return build


def grade_of(report: Any) -> tuple[str, list[tuple[str, str]]]:
    (sample,) = report.samples
    return sample.grade, [(f.grade, f.check) for f in sample.findings]


def test_same_behaviour_passes_and_never_calls_the_real_tool() -> None:
    report = replay([recorded()], mode="model", agent=factory(TOOLS), model=model())
    assert grade_of(report) == ("pass", [])
    (sample,) = report.samples
    assert sample.new_model == "new-model"
    assert sample.recorded_model == "scripted"
    assert sample.notes == ["system prompt changed since recording"]
    assert LIVE_CALLS == []


def test_a_new_argument_the_schema_accepts_warns() -> None:
    new = model(arguments={"user_id": 12, "options": {"format": "json"}})
    report = replay([recorded()], mode="model", agent=factory(TOOLS), model=new)
    grade, findings = grade_of(report)
    assert (grade, findings) == ("warn", [("warn", "extra_args")])
    finding = report.samples[0].findings[0]
    assert finding.message == "lookup_user: new argument 'options' (the schema accepts it)"
    assert finding.recorded == 'lookup_user({"user_id": "***"})'
    assert finding.new == 'lookup_user({"options": {"format": "json"}, "user_id": "***"})'
    assert report.spot_check == report.samples
    assert report.exit_code == 0


def test_the_same_new_argument_against_a_strict_tool_fails() -> None:
    strict = tool(lookup_user_strict.function, name="lookup_user")  # extra="forbid"

    def build(model: Any, toolset: Any = None) -> Agent:
        return Agent(model, toolset or [strict, list_invoices])

    new = model(arguments={"user_id": 12, "options": {"format": "json"}})
    report = replay([recorded()], mode="model", agent=build, model=new, gate=0.05)
    grade, findings = grade_of(report)
    assert grade == "fail"
    assert ("fail", "schema") in findings
    assert report.exit_code == 1


def test_forbid_extra_args_and_compare_rules() -> None:
    rules = ReplayRules.from_dict({"tools": {"lookup_user": {"forbid_extra_args": True}}})
    new = model(arguments={"user_id": 12, "verbose": True})
    report = replay([recorded()], mode="model", agent=factory(TOOLS), model=new, rules=rules)
    assert grade_of(report) == ("fail", [("fail", "extra_args")])

    quiet = ReplayRules.from_dict({"tools": {"lookup_user": {"forbid_extra_args": False}}})
    report = replay([recorded()], mode="model", agent=factory(TOOLS), model=new, rules=quiet)
    assert grade_of(report) == ("pass", [])


def test_a_call_without_a_recorded_response_fails_with_a_masked_message() -> None:
    report = replay(
        [recorded()], mode="model", agent=factory(TOOLS), model=model(arguments={"user_id": 99})
    )
    grade, findings = grade_of(report)
    assert (grade, findings) == ("fail", [("fail", "no_fixture")])
    finding = report.samples[0].findings[0]
    assert finding.message == (
        "the new run made a call the recording has no response for: "
        "No fixture matches the call lookup_user(user_id=***)."
    )
    assert "99" not in json.dumps(finding.to_dict())
    assert "lookup_user(user_id=***)" in finding.new
    assert LIVE_CALLS == []


def test_a_tool_the_recording_never_called_is_not_run_live() -> None:
    new = model(extra_calls=[call("list_invoices", user_id=12)])
    report = replay([recorded()], mode="model", agent=factory(TOOLS), model=new)
    (sample,) = report.samples
    assert sample.grade == "fail"
    (finding,) = sample.findings
    assert finding.check == "no_fixture"
    assert "the recorded run never called 'list_invoices'" in finding.message
    assert LIVE_CALLS == []


def test_a_skipped_tool_call_and_an_extra_one() -> None:
    def no_tool(messages: list[Message], info: RequestInfo) -> str:
        return "User 12 is user12 with 84 seats."

    report = replay([recorded()], mode="model", agent=factory(TOOLS), model=FunctionModel(no_tool))
    grade, findings = grade_of(report)
    assert grade == "fail"
    assert ("fail", "tool_missing") in findings
    assert ("fail", "ungrounded") in findings  # 84 now comes from nowhere

    twice = model(extra_calls=[call("lookup_user", user_id=12)])
    report = replay([recorded()], mode="model", agent=factory(TOOLS), model=twice)
    grade, findings = grade_of(report)
    assert ("fail", "tool_unexpected") in findings
    finding = next(f for f in report.samples[0].findings if f.check == "tool_unexpected")
    assert finding.message == ("tool 'lookup_user' was called 2 times now and 1 time when recorded")


def test_answers_worded_differently_warn_and_inventions_fail() -> None:
    def reworded(data: dict[str, Any]) -> str:
        return f"{data['name']} (id {data['user_id']}) has {data['seats']} seats on {data['plan']}."

    report = replay([recorded()], mode="model", agent=factory(TOOLS), model=model(reply=reworded))
    assert grade_of(report) == ("warn", [("warn", "answer_changed")])
    finding = report.samples[0].findings[0]
    assert finding.message == "the answer is worded differently; it states the same facts"
    assert finding.recorded == "User 12 is user12 with 84 seats."
    assert finding.new == "user12 (id 12) has 84 seats on pro."

    def invented(data: dict[str, Any]) -> str:
        return f"User {data['user_id']} is {data['name']} with 85 seats, account E1001."

    report = replay([recorded()], mode="model", agent=factory(TOOLS), model=model(reply=invented))
    grade, findings = grade_of(report)
    assert (grade, findings) == ("fail", [("fail", "ungrounded")])
    assert report.samples[0].findings[0].message == (
        "the answer states 'E1001', '85', found in neither the input nor any tool result"
    )


def test_a_judge_turns_a_reworded_answer_into_a_fail_when_not_equivalent() -> None:
    def reworded(data: dict[str, Any]) -> str:
        return f"{data['name']} has {data['seats']} seats; user {data['user_id']} is suspended."

    seen: list[str] = []

    def judge_says(verdict: bool) -> FunctionModel:
        def respond(messages: list[Message], info: RequestInfo) -> str:
            seen.append(messages[-1].content or "")
            said = "PASS" if verdict else "FAIL"
            return json.dumps({"verdict": said, "reason": "the new answer adds a status"})

        return FunctionModel(respond, name="judge")

    new = model(reply=reworded)
    report = replay(
        [recorded()], mode="model", agent=factory(TOOLS), model=new, judge=judge_says(False)
    )
    grade, findings = grade_of(report)
    assert (grade, findings) == ("fail", [("warn", "answer_changed"), ("fail", "judge")])
    assert report.samples[0].findings[1].message == (
        "the judge found the answers not equivalent: the new answer adds a status"
    )
    assert "Recorded answer:\nUser 12 is user12 with 84 seats." in seen[0]

    report = replay(
        [recorded()], mode="model", agent=factory(TOOLS), model=new, judge=judge_says(True)
    )
    assert grade_of(report) == ("warn", [("warn", "answer_changed")])


def test_recorded_outputs_through_todays_loop() -> None:
    report = replay([recorded()], mode="model", agent=factory(TOOLS), model="recorded")
    assert grade_of(report) == ("pass", [])
    assert report.new_model == "recorded"

    @tool(name="lookup_user")
    def by_account(account: str) -> dict[str, Any]:
        """Look up an account.

        Args:
            account: The account name.
        """
        return {}

    def strict_build(model: Any, toolset: Any = None) -> Agent:
        return Agent(model, toolset or [by_account])

    # today's tool takes an `account`, not a `user_id`: the recorded call is rejected
    report = replay([recorded()], mode="model", agent=strict_build, model="recorded")
    assert report.samples[0].grade == "fail"


def test_an_unreachable_model_is_an_error_not_a_failure() -> None:
    def down(messages: list[Message], info: RequestInfo) -> str:
        raise ModelHTTPError("HTTP 503 from provider", status=503)

    report = replay(
        [recorded(), recorded(13)],
        mode="model",
        agent=factory(TOOLS),
        model=FunctionModel(down),
        gate=0.05,
    )
    assert report.counts == {"pass": 0, "warn": 0, "fail": 0, "error": 2}
    assert report.exit_code == 3
    assert (
        report.samples[0]
        .findings[0]
        .message.startswith("the model could not be reached (ModelHTTPError)")
    )


def test_many_samples_concurrently_keep_their_order_and_the_recorder_is_off() -> None:
    traces = [recorded(n) for n in range(1, 9)]

    class Spy:
        def __init__(self) -> None:
            self.seen: list[Trace] = []

        def record(self, trace: Trace) -> None:
            self.seen.append(trace)

    spy = Spy()
    agent = Agent(model(), TOOLS, recorder=spy)
    report = replay(traces, mode="model", agent=agent, concurrency=3, keep_traces=True)
    assert [s.trace_id for s in report.samples] == [t.id for t in traces]
    assert all(s.grade == "pass" for s in report.samples)
    assert spy.seen == []
    assert agent.recorder is spy
    assert all(s.new_trace is not None and s.new_trace.tags == ["replay"] for s in report.samples)


def test_mock_from_trace_keys_on_the_arguments_that_matter() -> None:
    @tool(name="list_invoices")
    def invoices(user_id: int, limit: int = 10) -> list[dict[str, Any]]:
        """List invoices.

        Args:
            user_id: The user.
            limit: At most this many.
        """
        return [{"n": limit}]

    agent = Agent(
        ScriptedModel(
            [
                call("list_invoices", user_id=1, limit=5),
                call("list_invoices", user_id=1, limit=5),
                "done",
            ]
        ),
        [invoices],
    )
    trace = agent.run_sync("invoices of 1").trace
    rules = ReplayRules.from_dict({"tools": {"list_invoices": {"ignore": ["limit"]}}})
    mock = mock_from_trace(trace, rules=rules)
    assert [f.arguments for f in mock.fixtures] == [{"user_id": 1}]
    assert mock.fixtures[0].returns == [{"n": 5}]
    assert mock.key_args == {"list_invoices": ("user_id",)}


def test_a_factory_without_a_model_is_refused() -> None:
    from toolproof import UserError

    with pytest.raises(UserError) as info:
        replay([recorded()], mode="model", agent=factory(TOOLS))
    assert str(info.value) == (
        "model mode with an agent factory needs the model that answers: pass model=... "
        "(a Model, a model string, or 'recorded'; on the command line --model)"
    )


@pytest.mark.parametrize("concurrency", [0, -1])
def test_bad_concurrency(concurrency: int) -> None:
    from toolproof import UserError

    with pytest.raises(UserError, match="concurrency must be at least 1"):
        replay(
            [recorded()], mode="model", agent=factory(TOOLS), model=model(), concurrency=concurrency
        )


def test_the_judge_lets_an_answer_through_only_on_a_plain_pass() -> None:
    """Judges answering in prose: a negated, hedged or unclear verdict never counts as a pass.

    Every answer of the judge-answer corpus whose true meaning is not PASS (a stride of it:
    each template family, casing and position appears) goes through a real replay.
    """
    from evals.judge_corpus import corpus

    answers = [a for a in corpus() if a.truth != "PASS"][::40]
    assert len(answers) > 150

    def reworded(data: dict[str, Any]) -> str:
        return f"{data['name']} has {data['seats']} seats; user {data['user_id']} is suspended."

    let_through = []
    for answer in answers:
        judge = FunctionModel(lambda messages, info, text=answer.text: text, name="judge")
        report = replay(
            [recorded()],
            mode="model",
            agent=factory(TOOLS),
            model=model(reply=reworded),
            judge=judge,
        )
        checks = [(f.grade, f.check) for f in report.samples[0].findings]
        if not {("fail", "judge"), ("warn", "judge")} & set(checks):
            let_through.append((answer.text, checks))
    assert let_through == []
