"""The shortcuts of tools-mode replay give exactly the answers of the long way.

- ``_fits`` (the check of free-form values read by the view) agrees with the codec's
  ``plain`` on every value the JSON parser can return: non-finite floats, huge integers,
  deep nesting, odd text.
- Schema-only tools keep the verdict on arguments already checked: values that are equal
  in Python but not in JSON Schema (``1``, ``1.0``, ``True``, ``"1"``) never share one, the
  set stays bounded, and verdicts are the ones a fresh check gives.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import SchemaValidator, core_schema
from replay_helpers import query_users, run_trace

from toolproof import ToolCall, tool
from toolproof._messages import plain
from toolproof.errors import ToolError
from toolproof.replay._recorded import _fits
from toolproof.replay._tools_mode import _VERDICT_KEY_CHARS, _VERDICTS, _from_schema
from toolproof.testing import call

_ANY = SchemaValidator(core_schema.any_schema())

_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**4200, max_value=10**4250)
    | st.integers(min_value=-(10**4250), max_value=-(10**4200))
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
    | st.sampled_from(["é", "\u0000", "NaN", "😀", "a" * 300])
)
_values = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


def _parsed(value: Any) -> Any:
    """``value`` written as JSON text and read back by the parser the view uses."""
    return _ANY.validate_json(json.dumps(value, allow_nan=True))


def _nested(levels: int, leaf: Any = 1, *, as_list: bool = False) -> Any:
    value = leaf
    for _ in range(levels):
        value = [value] if as_list else {"a": value}
    return value


@settings(deadline=None, max_examples=300)
@given(_values)
def test_the_views_check_agrees_with_the_codecs_on_parsed_values(value: Any) -> None:
    parsed = _parsed(value)
    assert _fits(parsed, 0) == plain(parsed, 0)


def test_the_views_check_agrees_with_the_codecs_at_the_depth_limit() -> None:
    for levels in range(58, 70):
        for as_list in (False, True):
            for leaf in (1, 1.5, float("nan"), 2**14001, 2**14000 - 1, "x", None, [], {}):
                parsed = _parsed(_nested(levels, leaf, as_list=as_list))
                assert _fits(parsed, 0) == plain(parsed, 0), (levels, as_list, leaf)
    # and both refuse what they must: the check is not trivially true
    assert not _fits(_parsed(_nested(70)), 0)
    assert not _fits(_parsed({"a": [1, float("inf")]}), 0)
    assert not _fits(_parsed([2**14001]), 0)


_SCHEMA = {
    "type": "object",
    "properties": {"user_id": {"type": "integer"}, "tags": {"type": "array"}},
    "required": ["user_id"],
    "additionalProperties": False,
}


def _fresh(arguments: dict[str, Any]) -> str | None:
    """The verdict of a tool that never saw any arguments before."""
    return _from_schema("query_users", _SCHEMA, "h").reject(arguments)


def test_schema_verdicts_of_values_equal_in_python_are_never_shared() -> None:
    tool = _from_schema("query_users", _SCHEMA, "h")
    # 1 == 1.0 == True in Python, and {"a": 1} == {"a": True}: a verdict kept under an
    # equality-based key would pass True (not an integer in JSON Schema) or fail 1.0
    cases: list[dict[str, Any]] = [
        {"user_id": 1},
        {"user_id": True},
        {"user_id": 1.0},
        {"user_id": "1"},
        {"user_id": 1, "tags": [1]},
        {"user_id": 1, "tags": [True]},
        {"tags": [1], "user_id": 1},
        {"user_id": 1, "extra": None},
    ]
    for _ in range(3):  # the second and third rounds answer from the kept verdicts
        assert [tool.reject(case) for case in cases] == [_fresh(case) for case in cases]
    assert tool.reject({"user_id": 1}) is None
    assert tool.reject({"user_id": True}) is not None
    assert "True is not of type 'integer'" in str(tool.reject({"user_id": True}))


@settings(deadline=None, max_examples=150)
@given(st.lists(st.dictionaries(st.sampled_from(["user_id", "tags", "x"]), _values), max_size=6))
def test_kept_schema_verdicts_are_the_ones_a_fresh_check_gives(
    calls: list[dict[str, Any]],
) -> None:
    tool = _from_schema("query_users", _SCHEMA, "h")
    parsed = [_parsed(arguments) for arguments in calls]
    for arguments in parsed + parsed:
        assert tool.reject(arguments) == _fresh(arguments)


def test_the_kept_schema_verdicts_are_bounded() -> None:
    tool = _from_schema("query_users", _SCHEMA, "h")
    for n in range(_VERDICTS + 500):
        assert tool.reject({"user_id": n}) is None
    assert tool.verdicts is not None
    assert len(tool.verdicts) == _VERDICTS
    # the most recently used stay: a verdict used again is not the next one dropped
    assert repr({"user_id": _VERDICTS + 499}) in tool.verdicts
    assert repr({"user_id": 0}) not in tool.verdicts
    # arguments too long to keep are checked every time, and never kept
    long = {"user_id": 1, "tags": ["x" * _VERDICT_KEY_CHARS]}
    assert tool.reject(long) is None
    assert repr(long) not in tool.verdicts
    assert tool.reject({"user_id": "x" * _VERDICT_KEY_CHARS}) is not None


def test_a_tool_that_checks_its_own_return_values_is_asked_every_time(tmp_path: Path) -> None:
    # the return check runs without Tool.validate_return's wrapper only for tools that
    # keep Tool's own check; a tool class with its own is asked for every recorded value
    from replay_helpers import user_trace

    from toolproof import Tool
    from toolproof.replay import TraceStore, replay

    asked: list[Any] = []

    class Picky(Tool[..., Any]):
        def validate_return(self, value: Any) -> Any:
            asked.append(value)
            if len(asked) > 2:
                from pydantic import TypeAdapter

                TypeAdapter(int).validate_python(value)  # refuses: the value is a dict
            return super().validate_return(value)

    picky = Picky(query_users.function, name="query_users")
    with TraceStore(tmp_path / "t.db") as store:
        store.add_many([replace(user_trace(123), id=f"t-{n}") for n in range(5)])
    report = replay(tmp_path / "t.db", tools=[picky])
    assert len(asked) == 5
    assert report.counts == {"pass": 2, "warn": 0, "fail": 3, "error": 0}, report.summary()
    assert all(
        f.check == "return_shape" and "no longer fits query_users's return type" in f.message
        for s in report.failures
        for f in s.findings
    )


# -- stored traces graded from the data itself, against whole traces ---------------------------


@tool
def lookup(key: str, limit: int = 10) -> int:
    """Look a key up (today it returns a count; recorded runs returned other shapes).

    Args:
        key: The key.
        limit: At most this many.
    """
    return 1


@tool
def lookup_then(key: str, limit: int = 10) -> dict[str, Any]:
    """Look a key up (as it was when the runs were recorded).

    Args:
        key: The key.
        limit: At most this many.
    """
    if key == "boom":
        raise ToolError("boom")
    if key == "count":
        return 3  # type: ignore[return-value]
    return {"key": key, "n": [1, 2]} if key != "none" else None  # type: ignore[return-value]


_CALLS = [
    call("query_users", user_id=7),
    call("query_users", user_id=700),  # out of the rules' bounds
    call("query_users", user_id="seven"),  # refused when recorded and today
    call("query_users", user_id=7, fields=["plan"]),
    call("query_users"),  # a required argument missing
    call("query_users", user_id=7, extra=1),  # an unexpected argument
    call("gone", a=1),  # a tool that no longer exists
    call("lookup", key="a"),  # today's return type refuses the recorded value
    call("lookup", key="none"),
    call("lookup", key="boom"),  # an error result
    call("lookup", key="b", limit=50),
    call("lookup", key="count"),  # a value today's return type takes
    ToolCall("query_users", {}, raw_arguments='{"user_id": ', arguments_error="bad JSON"),
]
_RULES = [
    {},
    {"tools": {"query_users": {"bounds": {"user_id": {"max": 500}}}}},
    {"tools": {"query_users": {"required_args": ["user_id", "fields"]}}},
    {"tools": {"*": {"required_args": ["key"]}, "lookup": {"bounds": {"limit": {"max": 20}}}}},
]


def _recorded_run(steps: list[list[int]]) -> Any:
    script: list[Any] = []
    for step in steps:
        calls = [replace(_CALLS[n]) for n in step]
        script.append(calls[0] if len(calls) == 1 else calls)
    script.append("Done.")
    return run_trace(script, tools=[query_users, lookup_then, _gone], input="q")


@tool
def _gone(a: int) -> int:
    """A tool that existed when the runs were recorded.

    Args:
        a: A number.
    """
    return a


_gone.name = "gone"
lookup_then.name = "lookup"


@settings(deadline=None, max_examples=40)
@given(
    st.lists(
        st.lists(st.integers(0, len(_CALLS) - 1), min_size=1, max_size=3), min_size=1, max_size=4
    ),
    st.sampled_from(range(len(_RULES))),
    st.booleans(),
)
def test_stored_traces_graded_from_the_data_give_the_findings_of_whole_traces(
    steps: list[list[int]], rules: int, schemas: bool
) -> None:
    import tempfile
    from unittest import mock

    import toolproof.replay._recorded as recorded_module
    from toolproof.replay import TraceStore, replay

    trace = _recorded_run(steps)
    today: Any = (
        {"query_users": query_users.parameters, "lookup": lookup.parameters}
        if schemas
        else [query_users, lookup]
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.db"
        with TraceStore(path) as store:
            store.add_many([replace(trace, id=f"t-{n}") for n in range(3)])

        def outcome() -> list[dict[str, Any]]:
            report = replay(path, tools=today, rules=_RULES[rules], now=2e9)
            found = []
            for sample in report.samples:
                entry = sample.to_dict()
                del entry["duration_ms"]
                found.append(entry)
            return found

        fast = outcome()
        with mock.patch.object(recorded_module, "read_recorded", return_value=None):
            full = outcome()
    assert fast == full
    assert len(fast) == 3
