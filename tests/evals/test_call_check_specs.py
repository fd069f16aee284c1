"""The call checks' specs: what loads, what is refused and how, and what each check reports.

tools_called, tools_not_called, order, calls, args, args_mode, required_args and
forbid_extra_args each declare their value once, as a spec type. Generated values written
the way a user may write them compile, fit the published JSON Schema, and report on a real
run what an independent count of its calls says; generated hostile values (unknown tools,
names that are not strings, unknown arguments, bad matcher specs, bad counts and modes,
wrong shapes) never compile and are reported at their place with their line, worded as
they always were. The keys that modify others (``order``, ``args_mode``) say when the key
they modify is missing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _cli import run_cli
from toolproof import Agent, tool
from toolproof._yaml import Locator, Problems
from toolproof.errors import ConfigError
from toolproof.evals import load_suite
from toolproof.evals._checks import Check, SessionRecord, compile_expect, registered
from toolproof.testing import ScriptedModel, call


@tool
def search_docs(query: str, limit: int = 3) -> str:
    """Search the documents."""
    return f"results for {query}"


@tool
def refund_order(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


@tool
def ping() -> str:
    """Check the service."""
    return "pong"


TOOLS = {t.name: t for t in (search_docs, refund_order, ping)}
PARAMS = {"search_docs": ["query", "limit"], "refund_order": ["order_id"], "ping": []}
KNOWN = "ping, refund_order, search_docs"
KEYS = [
    "tools_called", "tools_not_called", "order", "calls", "args", "args_mode",
    "required_args", "forbid_extra_args",
]  # fmt: skip
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CALLS = [
    call("search_docs", query="leave policy"),
    call("refund_order", order_id="A-1"),
    call("search_docs", query="refunds", limit=5),
    call("ping", verbose=True),  # an argument outside the tool's schema
]
RECORD = SessionRecord(
    [Agent(ScriptedModel([*CALLS, "Refunded A-1."]), list(TOOLS.values())).run_sync("q").trace]
)
MADE = [(c.name, c.arguments) for c in RECORD.tool_calls]


def load(
    expect: dict[str, Any], tools: dict[str, Any] | None = TOOLS
) -> tuple[dict[str, Check], list[str]]:
    """The checks compiled from ``expect`` by name, and the problems (``path: message``)."""
    problems = Problems(Locator(Path("suite.eval.yaml"), {("expect",): 7}))
    checks = compile_expect(expect, tools=tools, problems=problems, path=("expect",))
    found = problems.formatted()
    assert all(p.startswith("suite.eval.yaml:7: expect.") for p in found), found
    return {c.name: c for c in checks}, [p.removeprefix("suite.eval.yaml:7: ") for p in found]


def fits_schema(key: str, value: Any) -> bool:
    schema = registered()[key].schema
    assert schema is not None
    return jsonschema.Draft202012Validator(schema).is_valid(value)


# -- values a user may write ---------------------------------------------------------------------

tool_names = st.sampled_from(sorted(TOOLS))
names = st.lists(tool_names, max_size=3) | tool_names
counts = st.integers(0, 4) | st.fixed_dictionaries(
    {}, optional={"min": st.integers(0, 2), "max": st.integers(2, 4)}
).filter(bool)
matcher_specs = st.sampled_from(
    ["leave policy", 5, {"regex": "^re"}, {"type": "string"}, {"min": 1}, {"optional": 3},
     {"one_of": ["A-1", "A-2"]}, {"text": "LEAVE  policy!"}, {"approx": 5, "tol": 0.5}]
)  # fmt: skip


def arguments_of(tool_name: str) -> st.SearchStrategy[dict[str, Any]]:
    if not PARAMS[tool_name]:
        return st.just({})
    return st.dictionaries(st.sampled_from(PARAMS[tool_name]), matcher_specs)


def per_tool(entry: Any) -> st.SearchStrategy[dict[str, Any]]:
    """A non-empty mapping of tool name to ``entry(tool)``."""
    pairs = tool_names.flatmap(lambda name: st.tuples(st.just(name), entry(name)))
    return st.lists(pairs, min_size=1, max_size=3).map(dict)


def expected_call(name: str) -> st.SearchStrategy[Any]:
    mapping = st.fixed_dictionaries(
        {"name": st.just(name)},
        optional={"arguments": arguments_of(name), "mode": st.sampled_from(["exact", "subset"])},
    )
    return st.just(name) | mapping


def required(name: str) -> st.SearchStrategy[Any]:
    """A tool's required arguments: a list of its argument names, or one of them."""
    if not PARAMS[name]:
        return st.just([])
    return st.lists(st.sampled_from(PARAMS[name]), max_size=2) | st.sampled_from(PARAMS[name])


