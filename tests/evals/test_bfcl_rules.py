"""Every rule of BFCL's AST checker, one test each, with cases written for the rule.

The conformance test (``test_conformance_bfcl.py``) scores ``match_bfcl`` against 1,990 of
BFCL's own verdicts; these cases cover what that sample does not exercise. Each case says what
BFCL's checker (``bfcl_eval/eval_checker/ast_eval/ast_checker.py``) decides for it; where
toolproof decides otherwise on purpose, the test says so and ``docs/matching.md`` gives the
reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolproof import ToolCall
from toolproof._matching import compile_calls
from toolproof.errors import ConfigError
from toolproof.evals import bfcl_expected_calls, match_bfcl


def function(name: str, required: list[str] | None = None, **params: Any) -> dict[str, Any]:
    """A BFCL function doc; each keyword is a parameter: a type name or a full property."""
    properties = {k: {"type": v} if isinstance(v, str) else v for k, v in params.items()}
    return {
        "name": name,
        "description": f"{name} for the test.",
        "parameters": {"type": "dict", "properties": properties, "required": required or []},
    }


def verdict(fn: dict[str, Any], answer: dict[str, list[Any]], args: dict[str, Any]) -> bool:
    """BFCL's verdict for one call ``args`` against a single-function answer."""
    return match_bfcl([fn], [{fn["name"]: answer}], [{fn["name"]: args}]).ok


# ---- names --------------------------------------------------------------------------------


def test_the_function_name_is_exact_and_case_sensitive() -> None:
    fn = function("weather.get", ["city"], city="string")
    answer = [{"weather.get": {"city": ["Paris"]}}]
    assert match_bfcl([fn], answer, [{"weather.get": {"city": "Paris"}}]).ok
    for name in ("Weather.get", "weather.Get", "weather_get", "weather.get "):
        assert not match_bfcl([fn], answer, [{name: {"city": "Paris"}}]).ok, name
    # Native function-calling APIs cannot send dots: BFCL then expects underscores.
    assert match_bfcl([fn], answer, [{"weather_get": {"city": "Paris"}}], underscore_names=True).ok
    assert not match_bfcl(
        [fn], answer, [{"weather.get": {"city": "Paris"}}], underscore_names=True
    ).ok


# ---- which parameters ---------------------------------------------------------------------


def test_a_required_parameter_must_be_given_even_when_the_answer_allows_omitting_it() -> None:
    fn = function("book", ["seats"], seats="integer")
    assert verdict(fn, {"seats": [2, ""]}, {"seats": 2})
    assert not verdict(fn, {"seats": [2, ""]}, {})


def test_a_parameter_listed_without_empty_string_must_be_given_even_if_not_required() -> None:
    fn = function("book", [], seats="integer", cabin="string")
    assert verdict(fn, {"seats": [2], "cabin": ["economy", ""]}, {"seats": 2})
    assert not verdict(fn, {"seats": [2], "cabin": ["economy"]}, {"seats": 2})


def test_a_declared_parameter_the_answer_does_not_list_is_unexpected() -> None:
    fn = function("book", ["seats"], seats="integer", note="string")
    assert not verdict(fn, {"seats": [2]}, {"seats": 2, "note": "window"})
    result = match_bfcl([fn], [{"book": {"seats": [2]}}], [{"book": {"seats": 2, "x": 1}}])
    assert "unexpected argument 'x' = 1 (mode 'exact' allows only: seats)" in result.reasons[0]


def test_an_answer_listing_an_undeclared_parameter_fails_the_call_with_a_reason() -> None:
    fn = function("book", ["seats"], seats="integer")
    answer = [{"book": {"seats": [2], "meal": ["vegan"]}}]
    for args in ({"seats": 2}, {"seats": 2, "meal": "vegan"}):
        result = match_bfcl([fn], answer, [{"book": args}])
        assert not result.ok, args
        assert result.reasons[0] == (
            "possible_answer[0]: the possible answer lists 'meal', which book does not "
            "declare, so no call can pass"
        )
    given = match_bfcl([fn], answer, [{"book": {"seats": 2, "meal": "vegan"}}])
    assert (
        "argument 'meal': the possible answer lists 'meal', which book does not declare"
        in (given.reasons[1])
    )
    # Listed with "": leaving it out passes (BFCL never looks at it); giving it is unexpected.
    omittable = [{"book": {"seats": [2], "meal": ["vegan", ""]}}]
    assert match_bfcl([fn], omittable, [{"book": {"seats": 2}}]).ok
    assert not match_bfcl([fn], omittable, [{"book": {"seats": 2, "meal": "vegan"}}]).ok


