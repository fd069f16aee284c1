"""Fixture files as pydantic models: what ``ToolMock.from_file`` and ``from_dict`` read.

The form::

    version: 1
    key_args: {search_docs: [query]}
    mask: [user_id]
    strict: true
    assert_all_used: true
    fixtures:
      - tool: get_leave_balance
        arguments: {employee_id: E001}
        returns: 5
      - tool: search_docs
        match: {top_k: {range: [1, 20]}}
        raises: "KeyError: employee not found"
        times: 2

Each problem is reported with the fixture's ``file:line`` (or ``fixture #N`` for data that
has no lines), all of them at once. Loading fixtures never imports code: ``raises`` names a
built-in exception, one of toolproof's errors, an error the tool declares, or
``module.Class`` of a module that is already imported.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, ValidationError, ValidationInfo, field_validator

from toolproof._filemodel import FileModel, problem, problems_of
from toolproof.errors import ConfigError, ToolError, UserError

if TYPE_CHECKING:
    from toolproof._tools import Tool

__all__ = [
    "FILE_KEYS",
    "FIXTURE_KEYS",
    "FixtureFile",
    "FixtureSpec",
    "NamedError",
    "fixture_problems",
    "parse_error",
]

FIXTURE_KEYS = ("tool", "arguments", "match", "returns", "raises", "times")
FILE_KEYS = ("version", "fixtures", "key_args", "mask", "strict", "assert_all_used")


@dataclass(frozen=True, slots=True)
class NamedError:
    """An error named in a fixture file, resolved against the tool's declared errors."""

    name: str
    message: str | None

    def resolve(self, tool: Tool[..., Any], where: str) -> BaseException:
        """The tool's declared error of this name, created with the message.

        Raises:
            UserError: The tool declares no error of this name.
        """
        for error in tool.errors:
            if error.__name__ == self.name:
                return error(self.message) if self.message is not None else error()
        declared = ", ".join(e.__name__ for e in tool.errors) or "none"
        raise UserError(
            f"{where} raises {self.name!r}, which is neither a built-in exception nor one of "
            f"the errors tool '{tool.name}' declares ({declared}); use one of those, "
            "'ToolError', or a dotted path such as 'myapp.errors.NotFound' (of an imported module)"
        )


def _exception_class(name: str) -> Any:
    """The class a fixture file names, found without importing anything.

    Built-in exceptions and toolproof's errors by name, and ``module.Class`` for a module
    that is already imported (its namespace is read; module ``__getattr__`` hooks, which
    may import, are not run). ``None`` when the name is none of those.
    """
    if "." not in name:
        from toolproof import errors

        found = getattr(builtins, name, None)
        if found is None and name in errors.__all__:
            found = getattr(errors, name)
        return found
    module_name, _, attr = name.rpartition(".")
    module = sys.modules.get(module_name)
    if module is None:
        return None
    return vars(module).get(attr)


Raised = BaseException | type[BaseException] | NamedError


def parse_error(spec: Any) -> tuple[Raised | None, list[str]]:
    """What a fixture's ``raises`` names, or the problems with it (without a location)."""
    if isinstance(spec, str):
        name, _, message = spec.partition(":")
        name, text = name.strip(), message.strip() or None
    elif isinstance(spec, Mapping) and isinstance(spec.get("type"), str):
        extra = [k for k in spec if k not in ("type", "message")]
        if extra:
            return None, [f"'raises' accepts 'type' and 'message', not {extra}"]
        name, message_value = spec["type"], spec.get("message")
        text = None if message_value is None else str(message_value)
    else:
        return None, [
            "'raises' must be 'ErrorType', 'ErrorType: message' or "
            f"{{type: ErrorType, message: ...}}, got {spec!r}"
        ]
    if not name.replace("_", "a").replace(".", "a").isalnum():
        return None, [f"{name!r} is not an exception name"]
    error_type = ToolError if name == "ToolError" else _exception_class(name)
    if error_type is None and "." in name:
        module_name = name.rpartition(".")[0]
        if module_name not in sys.modules:
            return None, [
                f"{name!r} names a module that is not imported ({module_name!r}); "
                "fixture files never import code: import it before loading the fixtures "
                "(for example in conftest.py), or name an error the tool declares"
            ]
        return None, [f"module {module_name!r} has no {name.rpartition('.')[2]!r}"]
    if error_type is None:
        return NamedError(name, text), []
    if not (isinstance(error_type, type) and issubclass(error_type, BaseException)):
        return None, [f"{name!r} is not an exception class"]
    try:
        return (error_type(text) if text is not None else error_type()), []
    except Exception as exc:  # an exception class that needs other arguments
        return None, [f"{name!r} cannot be created from a message ({type(exc).__name__}: {exc})"]


def _unknown(keys: list[Any], allowed: list[str]) -> str:
    return f"unknown key(s) {', '.join(map(repr, keys))}; valid keys: {', '.join(allowed)}"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: ``returns`` when a fixture does not say (a fixture may return ``None`` on purpose).
UNSET: Any = _Unset()