GOOD: dict[str, st.SearchStrategy[Any]] = {
    "tools_called": names | st.dictionaries(tool_names, counts),
    "tools_not_called": names,
    "calls": st.lists(tool_names.flatmap(expected_call), min_size=1, max_size=3),
    "args": per_tool(lambda name: arguments_of(name) | st.lists(arguments_of(name), max_size=2)),
    "required_args": per_tool(required),
    "forbid_extra_args": st.just(True) | names,
}


def calls_counted() -> dict[str, int]:
    counted: dict[str, int] = {}
    for name, _ in MADE:
        counted[name] = counted.get(name, 0) + 1
    return counted


def oracle(key: str, value: Any) -> str | None:
    """The status a check must report on RECORD, counted from its calls (None: not counted)."""
    listed = [value] if isinstance(value, str) else value
    counted = calls_counted()
    if key == "tools_called":
        if isinstance(value, dict):
            bounds = {
                name: (c, c)
                if isinstance(c, int)
                else (c.get("min", 0 if "max" in c else 1), c.get("max"))
                for name, c in value.items()
            }
        else:
            bounds = dict.fromkeys(listed, (1, None))
        ok = all(
            low <= counted.get(name, 0) and (high is None or counted.get(name, 0) <= high)
            for name, (low, high) in bounds.items()
        )
        return "pass" if ok else "fail"
    if key == "tools_not_called":
        return "fail" if any(name in counted for name in listed) else "pass"
    if key == "required_args":
        needs = {t: [n] if isinstance(n, str) else n for t, n in value.items()}
        ok = all(set(needs[name]) <= set(args) for name, args in MADE if name in needs)
        return "pass" if ok else "fail"
    if key == "forbid_extra_args":
        checked = set(TOOLS) if value is True else set(listed)
        ok = all(set(args) <= set(PARAMS[name]) for name, args in MADE if name in checked)
        return "pass" if ok else "fail"
    return None


@pytest.mark.parametrize("key", sorted(GOOD))
@SETTINGS
@given(data=st.data())
def test_a_value_a_user_may_write_compiles_fits_the_schema_and_reports(
    key: str, data: st.DataObject
) -> None:
    value = data.draw(GOOD[key])
    checks, problems = load({key: value})
    assert problems == []
    assert list(checks) == [key]
    assert fits_schema(key, value), f"{key}: {value!r} compiled, but the schema refuses it"
    check = checks[key]
    assert isinstance(check.describe, str)  # empty for an empty list, as it always was
    result = check(RECORD)
    assert result.status in ("pass", "fail") and result.reason
    expected = oracle(key, value)
    if expected is not None:
        assert result.status == expected, (value, result.reason)
    # When the agent's tools are unknown, names are not checked: the value still loads.
    unchecked, problems = load({key: value}, tools=None)
    assert problems == [] and list(unchecked) == [key]


@SETTINGS
@given(
    mode=st.sampled_from(["strict", "in_order", "unordered", "subset", "superset"]),
    sequence=st.lists(tool_names, max_size=4),
    calls=st.none() | GOOD["calls"],
    args_mode=st.none() | st.sampled_from(["exact", "subset", "superset", "ignore"]),
)
def test_order_and_args_mode_modify_the_key_they_name(
    mode: str, sequence: list[str], calls: list[Any] | None, args_mode: str | None
) -> None:
    expect: dict[str, Any] = {"order": mode, "tools_called": sequence}
    if calls is not None:
        expect["calls"] = calls
    if args_mode is not None:
        expect.update(args_mode=args_mode, args={"search_docs": {"query": "x"}})
    checks, problems = load(expect)
    assert problems == []
    for key in expect:
        assert fits_schema(key, expect[key])
    # `order` orders `calls` when both are set, else the names of `tools_called`.
    sequenced = "calls" if calls is not None else "order"
    assert sorted(checks) == sorted({"tools_called", sequenced, *(["args"] if args_mode else [])})
    assert checks[sequenced].describe.endswith(f"({mode})")
    if calls is None:
        assert checks["order"].describe == f"calls [{', '.join(sequence)}] ({mode})"
        in_order = [name for name, _ in MADE] == sequence
        if mode == "strict":
            assert checks["order"](RECORD).passed == in_order
    if args_mode is not None:  # args_mode is the mode of `args`, and of `calls` without one
        shown = checks["args"].describe
        assert shown == ("search_docs(...)" if args_mode == "ignore" else
                         "search_docs(query=\"x\", ...)" if args_mode == "subset" else
                         "search_docs(query=\"x\")")  # fmt: skip


