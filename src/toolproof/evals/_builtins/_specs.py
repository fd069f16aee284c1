"""Pieces of the built-in checks' specs: tool names, one-or-many lists, compiled matchers.

Each built-in check declares its value as a spec type (see :func:`toolproof.evals.check`);
these annotated types and validators are what several of them share. Validators read the
agent's tools and the whole ``expect`` mapping from :class:`CheckContext`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from toolproof._filemodel import Expected, problem, problems_of
from toolproof._yaml import describe_type
from toolproof.errors import ConfigError
from toolproof.evals._checks import HERE, CheckContext

if TYPE_CHECKING:
    from toolproof._matching import Matcher


def _known_tool(name: Any, info: ValidationInfo) -> Any:
    context = CheckContext.of(info)
    if not context.knows(name):
        raise problem(context.unknown_tool(name))
    return name


def _known_key(name: Any, info: ValidationInfo) -> Any:
    context = CheckContext.of(info)
    if not context.knows(name):
        raise problem(context.unknown_tool(name), parent=True)  # not at "[key]"
    return name


#: One of the agent's tools (any other value, a number too, is an unknown tool).
ToolName = Annotated[str, BeforeValidator(_known_tool)]
#: One of the agent's tools as the key of a mapping (its problem is reported at the key).
ToolKey = Annotated[str, BeforeValidator(_known_key)]


def one_or_many(words: str, shown: Any = str, *, least: int = 0) -> WrapValidator:
    """For a list of strings that may be written as one (``search`` or ``[search, lookup]``).

    Use it as ``Annotated[list[T], one_or_many(words)]``. Any other value reads ``expected
    <words>, got <its type>``; the problems of a value written as one are reported at it
    (not at ``[0]``). ``shown`` is the type of one item in the JSON Schema (``str``, or a
    ``Literal`` of the allowed strings); a list needs at least ``least`` items.
    """

    def listed(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if (
            isinstance(value, list)
            and len(value) >= least
            and all(isinstance(v, str) for v in value)
        ):
            return handler(value)
        if not isinstance(value, str):
            raise problem(f"expected {words}, got {describe_type(value)}")
        try:
            return handler([value])
        except ValidationError as exc:
            found = [message for _, message in problems_of(exc)]
            raise problem(found[0], also=found[1:]) from None

    many = Annotated[list[shown], Field(min_length=least)]
    return WrapValidator(listed, json_schema_input_type=shown | many)


#: Texts: one string or a non-empty list of them.
Texts = Annotated[
    list[str],
    one_or_many("a string or a list of strings", least=1),
    Expected("a string or a list of strings", got="type"),
]
#: Tool names: one or a list of them.
ToolNames = Annotated[
    list[ToolName],
    one_or_many("a list of tool names"),
    Expected("a list of tool names", got="type"),
]


def compiled(compile_spec: Callable[..., Any]) -> Callable[[Any], Any]:
    """A validator compiling a matcher spec with ``compile_spec(spec, where=...)``.

    Every problem of the spec is reported at its own path, as the matching module words it.
    """

    def validate(spec: Any) -> Any:
        try:
            return compile_spec(spec, where=HERE)
        except ConfigError as exc:
            found = list(exc.problems or [str(exc)])
            raise problem(found[0], also=found[1:]) from None

    return validate


def _value_matcher(spec: Any) -> Matcher:
    from toolproof._matching import compile_value_matcher

    matcher: Matcher = compiled(compile_value_matcher)(spec)
    return matcher


#: A value or a matcher spec (``{regex: ...}``, ``{approx: 3, tol: 0.1}``...), compiled.
ValueMatcher = Annotated[Any, AfterValidator(_value_matcher)]


def switch(on: Callable[[], Any], words: str) -> Callable[[Any], Any]:
    """A before-validator of ``true``, ``false`` or options.

    ``true`` is ``on()``, ``false`` no check (``None``), a mapping goes on to the options
    model; any other value reads ``expected <words>, got <it>``.
    """

    def read(value: Any) -> Any:
        if value is True:
            return on()
        if value is False:
            return None
        if isinstance(value, Mapping):
            return value
        raise problem(f"expected {words}, got {value!r}")

    return read


__all__ = [
    "Expected",
    "Texts",
    "ToolKey",
    "ToolName",
    "ToolNames",
    "ValueMatcher",
    "compiled",
    "one_or_many",
    "switch",
]