class FixtureSpec(FileModel):
    """One entry of ``fixtures:``: a canned answer of a tool."""

    tool: Any = Field(
        None, validate_default=True, json_schema_extra={"type": "string", "minLength": 1}
    )
    arguments: dict[Any, Any] | None = Field(
        None, description="the arguments that select this fixture (exact values)"
    )
    match: Any = Field(
        None,
        json_schema_extra={"type": "object"},
        description="argument name to matcher spec ({range: [1, 20]}, {regex: ...})",
    )
    returns: Any = Field(default_factory=lambda: UNSET, description="what the tool returns")
    raises: Any = Field(
        None,
        json_schema_extra={"anyOf": [{"type": "string"}, {"type": "object"}]},
        description="'ErrorType', 'ErrorType: message' or {type, message}",
    )
    times: Any = Field(
        None,
        json_schema_extra={"type": "integer", "minimum": 1},
        description="how many calls it answers",
    )

    unknown_keys: ClassVar[Any] = staticmethod(_unknown)

    @field_validator("tool", mode="before")
    @classmethod
    def _tool(cls, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            raise problem(f"'tool' must name the tool, got {value!r}")
        return value

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, Mapping):
            raise problem(f"'arguments' must be a mapping, got {type(value).__name__}")
        return None if value is None else dict(value)

    @field_validator("match", mode="before")
    @classmethod
    def _match(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise problem(f"'match' must be a mapping, got {type(value).__name__}")
        from toolproof._matching._specs import compile_value_matcher

        compiled: dict[str, Any] = {}
        found: list[str] = []
        for name, spec in value.items():
            try:
                compiled[str(name)] = compile_value_matcher(spec, where=f"match.{name}")
            except ConfigError as exc:
                found.extend(exc.problems or [str(exc)])
        if found:
            raise problem(found[0], also=found[1:])
        return compiled

    @field_validator("raises", mode="before")
    @classmethod
    def _raises(cls, value: Any, info: ValidationInfo) -> Any:
        if info.data.get("returns", UNSET) is not UNSET:
            raise problem("give 'returns' or 'raises', not both")
        if value is None:
            return None
        error, found = parse_error(value)
        if found:
            raise problem(found[0], also=found[1:])
        return error

    @field_validator("times", mode="before")
    @classmethod
    def _times(cls, value: Any) -> Any:
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise problem(f"'times' must be a positive integer, got {value!r}")
        return value


def _fixture_mapping(value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise problem(f"a fixture must be a mapping, got {type(value).__name__}")
    return value


def _is_names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(n, str) for n in value)


class FixtureFile(FileModel):
    """A fixture file: fixtures and the settings of the mock they make."""

    version: Any = Field(1, json_schema_extra={"const": 1})
    strict: Any = Field(
        None,
        json_schema_extra={"type": "boolean"},
        description="a call with no fixture fails (the default)",
    )
    assert_all_used: Any = Field(
        None, json_schema_extra={"type": "boolean"}, description="unused fixtures fail"
    )
    mask: Any = Field(
        None,
        json_schema_extra={"type": "array", "items": {"type": "string"}},
        description="argument names never shown in messages",
    )
    key_args: Any = Field(
        None,
        json_schema_extra={
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
        description="per tool, the arguments that select a fixture",
    )
    fixtures: list[Annotated[FixtureSpec, BeforeValidator(_fixture_mapping)]] = Field(
        default_factory=list
    )

    unknown_keys: ClassVar[Any] = staticmethod(_unknown)

    @classmethod
    def allowed_keys(cls) -> list[str]:
        """The keys of a fixture file."""
        return list(FILE_KEYS)

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        if value != 1:
            raise problem(f"unsupported fixture file version {value!r} (expected 1)")
        return value

    @field_validator("strict", "assert_all_used", mode="before")
    @classmethod
    def _flag(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, bool):
            raise problem(f"{info.field_name!r} must be true or false, got {value!r}")
        return value

    @field_validator("mask", mode="before")
    @classmethod
    def _mask(cls, value: Any) -> Any:
        if not _is_names(value):
            raise problem(f"'mask' must be a list of argument names, got {value!r}")
        return value

    @field_validator("key_args", mode="before")
    @classmethod
    def _key_args(cls, value: Any) -> Any:
        if not isinstance(value, Mapping) or not all(
            isinstance(tool, str) and _is_names(names) for tool, names in value.items()
        ):
            shown = repr(value)[:200]
            raise problem(f"'key_args' must map tool names to lists of argument names, got {shown}")
        return value

    @field_validator("fixtures", mode="before")
    @classmethod
    def _fixtures(cls, value: Any) -> Any:
        if not isinstance(value, list):
            raise problem(f"'fixtures' must be a list, got {type(value).__name__}")
        return value


def fixture_where(index: int, source: str, lines: Mapping[int, int]) -> str:
    """How problems name fixture ``index``: ``file:line``, or ``fixture #N``."""
    line = lines.get(index)
    if line:
        return f"{source}:{line}"
    return f"{source} fixture #{index + 1}" if source else f"fixture #{index + 1}"


def fixture_problems(
    exc: ValidationError, label: str, source: str, lines: Mapping[int, int]
) -> list[str]:
    """Every problem of a fixture file, each named by its fixture (or the file)."""
    out = []
    for path, message in problems_of(exc):
        if len(path) >= 2 and path[0] == "fixtures" and isinstance(path[1], int):
            out.append(f"{fixture_where(path[1], source, lines)}: {message}")
        else:
            out.append(f"{label}: {message}")
    return out