@SETTINGS
@given(
    order=st.sampled_from(["in_order", "sideways", 3, None]),
    sequence=st.sampled_from(["absent", "list", "name", "mapping"]),
    with_calls=st.booleans(),
    args_mode=st.sampled_from(["exact", "loose", None]),
    with_args=st.booleans(),
)
def test_a_modifier_without_the_key_it_modifies_is_refused_at_its_own_key(
    order: Any, sequence: str, with_calls: bool, args_mode: Any, with_args: bool
) -> None:
    expect: dict[str, Any] = {"order": order, "args_mode": args_mode}
    written = {"list": ["ping"], "name": "ping", "mapping": {"ping": 1}}
    if sequence in written:
        expect["tools_called"] = written[sequence]
    if with_calls:
        expect["calls"] = ["ping"]
    if with_args:
        expect["args"] = {"ping": {}}
    checks, problems = load(expect)
    wanted = []
    if order != "in_order":
        wanted.append(
            f"order: expected one of strict, in_order, unordered, subset, superset, got {order!r}"
        )
    if not with_calls and sequence != "list":
        wanted.append(f"order: {SEQUENCE}")
    if not with_args:
        wanted.append("args_mode: args_mode applies to 'args', which is not set")
    elif args_mode != "exact":
        wanted.append(f"args_mode: expected one of {ARGS_MODES}, got {args_mode!r}")
    assert sorted(p.removeprefix("expect.") for p in problems) == sorted(wanted)
    # A modifier adds no check of its own, except `order` over the names of `tools_called`.
    assert "args_mode" not in checks
    assert ("order" in checks) == (order == "in_order" and sequence == "list" and not with_calls)
    assert ("args" in checks) == (with_args and args_mode == "exact")
    assert ("calls" in checks) == with_calls


# -- hostile values ------------------------------------------------------------------------------

MODES = {"exact", "subset", "superset", "ignore", "strict", "in_order", "unordered"}
not_a_tool = st.text(max_size=8).filter(lambda s: s not in TOOLS)
not_a_string = st.none() | st.booleans() | st.integers() | st.floats()
not_an_argument = st.text(min_size=1, max_size=8).filter(lambda s: s not in PARAMS["search_docs"])
not_a_mode = st.text(max_size=8).filter(lambda s: s not in MODES) | not_a_string
bad_counts = (  # what the schema refuses too
    st.integers(max_value=-1)
    | st.booleans()
    | st.floats().filter(lambda f: not f.is_integer())
    | st.text(max_size=3)
    | st.sampled_from([{"mni": 1}, {"min": None}, {"min": -1}, {"max": "2"}, [1]])
)
empty_ranges = st.just({}) | st.integers(3, 9).map(lambda low: {"min": low, "max": low - 1})
bad_matchers = st.sampled_from([{"regex": "("}, {"range": "x"}, {"type": "nope"}, {"approx": "x"}])

#: Why a value is refused: a name the agent lacks (not checked when its tools are unknown),
#: a rule the JSON Schema cannot state (checked by the spec's validators), or its shape
#: (which the published schema refuses too).
NAME, RULE, SHAPE = "name", "rule", "shape"
COUNT = "expected a call count (an integer) or {min: N, max: M} with 0 <= min <= max, got "


