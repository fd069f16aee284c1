"""Suite loading: a user's suite as written, validation with file:line, discovery."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from toolproof import ToolCall, UserError
from toolproof.errors import ConfigError, ModelConnectionError, ModelHTTPError
from toolproof.evals import Case, load_suite, load_suites
from toolproof.evals._checks import EXPECT_KEYS
from toolproof.evals._suite import PassRule, discover_suite_files, is_suite_file, select_cases

ROOT = Path(__file__).resolve().parents[2]

# A suite exactly as a user wrote it ("the file is the user's, so names matter").
USER_SUITE = """\
suite: hr-assistant
agent: examples.hr_assistant.agent:build_agent   # factory(model, tools) -> Agent
model: deepseek:deepseek-chat                     # default; --model overrides; "scripted" uses each case's script
tools: mock                                       # real | mock
trials: 3
pass_rule: all                                    # all | any | at_least: N | rate: 0.8
gate: block                                       # block | advise
cases:
  - name: multiply
    input: "12乘以8是多少"
    expect:
      tools_called: [multiply_numbers]
      tools_not_called: [get_leave_balance]
      args: {multiply_numbers: {a: 12, b: 8}}
      final_contains: ["96"]
    judge: ["The answer gives the product and nothing invented."]
    script:                                       # used when the model is "scripted"
      - call: {name: multiply_numbers, arguments: {a: 12, b: 8}}
      - "12乘以8等于96。"
  - name: slack_reaction_jira_workflow
    input: "给这条Slack消息里的JIRA工单添加一个笑脸反应"
    metadata: {situation: "a Slack message that contains a JIRA link"}
    expect:
      tools_called: [slack_get_message, jira_get_ticket, slack_add_reaction]
      order: in_order
      tools_not_called: [slack_send_message]
