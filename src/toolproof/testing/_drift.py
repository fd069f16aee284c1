"""Mock drift: mocks that no longer fit the real tool they stand in for.

A mock drifts when the real tool changes and the mock does not: it takes other parameters,
or returns something the real tool never would. Tests keep passing against the mock while
production breaks. ``check_mocks`` compares every mock it can find with its tool:

- declared mocks (``@tool.mock``) and ``StatefulMock`` handlers must accept exactly the
  tool's parameters: their schema, built the way ``@tool`` builds it, must equal the tool's
  (descriptions and defaults aside);
- their outputs, on the arguments of the fixtures found (or a synthesized valid call), and
  ``ToolMock`` fixture ``returns`` values must validate against the tool's return
  annotation; fixture arguments must be valid calls of the tool.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from toolproof._fixture_files import NamedError
from toolproof._matching._objects import format_call
from toolproof._matching._values import show_value
from toolproof._mocks import Fixture, ToolMock
from toolproof._schema import build_function_schema
from toolproof._tools import ArgumentsInvalid, Tool
from toolproof.errors import ToolError, UserError
from toolproof.testing._stateful import StatefulMock

__all__ = ["Drift", "DriftReport", "check_mocks"]


@dataclass(frozen=True, slots=True)
class Drift:
    """One way a mock no longer fits its tool.

    Attributes:
        tool: The tool concerned.
        mock: Which mock (``"@get_weather.mock (tools.py:52)"``, ``"Orders.cancel"``...).
        problem: What is wrong.
    """

    tool: str
    mock: str
    problem: str

    def __str__(self) -> str:
        return f"DRIFT  {self.tool}: {self.mock}: {self.problem}"


@dataclass(slots=True)
class DriftReport:
    """What ``check_mocks`` checked and found."""

    drifts: list[Drift] = field(default_factory=list)
    tools: int = 0
    declared: int = 0
    handlers: int = 0
    fixtures: int = 0
    outputs: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether no drift was found."""
        return not self.drifts

    def summary(self) -> str:
        """One line: what was checked."""
        return (
            f"checked {self.tools} tool{'s' if self.tools != 1 else ''}: "
            f"{self.declared} declared mock{'s' if self.declared != 1 else ''}, "
            f"{self.handlers} stateful handler{'s' if self.handlers != 1 else ''}, "
            f"{self.fixtures} fixture{'s' if self.fixtures != 1 else ''}, "
            f"{self.outputs} mock output{'s' if self.outputs != 1 else ''} validated"
        )


def check_mocks(tools: Iterable[Tool[..., Any]], objects: Iterable[Any]) -> DriftReport:
    """Check every mock of ``tools`` and in ``objects`` (modules, mocks) against its tool.

    Args:
        tools: The real tools.
        objects: Imported modules or objects holding ``StatefulMock`` classes or instances
            and ``ToolMock`` instances.
    """
    by_name = {t.name: t for t in tools}
    report = DriftReport(tools=len(by_name))
    stateful, fixture_mocks = _find_mocks(objects)

    inputs: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for label, mock in fixture_mocks:
        for fixture in mock.fixtures:
            report.fixtures += 1
            _check_fixture(fixture, label, by_name, report, inputs)

    for t in by_name.values():
        mock_function = t.mock_function
        if mock_function is None:
            continue
        report.declared += 1
        label = f"@{t.name}.mock {_where(mock_function)}".rstrip()
        if not _check_signature(t, mock_function, label, report):
            continue
        for call_label, kwargs, strict in _calls_for(t, inputs):
            _check_output(t, label, call_label, strict, report, mock_function, kwargs)

    for cls in stateful:
        for tool_name, attr in cls.handled_tools().items():
            report.handlers += 1
            label = f"{cls.__qualname__}.{attr} {_where(getattr(cls, attr))}".rstrip()
            handled = by_name.get(tool_name)
            if handled is None:
                known = ", ".join(sorted(by_name)) or "(none)"
                problem = f"handles tool {tool_name!r}, which does not exist (tools: {known})"
                report.drifts.append(Drift(tool_name, label, problem))
                continue
            t = handled
            try:
                instance: StatefulMock | None = cls()
            except Exception as exc:
                instance = None
                report.notes.append(
                    f"{label}: outputs not checked ({cls.__name__}() failed: {exc})"
                )
            target = getattr(instance, attr) if instance is not None else _unbound(cls, attr)
            if not _check_signature(t, target, label, report) or instance is None:
                continue
            for call_label, kwargs, strict in _calls_for(t, inputs):
                handler = getattr(cls(), attr)  # a fresh state for every call
                _check_output(t, label, call_label, strict, report, handler, kwargs)
    return report