def test_an_answer_leaving_out_a_required_parameter_fails_every_call() -> None:
    fn = function("book", ["seats", "cabin"], seats="integer", cabin="string")
    answer = [{"book": {"seats": [2]}}]
    for args in ({"seats": 2}, {"seats": 2, "cabin": "economy"}):
        result = match_bfcl([fn], answer, [{"book": args}])
        assert not result.ok
        assert result.reasons[0] == (
            "possible_answer[0]: book requires 'cabin' but the possible answer does not list "
            "it, so no call can pass"
        )


def test_expected_call_specs_refuse_answers_no_call_could_pass() -> None:
    fn = function("book", ["seats"], seats="integer")
    with pytest.raises(ConfigError, match="lists 'meal', which book does not declare"):
        bfcl_expected_calls([fn], [{"book": {"seats": [2], "meal": ["vegan"]}}])
    # Listed with "", the undeclared parameter is simply not expected.
    specs = bfcl_expected_calls([fn], [{"book": {"seats": [2], "meal": ["vegan", ""]}}])
    assert list(specs[0]["arguments"]) == ["seats"]
    with pytest.raises(ConfigError, match="function 'sell' is not among the functions"):
        match_bfcl([fn], [{"sell": {"seats": [2]}}], [])


# ---- types --------------------------------------------------------------------------------


def test_types_are_exact_booleans_are_not_numbers_and_strings_are_not_numbers() -> None:
    fn = function("f", [], n="integer", x="float", flag="boolean", s="string")
    answers = {"n": [5, ""], "x": [2.5, ""], "flag": [True, ""], "s": ["5", ""]}
    for args in ({"n": 5}, {"x": 2.5}, {"flag": True}, {"s": "5"}):
        assert verdict(fn, answers, args), args
    for args in (
        {"n": 5.0},
        {"n": True},
        {"n": "5"},
        {"x": True},
        {"x": "2.5"},
        {"flag": 1},
        {"flag": "true"},
        {"s": 5},
    ):
        assert not verdict(fn, answers, args), args


def test_an_integer_passes_for_a_float_parameter_and_compares_as_that_float() -> None:
    fn = function("scale", ["factor"], factor="float")
    assert verdict(fn, {"factor": [2.0]}, {"factor": 2})
    assert not verdict(fn, {"factor": [2.5]}, {"factor": 2})
    assert not verdict(fn, {"factor": [2.0]}, {"factor": True})


def test_any_is_checked_as_a_string() -> None:
    fn = function("echo", ["value"], value="any")
    assert verdict(fn, {"value": ["Hello World"]}, {"value": "hello-world"})
    assert not verdict(fn, {"value": ["5"]}, {"value": 5})


def test_null_listed_among_the_acceptable_values_is_accepted_for_any_type() -> None:
    for kind in ("string", "integer", "float", "boolean", "array", "dict"):
        prop: Any = {"type": kind, "items": {"type": "string"}} if kind == "array" else kind
        fn = function("list_exports", ["bot"], bot="string", token=prop)
        answer = {"bot": ["b1"], "token": ["", None]}
        assert verdict(fn, answer, {"bot": "b1", "token": None}), kind
        assert verdict(fn, answer, {"bot": "b1"}), kind
        # Not listed: null has the wrong type.
        assert not verdict(fn, {"bot": ["b1"], "token": [""]}, {"bot": "b1", "token": None})
    assert not verdict(function("f", ["bot"], bot="string"), {"bot": ["b1"]}, {"bot": None})


