"""Tools mode: recorded model outputs through today's tools, graded call by call."""

from __future__ import annotations

import difflib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolproof._messages import ToolResult
from toolproof._text import cut
from toolproof._tools import ArgumentsInvalid, Tool
from toolproof._toolset import Toolset
from toolproof._trace import ToolInfo, Trace, schema_hash
from toolproof.errors import (
    AgentRunError,
    ToolError,
    UserError,
)
from toolproof.replay._grading import (
    REJECTED,
    CallLike,
    Finding,
    Grade,
    ResultLike,
    SampleResult,
    one_call,
    sample_result,
    show_call,
)
from toolproof.replay._recorded import (
    RecordedCall,
    RecordedResult,
    RecordedTrace,
    call_pairs,
)
from toolproof.replay._rules import ReplayRules

# -- today's tools ---------------------------------------------------------------------------


#: Verdicts kept per tool: the arguments seen most recently (see ``reject``).
_VERDICTS = 1024
#: Arguments whose text form is longer than this are checked each time, not remembered.
_VERDICT_KEY_CHARS = 2048


@dataclass(slots=True)
class TodayTool:
    """One tool as it is today: its schema check, return check, and optional mock."""

    name: str
    schema_hash: str
    params: tuple[str, ...]
    #: its description, ``None`` when only its parameters are known (a bare schema)
    description: str | None = None
    parameters: Any = None
    tool: Tool[..., Any] | None = None
    validator: Any = None  # jsonschema validator when only a schema is known
    mock: Callable[..., Any] | None = None
    #: a bare schema's hashes with the recorded descriptions, by description
    hashes: dict[str, str] = field(default_factory=dict)
    #: the verdicts on arguments already checked, by their ``repr``; ``None`` for a Python
    #: tool, whose check may run the user's code (asked every time)
    verdicts: dict[str, str | None] | None = None

    def changed(self, description: str, recorded_hash: str) -> bool:
        """Whether the tool's schema differs from the one recorded with ``recorded_hash``.

        A tool known by its parameters alone is compared on them: its description is taken
        to be the recorded one.
        """
        if not recorded_hash:
            return False
        if self.description is not None:
            return self.schema_hash != recorded_hash
        hashes = self.hashes  # (by description: the same few recur in every sample)
        if description not in hashes:
            if len(hashes) >= _VERDICTS:
                hashes.clear()
            hashes[description] = schema_hash(self.name, description, self.parameters)
        return hashes[description] != recorded_hash

    def reject(self, arguments: dict[str, Any]) -> str | None:
        """Why today's tool refuses these arguments (``None``: it accepts them).

        A JSON Schema check (schema-only tools: jsonschema runs no code of the user's and no
        format checker) gives the same verdict on the same arguments: it is kept, in a
        bounded, least recently used set. The key is the arguments' repr, which tells apart
        every two JSON values that differ, even only in type (1, 1.0, True) or in key order.
        A Python tool's check may run the user's validators, so it is asked every time.
        """
        verdicts = self.verdicts
        if verdicts is None:
            return self._verdict(arguments)
        try:
            key = repr(arguments)
        except (ValueError, RecursionError):  # (an int too long to print): not kept
            return self._verdict(arguments)
        if key in verdicts:
            verdict = verdicts.pop(key)
            verdicts[key] = verdict  # now the most recently used
            return verdict
        verdict = self._verdict(arguments)
        if len(key) <= _VERDICT_KEY_CHARS:
            if len(verdicts) >= _VERDICTS:
                del verdicts[next(iter(verdicts))]
            verdicts[key] = verdict
        return verdict

    def _verdict(self, arguments: dict[str, Any]) -> str | None:
        if self.tool is None:
            return self._schema_verdict(arguments)
        try:
            self.tool.validate(arguments)
        except ArgumentsInvalid as exc:
            return str(exc)
        return None

    def _schema_verdict(self, arguments: dict[str, Any]) -> str | None:
        error = next(iter(self.validator.iter_errors(arguments)), None)
        if error is None:
            return None
        from jsonschema.exceptions import best_match

        best = best_match(self.validator.iter_errors(arguments)) or error
        where = "/".join(str(p) for p in best.absolute_path)
        return f"Invalid arguments for tool '{self.name}': {best.message}" + (
            f" (at {where})" if where else ""
        )

    def return_problem(self, value: Any) -> str | None:
        tool = self.tool
        if tool is None or not tool.has_return_annotation:
            return None
        try:
            tool.validate_return(value)
        except Exception as exc:
            from pydantic import ValidationError

            if not isinstance(exc, ValidationError):
                return None  # an annotation pydantic cannot check: nothing to say
            errors = exc.errors(include_url=False)
            detail = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'value'}: {error['msg']}"
                for error in errors[:2]
            ) + ("; ..." if len(errors) > 2 else "")
            return f"the recorded response no longer fits {self.name}'s return type ({detail})"
        return None


