"""Tools mode keeps a Python tool's verdict on arguments only when it is a pure function.

- A tool whose argument check runs any code of the user's (field, model and annotated
  validators of every mode, ``model_post_init``, a dataclass ``__post_init__``, an enum's
  ``_missing_``, a default factory, a custom core schema with a function) is asked for
  every recorded call: a counting validator proves it.
- Checks that depend on the clock (past and future dates) are never kept.
- Values equal in Python but not in the check (``1``, ``1.0``, ``True``, ``"1"``) never
  share a verdict; kept verdicts and their messages are the ones a fresh check gives
  (generated arguments, differential); the kept set stays bounded under 100,000 distinct
  argument sets.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, replace
from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    FutureDatetime,
    PastDate,
    PlainValidator,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic_core import SchemaValidator, core_schema
from replay_helpers import run_trace

from toolproof import Tool, tool
from toolproof.replay import replay
from toolproof.replay._tools_mode import _VERDICTS, _from_tool, _pure_check
from toolproof.replay._verdicts import pure_arguments
from toolproof.testing import call

CALLS = 6
_ANY = SchemaValidator(core_schema.any_schema())
seen: Counter[str] = Counter()


def _count(kind: str) -> Any:
    def counted(value: Any) -> Any:
        seen[kind] += 1
        return value

    return counted


def _wrap(value: Any, handler: Any) -> Any:
    seen["wrap"] += 1
    return handler(value)


class AfterModel(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def _n(cls, value: int) -> int:
        seen["field validator"] += 1
        return value


class ModelChecked(BaseModel):
    n: int

    @model_validator(mode="after")
    def _all(self) -> ModelChecked:
        seen["model validator"] += 1
        return self


class PostInit(BaseModel):
    n: int

    def model_post_init(self, context: Any) -> None:
        seen["model_post_init"] += 1


@dataclass
class Point:
    n: int

    def __post_init__(self) -> None:
        seen["__post_init__"] += 1


class Color(Enum):
    RED = "red"

    @classmethod
    def _missing_(cls, value: object) -> Color:
        seen["_missing_"] += 1
        return cls.RED


class Custom:
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        return core_schema.no_info_plain_validator_function(_count("custom core schema"))

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> Any:
        return {"type": "integer"}


def _made(name: str, annotation: Any, value: Any) -> tuple[Tool[..., Any], dict[str, Any]]:
    def function(n: Any) -> dict[str, Any]:
        return {"ok": True}

    function.__annotations__ = {"n": annotation, "return": dict[str, Any]}
    function.__doc__ = "A tool with a check of the user's."
    function.__name__ = name
    return tool(function), {"n": value}


IMPURE = [
    ("after", Annotated[int, AfterValidator(_count("after"))], 1),
    ("before", Annotated[int, BeforeValidator(_count("before"))], 1),
    ("wrap", Annotated[int, WrapValidator(_wrap)], 1),
    ("plain", Annotated[int, PlainValidator(_count("plain"))], 1),
    ("field_validator", AfterModel, {"n": 1}),
    ("model_validator", ModelChecked, {"n": 1}),
    ("model_post_init", PostInit, {"n": 1}),
    ("post_init", Point, {"n": 1}),
    ("missing", Color, "RED"),
    ("custom", Custom, 1),
    ("nested", list[Annotated[int, AfterValidator(_count("nested"))]], [1, 2]),
    ("union", int | Annotated[str, AfterValidator(_count("union"))], "x"),
]


@pytest.mark.parametrize(("name", "annotation", "value"), IMPURE, ids=[c[0] for c in IMPURE])
def test_a_tool_with_the_users_code_in_its_check_is_asked_for_every_call(
    name: str, annotation: Any, value: Any
) -> None:
    made, arguments = _made(name, annotation, value)
    assert not _pure_check(made)
    trace = run_trace([[call(name, **arguments)], "done"], tools=[made])
    traces = [replace(trace, id=f"t-{n}") for n in range(CALLS)]
    seen.clear()
    report = replay(traces, tools=[made])
    assert len(report.samples) == CALLS
    assert sum(seen.values()) == CALLS * (2 if name == "nested" else 1), seen


def test_a_default_factory_of_the_users_makes_the_check_impure() -> None:
    from pydantic import Field

    def factory() -> list[int]:
        seen["factory"] += 1
        return [1]

    class Filled(BaseModel):
        n: int
        extra: list[int] = Field(default_factory=factory)

    class Empty(BaseModel):  # an empty builtin container: pure
        n: int
        extra: list[int] = Field(default_factory=list)

    made, arguments = _made("filled", Filled, {"n": 1})
    assert not _pure_check(made)
    entry = _from_tool(made, None)
    seen.clear()
    for _ in range(CALLS):
        assert entry.reject(arguments) is None
    assert entry.verdicts is None
    assert seen == Counter({"factory": CALLS})
    assert _pure_check(_made("empty", Empty, {"n": 1})[0])


def test_checks_that_depend_on_the_clock_are_never_kept() -> None:
    from pydantic import TypeAdapter

    for annotation in (PastDate, FutureDatetime):
        assert not pure_arguments(TypeAdapter(annotation).core_schema)
    for annotation in (int, str, float, bool, list[int], dict[str, Any] | None, Literal["a", 1]):
        assert pure_arguments(TypeAdapter(annotation).core_schema), annotation
    # unknown layouts are impure, not errors
    assert not pure_arguments(None)
    assert not pure_arguments({"type": "a-type-from-the-future"})
    assert not pure_arguments({"type": "int", "a_new_key": 1})


def test_a_tool_class_with_its_own_check_is_asked_every_time() -> None:
    class Checked(Tool[..., Any]):
        def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
            seen["own validate"] += 1
            return super().validate(arguments)

    def lookup(n: int) -> int:
        """Look up."""
        return n

    made = Checked(lookup)
    assert not _pure_check(made)
    entry = _from_tool(made, None)
    seen.clear()
    for _ in range(CALLS):
        assert entry.reject({"n": 1}) is None
    assert seen == Counter({"own validate": CALLS})


@tool
def typed(
    count: int,
    ratio: float = 0.5,
    flag: bool = False,
    label: str = "",
    tags: list[str] | None = None,
    mode: Literal["fast", "slow"] = "fast",
    limits: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A tool with pydantic's checks only.

    Args:
        count: How many.
        ratio: A share.
        flag: A switch.
        label: A name.
        tags: Labels.
        mode: How.
        limits: Bounds.
    """
    return {}