def hostile() -> st.SearchStrategy[tuple[str, Any, str, str]]:
    """``(key, value, what a message says, why it is refused)``."""

    def case(key: str, values: Any, says: str, why: str) -> Any:
        return st.tuples(st.just(key), values, st.just(says), st.just(why))

    unknown = "unknown tool"
    return st.one_of(
        case("tools_called", st.lists(not_a_tool, min_size=1), unknown, NAME),
        case("tools_called", not_a_tool.map(lambda n: {n: 1}), unknown, NAME),
        case("tools_called", not_a_string.map(lambda n: {n: 1}), unknown, RULE),
        case("tools_called", bad_counts.map(lambda c: {"ping": c}), COUNT, SHAPE),
        case("tools_called", empty_ranges.map(lambda c: {"ping": c}), COUNT, RULE),
        case("tools_called", not_a_string, "expected a list of tool names, or a mapping", SHAPE),
        case("tools_not_called", not_a_tool, unknown, NAME),
        case("tools_not_called", st.lists(not_a_string, min_size=1),
             "expected a list of tool names, got a list", SHAPE),
        case("order", not_a_mode, "order: expected one of strict, in_order", SHAPE),
        case("calls", not_a_tool.map(lambda n: [n]), unknown, NAME),
        case("calls", not_a_string.filter(lambda n: n is not None).map(lambda n: [{"name": n}]),
             unknown, SHAPE),
        case("calls", st.just([{"name": None}]), "missing 'name': the expected tool", SHAPE),
        case("calls", not_an_argument.map(lambda a: [{"name": "search_docs", "arguments": {a: 1}}]),
             "search_docs has no argument", NAME),
        case("calls", bad_matchers.map(
            lambda m: ["ping", {"name": "search_docs", "arguments": {"query": m}}]),
             "expect.calls[1].arguments.query", RULE),
        case("calls", not_a_mode.map(lambda m: [{"name": "ping", "mode": m}]),
             "expect.calls[0].mode: expected one of exact, subset, superset", SHAPE),
        case("calls", not_a_mode.map(lambda m: [{"name": "ping", "arguments": {}, "mode": m}]),
             "expect.calls[0].arguments: argument mode must be one of", SHAPE),
        case("calls", not_a_string.map(lambda v: [v]), "expected {name, arguments, mode}, got",
             SHAPE),
        case("calls", st.just([]) | not_a_string | st.just({}),
             "expected a list of expected calls", SHAPE),
        case("args", not_a_tool.map(lambda n: {n: {}}), unknown, NAME),
        case("args", not_an_argument.map(lambda a: {"search_docs": [{a: 1}]}),
             "search_docs has no argument", NAME),
        case("args", bad_matchers.map(lambda m: {"search_docs": {"query": m}}),
             "expect.args.search_docs.query", RULE),
        case("args", not_a_string.map(lambda v: {"ping": [{}, v]}),
             "expect.args.ping[1]: expected a mapping of argument name to value", SHAPE),
        case("args", st.just({}) | not_a_string | st.lists(st.just({})),
             "expected a mapping of tool name to expected arguments", SHAPE),
        case("required_args", not_a_tool.map(lambda n: {n: []}), unknown, NAME),
        case("required_args", not_an_argument.map(lambda a: {"search_docs": ["query", a]}),
             "expect.required_args.search_docs[1]: search_docs has no argument", NAME),
        case("required_args", not_a_string.map(lambda v: {"ping": v}),
             "expect.required_args.ping: expected a list of argument names", SHAPE),
        case("forbid_extra_args", st.lists(not_a_tool, min_size=1), unknown, NAME),
        case("forbid_extra_args", not_a_string.filter(lambda v: not isinstance(v, bool)),
             "expected a list of tool names, got", SHAPE),
    )  # fmt: skip


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=hostile())
def test_a_hostile_value_is_refused_at_its_place_with_its_line(
    case: tuple[str, Any, str, str],
) -> None:
    key, value, says, why = case
    checks, problems = load({key: value})
    assert key not in checks, (value, problems)
    assert problems and all(p.startswith(f"expect.{key}") for p in problems), problems
    assert any(says in p for p in problems), (says, problems)
    if why == SHAPE:
        assert not fits_schema(key, value), f"{key}: the schema accepts {value!r}"
    unchecked, problems = load({key: value}, tools=None)
    if why == NAME:  # the agent did not load: names are not checked, the rest is
        assert problems == [] and key in unchecked, problems
    else:
        assert problems and key not in unchecked, problems


# -- the messages, word for word -----------------------------------------------------------------