def today_tools(tools: Any) -> dict[str, TodayTool]:
    if isinstance(tools, Toolset):
        # `tools` is the mocked toolset of the replay: a tool runs its real code only when
        # it was named as a real tool (the toolset's guard decides).
        out = {}
        for tool in tools:
            try:
                function, mocked = tools.implementation(tool)
            except AgentRunError:
                function, mocked = None, False
            real = tool.name in tools.real_tools
            out[tool.name] = _from_tool(tool, function if mocked or real else None)
        return out
    if isinstance(tools, Mapping):  # name -> parameters: no description is known
        return {str(name): _from_schema(str(name), schema, None) for name, schema in tools.items()}
    out = {}
    for item in tools:
        if isinstance(item, Tool):
            entry = _from_tool(item, item.mock_function)
        elif isinstance(item, ToolInfo):
            entry = _from_schema(item.name, item.parameters, item.description)
        elif callable(item):
            from toolproof._tools import tool as make_tool

            made = make_tool(item)
            entry = _from_tool(made, made.mock_function)
        else:
            raise UserError(
                f"today's tools must be Tools, a Toolset, ToolInfo schemas or a mapping of "
                f"name to parameters schema; got {item!r}"
            )
        out[entry.name] = entry
    return out


def _from_tool(tool: Tool[..., Any], mock: Callable[..., Any] | None) -> TodayTool:
    params = tuple(tool.parameters.get("properties", {}))
    return TodayTool(tool.name, tool.schema_hash, params, tool.description, tool=tool, mock=mock)


def _from_schema(name: str, parameters: Mapping[str, Any], description: str | None) -> TodayTool:
    from jsonschema import Draft202012Validator, validators

    schema = dict(parameters)
    cls = validators.validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except Exception as exc:
        raise UserError(f"tool '{name}': invalid parameters schema ({exc})") from None
    params = tuple(schema.get("properties", {}))
    # (a JSON Schema check is a pure function of the arguments: no format checker, no code
    # of the user's; jsonschema builds a validator object for every subschema it descends
    # into, on every check)
    digest = schema_hash(name, description or "", schema)
    return TodayTool(name, digest, params, description, schema, validator=cls(schema), verdicts={})


# -- tools mode ------------------------------------------------------------------------------