def test_with_only_empty_string_and_null_listed_other_values_compare_exactly() -> None:
    # BFCL takes the type of the first listed value that is not "" (null here) as the type
    # of a "variable" answer and then compares without standardising strings.
    fn = function("get_movies", ["city"], city="string", date="string", count="integer")
    answer = {"city": ["Mumbai"], "date": ["", None], "count": ["", None]}
    assert verdict(fn, answer, {"city": "mumbai", "date": ""})
    assert not verdict(fn, answer, {"city": "Mumbai", "date": "  "})
    assert not verdict(fn, answer, {"city": "Mumbai", "date": "2024-05-01"})
    assert not verdict(fn, answer, {"city": "Mumbai", "count": 5})


def test_variable_answers_are_accepted_as_their_own_type_and_compared_exactly() -> None:
    fn = function("plot", ["x", "n"], x={"type": "array", "items": {"type": "float"}}, n="integer")
    answer = {"x": ["data['sales']"], "n": ["count", 10]}
    assert verdict(fn, answer, {"x": "data['sales']", "n": "count"})
    assert verdict(fn, answer, {"x": "data['sales']", "n": 10})
    assert not verdict(fn, answer, {"x": "DATA['sales']", "n": 10})
    assert not verdict(fn, answer, {"x": "data['sales']", "n": "Count"})


# ---- values -------------------------------------------------------------------------------


def test_strings_ignore_case_and_the_characters_space_comma_dot_slash_dash_star_caret() -> None:
    fn = function("find", ["artist"], artist="string")
    answer = {"artist": ["Taylor Swift"]}
    for given in ("taylor swift", "TAYLOR-SWIFT.", "  taylor_swift  ", "Tay/lor*Sw^ift,"):
        assert verdict(fn, answer, {"artist": given}), given
    for given in ("Taylor Swift!", "Taylor\tSwift", "Taylor Swifts", "Taylor: Swift"):
        assert not verdict(fn, answer, {"artist": given}), given


def test_strings_compare_single_quotes_as_double_quotes_and_only_lower_case() -> None:
    fn = function("say", ["text"], text="string")
    assert verdict(fn, {"text": ["it's"]}, {"text": 'IT"S'})
    # Python's lower(), as BFCL: no wider case folding, no typographic quotes.
    assert not verdict(fn, {"text": ["straße"]}, {"text": "STRASSE"})
    assert not verdict(fn, {"text": ["it's"]}, {"text": "it\u2019s"})
    assert verdict(fn, {"text": ["Émile"]}, {"text": "ÉMILE"})


def test_an_omittable_string_may_be_given_as_empty_string() -> None:
    fn = function("find", ["artist"], artist="string", album="string")
    answer = {"artist": ["Adele"], "album": ["25", ""]}
    for album in ("", " ", "-", "25"):
        assert verdict(fn, answer, {"artist": "Adele", "album": album}), album
    assert not verdict(fn, answer, {"artist": "Adele", "album": "21"})


def test_other_values_compare_by_equality() -> None:
    fn = function("f", ["n", "flag"], n="integer", flag="boolean")
    assert verdict(fn, {"n": [3, 4], "flag": [False]}, {"n": 4, "flag": False})
    assert not verdict(fn, {"n": [3, 4], "flag": [False]}, {"n": 5, "flag": False})
    assert not verdict(fn, {"n": [3, 4], "flag": [False]}, {"n": 3, "flag": True})


def test_lists_compare_in_order_with_string_items_standardised() -> None:
    fn = function("route", ["stops"], stops={"type": "array", "items": {"type": "string"}})
    answer = {"stops": [["New York", "Boston"], ["Boston", "New York"]]}
    assert verdict(fn, answer, {"stops": ["new-york", "BOSTON"]})
    assert verdict(fn, answer, {"stops": ["Boston", "New York"]})
    assert not verdict(fn, {"stops": [["New York", "Boston"]]}, {"stops": ["Boston", "New York"]})
    assert not verdict(fn, answer, {"stops": ["New York"]})
    assert not verdict(fn, answer, {"stops": ["New York", "Boston", "Boston"]})