UNKNOWN = "unknown tool 'serch_docs' (did you mean 'search_docs'?); the agent's tools are: " + KNOWN
ORDER = "expected one of strict, in_order, unordered, subset, superset, got 'sideways'"
SEQUENCE = "order needs the expected sequence: give 'tools_called' as a list, or 'calls'"
ARGS_MODES = "exact, subset, superset, ignore"
NO_QUERRY = "search_docs has no argument 'querry' (did you mean 'query'?); its arguments are: "


@pytest.mark.parametrize(
    ("expect", "problems"),
    [
        ({"tools_called": 3}, ["tools_called: expected a list of tool names, or a mapping of "
                               "tool name to a count or {min, max}"]),
        ({"tools_called": ["ping", 3]},
         ["tools_called: expected a list of tool names, got a list"]),
        ({"tools_called": ["ping", "serch_docs"]}, [f"tools_called[1]: {UNKNOWN}"]),
        ({"tools_called": "serch_docs"}, [f"tools_called: {UNKNOWN}"]),
        ({"tools_called": {"serch_docs": 1}}, [f"tools_called.serch_docs: {UNKNOWN}"]),
        ({"tools_called": {3: 1}},
         [f"tools_called[3]: unknown tool 3; the agent's tools are: {KNOWN}"]),
        ({"tools_called": {"ping": {"min": 3, "max": 1}}},
         [f"tools_called.ping: {COUNT}{{'min': 3, 'max': 1}}"]),
        ({"tools_called": {"ping": True}}, [f"tools_called.ping: {COUNT}True"]),
        ({"tools_called": {"ping": {"mni": 1}}}, [f"tools_called.ping: {COUNT}{{'mni': 1}}"]),
        ({"tools_not_called": {}}, ["tools_not_called: expected a list of tool names, got a "
                                    "mapping"]),
        ({"order": "sideways", "tools_called": ["ping"]}, [f"order: {ORDER}"]),
        ({"order": "sideways"}, [f"order: {ORDER}", f"order: {SEQUENCE}"]),
        ({"order": "strict", "tools_called": "ping"}, [f"order: {SEQUENCE}"]),
        ({"calls": []}, ["calls: expected a list of expected calls: {name, arguments, mode} (or "
                         "a tool name), got a list"]),
        ({"calls": [3]}, ["calls[0]: expected {name, arguments, mode}, got an integer"]),
        ({"calls": [{"args": {}}]},
         ["calls[0].args: unknown key 'args' (did you mean 'arguments'?); allowed: name, "
          "arguments, mode", "calls[0]: missing 'name': the expected tool"]),
        ({"calls": ["ping", {"name": "serch_docs"}]}, [f"calls[1].name: {UNKNOWN}"]),
        ({"calls": [{"name": "search_docs", "arguments": {"querry": 1}}]},
         [f"calls[0].arguments.querry: {NO_QUERRY}query, limit"]),
        ({"calls": [{"name": "search_docs", "arguments": {"query": {"regex": "("}}}]},
         ["calls[0].arguments.query.regex: invalid regular expression '(': missing ), "
          "unterminated subpattern at position 0"]),
        ({"calls": [{"name": "ping", "mode": "loose"}]},
         [f"calls[0].mode: expected one of {ARGS_MODES}, got 'loose'"]),
        ({"calls": [{"name": "ping", "arguments": {}, "mode": "loose"}]},
         [f"calls[0].arguments: argument mode must be one of {ARGS_MODES}, got 'loose'"]),
        ({"calls": [{"name": "ping", "arguments": 3}]},
         ["calls[0].arguments: expected a mapping of argument name to value, got an integer"]),
        ({"args": {}}, ["args: expected a mapping of tool name to expected arguments (or a list "
                        "of them), got a mapping"]),
        ({"args": {"ping": 3}},
         ["args.ping: expected a mapping of argument name to value, got an integer"]),
        ({"args": {"ping": [{}, None]}},
         ["args.ping[1]: expected a mapping of argument name to value, got null"]),
        ({"args": {"search_docs": {"querry": 1}}},
         [f"args.search_docs.querry: {NO_QUERRY}query, limit"]),
        ({"args": {"search_docs": [{}, {"querry": 1}]}},
         [f"args.search_docs[1].querry: {NO_QUERRY}query, limit"]),
        ({"args": {"search_docs": [7, {"querry": 1}]}},
         ["args.search_docs[0]: expected a mapping of argument name to value, got an integer",
          f"args.search_docs[1].querry: {NO_QUERRY}query, limit"]),
        ({"args": {"serch_docs": {}, "search_docs": {"querry": 1}}},
         [f"args.serch_docs: {UNKNOWN}", f"args.search_docs.querry: {NO_QUERRY}query, limit"]),
        ({"args": {"ping": {}}, "args_mode": "loose"},
         [f"args_mode: expected one of {ARGS_MODES}, got 'loose'"]),
        ({"args_mode": "exact"}, ["args_mode: args_mode applies to 'args', which is not set"]),
        ({"required_args": []}, ["required_args: expected a mapping of tool name to a list of "
                                 "argument names, got a list"]),
        ({"required_args": {"search_docs": ["query", "q"]}},
         ["required_args.search_docs[1]: search_docs has no argument 'q'; its arguments are: "
          "query, limit"]),
        ({"required_args": {"search_docs": "q"}},
         ["required_args.search_docs: search_docs has no argument 'q'; its arguments are: "
          "query, limit"]),
        ({"required_args": {"ping": 3}},
         ["required_args.ping: expected a list of argument names, got an integer"]),
        ({"forbid_extra_args": 3}, ["forbid_extra_args: expected a list of tool names, got an "
                                    "integer"]),
        ({"forbid_extra_args": ["ping", "serch_docs"]}, [f"forbid_extra_args[1]: {UNKNOWN}"]),
    ],
)  # fmt: skip
def test_each_problem_is_worded_as_before_at_its_place(
    expect: dict[str, Any], problems: list[str]
) -> None:
    checks, found = load(expect)
    assert [p.removeprefix("expect.") for p in found] == problems
    refused = {p.split(":")[0].split(".")[0].split("[")[0] for p in problems}
    assert not set(checks) & refused


