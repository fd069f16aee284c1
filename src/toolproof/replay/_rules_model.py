"""The replay-rules file format as pydantic models (see ``toolproof.replay._rules``).

Problems are worded as before the models existed, each naming its key
(``rules.tools.search_docs.max_top_k: expected a number, got 'twenty'``); a file with
several problems reports all of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from toolproof._filemodel import Expected, FileModel, problem

__all__ = ["AgingSpec", "AnswerSpec", "ReplayRulesFile", "ToolRuleSpec"]

TOOL_KEYS = ("required_args", "bounds", "forbid_extra_args", "compare", "ignore")
TOP_KEYS = ("version", "tools", "answer", "order", "mask", "gate", "aging")
BOUND_SHORTHAND = re.compile(r"^(max|min)_(.+)$")
SHORTHAND = "__shorthand__"


def _unknown_top(keys: list[Any], allowed: list[str]) -> str:
    return f"unknown key(s) {', '.join(map(repr, keys))}; valid keys: {', '.join(allowed)}"


def _names(value: Any) -> Any:
    if value is None:
        return None
    if (
        isinstance(value, str)
        or not isinstance(value, (list, tuple))
        or not all(isinstance(item, str) for item in value)
    ):
        raise problem(f"expected a list of argument names, got {value!r}")
    return list(value)


def _unknown_tool_key(key: Any, allowed: list[str]) -> str:
    return f"unknown key {key!r}; valid keys: {', '.join(TOOL_KEYS)}, max_<arg>, min_<arg>"


Names = Annotated[list[str] | None, Field(description="argument names")]


class ToolRuleSpec(FileModel):
    """How the calls of one tool are graded (an entry of ``tools:``)."""

    required_args: Names = None
    bounds: dict[Any, Any] | None = Field(
        None, description="per argument, a matcher spec its value must satisfy"
    )
    forbid_extra_args: bool | Literal["fail", "warn", "accept"] = Field(
        "warn", description="an argument the recorded call did not have: true, warn, false"
    )
    compare: Names = None
    ignore: Names = None
    shorthand: SkipJsonSchema[dict[str, Any]] = Field(default_factory=dict, alias="__shorthand__")

    unknown_key: ClassVar[Any] = staticmethod(_unknown_tool_key)
    unknown_at_parent: ClassVar[bool] = True

    @classmethod
    def allowed_keys(cls) -> list[str]:
        """The rule's keys (``max_<arg>`` and ``min_<arg>`` are accepted too)."""
        return list(TOOL_KEYS)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise problem(f"expected a mapping of rule settings, got {data!r}")
        out: dict[Any, Any] = {}
        short: dict[str, Any] = {}
        for key, value in data.items():
            if key not in TOOL_KEYS and BOUND_SHORTHAND.match(str(key)):
                short[str(key)] = value
            else:
                out[key] = value
        if short:
            out[SHORTHAND] = short
        return out

    @field_validator("required_args", "compare", "ignore", mode="before")
    @classmethod
    def _arg_names(cls, value: Any) -> Any:
        return _names(value)

    @field_validator("bounds", mode="before")
    @classmethod
    def _bounds(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, Mapping):
            raise problem("expected a mapping of argument to matcher spec")
        return value or None

    @field_validator("forbid_extra_args", mode="before")
    @classmethod
    def _extra(cls, value: Any) -> Any:
        if value is True or value is False or value in ("fail", "warn", "accept"):
            return value
        raise problem(f"expected true, false or warn, got {value!r}")

    @field_validator("shorthand", mode="after")
    @classmethod
    def _numbers(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key, number in value.items():
            if isinstance(number, bool) or not isinstance(number, (int, float)):
                # Reported at the key itself, as written (``max_top_k``).
                raise problem(f"expected a number, got {number!r}", parent=True, key=key)
        return value


class AnswerSpec(FileModel):
    """``answer:``: checks of the replayed final answer."""

    grounding: bool | None = Field(None, description="numbers and ids must come from evidence")
    check_small_numbers: bool | None = Field(None, description="false: skip integers 0-10")


class AgingSpec(FileModel):
    """``aging:``: how sample weights decay with age."""

    half_life: str | float | None = Field(None, description="a duration such as 30d")
    max_age: str | float | None = Field(None, description="a duration such as 90d")


class ReplayRulesFile(FileModel):
    """A replay-rules file (``toolproof replay --rules FILE``)."""

    version: int | None = Field(None, description="the format's version (1)")
    tools: Annotated[
        dict[str, ToolRuleSpec] | None,
        Field(description="rules by tool name; globs allowed ('search_*', '*')"),
    ] = None
    answer: Any = Field(None, json_schema_extra={"$ref": "#/$defs/AnswerSpec"})
    order: Annotated[Literal["ignore", "warn", "fail"], Expected("ignore, warn or fail")] = Field(
        "warn", description="what the same calls in another order cost"
    )
    mask: Names = None
    gate: Annotated[float | None, Field(ge=0, le=1), Expected("a failure rate between 0 and 1")] = (
        Field(None, description="fail the replay above this failure rate")
    )
    aging: Any = Field(None, json_schema_extra={"$ref": "#/$defs/AgingSpec"})

    unknown_keys: ClassVar[Any] = staticmethod(_unknown_top)

    @field_validator("tools", mode="before")
    @classmethod
    def _tools(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, Mapping):
            raise problem("expected a mapping of tool name to rule")
        return {str(k): v or {} for k, v in (value or {}).items()} or None

    @field_validator("mask", mode="before")
    @classmethod
    def _mask(cls, value: Any) -> Any:
        return _names(value)

    @field_validator("answer", mode="before")
    @classmethod
    def _answer(cls, value: Any) -> Any:
        answer = value or {}
        if not isinstance(answer, Mapping) or set(answer) - {"grounding", "check_small_numbers"}:
            raise problem(
                f"expected {{grounding: true|false, check_small_numbers: true|false}}, "
                f"got {answer!r}"
            )
        return answer

    @field_validator("aging", mode="before")
    @classmethod
    def _aging(cls, value: Any) -> Any:
        aging = value or {}
        if not isinstance(aging, Mapping) or set(aging) - {"half_life", "max_age"}:
            raise problem("expected {half_life: 30d, max_age: 90d}")
        from toolproof.replay._time import parse_duration

        for key in ("half_life", "max_age"):
            if aging.get(key) is not None:
                try:
                    parse_duration(aging[key], where=key)
                except Exception as exc:
                    raise problem(str(exc)) from None
        return aging