def test_list_items_have_the_schema_items_type() -> None:
    ints = function("pick", ["ids"], ids={"type": "array", "items": {"type": "integer"}})
    assert verdict(ints, {"ids": [[1, 2]]}, {"ids": [1, 2]})
    assert not verdict(ints, {"ids": [[1, 2]]}, {"ids": [1.0, 2]})
    assert not verdict(ints, {"ids": [[1, 2]]}, {"ids": [True, 2]})
    names = function("pick", ["ids"], ids={"type": "array", "items": {"type": "string"}})
    assert not verdict(names, {"ids": [["1", "2"]]}, {"ids": [1, "2"]})
    # Items of another type in the answer are "variables" and pass as that type.
    assert verdict(ints, {"ids": [["first", 2]]}, {"ids": ["FIRST", 2]})
    # Nested arrays: checked one level deep, then by equality.
    grid = function("fill", ["cells"], cells={"type": "array", "items": {"type": "array"}})
    assert verdict(grid, {"cells": [[[1, 2], [3]]]}, {"cells": [[1, 2], [3]]})
    assert not verdict(grid, {"cells": [[[1, 2], [3]]]}, {"cells": [[1, 2], 3]})


def test_a_tuple_passes_for_a_tuple_parameter() -> None:
    fn = function("move", ["to"], to={"type": "tuple", "items": {"type": "integer"}})
    assert match_bfcl([fn], [{"move": {"to": [[3, 4]]}}], [ToolCall("move", {"to": (3, 4)})]).ok


def test_an_omittable_list_may_be_given_as_an_empty_list() -> None:
    fn = function(
        "alerts", ["serial"], serial="string", tags={"type": "array", "items": {"type": "string"}}
    )
    assert verdict(fn, {"serial": ["Q3"], "tags": ["", ["x"]]}, {"serial": "Q3", "tags": []})
    assert verdict(fn, {"serial": ["Q3"], "tags": ["", ["x"]]}, {"serial": "Q3", "tags": ["X"]})
    assert not verdict(fn, {"serial": ["Q3"], "tags": [["x"]]}, {"serial": "Q3", "tags": []})
    # The same for a list of objects.
    rows = function("save", ["rows"], rows={"type": "array", "items": {"type": "dict"}})
    assert not verdict(rows, {"rows": [[{"a": [1]}]]}, {"rows": []})
    assert verdict(
        function("save", [], rows={"type": "array", "items": {"type": "dict"}}),
        {"rows": ["", [{"a": [1]}]]},
        {"rows": []},
    )


def test_dicts_compare_key_by_key_with_optional_keys() -> None:
    fn = function("ship", ["to"], to="dict")
    answer = {"to": [{"city": ["San Francisco", "SF"], "zip": ["94105", ""]}]}
    assert verdict(fn, answer, {"to": {"city": "san francisco", "zip": "94105"}})
    assert verdict(fn, answer, {"to": {"city": "SF"}})
    assert verdict(fn, answer, {"to": {"city": "SF", "zip": ""}})
    assert not verdict(fn, answer, {"to": {"zip": "94105"}})
    assert not verdict(fn, answer, {"to": {"city": "SF", "country": "US"}})
    assert not verdict(fn, answer, {"to": {"city": "Oakland"}})
    assert not verdict(fn, answer, {"to": "SF"})
    # Any of several acceptable dicts.
    either = {"to": [{"city": ["SF"]}, {"city": ["LA"], "zip": ["90001"]}]}
    assert verdict(fn, either, {"to": {"city": "LA", "zip": "90001"}})
    assert not verdict(fn, either, {"to": {"city": "LA"}})


def test_a_list_of_dicts_compares_dict_by_dict_in_order() -> None:
    fn = function("order", ["items"], items={"type": "array", "items": {"type": "dict"}})
    answer = {"items": [[{"sku": ["A-1"], "qty": [2]}, {"sku": ["B-2"], "qty": [1, ""]}]]}
    assert verdict(fn, answer, {"items": [{"sku": "a1", "qty": 2}, {"sku": "B-2"}]})
    assert not verdict(fn, answer, {"items": [{"sku": "B-2"}, {"sku": "a1", "qty": 2}]})
    assert not verdict(fn, answer, {"items": [{"sku": "a1", "qty": 2}]})
    assert not verdict(fn, answer, {"items": [{"sku": "a1", "qty": 3}, {"sku": "B-2"}]})