def test_false_turns_forbid_extra_args_off_and_true_covers_every_tool() -> None:
    checks, problems = load({"forbid_extra_args": False})
    assert (checks, problems) == ({}, [])
    every, _ = load({"forbid_extra_args": True})
    result = every["forbid_extra_args"](RECORD)
    assert every["forbid_extra_args"].describe == "no undeclared arguments for any tool"
    assert (result.status, result.reason) == (
        "fail",
        "extra arguments: ping(verbose=true) passes 'verbose', not in the schema of ping "
        "(allowed: (none))",
    )
    unknown, problems = load({"forbid_extra_args": True}, tools=None)  # nothing to compare with
    assert problems == [] and unknown["forbid_extra_args"](RECORD).passed


# -- in a suite file, from the CLI ---------------------------------------------------------------

SUITE = """\
suite: calls
agent: evalagents:build_agent
model: scripted
cases:
  - name: one
    input: "x"
    expect:
      tools_called: {search_docs: {min: 2, max: 1}}
      calls:
        - search_docs
        - name: search_docs
          arguments:
            querry: leave
        - name: search_docs
          arguments:
            query: {regex: "("}
      args:
        search_docs: [{top_k: 3}, 7]
      required_args: {search_docs: query, multiply_numbers: [a, c]}
      order: sideways
"""


def test_a_suite_file_reports_each_problem_on_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "calls.eval.yaml"
    path.write_text(SUITE, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    where = "cases[0].expect"
    assert [p.replace(f"{path}:", "L", 1) for p in info.value.problems] == [
        f"L8: {where}.tools_called.search_docs: {COUNT}{{'min': 2, 'max': 1}}",
        f"L13: {where}.calls[1].arguments.querry: search_docs has no argument 'querry' (did "
        "you mean 'query'?); its arguments are: query, top_k",
        f"L15: {where}.calls[2].arguments.query.regex: invalid regular expression '(': "
        "missing ), unterminated subpattern at position 0",
        f"L18: {where}.args.search_docs[1]: expected a mapping of argument name to value, got "
        "an integer",
        f"L19: {where}.required_args.multiply_numbers[1]: multiply_numbers has no argument "
        "'c'; its arguments are: a, b",
        f"L20: {where}.order: {ORDER}",
    ]
    # The CLI says the same, exits 2 and shows no traceback.
    here = Path(__file__).resolve().parent
    paths = [str(here), str(here.parents[1] / "src")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "NO_COLOR": "1"}
    result = run_cli("run", str(path), cwd=tmp_path, env=env, paths=paths)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[1:] == [f"  {p}" for p in info.value.problems]