def _unbound(cls: type, attr: str) -> Callable[..., Any]:
    """The handler as a function without ``self``, for its signature only."""
    function = getattr(cls, attr)
    signature = inspect.signature(function)
    params = list(signature.parameters.values())[1:]

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    stand_in.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    stand_in.__annotations__ = dict(getattr(function, "__annotations__", {}))
    stand_in.__wrapped__ = function  # type: ignore[attr-defined]  # hints resolve in its module
    stand_in.__qualname__ = function.__qualname__
    return stand_in


def _find_mocks(
    objects: Iterable[Any],
) -> tuple[list[type[StatefulMock]], list[tuple[str, ToolMock]]]:
    stateful: dict[int, type[StatefulMock]] = {}
    fixture_mocks: dict[int, tuple[str, ToolMock]] = {}

    def visit(value: Any, name: str) -> None:
        if (
            isinstance(value, type)
            and issubclass(value, StatefulMock)
            and value is not StatefulMock
        ):
            stateful.setdefault(id(value), value)
        elif isinstance(value, StatefulMock):
            stateful.setdefault(id(type(value)), type(value))
        elif isinstance(value, ToolMock):
            fixture_mocks.setdefault(id(value), (name, value))

    for obj in objects:
        if isinstance(obj, ModuleType):
            for attr, value in list(vars(obj).items()):
                visit(value, attr)
        else:
            visit(obj, type(obj).__name__)
    return list(stateful.values()), list(fixture_mocks.values())


# -- signatures ------------------------------------------------------------------------------


def _check_signature(
    t: Tool[..., Any], function: Callable[..., Any], label: str, report: DriftReport
) -> bool:
    """Compare the mock's parameter schema with the tool's; ``True`` when they agree."""
    try:
        spec = build_function_schema(
            function, name=t.name, description=t.description or "mock", extra=t.extra
        )
    except UserError as exc:
        reason = str(exc).split(":", 1)[-1].strip().replace("\n", " ")
        report.drifts.append(Drift(t.name, label, f"cannot be described as a tool: {reason}"))
        return False
    problems = _compare_parameters(t.parameters, spec.parameters)
    for problem in problems:
        report.drifts.append(Drift(t.name, label, problem))
    return not problems


def _compare_parameters(
    tool_schema: Mapping[str, Any], mock_schema: Mapping[str, Any]
) -> list[str]:
    tool_props: Mapping[str, Any] = tool_schema.get("properties") or {}
    mock_props: Mapping[str, Any] = mock_schema.get("properties") or {}
    tool_required = set(tool_schema.get("required") or ())
    mock_required = set(mock_schema.get("required") or ())
    problems = []
    for name in tool_props:
        if name not in mock_props:
            problems.append(f"does not accept parameter {name!r}, which the tool has")
    for name in mock_props:
        if name not in tool_props:
            problems.append(f"accepts parameter {name!r}, which the tool does not have")
    for name, schema in tool_props.items():
        if name not in mock_props:
            continue
        if name in tool_required and name not in mock_required:
            problems.append(f"parameter {name!r} is required by the tool but optional in the mock")
        elif name in mock_required and name not in tool_required:
            problems.append(f"parameter {name!r} is optional in the tool but required by the mock")
        expected = _normalize(schema, tool_schema.get("$defs") or {})
        actual = _normalize(mock_props[name], mock_schema.get("$defs") or {})
        if expected != actual:
            problems.append(
                f"parameter {name!r} has another type: the tool takes {_compact(expected)}, the "
                f"mock takes {_compact(actual)}"
            )
    return problems


