"""Function signature + docstring -> JSON Schema and a pydantic argument validator.

Every problem with a function is collected first, then reported in one ``UserError`` that
names the function and lists them all, so a developer fixes everything in one pass.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from toolproof.errors import UserError

if typing.TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["FunctionSchema", "build_function_schema", "clean_schema"]

Extra = Literal["forbid", "ignore"]


@dataclass(slots=True)
class FunctionSchema:
    """What toolproof learned from a function's signature and docstring."""

    description: str
    parameters: dict[str, Any]
    args_model: type[BaseModel]
    #: field name in ``args_model`` -> parameter name of the function
    field_to_param: dict[str, str]
    return_annotation: Any
    has_return_annotation: bool


def build_function_schema(
    func: Callable[..., Any],
    *,
    name: str,
    description: str | None,
    extra: Extra,
    localns: dict[str, Any] | None = None,
) -> FunctionSchema:
    """Inspect ``func`` and build its argument schema and validator.

    Raises:
        UserError: The function cannot become a tool; the message lists every problem.
    """
    from pydantic import ConfigDict, create_model
    from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

    qualname = getattr(func, "__qualname__", repr(func))
    problems: list[str] = []

    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise UserError(f"cannot make a tool from {qualname}: no signature ({exc})") from exc
    hints, unresolved = _resolve_hints(func, localns)
    for hint_name, error in unresolved.items():
        if hint_name != "return":  # the return type only serves drift checks: not fatal
            problems.append(f"{hint_name}: type hint cannot be resolved: {error}")

    doc = _parse_docstring(inspect.getdoc(func) or "")
    summary = description if description is not None else doc.description
    if not summary:
        problems.append(
            "no description: add a docstring (its first paragraph is shown to the model) "
            "or pass @tool(description=...)"
        )

    fields, field_to_param = _fields(signature, hints, doc, problems)
    for documented in doc.params:
        if documented not in signature.parameters:
            problems.append(f"docstring documents '{documented}', which is not a parameter")

    args_model: type[BaseModel] | None = None
    parameters: dict[str, Any] = {}
    if not problems:
        try:
            args_model = create_model(
                f"{name}_arguments",
                __config__=ConfigDict(extra=extra, populate_by_name=False),
                **fields,
            )
            assert args_model is not None
            parameters = clean_schema(args_model.model_json_schema(by_alias=True))
        except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
            problems.append(
                f"a parameter type cannot be turned into JSON Schema: {_first_line(exc)}"
            )

    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        raise UserError(f"cannot make a tool from {qualname}:\n{listed}")
    assert args_model is not None

    return_annotation = hints.get("return", inspect.Parameter.empty)
    return FunctionSchema(
        description=summary or "",
        parameters=parameters,
        args_model=args_model,
        field_to_param=field_to_param,
        return_annotation=return_annotation,
        has_return_annotation=return_annotation is not inspect.Parameter.empty,
    )


def _fields(
    signature: inspect.Signature, hints: dict[str, Any], doc: _Doc, problems: list[str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The argument model's fields and their parameter names; problems go to ``problems``."""
    from pydantic import Field

    fields: dict[str, Any] = {}
    field_to_param: dict[str, str] = {}
    for index, (param_name, param) in enumerate(signature.parameters.items()):
        problem = _parameter_problem(param_name, param)
        if problem is not None:
            problems.append(problem)
            continue
        if param_name not in hints:
            continue  # unresolvable: already reported
        field_info = Field(
            default=... if param.default is inspect.Parameter.empty else param.default,
            alias=param_name,
            description=doc.params.get(param_name),
        )
        field_name = f"p{index}"
        fields[field_name] = (hints[param_name], field_info)
        field_to_param[field_name] = param_name
    return fields, field_to_param


def _parameter_problem(param_name: str, param: inspect.Parameter) -> str | None:
    """Why a parameter cannot be described to a model, or ``None``."""
    if param.kind is inspect.Parameter.VAR_POSITIONAL:
        return f"*{param_name}: variable positional arguments cannot be described to a model"
    if param.kind is inspect.Parameter.VAR_KEYWORD:
        return f"**{param_name}: variable keyword arguments cannot be described to a model"
    if param.kind is inspect.Parameter.POSITIONAL_ONLY:
        return f"{param_name}: positional-only parameters cannot be passed by name"
    if param.annotation is inspect.Parameter.empty:
        return f"{param_name}: missing type hint"
    return None


def _resolve_hints(
    func: Callable[..., Any], localns: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Exception]]:
    """Resolve type hints; when some cannot be resolved, resolve the others one by one."""
    try:
        # localns: names visible where the tool was defined (classes local to a function).
        return typing.get_type_hints(func, localns=localns, include_extras=True), {}
    except Exception:  # NameError for unresolvable forward references, and others
        pass
    globalns = getattr(inspect.unwrap(func), "__globals__", {})
    hints: dict[str, Any] = {}
    unresolved: dict[str, Exception] = {}
    for key, annotation in getattr(func, "__annotations__", {}).items():
        holder = type("_Holder", (), {"__annotations__": {key: annotation}})
        try:
            hints[key] = typing.get_type_hints(
                holder, globalns=globalns, localns=localns, include_extras=True
            )[key]
        except Exception as exc:
            unresolved[key] = exc
    return hints, unresolved


@dataclass(slots=True)
class _Doc:
    description: str
    params: dict[str, str]


def _parse_docstring(text: str) -> _Doc:
    if not text:
        return _Doc("", {})
    import docstring_parser

    parsed = docstring_parser.parse(text)  # auto-detects Google, NumPy, reST and Epydoc
    parts = [parsed.short_description or "", parsed.long_description or ""]
    description = "\n\n".join(part.strip() for part in parts if part and part.strip())
    params = {
        p.arg_name: " ".join(p.description.split())
        for p in parsed.params
        if p.description
        and p.args
        and p.args[0] in {"param", "parameter", "arg", "argument", "key", "keyword"}
    }
    return _Doc(description, params)


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Remove pydantic's auto-generated ``title`` keys, which only cost the model tokens."""
    cleaned: dict[str, Any] = _clean(schema, is_schema=True)
    return cleaned


def _clean(node: Any, *, is_schema: bool) -> Any:
    if isinstance(node, list):
        return [_clean(item, is_schema=is_schema) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if is_schema and key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "definitions", "patternProperties"):
            out[key] = {k: _clean(v, is_schema=True) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not", "if", "then", "else", "contains"):
            out[key] = _clean(value, is_schema=True)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            out[key] = [_clean(v, is_schema=True) for v in value]
        else:
            out[key] = value
    return out


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