# ---- several functions and several calls --------------------------------------------------


def test_multiple_functions_offered_one_call_expected() -> None:
    weather = function("weather", ["city"], city="string")
    time = function("local_time", ["city"], city="string")
    answer = [{"local_time": {"city": ["Tokyo"]}}]
    assert match_bfcl([weather, time], answer, [{"local_time": {"city": "tokyo"}}]).ok
    assert not match_bfcl([weather, time], answer, [{"weather": {"city": "Tokyo"}}]).ok
    two = [{"local_time": {"city": "Tokyo"}}, {"weather": {"city": "Tokyo"}}]
    result = match_bfcl([weather, time], answer, two)
    assert not result.ok and result.reasons[0] == "expected 1 call, got 2"


def test_parallel_calls_pair_one_to_one_in_any_order() -> None:
    fn = function("weather", ["city"], city="string")
    answer = [{"weather": {"city": ["Paris"]}}, {"weather": {"city": ["Rome"]}}]
    rome, paris = {"weather": {"city": "Rome"}}, {"weather": {"city": "Paris"}}
    assert match_bfcl([fn], answer, [rome, paris]).ok
    assert match_bfcl([fn], answer, [paris, rome]).ok
    assert not match_bfcl([fn], answer, [paris, paris]).ok
    assert not match_bfcl([fn], answer, [paris]).ok
    assert not match_bfcl([fn], answer, [paris, rome, rome]).ok


def test_parallel_pairing_finds_a_valid_pairing_that_greedy_pairing_misses() -> None:
    # Deliberate difference: BFCL gives the first expected call the first call that fits
    # (n=1), finds nothing left for the second (n=1 only) and rejects; a pairing exists.
    fn = function("roll", ["n"], n="integer")
    answer = [{"roll": {"n": [1, 2]}}, {"roll": {"n": [1]}}]
    assert match_bfcl([fn], answer, [{"roll": {"n": 1}}, {"roll": {"n": 2}}]).ok


# ---- deliberate differences ---------------------------------------------------------------


def test_deliberate_differences_from_bfcl() -> None:
    # BFCL rejects an integer inside an array of floats; toolproof accepts it, as BFCL itself
    # does for a float parameter (JSON has one number type).
    floats = function("plot", ["x"], x={"type": "array", "items": {"type": "float"}})
    assert verdict(floats, {"x": [[1.0, 2.5]]}, {"x": [1, 2.5]})
    # BFCL compares list and dict items with Python's ==, where True == 1; toolproof does not.
    ints = function("pick", [], ids={"type": "array", "items": {"type": "integer"}})
    assert not verdict(ints, {"ids": ["", [1, 2]]}, {"ids": [True, 2]})
    # BFCL rejects null when another value is listed first (it takes the type from that
    # value); toolproof accepts null wherever it is listed.
    n = function("f", ["n"], n="integer")
    assert verdict(n, {"n": [5, None]}, {"n": None})


def test_expected_call_specs_carry_the_rules() -> None:
    fn = function(
        "alerts",
        ["serial"],
        serial="string",
        token="string",
        ids={"type": "array", "items": {"type": "integer"}},
    )
    answer = [{"alerts": {"serial": ["Q3"], "token": ["", None], "ids": [[1, 2]]}}]
    specs = bfcl_expected_calls([fn], answer)
    assert specs[0]["arguments"]["token"] == {
        "optional": {"type": ["string", "null"], "one_of": [{"equals": ""}, {"equals": None}]}
    }
    assert specs[0]["arguments"]["ids"] == {
        "type": "array",
        "one_of": [[{"type": "integer", "equals": 1}, {"type": "integer", "equals": 2}]],
    }
    (call,) = compile_calls(specs)
    assert call.check({"name": "alerts", "arguments": {"serial": "q3", "ids": [1, 2]}}) == []