def tools_sample(
    trace: Trace | RecordedTrace,
    today: Mapping[str, TodayTool],
    rules: ReplayRules,
    *,
    run_mocks: bool,
) -> SampleResult:
    if not run_mocks and type(trace) is RecordedTrace:
        return _view_sample(trace, today, rules)
    findings: list[Finding] = []
    notes: list[str] = []
    recorded: list[tuple[CallLike, ResultLike | None]] = list(trace.calls_and_results())
    # Each recorded call beside what today's tool makes of it (the recorded result, or the
    # rejection by today's schema); graded by the per-call rules after the checks below, as
    # ``grade_calls(recorded, replayed, rules, compare_calls=False)`` grades them.
    replayed: list[tuple[CallLike, ResultLike | None, ResultLike | None]] = []
    called: set[str] = set()
    for call, result in recorded:
        name = call.name
        called.add(name)
        tool = today.get(name)
        if tool is None:
            findings.append(_tool_missing(name, today, call, rules))
            continue
        if call.arguments_error is not None:
            replayed.append((call, result, result))
            continue
        reason = tool.reject(call.arguments)
        if reason is not None:
            replayed.append((call, result, _rejected(call, reason)))
            continue
        replayed.append((call, result, result))
        if result is None or not result.ok or result.error_type in REJECTED:
            continue
        problem = tool.return_problem(result.value)
        if problem is not None:
            findings.append(_return_shape(problem, name, result.value))
        elif run_mocks and tool.mock is not None and tool.tool is not None:
            findings.extend(_compare_mock(tool, call, result))
    for call, result, new in replayed:
        rule = rules.rule_for(call.name)
        # (a call its rule cannot fault, and that today's schema did not newly reject, has
        # no finding: the rule's checks are skipped for it, not its verdict)
        if (
            rule.required_args
            or rule.bounds
            or (
                new is not None
                and new.error_type in REJECTED
                and (result is None or result.error_type not in REJECTED)
            )
        ):
            findings.extend(one_call((call, result), (call, new), rule, rules.mask, False))
    for info in trace.tools:
        if info.name not in called:
            continue  # a change to a tool this sample never called says nothing about it
        tool = today.get(info.name)
        if tool is not None and tool.changed(info.description, info.schema_hash):
            notes.append(f"{info.name}: schema changed since recording")
    return sample_result(trace, findings, notes)


def _tool_missing(
    name: str, today: Mapping[str, TodayTool], call: CallLike, rules: ReplayRules
) -> Finding:
    """The finding of a recorded call whose tool no longer exists (with a close name)."""
    close = difflib.get_close_matches(name, list(today), n=1)
    hint = f"; renamed to '{close[0]}'?" if close else ""
    return Finding(
        "fail",
        "tool_missing",
        f"tool '{name}' no longer exists{hint}",
        tool=name,
        recorded=show_call(call, rules.mask),
    )


def _return_shape(problem: str, name: str, value: Any) -> Finding:
    """The finding of a recorded return value today's return type refuses."""
    return Finding("fail", "return_shape", problem, tool=name, recorded=_clip_value(value))


def _view_sample(
    trace: RecordedTrace, today: Mapping[str, TodayTool], rules: ReplayRules
) -> SampleResult:
    """``tools_sample`` of a stored trace read as data, without mocks.

    The same findings in the same order, read from the data itself: call and result
    objects are made only for the calls a finding shows.
    """
    data = trace._data
    findings: list[Finding] = []
    #: the calls the per-call rules grade, in call order: (call, result, today's reason)
    graded: list[tuple[dict[str, Any], dict[str, Any] | None, str | None]] = []
    pairs = call_pairs(data)
    for call, result in pairs:
        name = call["name"]
        tool = today.get(name)
        if tool is None:
            findings.append(_tool_missing(name, today, RecordedCall(call), rules))
            continue
        if call["arguments_error"] is not None:
            # (graded against itself: the rules skip a call whose arguments did not parse)
            continue
        arguments = call["arguments"]
        rule = rules.rule_for(name)
        reason = tool.reject(arguments)
        if reason is not None:
            if (
                rule.required_args
                or rule.bounds
                or result is None
                or result["error_type"] not in REJECTED
            ):
                graded.append((call, result, reason))
            continue
        # graded against itself, the call can only miss a required argument or hold one
        # out of bounds
        required, bounds = rule.required_args, rule.bounds
        if (required or bounds) and (
            any(arg not in arguments for arg in required) or any(arg in arguments for arg in bounds)
        ):
            graded.append((call, result, None))
        if result is None or result["status"] != "ok" or result["error_type"] in REJECTED:
            continue
        value = result["value"]
        problem = tool.return_problem(value)
        if problem is not None:
            findings.append(_return_shape(problem, name, value))
    for call, result, reason in graded:
        recorded_call = RecordedCall(call)
        recorded_result = None if result is None else RecordedResult(result)
        new = recorded_result if reason is None else _rejected(recorded_call, reason)
        findings.extend(
            one_call(
                (recorded_call, recorded_result),
                (recorded_call, new),
                rules.rule_for(recorded_call.name),
                rules.mask,
                False,
            )
        )
    notes: list[str] = []
    for info in data["tools"]:
        name = info["name"]
        tool = today.get(name)
        if (
            tool is not None
            and tool.changed(info["description"], info["schema_hash"])
            # (a change to a tool this sample never called says nothing about it)
            and any(call["name"] == name for call, _ in pairs)
        ):
            notes.append(f"{name}: schema changed since recording")
    return sample_result(trace, findings, notes)