"""  # noqa: E501 - the user's file, verbatim


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    prefix = f"{path}:"
    return [p.replace(prefix, "L", 1) for p in info.value.problems]


def test_a_user_suite_loads_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    suite = load_suite(write(tmp_path / "hr.eval.yaml", USER_SUITE))
    assert suite.name == "hr-assistant"
    assert [c.name for c in suite.cases] == ["multiply", "slack_reaction_jira_workflow"]
    multiply, slack = suite.cases
    config = multiply.config
    assert (config.model, config.tools, config.trials, config.gate) == (
        "deepseek:deepseek-chat",
        "mock",
        3,
        "block",
    )
    assert config.pass_rule == PassRule("all")
    assert config.agent.source == "examples.hr_assistant.agent:build_agent"
    assert "slack_add_reaction" in config.agent.tools
    assert [c.name for c in multiply.checks] == [
        "tools_called",
        "tools_not_called",
        "args",
        "final_contains",
    ]
    assert multiply.judge == ["The answer gives the product and nothing invented."]
    assert multiply.script == [ToolCall("multiply_numbers", {"a": 12, "b": 8}), "12乘以8等于96。"]
    assert multiply.line == 9
    assert slack.metadata == {"situation": "a Slack message that contains a JIRA link"}
    assert [c.name for c in slack.checks] == ["tools_called", "order", "tools_not_called"]
    assert slack.script is None
    assert slack.turns[0].input == "给这条Slack消息里的JIRA工单添加一个笑脸反应"


def test_every_problem_is_reported_with_its_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "bad.eval.yaml",
        """\
        suite: bad
        agent: evalagents:build_agent
        trials: 0
        gatee: block
        cases:
          - name: one
            input: 12
            expect:
              tools_called: [multiply_number]
              args: {multiply_numbers: {c: 1}}
              final_regex: "("
              order: sideways
          - name: one
            input: "x"
            expect:
              final_equals: {range: [1]}
          - input: "no name"
            script:
              - call: {name: x, arguments: 3}
              - 42
        """,
    )
    assert problems_of(path) == [
        "L3: trials: expected a positive integer, or {max: N, until: decided}, got 0",
        "L4: gatee: unknown key 'gatee' (did you mean 'gate'?); allowed: suite, description, "
        "cases, datasets, expect, judge, tags, metadata, checks, statistics, attacks, cost_gates, "
        "agent, agent_options, model, judge_model, tools, tool_modes, real_tools, mocks, trials, "
        "pass_rule, gate, judge_when, judge_inconclusive, judge_sees_agent, settings, retries, "
        "timeout",
        "L7: cases[0].input: 'input' must be a string, got an integer",
        "L9: cases[0].expect.tools_called[0]: unknown tool 'multiply_number' (did you mean "
        "'multiply_numbers'?); the agent's tools are: cancel_order, crash, get_leave_balance, "
        "multiply_numbers, search_docs",
        "L10: cases[0].expect.args.multiply_numbers.c: multiply_numbers has no argument 'c'; "
        "its arguments are: a, b",
        "L11: cases[0].expect.final_regex: invalid regular expression '(': missing ), "
        "unterminated subpattern at position 0",
        "L12: cases[0].expect.order: expected one of strict, in_order, unordered, subset, "
        "superset, got 'sideways'",
        "L13: cases[1].name: case name 'one' is already used at line 6; names must be unique in "
        "a suite",
        "L16: cases[1].expect.final_equals.range: must be [low, high] (null for an open end), "
        "got [1]",
        "L17: cases[2]: each case needs a 'name' (a non-empty string)",
        "L19: cases[2].script[0].call.arguments: expected a mapping (or JSON text), got an integer",
        "L20: cases[2].script[1]: a script item is text, {call: {name, arguments}}, a list of "
        "calls (parallel), or {raise: ModelConnectionError}; got an integer",
    ]


def test_the_error_message_lists_all_problems(tmp_path: Path) -> None:
    path = write(tmp_path / "s.eval.yaml", "suite: s\nagent: evalagents:build_agent\ncases: []\n")
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert str(info.value) == (
        "invalid eval suite (1 problem; nothing was run):\n"
        f"  {path}:3: cases: 'cases' must be a non-empty list of cases, got a list"
    )


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        (
            "nope.module:build",
            "cannot import 'nope.module' for nope.module:build: No module named 'nope'",
        ),
        (
            "evalagents:build_agnt",
            "module 'evalagents' has no attribute 'build_agnt' (did you mean 'build_agent'?)",
        ),
        ("evalagents", "'evalagents' is not an import path; write 'package.module:name'"),
        (
            "evalagents:broken_factory",
            "agent factory evalagents:broken_factory failed when called as broken_factory(model, "
            "None): RuntimeError: factory is broken (a factory takes (model, tools, **options) "
            "and builds its default tools when tools is None)",
        ),
        (
            "evalagents:not_an_agent",
            "agent factory evalagents:not_an_agent returned str, not an Agent",
        ),
        ("evalagents:LEAVE", "evalagents:LEAVE is dict, not an agent factory or an Agent"),
    ],
)
def test_agent_factories_that_do_not_work(tmp_path: Path, agent: str, message: str) -> None:
    path = write(
        tmp_path / "s.eval.yaml",
        f"""\
        suite: s
        agent: {agent}
        cases:
          - name: a
            input: hi
        """,
    )
    assert problems_of(path) == [f"L2: agent: {message}"]


def test_expectations_are_still_checked_when_the_agent_does_not_load(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.eval.yaml",
        """\
        suite: s
        agent: nope.module:build
        cases:
          - name: a
            input: hi
            expect:
              tools_caled: [multiply_numbers]
              args: {multiply_numbers: {a: {range: [1]}}}
              required_args: {multiply_numbers: [a]}
        """,
    )
    problems = problems_of(path)
    assert problems[0] == (
        "L2: agent: cannot import 'nope.module' for nope.module:build: No module named 'nope'"
    )
    assert problems[1].startswith(
        "L7: cases[0].expect.tools_caled: unknown key 'tools_caled' (did you mean 'tools_called'?)"
    )
    assert problems[2:] == [
        "L8: cases[0].expect.args.multiply_numbers.a.range: must be [low, high] (null for an "
        "open end), got [1]"
    ]  # tool and argument names cannot be checked without the agent: no false problems


def test_an_agent_instance_is_accepted(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.eval.yaml",
        "suite: s\nagent: evalagents:AGENT\ncases: [{name: a, input: hi}]\n",
    )
    case = load_suite(path).cases[0]
    assert case.config.agent.toolset.names[:2] == ["multiply_numbers", "get_leave_balance"]


def test_yaml_syntax_errors_and_duplicate_keys(tmp_path: Path) -> None:
    broken = write(
        tmp_path / "a.eval.yaml", "suite: s\ncases:\n  - name: a\n    input: [unclosed\n"
    )
    with pytest.raises(ConfigError) as info:
        load_suite(broken)
    assert info.value.problems[0].startswith(f"{broken}:5: invalid YAML: ")
    duplicated = write(
        tmp_path / "b.eval.yaml",
        "suite: s\nagent: evalagents:build_agent\n"
        "cases:\n  - name: a\n    input: hi\n    input: ho\n",
    )
    assert problems_of(duplicated) == [
        "L6: cases[0].input: duplicate key 'input' (first written at line 5); YAML keeps only "
        "the last one, so remove one of them"
    ]


def test_defaults_overrides_and_merging(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.eval.yaml",
        """\
        suite: s
        agent: evalagents:build_agent
        model: scripted
        trials: 4
        pass_rule: {rate: 0.5}
        gate: advise
        tags: [all]
        metadata: {team: hr}
        settings: {temperature: 0, stop: END}
        expect: {no_tool_errors: true, max_steps: 3}
        judge: ["Polite."]
        cases:
          - name: inherits
            input: hi
          - name: overrides
            input: hi
            trials: 2
            pass_rule: {at_least: 2}
            gate: block
            tools: real
            tool_modes: {search_docs: mock}
            model: deepseek:deepseek-chat
            judge_model: openai:gpt-4o-mini
            judge: "Short."
            tags: [smoke, all]
            metadata: {case: 2}
            expect: {max_steps: 5, final_contains: hello}
            retries: 0
            timeout: 30
            skip: not ready
        """,
    )
    inherits, overrides = load_suite(path).cases
    assert inherits.config.trials == 4
    assert inherits.config.pass_rule == PassRule("rate", 0.5)
    assert inherits.config.pass_rule.needed(4) == 2
    assert inherits.config.gate == "advise"
    assert inherits.config.settings is not None
    assert inherits.config.settings.temperature == 0 and inherits.config.settings.stop == ["END"]
    assert inherits.tags == ["all"] and inherits.metadata == {"team": "hr"}
    assert [c.name for c in inherits.checks] == ["no_tool_errors", "max_steps"]
    assert inherits.judge == ["Polite."]
    config = overrides.config
    assert (config.trials, config.gate, config.tools, config.model, config.judge_model) == (
        2,
        "block",
        "real",
        "deepseek:deepseek-chat",
        "openai:gpt-4o-mini",
    )
    assert config.pass_rule == PassRule("at_least", 2)
    assert config.tool_modes == {"search_docs": "mock"}
    assert (config.retries, config.timeout) == (0, 30.0)
    assert overrides.judge == ["Short."]
    assert overrides.tags == ["all", "smoke"]
    assert overrides.metadata == {"team": "hr", "case": 2}
    assert [c.name for c in overrides.checks] == ["no_tool_errors", "max_steps", "final_contains"]
    max_steps = next(c for c in overrides.checks if c.name == "max_steps")
    assert max_steps.describe == "model calls <= 5"
    assert overrides.skip == "not ready"


def test_bad_settings_and_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.eval.yaml",
        """\
        suite: s
        agent: evalagents:build_agent
        tools: fake
        pass_rule: most
        judge_when: sometimes
        settings: {temperature: hot, top_p: 1}
        tool_modes: {nope: real}
        retries: -1
        cases:
          - name: a
            input: hi
            pass_rule: {at_least: 3}
        """,
    )
    assert problems_of(path) == [
        "L3: tools: expected real or mock, got 'fake'",
        "L5: judge_when: expected objective_pass or always, got 'sometimes'",
        "L6: settings.top_p: unknown key 'top_p' (did you mean 'stop'?); allowed: temperature, "
        "max_tokens, seed, stop, tool_choice, parallel_tool_calls, extra",
        "L6: settings.temperature: expected int or float, got 'hot'",
        "L7: tool_modes.nope: unknown tool 'nope'; the agent's tools are: cancel_order, crash, "
        "get_leave_balance, multiply_numbers, search_docs",
        "L8: retries: expected a non-negative integer, got -1",
        "L12: cases[0].pass_rule: at_least: 3 can never pass with trials: 1; raise trials or "
        "lower N",
    ]


def test_mocks_files_and_factories(tmp_path: Path) -> None:
    write(
        tmp_path / "fixtures" / "leave.yaml",
        """\
        fixtures:
          - tool: get_leave_balance
            arguments: {employee_id: E001}
            returns: 7
        """,
    )
    path = write(
        tmp_path / "s.eval.yaml",
        """\
        suite: s
        agent: evalagents:build_agent
        mocks: [fixtures/leave.yaml, "evalagents:order_mocks"]
        cases: [{name: a, input: hi}]
        """,
    )
    case = load_suite(path).cases[0]
    kinds = [(m.kind, m.source) for m in case.config.mocks]
    assert kinds == [("file", "fixtures/leave.yaml"), ("factory", "evalagents:order_mocks")]
    first, second = case.config.mocks[1].create(), case.config.mocks[1].create()
    assert first[0] is not second[0]  # a fresh stateful mock per trial
    assert first[0].state == {"orders": {"A1": {"status": "paid"}}, "cancelled": []}


def test_bad_mocks(tmp_path: Path) -> None:
    write(
        tmp_path / "bad.yaml",
        "fixtures:\n  - tool: get_leave_balance\n    returns: 1\n    raises: KeyError\n",
    )
    path = write(
        tmp_path / "s.eval.yaml",
        """\
        suite: s
        agent: evalagents:build_agent
        mocks: [missing.yaml, "evalagents:LEAVE", 3, bad.yaml]
        cases: [{name: a, input: hi}]
        """,
    )
    problems = problems_of(path)
    assert problems[0] == f"L3: mocks[0]: {tmp_path / 'missing.yaml'}: fixture file not found"
    assert problems[1] == (
        "L3: mocks[1]: evalagents:LEAVE is dict; expected a class or function returning mock "
        "providers"
    )
    assert problems[2] == (
        "L3: mocks[2]: expected a fixture file (.yaml, .yml, .json), an import path "
        "'module:factory' returning mock providers, or a list of them, got an integer"
    )
    assert problems[3].startswith(f"L3: mocks[3]: {tmp_path / 'bad.yaml'}")
    assert problems[3].endswith("bad.yaml:2: give 'returns' or 'raises', not both")


def test_scripts_and_turns(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.eval.yaml",
        """\
        suite: s
        agent: evalagents:build_agent
        cases:
          - name: a
            turns:
              - first question
              - input: second
                expect: {tools_called: [search_docs]}
            script:
              - - call: {name: search_docs, arguments: {query: a}}
                - call: {name: search_docs, arguments: {query: b}, id: c9}
              - call: {name: search_docs, arguments: '{"query": '}
              - raise: ModelConnectionError
              - raise: {type: ModelHTTPError, status: 429, message: slow down}
              - done
        """,
    )
    case = load_suite(path).cases[0]
    assert [t.input for t in case.turns] == ["first question", "second"]
    assert [c.turn for c in case.turns[1].checks] == [2]
    assert case.script is not None
    parallel, malformed, connection, http, text = case.script
    assert parallel == [
        ToolCall("search_docs", {"query": "a"}),
        ToolCall("search_docs", {"query": "b"}, "c9"),
    ]
    assert isinstance(malformed, ToolCall) and malformed.arguments_error is not None
    assert isinstance(connection, ModelConnectionError)
    assert isinstance(http, ModelHTTPError) and http.status == 429 and http.retryable
    assert text == "done"


def test_discovery_and_filters(tmp_path: Path) -> None:
    suite_text = "suite: {name}\nagent: evalagents:build_agent\ncases:\n{cases}"
    write(
        tmp_path / "evals" / "a.eval.yaml",
        suite_text.format(
            name="a", cases="  - {name: x1, input: hi, tags: [smoke]}\n  - {name: x2, input: hi}\n"
        ),
    )
    write(
        tmp_path / "evals" / "nested" / "b.yaml",
        suite_text.format(name="b", cases="  - {name: y1, input: hi, tags: [slow]}\n"),
    )
    write(tmp_path / "evals" / "fixtures.yaml", "fixtures: []\n")
    write(tmp_path / "evals" / ".hidden" / "c.eval.yaml", "not: loaded\n")
    files = discover_suite_files([tmp_path / "evals"])
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "evals/a.eval.yaml",
        "evals/nested/b.yaml",
    ]
    assert not is_suite_file(tmp_path / "evals" / "fixtures.yaml")
    suites = load_suites([tmp_path / "evals"])

    def names(cases: list[Case]) -> list[str]:
        return [c.id for c in cases]

    assert names(select_cases(suites)) == ["a::x1", "a::x2", "b::y1"]
    assert names(select_cases(suites, cases=["x*"])) == ["a::x1", "a::x2"]
    assert names(select_cases(suites, cases=["b::*"])) == ["b::y1"]
    assert names(select_cases(suites, tags=["smoke", "slow"])) == ["a::x1", "b::y1"]
    with pytest.raises(UserError) as info:
        select_cases(suites, cases=["zz"], tags=["smoke"])
    assert str(info.value) == (
        "no case matches --case zz --tag smoke; cases: x1, x2, y1; tags: slow, smoke"
    )
    empty = write(tmp_path / "empty" / "notes.txt", "").parent
    with pytest.raises(UserError, match="no eval suites found"):
        discover_suite_files([empty])
    with pytest.raises(UserError, match="no such file or directory"):
        discover_suite_files([tmp_path / "nope.yaml"])


def test_problems_of_several_files_are_reported_together(tmp_path: Path) -> None:
    write(
        tmp_path / "a.eval.yaml",
        "suite: same\nagent: evalagents:build_agent\ncases: [{name: a, input: hi}]\n",
    )
    write(
        tmp_path / "b.eval.yaml", "suite: same\nagent: evalagents:build_agent\ncases: [{name: a}]\n"
    )
    with pytest.raises(ConfigError) as info:
        load_suites([tmp_path])
    assert info.value.problems == [
        f"{tmp_path / 'b.eval.yaml'}:3: cases[0]: case 'a' needs an 'input' "
        "(or 'turns' for a conversation)"
    ]
    write(
        tmp_path / "b.eval.yaml",
        "suite: same\nagent: evalagents:build_agent\ncases: [{name: a, input: hi}]\n",
    )
    with pytest.raises(ConfigError) as info:
        load_suites([tmp_path])
    assert info.value.problems == [
        f"{tmp_path / 'b.eval.yaml'}:1: suite name 'same' is also used by "
        f"{tmp_path / 'a.eval.yaml'}; suite names must be unique in a run"
    ]


def test_pass_rules_decide_with_errors_left_open() -> None:
    assert PassRule("all").decide(3, 3, 0) == "pass"
    assert PassRule("all").decide(3, 2, 0) is None  # one trial errored: undecided
    assert PassRule("all").decide(3, 1, 1) == "fail"  # a failure decides
    assert PassRule("any").decide(3, 1, 0) == "pass"
    assert PassRule("any").decide(3, 0, 2) is None
    assert PassRule("any").decide(3, 0, 3) == "fail"
    assert PassRule("at_least", 2).decide(3, 2, 1) == "pass"
    assert PassRule("at_least", 2).decide(3, 1, 1) is None
    assert PassRule("at_least", 2).decide(3, 1, 2) == "fail"
    assert PassRule("rate", 0.8).needed(5) == 4
    assert PassRule("rate", 0.8).describe() == "rate: 0.8"
    assert PassRule("rate", 1 / 3).needed(3) == 1


def test_suite_and_case_expectations_merge_key_by_key(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.eval.yaml",
        """\
        suite: s
        agent: evalagents:build_agent
        expect:
          tools_called: [search_docs, multiply_numbers]
          final_contains: "x"
          tool_called: [typo]
        cases:
          - name: ordered
            input: hi
            expect: {order: strict, final_contains: "y"}
          - name: plain
            input: hi
        """,
    )
    # The suite-level typo is reported once, at its own line, however many cases share it.
    assert problems_of(path) == [
        "L6: expect.tool_called: unknown key 'tool_called' (did you mean 'tools_called'?); "
        "allowed: " + ", ".join(EXPECT_KEYS)
    ]
    path.write_text(path.read_text().replace("  tool_called: [typo]\n", ""))
    ordered, plain = load_suite(path).cases
    assert [c.name for c in ordered.checks] == ["tools_called", "final_contains", "order"]
    assert [c.describe for c in ordered.checks][1:] == [
        "answer contains 'y'",
        "calls [search_docs, multiply_numbers] (strict)",
    ]
    assert [c.name for c in plain.checks] == ["tools_called", "final_contains"]
