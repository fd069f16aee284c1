"""The matching vocabulary: value matchers, argument modes, call-order modes, conversions."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Message, ToolCall
from toolproof._matching import compile_calls
from toolproof.errors import ConfigError
from toolproof.evals import (
    CallSpec,
    Matcher,
    Verdict,
    bfcl_expected_calls,
    compile_arguments,
    compile_order,
    compile_value_matcher,
    match_arguments,
    match_bfcl,
    match_order,
    match_trajectory,
)
from toolproof.testing import ANY, approx


def check(spec: Any, actual: Any) -> str | None:
    return compile_value_matcher(spec)(actual)


# ---- values -----------------------------------------------------------------------------


class TestEquals:
    def test_plain_values_mean_equals(self) -> None:
        assert check(12, 12) is None
        assert check("Paris", "Paris") is None
        assert check(None, None) is None
        assert check(12, 13) == "expected 12, got 13"
        assert check("Paris", "paris") == 'expected "Paris", got "paris"'

    def test_numbers_compare_by_value_but_booleans_and_strings_are_not_numbers(self) -> None:
        assert check(1, 1.0) is None
        assert check(1.0, 1) is None
        assert check(True, 1) == "expected true, got 1 (an integer)"
        assert check(1, True) == "expected 1, got true (a boolean)"
        assert check(1, "1") == 'expected 1, got "1" (a string)'
        assert check(0, None) == "expected 0, got null"

    def test_nested_mismatch_names_the_path(self) -> None:
        spec = {"trip": {"from": "SFO", "to": "JFK"}, "tags": ["a", "b"]}
        assert check(spec, {"tags": ["a", "b"], "trip": {"to": "JFK", "from": "SFO"}}) is None
        assert (
            check(spec, {"trip": {"from": "SFO", "to": "LAX"}, "tags": ["a", "b"]})
            == 'at trip.to: expected "JFK", got "LAX"'
        )
        assert (
            check(spec, {"trip": {"from": "SFO", "to": "JFK"}, "tags": ["b", "a"]})
            == 'at tags[0]: expected "a", got "b"'
        )
        assert check(spec, {"trip": {"from": "SFO"}, "tags": ["a", "b"]}) == (
            'at trip.to: missing (expected "JFK")'
        )
        assert check({"a": 1}, {"a": 1, "b": 2}) == (
            "at b: unexpected key (value 2); expected keys: a"
        )
        assert check(["a"], ["a", "b"]) == 'expected 1 items ["a"], got 2 items ["a", "b"]'

    def test_nested_values_may_hold_matchers(self) -> None:
        spec = {"filters": {"date": {"regex": r"^\d{4}-\d{2}-\d{2}$"}, "limit": {"max": 50}}}
        assert check(spec, {"filters": {"date": "2024-05-01", "limit": 10}}) is None
        assert check(spec, {"filters": {"date": "May 1", "limit": 10}}) == (
            'at filters.date: expected a string matching /^\\d{4}-\\d{2}-\\d{2}$/, got "May 1"'
        )

    def test_equals_takes_its_value_literally(self) -> None:
        spec = {"equals": {"type": "object", "min": 1}}
        assert check(spec, {"type": "object", "min": 1}) is None
        assert check(spec, {"type": "object", "min": 2}) == "at min: expected 1, got 2"
        assert compile_value_matcher(spec).describe() == '{"type": "object", "min": 1}'


class TestOneOf:
    def test_any_option(self) -> None:
        matcher = compile_value_matcher({"one_of": ["celsius", "fahrenheit"]})
        assert matcher("celsius") is None
        assert matcher("kelvin") == 'expected one of "celsius", "fahrenheit", got "kelvin"'
        assert matcher(1) == 'expected one of "celsius", "fahrenheit", got 1 (an integer)'
        assert matcher.describe() == 'one_of("celsius", "fahrenheit")'

    def test_options_may_be_specs(self) -> None:
        matcher = compile_value_matcher({"one_of": [{"type": "null"}, {"regex": "^E"}]})
        assert matcher(None) is None
        assert matcher("E1001") is None
        assert matcher("X1") == 'expected one of type(null), /^E/, got "X1" (a string)'

    def test_a_single_option_gives_its_own_reason(self) -> None:
        assert check({"one_of": [{"max": 3}]}, 5) == "expected a number <= 3, got 5"


class TestApprox:
    def test_absolute_and_relative_tolerance(self) -> None:
        assert check({"approx": 3.14, "tol": 0.01}, 3.145) is None
        assert check({"approx": 3.14, "tol": 0.01}, 3.2) == (
            "expected approx(3.14, tol=0.01), got 3.2 (off by 0.06)"
        )
        assert check({"approx": 1000, "rel": 0.01}, 1009) is None
        assert check({"approx": 1000, "rel": 0.01}, 1011) is not None

    def test_default_tolerance_absorbs_float_noise_only(self) -> None:
        assert check({"approx": 0.3}, 0.1 + 0.2) is None
        assert check({"approx": 0.3}, 0.31) is not None

    def test_only_numbers(self) -> None:
        assert (
            check({"approx": 1}, "1")
            == 'expected a number approx(1, tol=1e-06), got "1" (a string)'
        )
        assert check({"approx": 1}, True) is not None


class TestRange:
    def test_inclusive_bounds(self) -> None:
        matcher = compile_value_matcher({"range": [1, 20]})
        assert [matcher(v) for v in (1, 20, 7.5)] == [None, None, None]
        assert matcher(21) == "expected a number in range [1, 20], got 21"
        assert matcher(0) == "expected a number in range [1, 20], got 0"
        assert matcher.describe() == "range(1, 20)"

    def test_min_and_max_alone(self) -> None:
        max_top_k = compile_value_matcher({"max": 20})  # caps a top_k argument
        assert max_top_k(20) is None
        assert max_top_k(50) == "expected a number <= 20, got 50"
        assert max_top_k.describe() == "range(max=20)"
        assert check({"min": 1}, 0) == "expected a number >= 1, got 0"
        assert check({"min": 1, "max": 5}, 3) is None
        assert check({"range": [None, 5]}, -100) is None

    def test_rejects_non_numbers_and_explains_object_with_min_max_keys(self) -> None:
        assert check({"max": 20}, True) == "expected a number <= 20, got true (a boolean)"
        assert check({"min": 1, "max": 5}, {"min": 1, "max": 5}) == (
            'expected a number in range [1, 5], got {"min": 1, "max": 5}'
            " (an object) (min/max make a range matcher; to match an object with keys min and"
            " max, write {fields: {min: ..., max: ...}})"
        )
        assert check({"fields": {"min": 1, "max": 5}}, {"min": 1, "max": 5}) is None


class TestRegex:
    def test_search_semantics_and_anchors(self) -> None:
        assert check({"regex": r"E\d+"}, "employee E1001") is None
        assert check({"regex": r"^E\d+$"}, "employee E1001") == (
            'expected a string matching /^E\\d+$/, got "employee E1001"'
        )
        assert check({"regex": "^5$"}, 5) == "expected a string matching /^5$/, got 5 (an integer)"

    def test_pattern_is_compiled_once(self) -> None:
        matcher = compile_value_matcher({"regex": "^a+$"})
        pattern = matcher.pattern  # type: ignore[attr-defined]
        assert matcher("aaa") is None
        assert matcher.pattern is pattern  # type: ignore[attr-defined]


class TestType:
    @pytest.mark.parametrize(
        ("name", "good", "bad"),
        [
            ("string", "x", 1),
            ("integer", 5, 5.0),
            ("integer", -3, True),
            ("number", 5.5, "5.5"),
            ("number", 5, False),
            ("boolean", False, 0),
            ("array", [1], {"a": 1}),
            ("object", {"a": 1}, [1]),
            ("null", None, ""),
        ],
    )
    def test_json_types(self, name: str, good: Any, bad: Any) -> None:
        matcher = compile_value_matcher({"type": name})
        assert matcher(good) is None
        assert matcher(bad) is not None

    def test_reason_and_unions(self) -> None:
        assert check({"type": "integer"}, 48.0) == "expected an integer, got 48.0 (a number)"
        assert check({"type": ["string", "null"]}, None) is None
        assert check({"type": ["string", "null"]}, 5) == (
            "expected a string or null, got 5 (an integer)"
        )

    def test_combined_with_other_operators(self) -> None:
        matcher = compile_value_matcher({"type": "integer", "max": 20})
        assert matcher(10) is None
        assert matcher(10.0) == "expected an integer, got 10.0 (a number)"
        assert matcher(30) == "expected a number <= 20, got 30"
        assert matcher.describe() == "type(integer) & range(max=20)"


class TestTextAnyOptional:
    def test_text_ignores_case_spaces_and_punctuation(self) -> None:
        matcher = compile_value_matcher({"text": "Taylor Swift"})
        for variant in ("taylor swift", "TAYLOR-SWIFT!", "  Taylor   Swift. ", "taylorswift"):
            assert matcher(variant) is None, variant
        assert matcher("Taylor Swifts") == (
            'expected "Taylor Swift" ignoring case, spaces and punctuation, got "Taylor Swifts"'
        )
        assert matcher(5) is not None

    def test_text_is_unicode_aware(self) -> None:
        matcher = compile_value_matcher({"text": "你好，世界。"})
        assert matcher("你好 世界") is None
        assert matcher("你好!世界") is None
        assert check({"text": "ABC 123"}, "ＡＢＣ１２３") is None  # full-width forms
        assert check({"text": "Straße"}, "STRASSE") is None

    def test_text_with_an_explicit_character_set(self) -> None:
        matcher = compile_value_matcher({"text": "Taylor Swift", "ignore": " ,./-_*^"})
        assert matcher("TAYLOR-SWIFT.") is None
        assert matcher("Taylor Swift!") == (
            'expected "Taylor Swift" ignoring case and the characters " ,./-_*^", '
            'got "Taylor Swift!"'
        )
        assert check({"text": "it's", "ignore": ""}, 'it"s') is None  # quotes compare alike

    def test_any_and_optional(self) -> None:
        assert check({"any": True}, None) is None
        assert check({"any": True}, {"x": [1]}) is None
        optional = compile_value_matcher({"optional": {"type": "string"}})
        assert optional("x") is None
        assert optional(1) == "expected a string, got 1 (an integer)"
        assert optional.describe() == "optional(type(string))"

    def test_matcher_objects_pass_through(self) -> None:
        assert check(ANY, object()) is None
        assert check({"x": approx(0.3)}, {"x": 0.1 + 0.2}) is None
        assert check({"x": approx(0.3)}, {"x": 0.4}) is not None
        matcher = compile_value_matcher({"max": 1})
        assert isinstance(matcher, Matcher)
        assert compile_value_matcher(matcher) is matcher


class TestFields:
    def test_modes(self) -> None:
        spec: dict[str, Any] = {"fields": {"a": 1}, "mode": "subset"}
        assert check(spec, {"a": 1, "b": 2}) is None
        assert check(spec, {"b": 2}) == "at a: missing (expected 1)"
        superset = {"fields": {"a": 1, "b": 2}, "mode": "superset"}
        assert check(superset, {"a": 1}) is None
        assert check(superset, {"a": 1, "c": 3}) == (
            "at c: unexpected key (value 3); expected keys: a, b"
        )
        assert check({"fields": {"a": 1}}, {"a": 1, "b": 2}) is not None  # exact by default
        assert check({"fields": {"a": 1}}, [1]) == "expected an object {a: 1}, got [1] (an array)"


class TestBadSpecs:
    @pytest.mark.parametrize(
        ("spec", "problem"),
        [
            ({"approx": 1, "tolerance": 0.1}, "unknown key 'tolerance' (did you mean 'tol'?)"),
            ({"tol": 0.1, "regex": "x"}, "'tol' is only allowed next to 'approx'"),
            ({"optional": 1, "type": "string"}, "'optional' wraps another spec"),
            ({"any": False}, "'any' must be true (it matches every value), got False"),
            ({"range": [1]}, ".range: must be [low, high] (null for an open end), got [1]"),
            ({"range": [20, 1]}, "the low bound 20 is greater than the high bound 1"),
            ({"range": [1, 2], "max": 3}, "write either range: [low, high] or min/max"),
            ({"max": "20"}, '.max: must be a number, got "20"'),
            ({"regex": "("}, "invalid regular expression '(': missing )"),
            ({"type": "str"}, "unknown type 'str'; allowed: string, integer, number"),
            ({"one_of": []}, ".one_of: must be a non-empty list, got []"),
            ({"approx": "x"}, '.approx: must be a number, got "x"'),
            ({"approx": 1, "tol": -1}, "tol and rel must not be negative"),
            ({"text": 5}, ".text: must be a string, got 5"),
            ({"fields": {"a": 1}, "mode": "loose"}, "unknown mode 'loose'; valid modes: exact"),
        ],
    )
    def test_bad_specs_name_where_and_what(self, spec: Any, problem: str) -> None:
        with pytest.raises(ConfigError) as info:
            compile_value_matcher({"arg": spec}, where="suite.yaml:7: cases[0].expect.args.f")
        assert problem in str(info.value)
        assert info.value.problems[0].startswith("suite.yaml:7: cases[0].expect.args.f.arg")

    def test_every_problem_is_listed_once(self) -> None:
        with pytest.raises(ConfigError) as info:
            compile_value_matcher({"a": {"range": [5, 1]}, "b": {"type": "str"}}, where="args")
        assert info.value.problems == [
            "args.a: the low bound 5 is greater than the high bound 1",
            "args.b.type: unknown type 'str'; allowed: string, integer, number, boolean, "
            "array, object, null",
        ]
        assert str(info.value).startswith("2 problems in matcher specs:\n  - args.a: ")

    def test_unknown_key_message_is_exact(self) -> None:
        with pytest.raises(ConfigError) as info:
            compile_value_matcher({"regx": "a", "type": "string"})
        assert str(info.value) == (
            "invalid matcher spec: unknown key 'regx' (did you mean 'regex'?) next to type; "
            "matcher keys are any, approx, equals, fields, max, min, one_of, optional, range, "
            "regex, text, type (with tol/rel for approx, ignore for text, mode for fields). "
            "To match a literal object with these keys, write {equals: {...}}"
        )


# ---- arguments --------------------------------------------------------------------------


class TestArguments:
    expected: dict[str, Any] = {
        "a": 12,
        "b": {"type": "integer"},
        "note": {"optional": {"type": "string"}},
    }

    def test_subset_allows_extra_arguments(self) -> None:
        assert match_arguments(self.expected, {"a": 12, "b": 8, "extra": True}) == []
        assert match_arguments(self.expected, {"a": 13, "b": 8}) == [
            "argument 'a': expected 12, got 13"
        ]
        assert match_arguments(self.expected, {"b": 8}) == ["missing argument 'a' (expected 12)"]

    def test_exact_rejects_extras_and_optional_may_be_absent(self) -> None:
        assert match_arguments(self.expected, {"a": 12, "b": 8}, mode="exact") == []
        assert match_arguments(self.expected, {"a": 12, "b": 8, "note": "x"}, mode="exact") == []
        assert match_arguments(self.expected, {"a": 12, "b": 8, "c": 1}, mode="exact") == [
            "unexpected argument 'c' = 1 (mode 'exact' allows only: a, b, note)"
        ]
        assert match_arguments({}, {"c": 1}, mode="exact") == [
            "unexpected argument 'c' = 1 (mode 'exact' allows no arguments)"
        ]

    def test_superset_allows_missing_but_not_unknown(self) -> None:
        assert match_arguments(self.expected, {"a": 12}, mode="superset") == []
        assert match_arguments(self.expected, {"a": 1, "z": 0}, mode="superset") == [
            "argument 'a': expected 12, got 1",
            "unexpected argument 'z' = 0 (mode 'superset' allows only: a, b, note)",
        ]

    def test_ignore(self) -> None:
        assert match_arguments(self.expected, {"anything": 1}, mode="ignore") == []

    def test_nested_reasons_name_the_argument_path(self) -> None:
        reasons = match_arguments({"trip": {"to": "JFK"}}, {"trip": {"to": "LAX"}})
        assert reasons == ['argument \'trip.to\': expected "JFK", got "LAX"']

    def test_every_problem_is_reported(self) -> None:
        reasons = match_arguments(
            {"query": {"text": "leave policy"}, "top_k": {"max": 20}},
            {"query": "Holiday policy", "top_k": 50, "debug": True},
            mode="exact",
        )
        assert reasons == [
            "argument 'query': expected \"leave policy\" ignoring case, spaces and "
            'punctuation, got "Holiday policy"',
            "argument 'top_k': expected a number <= 20, got 50",
            "unexpected argument 'debug' = true (mode 'exact' allows only: query, top_k)",
        ]

    def test_compiled_once_checked_many_times(self) -> None:
        matcher = compile_arguments({"a": {"range": [1, 3]}}, mode="exact")
        assert [matcher({"a": v}) == [] for v in (0, 1, 2, 3, 4)] == [
            False,
            True,
            True,
            True,
            False,
        ]
        assert matcher.describe() == "a=range(1, 3)"
        assert compile_arguments({"a": 1}).describe() == "a=1, ..."
        assert matcher("not a mapping") == [
            'expected arguments as an object, got "not a mapping" (a string)'
        ]

    def test_bad_mode(self) -> None:
        with pytest.raises(
            ConfigError,
            match="unknown mode 'partial'; valid modes: exact, subset, superset, ignore",
        ):
            match_arguments({}, {}, mode="partial")  # type: ignore[arg-type]


# ---- order ------------------------------------------------------------------------------


def calls(*names_and_args: str | tuple[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(n, {}) if isinstance(n, str) else n for n in names_and_args]


SLACK = ["slack_get_message", "jira_get_ticket", "slack_add_reaction"]


class TestOrder:
    def test_in_order_allows_calls_between(self) -> None:
        made = calls("slack_get_message", "log", "jira_get_ticket", "slack_add_reaction")
        assert match_order(SLACK, made, "in_order") == []

    def test_in_order_reports_out_of_order_and_missing(self) -> None:
        made = calls("jira_get_ticket", "slack_get_message", "slack_add_reaction")
        assert match_order(SLACK, made, "in_order") == [
            "expected call jira_get_ticket after call #2 slack_get_message(), but it was only "
            "made before that, as call #1 jira_get_ticket()"
        ]
        assert match_order(SLACK, calls("slack_get_message"), "in_order") == [
            "expected call jira_get_ticket after call #1 slack_get_message() was not made "
            "(calls made: slack_get_message)",
            "expected call slack_add_reaction after call #1 slack_get_message() was not made "
            "(calls made: slack_get_message)",
        ]

    def test_strict(self) -> None:
        assert match_order(SLACK, calls(*SLACK), "strict") == []
        assert match_order(["a", "b", "c"], calls("a", "c", "b"), "strict") == [
            "expected 3 calls in this order: a, b, c; got 3 calls: a, c, b",
            "call #2: expected b, got c()",
            "call #3: expected c, got b()",
        ]
        assert match_order(["a", "b", "c"], calls("a", "c"), "strict") == [
            "expected 3 calls in this order: a, b, c; got 2 calls: a, c",
            "missing call b before call #2",
        ]
        assert match_order(["a", "b"], calls("a", "b", "c"), "strict") == [
            "expected 2 calls in this order: a, b; got 3 calls: a, b, c",
            "unexpected call #3 c()",
        ]
        expected = [{"name": "a", "arguments": {"x": 1}}]
        assert match_order(expected, calls(("a", {"x": 2})), "strict") == [
            "call #1 a(x=2): argument 'x': expected 1, got 2"
        ]

    def test_unordered(self) -> None:
        assert match_order(["a", "b"], calls("b", "a"), "unordered") == []
        assert match_order(["a", "b"], calls("b", "x", "a"), "unordered") == [
            "expected 2 calls (in any order), got 3",
            "unexpected call #2 x(): x is not an expected tool (expected: a, b)",
        ]
        assert match_order(["a", "a"], calls("a"), "unordered") == [
            "expected 2 calls (in any order), got 1",
            "expected call a was not made: a was called 1 time(s) with matching arguments, "
            "but 2 a calls are expected",
        ]

    def test_subset_and_superset(self) -> None:
        assert match_order(["a"], calls("b", "a", "c"), "subset") == []
        assert match_order(["a", "d"], calls("b", "a"), "subset") == [
            "expected call d was not made (calls made: b, a)"
        ]
        assert match_order(["a", "b", "c"], calls("b"), "superset") == []
        assert match_order(["a"], calls("a", "a"), "superset") == [
            "unexpected call #2 a(): a was called 2 times, only 1 expected"
        ]

    def test_arguments_in_expected_calls(self) -> None:
        expected = [
            {"name": "search", "arguments": {"query": {"text": "leave"}, "top_k": {"max": 20}}}
        ]
        assert (
            match_order(expected, calls(("search", {"query": "Leave", "top_k": 5})), "subset") == []
        )
        assert match_order(
            expected, calls(("search", {"query": "Leave", "top_k": 50})), "subset"
        ) == [
            'expected call search(query=text("leave"), top_k=range(max=20), ...) was not made; '
            "closest is call #1 search(query=\"Leave\", top_k=50): argument 'top_k': expected a "
            "number <= 20, got 50"
        ]

    def test_pairing_finds_a_valid_assignment_greedy_misses(self) -> None:
        # agentevals' greedy pairing takes call #1 for f{x:1} and then fails on f{x:1,y:2}.
        expected = [
            {"name": "f", "arguments": {"x": 1}},
            {"name": "f", "arguments": {"x": 1, "y": 2}},
        ]
        made = calls(("f", {"x": 1, "y": 2}), ("f", {"x": 1}))
        assert match_order(expected, made, "unordered", args="subset") == []
        assert match_order(expected, made, "subset", args="subset") == []

    def test_actual_call_forms(self) -> None:
        forms: list[Any] = [
            ToolCall("f", {"x": 1}, id="c1"),
            {"type": "function", "id": "c2", "function": {"name": "f", "arguments": '{"x": 1}'}},
            {"name": "f", "arguments": {"x": 1}},
            {"f": {"x": 1}},
            ("f", {"x": 1}),
        ]
        expected = [{"name": "f", "arguments": {"x": 1}, "mode": "exact"}] * len(forms)
        assert match_order(expected, forms, "strict") == []

    def test_unreadable_arguments_are_reported(self) -> None:
        bad = ToolCall.from_json_arguments("f", "{not json", id="c1")
        reasons = match_order([{"name": "f", "arguments": {"x": 1}}], [bad], "strict")
        assert len(reasons) == 1
        assert reasons[0].startswith(
            "call #1 f(<unreadable arguments>): arguments could not be read (arguments are "
            "not valid JSON"
        )
        assert match_order(["f"], [bad], "strict") == []  # a name-only expectation
        with pytest.raises(TypeError, match="cannot read a tool call"):
            match_order(["f"], [42], "strict")

    def test_compile_once(self) -> None:
        matcher = compile_order(SLACK, "in_order")
        assert matcher(calls(*SLACK)) == []
        assert matcher(calls(*reversed(SLACK))) != []
        assert matcher.describe() == (
            "in_order: slack_get_message, jira_get_ticket, slack_add_reaction"
        )
        assert compile_calls(["a", CallSpec("b")]) == [CallSpec("a"), CallSpec("b")]
        (spec,) = compile_calls([{"name": "f", "arguments": {"x": 1}}])
        assert spec.check(ToolCall("f", {"x": 1})) == []
        assert spec.check({"name": "f", "arguments": {"x": 2}}) == [
            "argument 'x': expected 1, got 2"
        ]
        assert spec.check(("g", {})) == ["expected tool f, got g"]

    def test_bad_expectations(self) -> None:
        with pytest.raises(
            ConfigError, match="unknown mode 'sorted'; valid modes: strict, in_order"
        ):
            compile_order(["a"], "sorted")  # type: ignore[arg-type]
        with pytest.raises(ConfigError) as info:
            compile_calls([{"name": "a", "args": {}}, {"arguments": {}}, 3], where="calls")
        assert info.value.problems == [
            "calls[0]: unknown key 'args'; an expected call has name, arguments and mode",
            "calls[1]: an expected call needs a tool name, got null",
            "calls[2]: an expected call is a tool name or {name, arguments}, got 3",
        ]

    def test_many_reasons_are_capped(self) -> None:
        reasons = match_order([f"t{i}" for i in range(40)], [], "subset")
        assert len(reasons) == 20
        assert reasons[-1] == "… and 21 more differences"


# ---- properties: pairing and subsequence agree with brute force ---------------------------

_arg_dicts = st.dictionaries(st.sampled_from("xyz"), st.integers(0, 1), max_size=3)
_call_lists = st.lists(st.tuples(st.sampled_from("fg"), _arg_dicts), max_size=5)


def _compatible(spec: tuple[str, dict[str, int]], call: tuple[str, dict[str, int]]) -> bool:
    """Reference semantics of args mode "subset": same tool, expected args within actual."""
    return spec[0] == call[0] and all(call[1].get(k, -1) == v for k, v in spec[1].items())


def _injection_exists(left: list[Any], right: list[Any], ok: Any) -> bool:
    if len(left) > len(right):
        return False
    return any(
        all(ok(a, right[j]) for a, j in zip(left, chosen, strict=True))
        for chosen in itertools.permutations(range(len(right)), len(left))
    )


@settings(max_examples=300, deadline=None)
@given(expected=_call_lists, actual=_call_lists)
def test_pairing_modes_agree_with_brute_force(
    expected: list[tuple[str, dict[str, int]]], actual: list[tuple[str, dict[str, int]]]
) -> None:
    specs = [{"name": n, "arguments": a} for n, a in expected]
    subset = _injection_exists(expected, actual, _compatible)
    superset = _injection_exists(actual, expected, lambda call, spec: _compatible(spec, call))
    unordered = len(expected) == len(actual) and subset
    assert (match_order(specs, actual, "subset", args="subset") == []) == subset
    assert (match_order(specs, actual, "superset", args="subset") == []) == superset
    assert (match_order(specs, actual, "unordered", args="subset") == []) == unordered


@settings(max_examples=300, deadline=None)
@given(expected=_call_lists, actual=_call_lists)
def test_in_order_and_strict_agree_with_brute_force(
    expected: list[tuple[str, dict[str, int]]], actual: list[tuple[str, dict[str, int]]]
) -> None:
    specs = [{"name": n, "arguments": a} for n, a in expected]
    in_order = any(
        all(_compatible(e, actual[j]) for e, j in zip(expected, chosen, strict=True))
        for chosen in itertools.combinations(range(len(actual)), len(expected))
    )
    strict = len(expected) == len(actual) and all(
        _compatible(e, a) for e, a in zip(expected, actual, strict=False)
    )
    assert (match_order(specs, actual, "in_order", args="subset") == []) == in_order
    assert (match_order(specs, actual, "strict", args="subset") == []) == strict


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet="abcdef", max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(value=_json)
def test_every_plain_json_value_matches_itself(value: Any) -> None:
    assert compile_value_matcher(value)(value) is None
    assert compile_value_matcher({"equals": value})(json.loads(json.dumps(value))) is None


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.text(alphabet="abcXYZ", min_size=1, max_size=5), min_size=1, max_size=4))
def test_text_ignores_case_spacing_and_punctuation(words: list[str]) -> None:
    reference = " ".join(words)
    variant = " ,  ".join(w.swapcase() for w in words) + "."
    assert compile_value_matcher({"text": reference})(variant) is None


# ---- match_trajectory --------------------------------------------------------------------


def assistant(
    *tool_calls: tuple[str, dict[str, Any]], content: str | None = None
) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(tool_calls)
        ],
    }


USER = {"role": "user", "content": "hi"}
TOOL = {"role": "tool", "tool_call_id": "c0", "content": "ok"}


class TestMatchTrajectory:
    def test_strict_compares_messages_but_not_text_or_order_inside_a_message(self) -> None:
        expected = [
            USER,
            assistant(("a", {"x": 1}), ("b", {})),
            TOOL,
            TOOL,
            {"role": "assistant", "content": "done"},
        ]
        actual = [
            USER,
            assistant(("b", {}), ("a", {"x": 1})),
            TOOL,
            TOOL,
            {"role": "assistant", "content": "other text"},
        ]
        assert match_trajectory(expected, actual) == Verdict(True, [])

    def test_strict_reasons(self) -> None:
        expected = [USER, assistant(("a", {"x": 1})), TOOL]
        verdict = match_trajectory(expected, [USER, assistant(("a", {"x": 2})), TOOL])
        assert verdict == Verdict(
            False,
            [
                "message #2: call #1 a(x=2) does not match the expected a(x=1): argument 'x': "
                "expected 1, got 2"
            ],
        )
        verdict = match_trajectory(expected, [{"role": "system", "content": "s"}, *expected])
        assert verdict.reasons == [
            "expected 3 messages, got 4",
            "first difference at message #1: expected a user message, got a system message",
        ]
        verdict = match_trajectory(expected, [USER, {"role": "assistant", "content": "no"}, TOOL])
        assert verdict.reasons == [
            "message #2: expected an assistant message calling a(x=1), got an assistant "
            "message without tool calls"
        ]

    def test_flat_modes(self) -> None:
        expected = [USER, assistant(("a", {"x": 1}), ("b", {}))]
        split = [USER, assistant(("b", {})), TOOL, assistant(("a", {"x": 1})), TOOL]
        assert not match_trajectory(expected, split).ok
        assert match_trajectory(expected, split, order="unordered").ok
        assert match_trajectory(expected, split, order="subset").ok
        assert not match_trajectory(expected, split, order="in_order").ok
        extra = [*split, assistant(("c", {}))]
        assert match_trajectory(expected, extra, order="subset").ok
        assert match_trajectory(expected, extra, order="superset").reasons == [
            "unexpected call #3 c(): c is not an expected tool (expected: a, b)"
        ]

    def test_args_modes_and_overrides(self) -> None:
        expected = [USER, assistant(("weather", {"city": "Paris", "unit": "C"}))]
        actual = [USER, assistant(("weather", {"city": "Paris", "unit": "F", "days": 3}))]
        assert not match_trajectory(expected, actual).ok
        assert match_trajectory(expected, actual, args="ignore").ok
        assert match_trajectory(expected, actual, args_by_tool={"weather": ["city"]}).ok
        assert match_trajectory(expected, actual, args_by_tool={"weather": ["unit"]}).reasons == [
            'message #2: call #1 weather(city="Paris", unit="F", days=3) does not match the '
            'expected weather(unit="C", ...): argument \'unit\': expected "C", got "F"'
        ]
        same_city = lambda want, got: want["city"] == got["city"]  # noqa: E731
        assert match_trajectory(expected, actual, args_by_tool={"weather": same_city}).ok
        assert match_trajectory(
            expected, actual, args_by_tool={"weather": lambda want, got: "units differ"}
        ).reasons == [
            'message #2: call #1 weather(city="Paris", unit="F", days=3) does not match the '
            'expected weather("city": "Paris", "unit": "C"): units differ'
        ]

    def test_key_paths_walk_nested_objects(self) -> None:
        expected = [USER, assistant(("book", {"trip": {"from": "SFO", "to": "JFK"}}))]
        actual = [USER, assistant(("book", {"trip": {"from": "OAK", "to": "JFK"}}))]
        assert match_trajectory(expected, actual, args_by_tool={"book": ["trip.to"]}).ok
        assert not match_trajectory(expected, actual, args_by_tool={"book": ["trip.from"]}).ok
        missing = [USER, assistant(("book", {}))]
        assert match_trajectory(missing, missing, args_by_tool={"book": ["trip.to"]}).ok
        assert (
            match_trajectory(expected, missing, args_by_tool={"book": ["trip.to"]})
            .reasons[0]
            .endswith("missing argument 'trip.to' (expected \"JFK\")")
        )

    def test_message_objects(self) -> None:
        expected = [
            Message.user("hi"),
            Message.assistant(tool_calls=[ToolCall("a", {"x": 1}, id="1")]),
        ]
        assert match_trajectory(expected, [USER, assistant(("a", {"x": 1}))]).ok

    def test_empty_tool_calls_list_is_no_calls(self) -> None:
        expected = [USER, {"role": "assistant", "content": "hello"}]
        actual = [USER, {"role": "assistant", "content": "hi", "tool_calls": []}]
        assert match_trajectory(expected, actual).ok

    def test_bad_input(self) -> None:
        bad = [
            USER,
            {"role": "assistant", "tool_calls": [{"function": {"name": "a", "arguments": "{x"}}]},
        ]
        with pytest.raises(
            ConfigError,
            match=r"expected_messages\[1\]\.tool_calls\[0\] \(a\): arguments are not valid JSON",
        ):
            match_trajectory(bad, [])
        with pytest.raises(ConfigError, match=r"expected_messages\[0\] has no role"):
            match_trajectory([{"content": "x"}], [])
        with pytest.raises(ConfigError, match="invalid order: unknown mode 'any'"):
            match_trajectory([], [], order="any")  # type: ignore[arg-type]
        with pytest.raises(
            ConfigError, match="invalid args_by_tool\\['a'\\]: unknown mode 'loose'"
        ):
            match_trajectory([USER, assistant(("a", {}))], [], args_by_tool={"a": "loose"})
        assert not match_trajectory([USER, assistant(("a", {"x": 1}))], bad).ok  # actual: a reason


# ---- match_bfcl ---------------------------------------------------------------------------

GCD = {
    "name": "math.gcd",
    "description": "Greatest common divisor.",
    "parameters": {
        "type": "dict",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "integer"},
            "unit": {"type": "string"},
            "scale": {"type": "float"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["a", "b"],
    },
}
ANSWER = [
    {
        "math.gcd": {
            "a": [36],
            "b": [48],
            "unit": ["Taylor Swift", ""],
            "scale": [1.0, ""],
            "tags": [["x", "y"], ""],
        }
    }
]


class TestMatchBfcl:
    def test_accepts_what_bfcl_accepts(self) -> None:
        for args in (
            {"a": 36, "b": 48},
            {"a": 36, "b": 48, "unit": "TAYLOR-SWIFT."},
            {"a": 36, "b": 48, "unit": ""},  # "" is acceptable for an omittable string
            {"a": 36, "b": 48, "scale": 1},  # an int for a float parameter
            {"a": 36, "b": 48, "tags": ["X", "y"]},
        ):
            assert match_bfcl([GCD], ANSWER, [{"math.gcd": args}]).ok, args

    def test_rejects_what_bfcl_rejects(self) -> None:
        for args in (
            {"a": 36.0, "b": 48},
            {"a": True, "b": 48},
            {"a": 36, "b": 48, "unit": "Taylor Swift!"},
            {"a": 36, "b": 48, "tags": ["y", "x"]},
            {"a": 36, "b": 48, "other": 1},
            {"a": 36},
        ):
            assert not match_bfcl([GCD], ANSWER, [{"math.gcd": args}]).ok, args
        assert match_bfcl([GCD], ANSWER, []).reasons[0] == "expected 1 call, got 0"

    def test_underscored_names(self) -> None:
        call = [{"name": "math_gcd", "arguments": {"a": 36, "b": 48}}]
        verdict = match_bfcl([GCD], ANSWER, call)
        assert not verdict.ok
        assert verdict.reasons[-1] == (
            "hint: math_gcd is math.gcd with dots as underscores; pass underscore_names=True "
            "for models whose API cannot send dots"
        )
        assert match_bfcl([GCD], ANSWER, call, underscore_names=True).ok

    def test_variable_answers_compare_exactly(self) -> None:
        fn = {
            "name": "plot",
            "parameters": {
                "type": "dict",
                "properties": {"x": {"type": "array", "items": {"type": "float"}}},
                "required": ["x"],
            },
        }
        answer = [{"plot": {"x": ["data['sales']"]}}]
        assert match_bfcl([fn], answer, [{"plot": {"x": "data['sales']"}}]).ok
        assert not match_bfcl([fn], answer, [{"plot": {"x": "DATA['sales']"}}]).ok

    def test_expected_calls_are_suite_specs(self) -> None:
        answer = [{"math.gcd": {"a": [36], "b": [48], "unit": ["km", ""]}}]
        specs = bfcl_expected_calls([GCD], answer)
        assert specs == [
            {
                "name": "math.gcd",
                "arguments": {
                    "a": {"type": "integer", "one_of": [{"equals": 36}]},
                    "b": {"type": "integer", "one_of": [{"equals": 48}]},
                    "unit": {
                        "optional": {
                            "type": "string",
                            "one_of": [
                                {"text": "km", "ignore": " ,./-_*^"},
                                {"text": "", "ignore": " ,./-_*^"},
                            ],
                        }
                    },
                },
                "mode": "exact",
            }
        ]
        assert (
            compile_calls(specs)[0].describe()
            == 'math.gcd(a=36, b=48, unit=optional(one_of(text("km"), text(""))))'
        )

    def test_answers_that_do_not_fit_the_functions(self) -> None:
        with pytest.raises(
            ConfigError,
            match=r"possible_answer\[0\]: function 'math.lcm' is not among the functions "
            r"\(math.gcd\)",
        ):
            match_bfcl([GCD], [{"math.lcm": {"a": [1]}}], [])
        # As BFCL: an answer no call can pass rejects the calls, saying why.
        undeclared = match_bfcl(
            [GCD], [{"math.gcd": {"a": [1], "b": [2], "c": [3]}}], [{"math.gcd": {"a": 1, "b": 2}}]
        )
        assert not undeclared.ok
        assert undeclared.reasons[0] == (
            "possible_answer[0]: the possible answer lists 'c', which math.gcd does not "
            "declare, so no call can pass"
        )
        unlisted = match_bfcl([GCD], [{"math.gcd": {"a": [1]}}], [{"math.gcd": {"a": 1}}])
        assert unlisted.reasons[0] == (
            "possible_answer[0]: math.gcd requires 'b' but the possible answer does not list "
            "it, so no call can pass"
        )
        with pytest.raises(ConfigError, match=r"lists 'c', which math.gcd does not declare"):
            bfcl_expected_calls([GCD], [{"math.gcd": {"a": [1], "b": [2], "c": [3]}}])

    def test_verdict_text(self) -> None:
        assert str(Verdict(True, [])) == "match"
        assert str(Verdict(False, ["x", "y"])) == "no match:\n  - x\n  - y"


# ---- the guide's examples run --------------------------------------------------------------


def test_the_examples_in_docs_matching_run() -> None:
    guide = Path(__file__).resolve().parents[2] / "docs" / "matching.md"
    blocks = re.findall(r"```python\n(.*?)```", guide.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 8
    for number, block in enumerate(blocks):
        exec(compile(block, f"docs/matching.md block {number}", "exec"), {})
