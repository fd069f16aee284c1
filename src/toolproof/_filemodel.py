"""File formats as pydantic models, with the problems a person can act on.

Every file a user writes (eval suites, fixture files, redaction rules, replay rules) is
described once as pydantic models derived from :class:`FileModel`. Validating a document
against them reports **every** problem at once, each as ``file:line: path: message``: the
line comes from the YAML node positions (:class:`toolproof._yaml.Locator`), unknown keys get
a did-you-mean suggestion, and each field says in words what it accepts.

How a model says what it accepts:

- ``Annotated[int, Field(ge=1), Expected("a positive integer")]``: any problem with the
  field becomes ``expected a positive integer, got 0`` (``got`` shows the value, or its
  type with ``Expected(..., got="type")``);
- a validator raising :func:`problem` gives the exact message (and may point at the
  mapping that holds the field, with ``parent=True``);
- :attr:`FileModel.unknown_key` words unknown keys (the default:
  ``unknown key 'gatee' (did you mean 'gate'?); allowed: ...``).

The same models generate the published JSON Schemas of the formats.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from toolproof._yaml import DocPath, Problems, describe_type

__all__ = [
    "Expected",
    "FileModel",
    "did_you_mean",
    "load_error",
    "problem",
    "problems_of",
    "report",
    "unknown_key_message",
    "valid_part",
    "validate",
    "where_problems",
]

#: The error type of every translated problem.
PROBLEM = "toolproof"

M = TypeVar("M", bound=BaseModel)


def problem(
    message: str, *, parent: bool = False, key: Any = None, also: Iterable[str] = ()
) -> PydanticCustomError:
    """An error to raise from a validator: ``message`` is shown as written.

    Args:
        message: What is wrong and what is allowed.
        parent: Report it at the mapping that holds the field (for a missing key).
        key: Report it at this key (or index) inside the field, or inside the mapping
            with ``parent`` (for keys a validator reads itself, such as ``max_<arg>``).
        also: More problems at the same place (a value with several).
    """
    context = {"message": message, "parent": parent, "key": key, "also": list(also)}
    return PydanticCustomError(PROBLEM, "{message}", context)


@dataclass(frozen=True, slots=True)
class Expected:
    """Field metadata: any problem with the field reads ``expected <text>, got <value>``.

    Attributes:
        text: What the field accepts, in words (``None``: the field's description).
        got: Show the value (``"repr"``) or its type (``"type"``, "got a string").
    """

    text: str | None = None
    got: Literal["repr", "type"] = "repr"

    def message(self, value: Any, description: str | None = None) -> str:
        """The message for ``value`` (``description``: the field's, when ``text`` is unset)."""
        shown = describe_type(value) if self.got == "type" else repr(value)
        return f"expected {self.text or description}, got {shown}"


def did_you_mean(word: Any, known: Iterable[Any]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known``, or an empty string."""
    close = difflib.get_close_matches(str(word), [str(k) for k in known], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_key_message(key: Any, allowed: Iterable[str]) -> str:
    """``unknown key 'gatee' (did you mean 'gate'?); allowed: ...``."""
    names = list(allowed)
    return f"unknown key {key!r}{did_you_mean(key, names)}; allowed: {', '.join(names)}"


class FileModel(BaseModel):
    """A mapping of a user-written file: unknown keys refused, values checked strictly.

    Values are not converted: ``"3"`` is not an integer and ``true`` is not ``1``.
    """

    model_config = ConfigDict(
        extra="forbid", strict=True, populate_by_name=True, arbitrary_types_allowed=True
    )

    #: How unknown keys are worded: ``(key, allowed keys) -> message``; ``None``: the default.
    unknown_key: ClassVar[Callable[[Any, list[str]], str] | None] = None
    #: Messages for missing required keys (reported at the mapping that lacks them).
    missing: ClassVar[dict[str, str]] = {}
    #: Report each unknown key at the mapping that holds it, not at the key.
    unknown_at_parent: ClassVar[bool] = False
    #: Word all unknown keys of a mapping in one message at the mapping:
    #: ``(keys, allowed keys) -> message``; ``None``: one message per key, at the key.
    unknown_keys: ClassVar[Callable[[list[Any], list[str]], str] | None] = None

    @classmethod
    def allowed_keys(cls) -> list[str]:
        """The keys the mapping accepts, in the order they are documented."""
        return [field.alias or name for name, field in cls.model_fields.items()]

    @model_validator(mode="wrap")
    @classmethod
    def _translate(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        try:
            return handler(data)
        except ValidationError as exc:
            errors = _translated(cls, data, exc)
        raise ValidationError.from_exception_data(cls.__name__, errors) from None  # type: ignore[arg-type]


def _translated(model: type[FileModel], data: Any, exc: ValidationError) -> list[dict[str, Any]]:
    """The errors of one model as :func:`problem` errors, unknown keys first."""
    unknown: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    explained: set[str] = set()
    by_key = {field.alias or name: field for name, field in model.model_fields.items()}
    for error in exc.errors():
        loc = tuple(error["loc"])
        if error["type"] == PROBLEM:
            others.append(_detail(loc, error["input"], error["ctx"]))
            continue
        if error["type"] in ("extra_forbidden", "invalid_key") and len(loc) == 1:
            word = model.unknown_key or unknown_key_message
            message = word(loc[0], model.allowed_keys())
            context = {"message": message, "parent": model.unknown_at_parent}
            unknown.append(_detail(loc, error["input"], context))
            continue
        if error["type"] == "model_type" and not loc:
            message = f"expected a mapping, got {describe_type(data)}"
            others.append(_detail(loc, data, {"message": message}))
            continue
        key = loc[0] if loc else None
        field = by_key.get(key) if isinstance(key, str) else None
        marker = (
            next((m for m in field.metadata if isinstance(m, Expected)), None) if field else None
        )
        if marker is not None and isinstance(data, Mapping):
            if key in explained:
                continue
            explained.add(str(key))
            value = data.get(key)
            message = marker.message(value, field.description if field else None)
            others.append(_detail((key,), value, {"message": message}))
            continue
        if error["type"] == "missing" and len(loc) == 1:
            message = model.missing.get(str(loc[0]), f"missing {loc[0]!r}")
            others.append(_detail(loc, None, {"message": message, "parent": True}))
            continue
        message = (
            f"{error['msg'][:1].lower()}{error['msg'][1:]}, got {describe_type(error['input'])}"
        )
        others.append(_detail(loc, error["input"], {"message": message}))
    if unknown and model.unknown_keys is not None:
        keys = [detail["loc"][0] for detail in unknown]
        message = model.unknown_keys(keys, model.allowed_keys())
        unknown = [_detail((), data, {"message": message})]
    return unknown + others


def _detail(loc: tuple[Any, ...], value: Any, ctx: Mapping[str, Any]) -> dict[str, Any]:
    context = {
        "message": ctx["message"],
        "parent": bool(ctx.get("parent")),
        "key": ctx.get("key"),
        "also": list(ctx.get("also") or ()),
    }
    return {"type": PydanticCustomError(PROBLEM, "{message}", context), "loc": loc, "input": value}


def problems_of(exc: ValidationError) -> list[tuple[DocPath, str]]:
    """Each problem of a validation error as ``(path in the document, message)``, in order.

    Errors a :class:`FileModel` did not translate keep pydantic's wording.
    """
    out: list[tuple[DocPath, str]] = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        ctx = error.get("ctx") or {}
        if error["type"] == PROBLEM:
            if ctx.get("parent") and loc:
                loc = loc[:-1]
            if ctx.get("key") is not None:
                loc = (*loc, ctx["key"])
            out.append((loc, str(ctx["message"])))
            out.extend((loc, str(more)) for more in ctx.get("also") or ())
        else:
            out.append((loc, error["msg"]))
    return out


def where_problems(exc: ValidationError, where: str) -> list[str]:
    """Each problem as ``where.path: message``.

    For data that has no lines, and files whose messages name the key rather than the line.
    """
    from toolproof._yaml import format_path

    out = []
    for path, message in problems_of(exc):
        shown = format_path(path)
        joint = "" if not shown or shown.startswith("[") else "."
        out.append(f"{where}{joint}{shown}: {message}")
    return out


def load_error(exc: ValidationError, where: str, what: str, *, listed: bool = True) -> Any:
    """The ``ConfigError`` of data with no lines: every problem as ``where.path: message``.

    Args:
        exc: The validation error.
        where: What the data is called in messages (a file, ``rules``).
        what: What the data is, for a message of several problems (``replay rules``).
        listed: Whether that message lists the problems (they are in ``problems`` anyway).
    """
    from toolproof.errors import ConfigError

    problems = where_problems(exc, where)
    message = f"invalid {what} {where}"
    if listed:
        message += ":\n" + "\n".join(f"  {p}" for p in problems)
    return ConfigError(problems[0] if len(problems) == 1 else message, problems)


def report(
    exc: ValidationError,
    problems: Problems,
    base: DocPath = (),
    remap: Callable[[DocPath], DocPath] | None = None,
) -> None:
    """Record every problem of ``exc`` (a document validated at ``base``) with its line.

    Args:
        exc: The validation error.
        problems: Where the problems go.
        base: The path of the validated value in the document.
        remap: Turns a path of the validated value into its path in the document (for a
            value merged from several places, such as a case's settings over the suite's).
    """
    for path, message in problems_of(exc):
        where = remap(path) if remap is not None else (*base, *path)
        problems.add(where, message)


def validate(
    model: type[M],
    data: Any,
    problems: Problems,
    base: DocPath = (),
    *,
    remap: Callable[[DocPath], DocPath] | None = None,
) -> tuple[M | None, set[Any]]:
    """``model`` validated from ``data`` (``None`` when invalid), every problem recorded.

    Returns:
        The model, and the top-level keys of ``data`` that have problems (so a loader can
        go on with the others and report what depends on them too).
    """
    try:
        return model.model_validate(data), set()
    except ValidationError as exc:
        report(exc, problems, base, remap)
        return None, {error["loc"][0] for error in exc.errors() if error["loc"]}


def valid_part(model: type[M], data: Mapping[str, Any], bad: set[Any], **fill: Any) -> M:
    """``model`` from the keys of ``data`` without problems (``bad``), and ``fill``.

    A loader goes on with it to report what depends on the good keys too; a key with a
    problem takes its default (or its ``fill`` value).
    """
    try:
        return model.model_validate({**{k: v for k, v in data.items() if k not in bad}, **fill})
    except ValidationError:  # each problem is under one top-level key: not expected
        return model.model_validate(fill)
