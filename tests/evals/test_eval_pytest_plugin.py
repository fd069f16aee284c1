"""Suite files collected by pytest as test items, one per case (tested with pytester)."""

from __future__ import annotations

import glob
import textwrap
from pathlib import Path

import pytest
import yaml  # noqa: F401  (kept loaded across inner runs, like the modules below)

# pytester restores sys.modules after each in-process run; keep what inner runs import loaded.
import toolproof.evals
import toolproof.models
import toolproof.testing
import toolproof.testing._suites  # noqa: F401

pytest_plugins = ["pytester"]

HERE = Path(__file__).resolve().parent

SUITE = """\
suite: plugged
agent: evalagents:build_agent
model: deepseek:deepseek-chat
trials: 2
cases:
  - name: good
    input: "12 times 8"
    tags: [smoke]
    expect: {final_contains: "96"}
    script: [{call: {name: multiply_numbers, arguments: {a: 12, b: 8}}}, "12 x 8 = 96"]
  - name: bad
    input: "12 times 8"
    expect: {final_contains: "97", args: {multiply_numbers: {b: 9}}}
    script: [{call: {name: multiply_numbers, arguments: {a: 12, b: 8}}}, "12 x 8 = 96"]
  - name: advisory
    input: hi
    gate: advise
    expect: {final_contains: "nope"}
    script: [hello]
  - name: live_only
    input: hi
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeini(
        "[pytest]\n"
        "asyncio_mode = auto\n"
        "asyncio_default_fixture_loop_scope = function\n"
        "addopts = --strict-markers -p no:cacheprovider\n"
    )
    monkeypatch.syspath_prepend(str(HERE))  # the suites name evalagents:build_agent
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("TOOLPROOF_LIVE", raising=False)
    return pytester


def write(pytester: pytest.Pytester, name: str, text: str) -> Path:
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _rate(passes: int, trials: int, level: float = 0.95) -> str:
    """The pass rate and its interval as the CLI's reports print it."""
    from toolproof._statistics import binomial_interval
    from toolproof._stats_text import show

    return show(binomial_interval(passes, trials, level=level), 2)


def test_each_case_is_an_item(inner: pytest.Pytester) -> None:
    write(inner, "plugged.eval.yaml", SUITE)
    result = inner.runpytest("-v", "-rsx")
    result.assert_outcomes(passed=1, failed=1, xfailed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "plugged.eval.yaml::good PASSED*",
            "plugged.eval.yaml::bad FAILED*",
            "plugged.eval.yaml::advisory XFAIL*",
            "plugged.eval.yaml::live_only SKIPPED*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*plugged.eval.yaml:11: plugged::bad FAIL",
            "*0/2 trials passed, 2 needed (pass_rule: all)*",
            f"*pass rate {glob.escape(_rate(0, 2))} (95% interval)",
            "*trial 1: FAIL",
            "*fail: args: no call matched multiply_numbers(b=9, ...): multiply_numbers(a=12, b=8):"
            " argument 'b': expected 9, got 8",
            "*fail: final_contains: expected the final answer to contain '97'; it was "
            "'12 x 8 = 96'",
            "*traces of trial 1:",
            "*tools: multiply_numbers(a=12, b=8)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*needs a live model (deepseek:deepseek-chat) and has no script: run with "
            "--toolproof-live*",
            "*advisory case (gate: advise) did not pass*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_tags_are_keywords(inner: pytest.Pytester) -> None:
    write(inner, "plugged.eval.yaml", SUITE)
    result = inner.runpytest("-k", "smoke")
    result.assert_outcomes(passed=1, deselected=3)


def test_live_runs_use_the_suite_model_and_skip_without_a_key(inner: pytest.Pytester) -> None:
    write(inner, "plugged.eval.yaml", SUITE)
    result = inner.runpytest("--toolproof-live", "-rs", "-k", "live_only or good")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        ["*live eval case (deepseek:deepseek-chat): DEEPSEEK_API_KEY is not set"]
    )


def test_a_bad_suite_is_one_collection_error(inner: pytest.Pytester) -> None:
    write(
        inner,
        "evals/broken.yaml",
        "suite: broken\nagent: evalagents:build_agent\ncases:\n  - name: a\n    inputs: hi\n",
    )
    write(inner, "evals/fixtures.yaml", "fixtures: []\n")
    result = inner.runpytest()
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert "invalid eval suite (2 problems; nothing was run):" in output
    assert "broken.yaml:4: cases[0]: case 'a' needs an 'input' (or 'turns' for a" in output
    assert "broken.yaml:5: cases[0].inputs: unknown key 'inputs' (did you mean 'input'?)" in output
    assert "Traceback" not in result.stdout.str()


def test_plain_yaml_files_are_not_collected(inner: pytest.Pytester) -> None:
    write(inner, "config.yaml", "suite: not really\n")
    write(inner, "data.yml", "cases: []\n")
    result = inner.runpytest()
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_a_suite_item_whose_factory_ignores_its_tools_fails_with_one_message(
    inner: pytest.Pytester,
) -> None:
    import mockagents

    write(
        inner,
        "careless.eval.yaml",
        """\
        suite: careless
        agent: mockagents:build_agent_ignoring_tools
        model: scripted
        cases:
          - name: refund
            input: refund ZZZ
            script: [{call: {name: refund, arguments: {order_id: ZZZ, amount: 999.0}}}, ok]
        """,
    )
    mockagents.SIDE_EFFECTS.clear()
    result = inner.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*careless.eval.yaml:5: careless::refund: agent factory "
            "mockagents:build_agent_ignoring_tools ignores its `tools` argument*",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert mockagents.SIDE_EFFECTS == []


def test_a_case_with_until_decided_stops_at_its_first_failure(inner: pytest.Pytester) -> None:
    # (the script answers wrong every time: "all" is decided by the first trial's failure)
    write(
        inner,
        "plugged.eval.yaml",
        SUITE.replace("trials: 2", "trials: {max: 6, until: decided}"),
    )
    result = inner.runpytest("-v", "-k", "bad or good")
    result.assert_outcomes(passed=1, failed=1, deselected=2)
    result.stdout.fnmatch_lines(["*0/1 trials passed, stopped after 1 of 6 (until: decided, 95%)*"])


def test_a_failing_case_shows_its_pass_rate_at_the_suites_level(inner: pytest.Pytester) -> None:
    suite = SUITE.replace("trials: 2", "trials: 3\nstatistics: {confidence: 0.8}")
    write(inner, "plugged.eval.yaml", suite)
    result = inner.runpytest("-k", "bad")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines([f"*pass rate {glob.escape(_rate(0, 3, 0.8))} (80% interval)"])
