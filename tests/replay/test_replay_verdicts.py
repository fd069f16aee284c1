"""Tools mode keeps a verdict on arguments only for a JSON Schema check, never a Python tool's.

- A Python tool is asked for every recorded call, whatever its argument check holds (field,
  model and annotated validators of every mode, ``model_post_init``, a dataclass
  ``__post_init__``, an enum's ``_missing_``, a default factory, a custom core schema with a
  function, or pydantic's own checks only): a counting validator proves it, on every
  pydantic version the project allows (nothing reads pydantic's internal schema layout).
- A schema-only tool's verdicts are kept (``test_replay_shortcuts.py`` tests them).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from enum import Enum
from typing import Annotated, Any

import pytest
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
from pydantic_core import core_schema
from replay_helpers import run_trace

from toolproof import Tool, tool
from toolproof.replay import replay
from toolproof.replay._tools_mode import _from_tool
from toolproof.testing import call

CALLS = 6
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
    assert _from_tool(made, None).verdicts is None
    trace = run_trace([[call(name, **arguments)], "done"], tools=[made])
    traces = [replace(trace, id=f"t-{n}") for n in range(CALLS)]
    seen.clear()
    report = replay(traces, tools=[made])
    assert len(report.samples) == CALLS
    assert sum(seen.values()) == CALLS * (2 if name == "nested" else 1), seen


def test_a_default_factory_of_the_users_runs_for_every_call() -> None:
    from pydantic import Field

    def factory() -> list[int]:
        seen["factory"] += 1
        return [1]

    class Filled(BaseModel):
        n: int
        extra: list[int] = Field(default_factory=factory)

    made, arguments = _made("filled", Filled, {"n": 1})
    entry = _from_tool(made, None)
    seen.clear()
    for _ in range(CALLS):
        assert entry.reject(arguments) is None
    assert entry.verdicts is None
    assert seen == Counter({"factory": CALLS})


def test_checks_that_depend_on_the_clock_are_asked_every_time() -> None:
    from datetime import date, timedelta

    def booked(day: PastDate) -> dict[str, Any]:
        """Book a past day."""
        return {}

    def later(at: FutureDatetime) -> dict[str, Any]:
        """Book a future time."""
        return {}

    past = _from_tool(tool(booked), None)
    assert past.verdicts is None
    assert past.reject({"day": (date.today() - timedelta(days=1)).isoformat()}) is None
    assert past.reject({"day": (date.today() + timedelta(days=1)).isoformat()}) is not None
    assert _from_tool(tool(later), None).verdicts is None


def test_a_tool_class_with_its_own_check_is_asked_every_time() -> None:
    class Checked(Tool[..., Any]):
        def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
            seen["own validate"] += 1
            return super().validate(arguments)

    def lookup(n: int) -> int:
        """Look up."""
        return n

    entry = _from_tool(Checked(lookup), None)
    seen.clear()
    for _ in range(CALLS):
        assert entry.reject({"n": 1}) is None
    assert seen == Counter({"own validate": CALLS})
