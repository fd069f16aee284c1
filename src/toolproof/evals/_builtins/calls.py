"""Checks of the tool calls: which tools, how often, in what order, with what arguments."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from toolproof._filemodel import FileModel, did_you_mean, problem, problems_of
from toolproof._matching import (
    ArgsMode,
    ArgumentsMatcher,
    CallSpec,
    OrderMatcher,
    OrderMode,
    compile_arguments,
)
from toolproof._yaml import describe_type
from toolproof.errors import ConfigError
from toolproof.evals._builtins._specs import Expected, ToolKey, ToolName, ToolNames, one_or_many
from toolproof.evals._checks import (
    ARG_MODES,
    HERE,
    ORDER_MODES,
    CheckContext,
    CheckStatus,
    SessionRecord,
    calls_listing,
    check,
    times_text,
)

#: Problems at places inside a value: ``[(path in the value, message)]``.
Located = list[tuple[tuple[Any, ...], str]]


def _refused(found: Located) -> ValidationError:
    """Problems at several places of a value, as one error a validator raises."""
    errors = [{"type": problem(message), "loc": loc, "input": None} for loc, message in found]
    return ValidationError.from_exception_data("expect", errors)  # type: ignore[arg-type]


#: ``(context, tool, the entry's value validated or None, as written)`` -> (value, problems).
Entry = Callable[[CheckContext, str, Any, Any], tuple[Any, Located]]


def _by_tool(
    value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo, entry: Entry
) -> dict[str, Any]:
    """A mapping of tool name to a value that depends on the tool, validated entry by entry.

    ``entry(context, tool, validated value, value as written)`` returns what the entry
    compiles to and its problems (paths from the entry's value); it also reads the entries of
    known tools whose value has problems (validated value ``None``), for the parts that have
    none. Every problem of every entry is reported, each at its place.
    """
    if not isinstance(value, Mapping) or not value:
        return dict(handler(value))  # its type or emptiness is the problem
    context = CheckContext.of(info)
    out: dict[str, Any] = {}
    found: Located = []
    for tool, written in value.items():
        try:
            [(name, validated)] = handler({tool: written}).items()
        except ValidationError as exc:
            found += problems_of(exc)
            if not context.knows(tool):
                continue
            name, validated = tool, None
        out[name], problems = entry(context, name, validated, written)
        found += [((tool, *loc), message) for loc, message in problems]
    if found:
        raise _refused(found)
    return out


def _one_of(modes: tuple[str, ...], value: Any) -> str:
    return f"expected one of {', '.join(modes)}, got {value!r}"


# -- which tools, how often ---------------------------------------------------------------------

_TOOLS_CALLED = "a list of tool names, or a mapping of tool name to a count or {min, max}"
_COUNT = "a call count (an integer) or {min: N, max: M} with 0 <= min <= max"


NonNegative = Annotated[int, Field(ge=0)]
#: A tool's calls: at least ``low``, at most ``high`` (``None``: no upper bound).
Bounds = tuple[int, int | None]


class CallCount(FileModel):
    """How often a tool is called: at least min (1, or 0 when max is given), at most max."""

    min: NonNegative = 1
    max: NonNegative | None = None

    def bounds(self) -> Bounds | None:
        """The bounds, or ``None`` when they are not a range (none given, or min > max)."""
        given = self.model_fields_set
        low = self.min if "min" in given or "max" not in given else 0
        if not given or (self.max is not None and self.max < low):
            return None
        return low, self.max


Count = NonNegative | CallCount


def _count(value: Any, handler: ValidatorFunctionWrapHandler) -> Bounds:
    """A count or a range as bounds; any problem with it reads as one message."""
    with contextlib.suppress(ValidationError):
        count: int | CallCount = handler(value)
        bounds = (count, count) if isinstance(count, int) else count.bounds()
        if bounds is not None:
            return bounds
    raise problem(f"expected {_COUNT}, got {value!r}")


_NAMES: TypeAdapter[list[str]] = TypeAdapter(ToolNames)
_COUNTS: TypeAdapter[Any] = TypeAdapter(  # tool name -> Bounds
    dict[ToolKey, Annotated[Count, WrapValidator(_count)]]
)


def _tools_called_forms(value: Any, info: ValidationInfo) -> dict[str, Bounds]:
    """Tool names (each at least once) or a mapping of tool name to its count."""
    if isinstance(value, (str, list)):
        names = _NAMES.validate_python(value, strict=True, context=info.context)
        return dict.fromkeys(names, (1, None))
    if isinstance(value, Mapping):
        counts: dict[str, Bounds] = _COUNTS.validate_python(
            value, strict=True, context=info.context
        )
        return counts
    raise problem(f"expected {_TOOLS_CALLED}")


def _describe_bound(low: int, high: int | None) -> str:
    if high is None:
        return f"at least {times_text(low)}"
    if low == high:
        return f"exactly {times_text(low)}"
    return f"between {low} and {high} times"


@check(
    "tools_called",
    spec=Annotated[
        dict[str, Bounds],
        BeforeValidator(
            _tools_called_forms,
            json_schema_input_type=ToolNames | dict[str, Count],
        ),
    ],
    accepts=_TOOLS_CALLED,
    describe=lambda bounds: ", ".join(f"{n} {_describe_bound(*b)}" for n, b in bounds.items()),
)
def _tools_called(record: SessionRecord, bounds: dict[str, Bounds]) -> tuple[CheckStatus, str]:
    calls = record.tool_calls
    counts: dict[str, int] = {}
    for call in calls:
        counts[call.name] = counts.get(call.name, 0) + 1
    failures = []
    for name, (low, high) in bounds.items():
        n = counts.get(name, 0)
        if n < low or (high is not None and n > high):
            failures.append(f"{name} called {times_text(n)}, expected {_describe_bound(low, high)}")
    if failures:
        return "fail", "; ".join(failures) + f" (calls made: {calls_listing(calls)})"
    made = ", ".join(f"{name} x{counts.get(name, 0)}" for name in bounds)
    return "pass", f"called {made}"


@check("tools_not_called", spec=ToolNames, describe=lambda names: f"never calls {', '.join(names)}")
def _tools_not_called(record: SessionRecord, names: list[str]) -> tuple[CheckStatus, str]:
    calls = record.tool_calls
    bad = [name for name in names if any(c.name == name for c in calls)]
    if bad:
        offending = [c for c in calls if c.name in bad]
        return "fail", (
            f"expected no calls to {', '.join(bad)}, but the agent called "
            f"{calls_listing(offending)}"
        )
    return "pass", f"none of {', '.join(names)} was called"


# -- in what order ------------------------------------------------------------------------------


def _order(mode: Any, info: ValidationInfo) -> OrderMatcher | None:
    """The order of the names of ``tools_called``; ``None`` when ``calls`` reads it."""
    context = CheckContext.of(info)
    expect = context.expect
    found = [] if mode in ORDER_MODES else [_one_of(ORDER_MODES, mode)]
    if "calls" not in expect and not isinstance(expect.get("tools_called"), list):
        found.append("order needs the expected sequence: give 'tools_called' as a list, or 'calls'")
    if found:
        raise problem(found[0], also=found[1:])
    names: list[Any] = expect.get("tools_called") or []
    if "calls" in expect or not all(context.knows(n) for n in names):
        return None  # `calls` reads the order itself; a bad name is reported at its key
    return OrderMatcher([CallSpec(name) for name in names], mode)


def _describe_sequence(matcher: OrderMatcher) -> str:
    return f"calls [{', '.join(spec.describe() for spec in matcher.calls)}] ({matcher.mode})"


def _sequence(record: SessionRecord, matcher: OrderMatcher) -> tuple[CheckStatus, str]:
    want = ", ".join(spec.describe() for spec in matcher.calls)
    calls = record.tool_calls
    reasons = matcher(calls)
    if reasons:
        return "fail", (
            f"expected calls [{want}] ({matcher.mode}): {'; '.join(reasons)} "
            f"(calls made: {calls_listing(calls, limit=10)})"
        )
    return "pass", f"calls match [{want}] ({matcher.mode})"


check(
    "order",
    spec=Annotated[Any, BeforeValidator(_order, json_schema_input_type=OrderMode)],
    accepts=f"one of {', '.join(ORDER_MODES)}",
    describe=_describe_sequence,
)(_sequence)


# -- with what arguments ------------------------------------------------------------------------


def _arguments(
    context: CheckContext, tool: str, arguments: Mapping[Any, Any], mode: Any, at: tuple[Any, ...]
) -> tuple[ArgumentsMatcher | None, Located]:
    """One expected-arguments mapping compiled, or its problems (at ``at``, its place)."""
    if mode not in ARG_MODES:
        return None, [(at, f"argument mode must be one of {', '.join(ARG_MODES)}, got {mode!r}")]
    params = context.params(tool)
    unknown = [name for name in arguments if context.tools is not None and name not in params]
    if unknown:
        its = f"its arguments are: {', '.join(params) or '(none)'}"
        return None, [
            ((*at, name), f"{tool} has no argument {name!r}{did_you_mean(name, params)}; {its}")
            for name in unknown
        ]
    try:
        return compile_arguments(arguments, mode=mode, where=HERE), []
    except ConfigError as exc:  # each problem continues the path of the mapping
        return None, [(at, message) for message in exc.problems or [str(exc)]]


def _mapping(value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise problem(f"expected a mapping of argument name to value, got {describe_type(value)}")
    return value


#: Expected arguments: argument name to a value or a matcher spec.
Arguments = BeforeValidator(_mapping, json_schema_input_type=dict[str, Any])


def _item_mode(mode: Any, info: ValidationInfo) -> Any:
    if mode in ARG_MODES:
        return mode
    if info.data.get("arguments") is not None:
        message = f"argument mode must be one of {', '.join(ARG_MODES)}, got {mode!r}"
        raise problem(message, parent=True, key="arguments")
    raise problem(_one_of(ARG_MODES, mode))


class ExpectedCall(FileModel):
    """An expected tool call: the tool, and the arguments it is called with, if they matter."""

    missing: ClassVar[dict[str, str]] = {"name": "missing 'name': the expected tool"}

    name: ToolName
    arguments: Annotated[dict[Any, Any] | None, Arguments] = None
    mode: Annotated[
        ArgsMode | None, BeforeValidator(_item_mode, json_schema_input_type=ArgsMode)
    ] = None


def _call_item(value: Any) -> Any:
    """A tool name is the call of that tool; ``name:`` left empty is a missing name."""
    if isinstance(value, str):
        return {"name": value}
    if not isinstance(value, Mapping):
        raise problem(f"expected {{name, arguments, mode}}, got {describe_type(value)}")
    return {k: v for k, v in value.items() if k != "name" or v is not None}


def _call_spec(call: ExpectedCall, info: ValidationInfo) -> CallSpec:
    if call.arguments is None:
        return CallSpec(call.name)
    context = CheckContext.of(info)
    mode = call.mode or context.expect.get("args_mode", "subset")
    matcher, found = _arguments(context, call.name, call.arguments, mode, ("arguments",))
    if matcher is None:
        raise _refused(found)
    return CallSpec(call.name, matcher)


def _calls(specs: list[CallSpec], info: ValidationInfo) -> OrderMatcher:
    return OrderMatcher(specs, str(CheckContext.of(info).expect.get("order", "subset")))


check(
    "calls",
    spec=Annotated[
        list[
            Annotated[
                ExpectedCall,
                BeforeValidator(_call_item, json_schema_input_type=ToolName | ExpectedCall),
                AfterValidator(_call_spec),
            ]
        ],
        Field(min_length=1),
        AfterValidator(_calls),
        Expected("a list of expected calls: {name, arguments, mode} (or a tool name)", got="type"),
    ],
    describe=_describe_sequence,
)(_sequence)


def _one_or_list(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A list that may be written as its one item (the item's problem is reported at it)."""
    if isinstance(value, list):
        return handler(value)
    try:
        return handler([value])
    except ValidationError as exc:
        raise problem(exc.errors()[0]["msg"]) from None


def _tool_arguments(
    context: CheckContext, tool: str, validated: Any, written: Any
) -> tuple[list[ArgumentsMatcher], Located]:
    """One tool's expected arguments (one mapping or a list of them), compiled.

    Each mapping is read as written, so those beside a bad item are checked too.
    """
    mode = context.expect.get("args_mode", "subset")
    matchers: list[ArgumentsMatcher] = []
    found: Located = []
    for index, arguments in enumerate(written if isinstance(written, list) else [written]):
        if not isinstance(arguments, Mapping):
            continue  # the spec says what it should be
        at = (index,) if isinstance(written, list) else ()
        matcher, problems = _arguments(context, tool, arguments, mode, at)
        found += problems
        matchers += [matcher] if matcher is not None else []
    return matchers, found


def _args_by_tool(
    value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
) -> list[tuple[str, ArgumentsMatcher]] | None:
    """Each tool's expected arguments compiled with ``args_mode``, each problem at its place."""
    if CheckContext.of(info).expect.get("args_mode", "subset") not in ARG_MODES:
        handler(value)
        return None  # the mode is reported at args_mode
    by_tool = _by_tool(value, handler, info, _tool_arguments)
    return [(tool, matcher) for tool, matchers in by_tool.items() for matcher in matchers]


def _describe_args(expected: list[tuple[str, ArgumentsMatcher]]) -> str:
    return ", ".join(f"{tool}({matcher.describe()})" for tool, matcher in expected)


@check(
    "args",
    spec=Annotated[
        dict[
            ToolKey,
            Annotated[
                list[Annotated[dict[Any, Any], Arguments]],
                WrapValidator(
                    _one_or_list, json_schema_input_type=dict[str, Any] | list[dict[str, Any]]
                ),
            ],
        ],
        Field(min_length=1),
        WrapValidator(_args_by_tool),
        Expected("a mapping of tool name to expected arguments (or a list of them)", got="type"),
    ],
    describe=_describe_args,
)
def _args(
    record: SessionRecord, expected: list[tuple[str, ArgumentsMatcher]]
) -> tuple[CheckStatus, str]:
    calls = record.tool_calls
    failures = []
    for tool, matcher in expected:
        wanted = f"{tool}({matcher.describe()})"
        candidates = [c for c in calls if c.name == tool]
        if not candidates:
            failures.append(
                f"expected a call {wanted}, but {tool} was not called "
                f"(calls made: {calls_listing(calls)})"
            )
            continue
        mismatches = []
        for call in candidates:
            if call.arguments_error is not None:
                mismatches.append(f"{call.signature()}: arguments could not be read")
                continue
            reasons = matcher(call.arguments)
            if not reasons:
                break
            mismatches.append(f"{call.signature()}: {'; '.join(reasons)}")
        else:
            more = f" (and {len(mismatches) - 3} more)" if len(mismatches) > 3 else ""
            failures.append(f"no call matched {wanted}: " + " | ".join(mismatches[:3]) + more)
    if failures:
        return "fail", "; ".join(failures)
    return "pass", "matched " + _describe_args(expected)


def _args_mode(mode: Any, info: ValidationInfo) -> None:
    """``args_mode`` modifies ``args`` (and the calls of ``calls``): it adds no check."""
    if "args" not in CheckContext.of(info).expect:
        raise problem("args_mode applies to 'args', which is not set")
    if mode not in ARG_MODES:
        raise problem(_one_of(ARG_MODES, mode))


@check(
    "args_mode",
    spec=Annotated[None, BeforeValidator(_args_mode, json_schema_input_type=ArgsMode)],
    accepts=f"one of {', '.join(ARG_MODES)}",
)
def _modifies_args(record: SessionRecord, mode: None) -> tuple[CheckStatus, str]:
    """Never runs: the value validates to ``None``, which adds no check."""
    return "skip", "args_mode adds no check of its own"


# -- required and extra arguments ---------------------------------------------------------------


def _known_arguments(
    context: CheckContext, tool: str, names: list[str] | None, written: Any
) -> tuple[list[str] | None, Located]:
    """One tool's required arguments, checked against its schema."""
    if names is None:  # not a list of names: nothing to check
        return None, []
    params = context.params(tool)
    its = f"its arguments are: {', '.join(params) or '(none)'}"
    return names, [
        ((index,) if isinstance(written, list) else (), f"{tool} has no argument {name!r}; {its}")
        for index, name in enumerate(names)
        if context.tools is not None and name not in params
    ]


@check(
    "required_args",
    spec=Annotated[
        dict[ToolKey, Annotated[list[str], one_or_many("a list of argument names")]],
        Field(min_length=1),
        WrapValidator(
            lambda value, handler, info: _by_tool(value, handler, info, _known_arguments)
        ),
        Expected("a mapping of tool name to a list of argument names", got="type"),
    ],
    describe=lambda required: "; ".join(f"{t} needs {', '.join(n)}" for t, n in required.items()),
)
def _required_args(
    record: SessionRecord, required: dict[str, list[str]]
) -> tuple[CheckStatus, str]:
    failures = []
    checked = 0
    for call in record.tool_calls:
        names = required.get(call.name)
        if names is None:
            continue
        checked += 1
        missing = [n for n in names if n not in call.arguments]
        if missing:
            failures.append(f"{call.signature()} lacks {', '.join(missing)}")
    if failures:
        return "fail", "required arguments missing: " + "; ".join(failures)
    if not checked:
        return "pass", f"no calls of {', '.join(required)} to check"
    return "pass", f"all {checked} calls of {', '.join(required)} carry their required arguments"


@dataclass(frozen=True, slots=True)
class _Declared:
    """The argument names each checked tool declares, and the tools in words."""

    params: dict[str, frozenset[str]]
    scope: str


def _declared(value: Any, info: ValidationInfo) -> _Declared | None:
    """``true``: every tool; ``false``: no check; else the tools named."""
    if value is False:
        return None
    context = CheckContext.of(info)
    if value is True:
        tools, scope = list(context.tools or ()), "any tool"
    else:
        tools = _NAMES.validate_python(value, strict=True, context=info.context)
        scope = ", ".join(tools)
    return _Declared({tool: frozenset(context.params(tool)) for tool in tools}, scope)


@check(
    "forbid_extra_args",
    spec=Annotated[Any, BeforeValidator(_declared, json_schema_input_type=bool | ToolNames)],
    accepts="true, or a list of tool names",
    describe=lambda declared: f"no undeclared arguments for {declared.scope}",
)
def _forbid_extra_args(record: SessionRecord, declared: _Declared) -> tuple[CheckStatus, str]:
    failures = []
    for call in record.tool_calls:
        allowed = declared.params.get(call.name)
        if allowed is None:
            continue
        extra = [k for k in call.arguments if k not in allowed]
        if extra:
            known = ", ".join(sorted(allowed)) or "(none)"
            failures.append(
                f"{call.signature()} passes {', '.join(map(repr, extra))}, not in the "
                f"schema of {call.name} (allowed: {known})"
            )
    if failures:
        return "fail", "extra arguments: " + "; ".join(failures)
    return "pass", "no call passed arguments outside its tool's schema"