def _normalize(schema: Any, defs: Mapping[str, Any], depth: int = 0) -> Any:
    """Inline local ``$ref``s and drop notes (descriptions, titles, defaults)."""
    if depth > 30:
        return schema
    if isinstance(schema, list):
        return [_normalize(item, defs, depth + 1) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
        merged = {**defs[ref[8:]], **{k: v for k, v in schema.items() if k != "$ref"}}
        return _normalize(merged, defs, depth + 1)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("description", "title", "default", "examples"):
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {k: _normalize(v, defs, depth + 1) for k, v in value.items()}
        else:
            out[key] = _normalize(value, defs, depth + 1)
    return out


def _compact(schema: Any) -> str:
    text = json.dumps(schema, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 80 else text[:79] + "…"


# -- outputs ---------------------------------------------------------------------------------


def _check_fixture(
    fixture: Fixture,
    mock_label: str,
    tools: Mapping[str, Tool[..., Any]],
    report: DriftReport,
    inputs: dict[str, list[tuple[str, dict[str, Any]]]],
) -> None:
    label = f"{mock_label} {fixture.source}"
    t = tools.get(fixture.tool)
    if t is None:
        known = ", ".join(sorted(tools)) or "(none)"
        report.drifts.append(
            Drift(
                fixture.tool,
                label,
                f"is a fixture for tool {fixture.tool!r}, which does not exist (tools: {known})",
            )
        )
        return
    kwargs: dict[str, Any] | None = None
    arguments = fixture.arguments
    if arguments is not None and not any(callable(v) for v in arguments.values()):
        try:
            kwargs = t.validate(dict(arguments))
        except ArgumentsInvalid as exc:
            report.drifts.append(
                Drift(t.name, label, f"its arguments are not a valid call of the tool: {exc}")
            )
        else:
            inputs.setdefault(t.name, []).append((format_call(t.name, arguments), kwargs))
    if isinstance(fixture.raises, NamedError):
        if not any(e.__name__ == fixture.raises.name for e in t.errors):
            declared = ", ".join(e.__name__ for e in t.errors) or "none"
            report.drifts.append(
                Drift(
                    t.name,
                    label,
                    f"raises {fixture.raises.name!r}, which the tool does not "
                    f"declare (declared errors: {declared})",
                )
            )
        return
    if fixture.raises is not None:
        return
    if callable(fixture.returns):
        if kwargs is not None:
            call_label = format_call(t.name, arguments)
            _check_output(t, label, call_label, True, report, fixture.returns, kwargs)
        return
    _check_value(t, label, "its returns value", fixture.returns, report)


def _calls_for(
    t: Tool[..., Any], inputs: Mapping[str, list[tuple[str, dict[str, Any]]]]
) -> list[tuple[str, dict[str, Any], bool]]:
    """Argument sets to call a mock with: fixture arguments, else one synthesized call.

    The flag says whether an unexpected exception counts as drift (only for fixture inputs).
    """
    found = [(label, kwargs, True) for label, kwargs in inputs.get(t.name, [])]
    if found:
        return found
    example = _example_call(t)
    if example is None:
        return []
    return [(format_call(t.name, example), t.validate(example), False)]


def _example_call(t: Tool[..., Any]) -> dict[str, Any] | None:
    schema = t.parameters
    defs = schema.get("$defs") or {}
    props: Mapping[str, Any] = schema.get("properties") or {}
    arguments = {}
    for name in schema.get("required") or ():
        if name not in props:
            return None
        value = _example(props[name], defs, 0)
        if value is _NO_EXAMPLE:
            return None
        arguments[name] = value
    try:
        t.validate(dict(arguments))
    except ArgumentsInvalid:
        return None
    return arguments


_NO_EXAMPLE: Any = object()


def _example(schema: Any, defs: Mapping[str, Any], depth: int) -> Any:
    if depth > 10 or not isinstance(schema, Mapping):
        return _NO_EXAMPLE
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _example(defs.get(ref[8:]), defs, depth + 1)
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            for branch in branches:
                if isinstance(branch, Mapping) and branch.get("type") != "null":
                    return _example(branch, defs, depth + 1)
    kind = schema.get("type")
    if kind == "string":
        return "example"
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1.0))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        if schema.get("minItems"):
            item = _example(schema.get("items"), defs, depth + 1)
            return _NO_EXAMPLE if item is _NO_EXAMPLE else [item] * int(schema["minItems"])
        return []
    if kind == "object":
        out = {}
        props = schema.get("properties") or {}
        for name in schema.get("required") or ():
            value = _example(props.get(name), defs, depth + 1)
            if value is _NO_EXAMPLE:
                return _NO_EXAMPLE
            out[name] = value
        return out
    return _NO_EXAMPLE


def _check_output(
    t: Tool[..., Any],
    label: str,
    call_label: str,
    strict: bool,
    report: DriftReport,
    function: Callable[..., Any],
    kwargs: Mapping[str, Any],
) -> None:
    try:
        value = function(**kwargs)
        if inspect.isawaitable(value):
            import asyncio

            async def wait(awaitable: Any) -> Any:
                return await awaitable

            value = asyncio.run(wait(value))
    except ToolError:
        return
    except Exception as exc:
        if t.errors and isinstance(exc, t.errors):
            return
        if strict:
            report.drifts.append(
                Drift(
                    t.name,
                    label,
                    f"raised {type(exc).__name__}: {exc} on {call_label}, an error the tool "
                    "does not declare",
                )
            )
        return
    _check_value(t, label, f"its output on {call_label}", value, report)


def _check_value(t: Tool[..., Any], label: str, what: str, value: Any, report: DriftReport) -> None:
    if not t.has_return_annotation:
        return
    from pydantic import ValidationError

    report.outputs += 1
    try:
        t.validate_return(value)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        detail = f"{where}: {first['msg']}" if where else first["msg"]
        report.drifts.append(
            Drift(
                t.name,
                label,
                f"{what} does not match the tool's return type {_type_name(t.return_annotation)} "
                f"({detail}; got {show_value(value, 60)})",
            )
        )


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__qualname__
    return str(annotation).replace("typing.", "")


def _where(function: Any) -> str:
    try:
        path = inspect.getsourcefile(function)
        _, line = inspect.getsourcelines(function)
    except (OSError, TypeError):
        return ""
    if path is None:
        return ""
    try:
        shown = os.path.relpath(path)
    except ValueError:
        shown = path
    if shown.startswith(".."):
        shown = path
    return f"({shown}:{line})"