def _fresh(arguments: dict[str, Any]) -> str | None:
    return _from_tool(typed, None)._verdict(arguments)


def test_values_equal_in_python_never_share_a_verdict() -> None:
    entry = _from_tool(typed, None)
    assert entry.verdicts is not None  # pure: kept
    cases: list[dict[str, Any]] = [
        {"count": 1},
        {"count": 1.0},
        {"count": True},
        {"count": "1"},
        {"count": 1.5},
        {"count": 1, "flag": 1},
        {"count": 1, "flag": True},
        {"count": 1, "flag": "true"},
        {"count": 1, "flag": 2},
        {"count": 1, "ratio": "0.5"},
        {"count": 1, "label": 1},
        {"count": 1, "tags": ["a", 1]},
        {"flag": True, "count": 1},
        {"count": 1, "mode": "FAST"},
        {"count": 1, "unknown": None},
    ]
    fresh = [_fresh(case) for case in cases]
    for _ in range(3):  # the later rounds answer from the kept verdicts
        assert [entry.reject(case) for case in cases] == fresh
    assert entry.reject({"count": 1.5}) is not None
    assert entry.reject({"count": True}) is None  # pydantic's lax mode takes a bool
    assert entry.reject({"count": 1, "flag": 2}) is not None
    assert "unexpected argument 'unknown'" in str(entry.reject({"count": 1, "unknown": None}))


_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["1", "0.5", "true", "fast", "slow", "", "é", "x" * 50])
)
_values = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
_names = st.sampled_from(["count", "ratio", "flag", "label", "tags", "mode", "limits", "x"])


@settings(deadline=None, max_examples=200)
@given(st.lists(st.dictionaries(_names, _values, max_size=4), min_size=1, max_size=6))
def test_kept_verdicts_and_messages_are_the_ones_a_fresh_check_gives(
    calls: list[dict[str, Any]],
) -> None:
    entry = _from_tool(typed, None)
    for arguments in calls + calls[::-1]:
        assert entry.reject(arguments) == _fresh(arguments)


def test_the_kept_verdicts_stay_bounded_under_many_distinct_arguments() -> None:
    entry = _from_tool(typed, None)
    assert entry.verdicts is not None
    begin = time.process_time()
    for n in range(100_000):
        assert entry.reject({"count": n, "label": "x" * (n % 7)}) is None
    assert time.process_time() - begin < 60  # about 1 s idle: a wide margin
    assert len(entry.verdicts) == _VERDICTS
    # refusals are kept too, each with its own message
    assert entry.reject({"count": "many"}) == _fresh({"count": "many"})
    assert len(entry.verdicts) == _VERDICTS


_SHAPES: list[Any] = [
    Any,
    int,
    float,
    str,
    bool,
    dict,
    list,
    dict[str, Any],
    list[dict[str, Any]],
    dict[str, Any] | None,
    list[int] | None,
    list[list[str]],
]


def _json_values() -> Any:
    leaves = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=True, allow_infinity=True)
        | st.text(max_size=4)
    )
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=6,
    )


@settings(deadline=None, max_examples=300)
@given(st.sampled_from(_SHAPES), _json_values())
def test_the_quick_return_test_passes_only_values_the_check_accepts(
    annotation: Any, value: Any
) -> None:
    import json

    from pydantic import TypeAdapter

    from toolproof.replay._verdicts import accepted_shapes

    adapter = TypeAdapter(annotation)
    quick = accepted_shapes(adapter.core_schema)
    assert quick is not None, annotation
    parsed = _ANY.validate_json(json.dumps(value, allow_nan=True))  # as the view reads it
    if quick(parsed):
        adapter.validate_python(parsed)  # never raises (when false, the check decides)


def test_the_quick_return_test_knows_only_the_plainest_checks() -> None:
    from pydantic import Field, TypeAdapter

    from toolproof.replay._verdicts import accepted_shapes

    for annotation in (
        Annotated[int, Field(gt=0)],
        Annotated[str, AfterValidator(str.upper)],
        Literal["a"],
        tuple[int, ...],
        dict[str, int],
        list[Annotated[int, Field(lt=5)]],
        AfterModel,
    ):
        assert accepted_shapes(TypeAdapter(annotation).core_schema) is None, annotation
    quick = accepted_shapes(TypeAdapter(list[dict[str, Any]]).core_schema)
    assert quick is not None
    assert quick([{"a": 1}, {}]) and not quick([{"a": 1}, 2]) and not quick({"a": 1})