def _rejected(call: CallLike, reason: str) -> ToolResult:
    return ToolResult(call.id, call.name, "error", reason, error_type="ValidationError")


def _compare_mock(tool: TodayTool, call: CallLike, result: ResultLike) -> list[Finding]:
    assert tool.tool is not None
    assert tool.mock is not None
    declared: tuple[type[BaseException], ...] = (ToolError, *tool.tool.errors)
    try:
        value = tool.mock(**tool.tool.validate(call.arguments))
        if inspect.isawaitable(value):
            value = _run_awaitable(value)
    except declared as exc:
        return (
            []
            if not result.ok
            else [
                Finding(
                    "warn",
                    "return_shape",
                    f"{tool.name}: today's mock raised {type(exc).__name__} for a recorded call "
                    "that succeeded",
                    tool=tool.name,
                    recorded=_clip_value(result.value),
                    new=str(exc),
                )
            ]
        )
    from pydantic_core import to_jsonable_python

    new_value = to_jsonable_python(value, fallback=str)
    missing, changed, added = _shape_diff(result.value, new_value)
    severity: Grade
    if missing or changed:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if changed:
            parts.append("changed type at " + ", ".join(changed))
        severity, text = "fail", "returns another structure today: " + "; ".join(parts)
    elif added:
        severity, text = "warn", "returns new fields today: " + ", ".join(added)
    else:
        return []
    return [
        Finding(
            severity,
            "return_shape",
            f"{tool.name} {text}",
            tool=tool.name,
            recorded=_shape(result.value),
            new=_shape(new_value),
        )
    ]


async def _await(value: Awaitable[Any]) -> Any:
    return await value


def _run_awaitable(value: Awaitable[Any]) -> Any:
    """The result of an async mock, even inside a running event loop (``areplay``).

    The mock runs to completion on its own loop in a worker thread.
    """
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="toolproof-mock") as pool:
        return pool.submit(asyncio.run, _await(value)).result()


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return "string"


def _shape_diff(old: Any, new: Any, path: str = "$") -> tuple[list[str], list[str], list[str]]:
    missing: list[str] = []
    changed: list[str] = []
    added: list[str] = []
    old_shape, new_shape = _shape(old), _shape(new)
    if isinstance(old_shape, dict) and isinstance(new_shape, dict):
        for key in old:
            if key not in new:
                missing.append(f"{path}.{key}")
            else:
                m, c, a = _shape_diff(old[key], new[key], f"{path}.{key}")
                missing += m
                changed += c
                added += a
        added += [f"{path}.{key}" for key in new if key not in old]
    elif isinstance(old_shape, list) and isinstance(new_shape, list):
        if old and new:
            return _shape_diff(old[0], new[0], f"{path}[]")
    elif old_shape != new_shape and old is not None and new is not None:
        changed.append(path)
    return missing, changed, added


def _clip_value(value: Any, limit: int = 300) -> Any:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text) <= limit else cut(text, limit)
