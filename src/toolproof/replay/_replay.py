"""Replaying recorded samples in tools mode or model mode, and grading them.

- **tools mode** replays the recorded model outputs through today's tools: each recorded
  call is checked against today's tool (does it still exist, does its schema accept the
  arguments, do the grading rules accept them, does the recorded response still fit the
  tool's return type). No model is called, so it costs nothing and runs thousands of
  samples per second.
- **model mode** asks today's agent (model and prompt) the recorded question, with the
  recorded history; the tools answer from the recorded responses (a strict fixture mock
  built from the trace), so a call with no recorded response fails the sample instead of
  reaching a live system.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toolproof._executor import Executor, LocalExecutor, Work, executor_from_string
from toolproof._messages import (
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolDefinition,
    ToolResult,
)
from toolproof._tools import ArgumentsInvalid, Tool
from toolproof._toolset import Toolset, factory_name, mock_context, unknown_tool
from toolproof._trace import ToolInfo, Trace
from toolproof.errors import (
    AgentRunError,
    MissingFixture,
    MockBypassed,
    ReplayError,
    ToolError,
    TraceFormatError,
    UserError,
)
from toolproof.models._base import Model
from toolproof.replay._grading import (
    REJECTED,
    Finding,
    SampleResult,
    _show_call,
    grade_answer,
    grade_calls,
    overall,
)
from toolproof.replay._report import ReplayReport
from toolproof.replay._rules import Aging, ReplayRules
from toolproof.replay._store import TraceFilter, TraceStore
from toolproof.replay._time import parse_timestamp

if TYPE_CHECKING:
    from toolproof._agent import Agent
    from toolproof._mocks import ToolMock

__all__ = [
    "AgentFactory",
    "ReplayMode",
    "ReplayModel",
    "areplay",
    "mock_from_trace",
    "replay",
]

ReplayMode = Literal["tools", "model"]

#: Builds today's agent: ``factory(model, tools)``; ``tools=None`` means its own tools.
AgentFactory = Callable[[Any, Any], "Agent"]

Source = TraceStore | str | Path | Iterable[Trace]


# -- today's tools ---------------------------------------------------------------------------


@dataclass(slots=True)
class _TodayTool:
    """One tool as it is today: its schema check, return check, and optional mock."""

    name: str
    schema_hash: str
    params: tuple[str, ...]
    tool: Tool[..., Any] | None = None
    validator: Any = None  # jsonschema validator when only a schema is known
    mock: Callable[..., Any] | None = None

    def reject(self, arguments: dict[str, Any]) -> str | None:
        if self.tool is not None:
            try:
                self.tool.validate(arguments)
            except ArgumentsInvalid as exc:
                return str(exc)
            return None
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
        from pydantic import ValidationError

        try:
            tool.validate_return(value)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            detail = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'value'}: {error['msg']}"
                for error in errors[:2]
            ) + ("; ..." if len(errors) > 2 else "")
            return f"the recorded response no longer fits {self.name}'s return type ({detail})"
        except Exception:  # an annotation pydantic cannot check: nothing to say
            return None
        return None


def _today_tools(tools: Any) -> dict[str, _TodayTool]:
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
    if isinstance(tools, Mapping):
        items: list[Any] = [
            ToolInfo(str(name), "", dict(schema), "") for name, schema in tools.items()
        ]
    else:
        items = list(tools)
    out = {}
    for item in items:
        if isinstance(item, Tool):
            entry = _from_tool(item, item.mock_function)
        elif isinstance(item, ToolInfo):
            entry = _from_schema(item.name, item.parameters, item.schema_hash)
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


def _from_tool(tool: Tool[..., Any], mock: Callable[..., Any] | None) -> _TodayTool:
    params = tuple(tool.parameters.get("properties", {}))
    return _TodayTool(tool.name, tool.schema_hash, params, tool=tool, mock=mock)


def _from_schema(name: str, parameters: Mapping[str, Any], schema_hash: str) -> _TodayTool:
    from jsonschema import Draft202012Validator, validators

    schema = dict(parameters)
    cls = validators.validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except Exception as exc:
        raise UserError(f"tool '{name}': invalid parameters schema ({exc})") from None
    params = tuple(schema.get("properties", {}))
    return _TodayTool(name, schema_hash, params, validator=cls(schema))


# -- tools mode ------------------------------------------------------------------------------


def _tools_sample(
    trace: Trace, today: Mapping[str, _TodayTool], rules: ReplayRules, *, run_mocks: bool
) -> SampleResult:
    findings: list[Finding] = []
    notes: list[str] = []
    recorded = list(trace.calls_and_results())
    replayed: list[tuple[ToolCall, ToolResult | None]] = []
    for call, result in recorded:
        tool = today.get(call.name)
        if tool is None:
            close = difflib.get_close_matches(call.name, list(today), n=1)
            hint = f"; renamed to '{close[0]}'?" if close else ""
            findings.append(
                Finding(
                    "fail",
                    "tool_missing",
                    f"tool '{call.name}' no longer exists{hint}",
                    tool=call.name,
                    recorded=_show_call(call, rules.mask),
                )
            )
            continue
        if call.arguments_error is not None:
            replayed.append((call, result))
            continue
        reason = tool.reject(call.arguments)
        if reason is not None:
            replayed.append((call, _rejected(call, reason)))
            continue
        replayed.append((call, result))
        if result is None or not result.ok or result.error_type in REJECTED:
            continue
        problem = tool.return_problem(result.value)
        if problem is not None:
            findings.append(
                Finding(
                    "fail",
                    "return_shape",
                    problem,
                    tool=call.name,
                    recorded=_clip_value(result.value),
                )
            )
        elif run_mocks and tool.mock is not None and tool.tool is not None:
            findings.extend(_compare_mock(tool, call, result))
    findings.extend(grade_calls(recorded, replayed, rules, compare_calls=False))
    called = {call.name for call, _ in recorded}
    for info in trace.tools:
        tool = today.get(info.name)
        if info.name not in called:
            continue  # a change to a tool this sample never called says nothing about it
        if tool is not None and info.schema_hash and tool.schema_hash != info.schema_hash:
            notes.append(f"{info.name}: schema changed since recording")
    return SampleResult(
        trace_id=trace.id,
        grade=overall(findings),
        findings=findings,
        input=trace.input,
        recorded_model=trace.model,
        recorded_output=trace.output,
        notes=notes,
    )


def _rejected(call: ToolCall, reason: str) -> ToolResult:
    return ToolResult(call.id, call.name, "error", reason, error_type="ValidationError")


def _compare_mock(tool: _TodayTool, call: ToolCall, result: ToolResult) -> list[Finding]:
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
    findings = []
    if missing or changed:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if changed:
            parts.append("changed type at " + ", ".join(changed))
        findings.append(
            Finding(
                "fail",
                "return_shape",
                f"{tool.name} returns another structure today: " + "; ".join(parts),
                tool=tool.name,
                recorded=_shape(result.value),
                new=_shape(new_value),
            )
        )
    elif added:
        findings.append(
            Finding(
                "warn",
                "return_shape",
                f"{tool.name} returns new fields today: " + ", ".join(added),
                tool=tool.name,
                recorded=_shape(result.value),
                new=_shape(new_value),
            )
        )
    return findings


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
    return value if len(text) <= limit else text[: limit - 1] + "…"


# -- model mode ------------------------------------------------------------------------------


class ReplayModel(Model):
    """A model that answers with a recorded run's model outputs, in order.

    Model mode with ``model="recorded"`` uses it: the whole agent loop runs again (today's
    tools, schemas and policies) while the model says what it said then.

    Args:
        trace: The recorded run.
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.name = trace.model or "recorded"
        self.position = 0

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        """The next recorded model output.

        Raises:
            ReplayError: The agent asked for more model outputs than were recorded.
        """
        steps = self.trace.steps
        if self.position >= len(steps):
            raise ReplayError(
                f"the recording has {len(steps)} model response{'s' if len(steps) != 1 else ''};"
                f" the agent asked for response {self.position + 1}"
            )
        step = steps[self.position]
        self.position += 1
        return ModelResponse(
            message=step.response,
            usage=step.usage,
            model_name=step.model_name,
            finish_reason=step.finish_reason,
            parse_errors=list(step.parse_errors),
        )


def mock_from_trace(
    trace: Trace,
    *,
    tools: Toolset | Sequence[Tool[..., Any]] | None = None,
    rules: ReplayRules | None = None,
) -> ToolMock:
    """A strict fixture mock answering each tool call with the response recorded in ``trace``.

    Fixtures are keyed by tool name and the arguments that matter: every recorded argument
    except the rules' ``ignore`` list (and, when today's ``tools`` are given, arguments the
    tool no longer has). A call repeated with the same arguments gets the recorded responses
    in order, then the last one again. Recorded errors are raised as ``ToolError`` with the
    recorded message; calls that the schema rejected when recorded get no fixture.

    Args:
        trace: The recorded run.
        tools: Today's tools, to drop arguments they no longer have.
        rules: Grading rules (``ignore`` lists and ``mask``).
    """
    from toolproof._mocks import ToolMock

    rules = rules or ReplayRules()
    known: dict[str, set[str]] | None = None
    if tools is not None:
        toolset = tools if isinstance(tools, Toolset) else Toolset(tools)
        known = {t.name: set(t.parameters.get("properties", {})) for t in toolset}
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], ToolResult]]] = {}
    key_args: dict[str, set[str]] = {}
    for call, result in trace.calls_and_results():
        if result is None or result.error_type in REJECTED or call.arguments_error is not None:
            continue
        ignored = set(rules.rule_for(call.name).ignore)
        params = known.get(call.name) if known is not None else None
        if known is not None and params is None:
            continue  # the tool no longer exists: no fixture can answer it
        keys = {k: v for k, v in call.arguments.items() if k not in ignored}
        if params is not None:
            keys = {k: v for k, v in keys.items() if k in params}
        key_args.setdefault(call.name, set()).update(keys)
        marker = json.dumps(keys, sort_keys=True, default=str)
        groups.setdefault((call.name, marker), []).append((keys, result))
    mock = ToolMock(
        key_args={name: sorted(args) for name, args in key_args.items()},
        mask=list(rules.mask),
        assert_all_used=False,
    )
    for (name, _), answers in groups.items():
        distinct = {json.dumps(_answer_key(r), sort_keys=True, default=str) for _, r in answers}
        if len(distinct) == 1:
            _add(mock, name, answers[0][0], answers[0][1], times=None)
            continue
        for index, (arguments, result) in enumerate(answers):
            _add(mock, name, arguments, result, times=None if index == len(answers) - 1 else 1)
    return mock


def _answer_key(result: ToolResult) -> Any:
    return [result.status, result.value if result.ok else result.content]


def _add(
    mock: ToolMock, name: str, arguments: dict[str, Any], result: ToolResult, *, times: int | None
) -> None:
    if result.ok:
        mock.add(name, arguments, returns=result.value, times=times)
    else:
        mock.add(name, arguments, raises=ToolError(result.content), times=times)


_REAL_TOOL_HOW = "--real-tool {0} (Python: replay(..., real_tools=['{0}']))"


class _RecordedOnly:
    """Mock provider: answers every tool from the recording, never from real code."""

    def __init__(self, mock: ToolMock) -> None:
        self.mock = mock

    def mock_for(self, tool: Tool[..., Any]) -> Callable[..., Any] | None:
        found = self.mock.mock_for(tool)
        if found is not None and any(f.tool == tool.name for f in self.mock.fixtures):
            return found
        mask = self.mock.mask

        def missing(**kwargs: Any) -> Any:
            from toolproof._matching._objects import format_call, mask_arguments

            shown = format_call(tool.name, mask_arguments(kwargs, mask))
            raise MissingFixture(
                f"No recorded response for the call {shown}: the recorded run never called "
                f"'{tool.name}', so replay cannot answer it without a live call.",
                tool_name=tool.name,
                arguments=mask_arguments(kwargs, mask),
            )

        return missing


async def _model_sample(
    trace: Trace,
    agent: Agent,
    model: Model | Literal["recorded"] | None,
    rules: ReplayRules,
    judge: Model | None,
    keep_trace: bool,
    real_tools: Sequence[str] = (),
    factory: str | None = None,
) -> SampleResult:
    toolset = agent.toolset
    mock = mock_from_trace(trace, tools=toolset, rules=rules)
    new_model = ReplayModel(trace) if model == "recorded" else model
    error: BaseException | None = None
    cut = model == "recorded" and _ended_after_tool_call(trace)
    if cut:
        # The recording stops after its last tool call (the conversation was ended from
        # outside): the replay runs the same steps and stops there too.
        agent = copy.copy(agent)
        agent.max_steps = len(trace.steps)
    with (
        mock_context(
            toolset,
            where="replay (model mode)",
            how=_REAL_TOOL_HOW,
            real=real_tools,
            mocks=[_RecordedOnly(mock)],
            factory=factory,
        ) as replay_tools,
        agent.override(model=new_model, tools=replay_tools),
    ):
        try:
            result = await agent.run(
                trace.input,
                history=trace.history,
                metadata={"replay_of": trace.id},
                tags=["replay"],
            )
            new = result.trace
        except MockBypassed:
            raise
        except AgentRunError as exc:
            error = exc
            if exc.trace is None:  # pragma: no cover - the agent always attaches it
                raise
            new = exc.trace
    if cut and new.stop_reason == "max_steps":
        new.stop_reason, new.stop_detail = trace.stop_reason, trace.stop_detail
    findings = grade_answer(trace, new, rules)
    if not any(f.check in ("no_fixture", "run_error") for f in findings):
        findings = (
            grade_calls(list(trace.calls_and_results()), list(new.calls_and_results()), rules)
            + findings
        )
    if (
        judge is not None
        and error is None
        and new.output is not None
        and trace.output is not None
        and not any(f.grade in ("fail", "error") for f in findings)
        and any(f.check == "answer_changed" for f in findings)
    ):
        findings.extend(await _judge(judge, trace, new))
    notes = []
    if trace.system_prompt_hash != new.system_prompt_hash:
        notes.append("system prompt changed since recording")
    return SampleResult(
        trace_id=trace.id,
        grade=overall(findings),
        findings=findings,
        input=trace.input,
        recorded_model=trace.model,
        new_model=new.model,
        recorded_output=trace.output,
        new_output=new.output,
        notes=notes,
        new_trace=new if keep_trace else None,
    )


def _ended_after_tool_call(trace: Trace) -> bool:
    """Whether a recorded run was ended from outside right after a tool call.

    A cancelled run, or an imported conversation that ended there (a hand-off to a human).
    """
    return (
        trace.stop_reason == "cancelled"
        and trace.output is None
        and bool(trace.steps)
        and bool(trace.steps[-1].response.tool_calls)
    )


_JUDGE_PROMPT = (
    "You compare two answers an assistant gave to the same user message. Answer with one JSON "
    'object: {"equivalent": true|false, "reason": "<one sentence>"}. They are equivalent '
    "when a user would learn the same facts and be asked to do the same things from both; "
    "wording, order and politeness do not matter."
)


async def _judge(judge: Model, recorded: Trace, new: Trace) -> list[Finding]:
    question = (
        f"User message:\n{recorded.input}\n\nRecorded answer:\n{recorded.output}\n\n"
        f"New answer:\n{new.output}"
    )
    try:
        response = await judge.request(
            [Message.system(_JUDGE_PROMPT), Message.user(question)], [], ModelSettings()
        )
    except Exception as exc:
        return [Finding("warn", "judge", f"the judge failed ({type(exc).__name__}: {exc})")]
    text = response.message.content or ""
    verdict = _parse_verdict(text)
    if verdict is None:
        return [
            Finding("warn", "judge", "the judge gave no verdict", recorded=None, new=text[:300])
        ]
    equivalent, reason = verdict
    if equivalent:
        return []
    return [
        Finding(
            "fail",
            "judge",
            f"the judge found the answers not equivalent: {reason}".rstrip(": "),
            recorded=recorded.output,
            new=new.output,
        )
    ]


def _parse_verdict(text: str) -> tuple[bool, str] | None:
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        try:
            data = json.loads(text[start : end + 1])
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("equivalent"), bool):
            return data["equivalent"], str(data.get("reason") or "")
    lowered = text.strip().lower()
    if lowered.startswith(("not equivalent", "not_equivalent", "no")):
        return False, text.strip()
    if lowered.startswith(("equivalent", "yes")):
        return True, text.strip()
    return None


# -- the entry points ------------------------------------------------------------------------


def replay(
    source: Source,
    *,
    mode: ReplayMode = "tools",
    tools: Toolset | Sequence[Tool[..., Any] | ToolInfo] | Mapping[str, Any] | None = None,
    agent: Agent | AgentFactory | None = None,
    model: Model | str | None = None,
    rules: ReplayRules | Mapping[str, Any] | str | Path | None = None,
    filter: TraceFilter | None = None,
    gate: float | None = None,
    aging: Aging | None = None,
    judge: Model | None = None,
    run_mocks: bool = False,
    concurrency: int = 4,
    keep_traces: bool = False,
    now: float | datetime | None = None,
    real_tools: Sequence[str] = (),
    executor: str | Executor | None = None,
) -> ReplayReport:
    """Replay recorded samples and grade them (see :func:`areplay` for the arguments).

    Raises:
        UserError: Called from a running event loop (use ``await areplay(...)``), or a
            misconfiguration (see :func:`areplay`).
    """
    import asyncio

    from toolproof._agent import no_running_loop

    no_running_loop("replay", "`await areplay(...)`")
    return asyncio.run(
        areplay(
            source,
            mode=mode,
            tools=tools,
            agent=agent,
            model=model,
            rules=rules,
            filter=filter,
            gate=gate,
            aging=aging,
            judge=judge,
            run_mocks=run_mocks,
            concurrency=concurrency,
            keep_traces=keep_traces,
            now=now,
            real_tools=real_tools,
            executor=executor,
        )
    )


async def areplay(
    source: Source,
    *,
    mode: ReplayMode = "tools",
    tools: Toolset | Sequence[Tool[..., Any] | ToolInfo] | Mapping[str, Any] | None = None,
    agent: Agent | AgentFactory | None = None,
    model: Model | str | None = None,
    rules: ReplayRules | Mapping[str, Any] | str | Path | None = None,
    filter: TraceFilter | None = None,
    gate: float | None = None,
    aging: Aging | None = None,
    judge: Model | None = None,
    run_mocks: bool = False,
    concurrency: int = 4,
    keep_traces: bool = False,
    now: float | datetime | None = None,
    real_tools: Sequence[str] = (),
    executor: str | Executor | None = None,
) -> ReplayReport:
    """Replay recorded samples in tools or model mode and grade each one.

    Args:
        source: A :class:`TraceStore`, the path of one, or traces.
        mode: ``"tools"`` (recorded model outputs through today's tools; no model cost) or
            ``"model"`` (today's agent answers the recorded questions; tools answer from
            the recorded responses).
        tools: Today's tools for tools mode: a ``Toolset``, tools, ``ToolInfo`` schemas or
            ``{name: parameters_schema}``. Defaults to the agent's tools.
        agent: Today's agent, or a factory ``factory(model, tools) -> Agent`` (called once,
            with ``tools=None``). Required in model mode.
        model: The model answering in model mode: a ``Model``, a model string, or
            ``"recorded"`` to replay the recorded model outputs through the whole agent
            loop. Defaults to the agent's own model.
        rules: Grading rules (:class:`ReplayRules`, their YAML form, or a YAML file).
        filter: Which stored traces to replay (store sources only).
        gate: Failure rate above which the report's gate fails (default: the rules', else
            0: any failure fails).
        aging: Sample aging (default: the rules').
        judge: A model asked whether a differently worded answer is equivalent.
        run_mocks: Tools mode: also run today's declared mocks on the recorded arguments
            and compare the structure of what they return with the recorded responses.
        concurrency: Model mode: samples replayed at once.
        keep_traces: Model mode: keep each new run's trace in its result.
        now: The time ages are measured from (default: now).
        real_tools: Tools that run their real code on purpose. Replay never runs any other
            tool's real code: in model mode the tools answer from the recordings, and in
            tools mode (with ``run_mocks``) these tools run for real on the recorded
            arguments instead of their mocks.
        executor: Where the samples run: ``"local"`` (this process, the default), ``"ray"``
            (a local Ray cluster) or ``"ray:ADDRESS"``, or an executor object.

    Returns:
        The report (``report.exit_code`` is what ``toolproof replay`` exits with).

    Raises:
        UserError: Model mode without an agent, tools mode without tools or agent, or a
            bad option (such as a real tool the agent does not have).
        MockBypassed: A tool's real code was about to run although it was not named in
            ``real_tools`` (the agent does not use the tools replay handed it).
    """
    started = time.perf_counter()
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    if mode not in ("tools", "model"):
        raise UserError(f"replay mode must be 'tools' or 'model', got {mode!r}")
    if concurrency < 1:
        raise UserError(f"replay concurrency must be at least 1, got {concurrency}")
    rules = _rules(rules)
    aging = aging if aging is not None else rules.aging
    gate = gate if gate is not None else rules.gate
    if gate is not None and not 0 <= gate <= 1:
        raise UserError(f"the gate is a failure rate between 0 and 1, got {gate}")
    moment = _now(now)

    built: Agent | None = None
    if (
        mode == "model"
        and model is None
        and agent is not None
        and not isinstance(agent, _agent_class())
    ):
        raise UserError(
            "model mode with an agent factory needs the model that answers: pass model=... "
            "(a Model, a model string, or 'recorded'; on the command line --model)"
        )
    if agent is not None:
        built = _build_agent(agent, model if mode == "model" else None)

    runner = executor_from_string(executor)
    local = isinstance(runner, LocalExecutor)
    samples, expired, source_name = _samples(source, filter, aging, moment, decode=local)
    report = ReplayReport(
        mode=mode,
        gate=gate,
        aging=aging,
        expired=expired,
        started_at=started_at,
        source=source_name,
    )
    if mode == "tools":
        if tools is None:
            if built is None:
                raise UserError(
                    "tools mode needs today's tools: pass tools=... (or --tools), or an agent "
                    "(--agent module:factory) whose tools are used"
                )
            tools = built.toolset
        tools = _as_toolset(tools, real_tools)
        with contextlib.ExitStack() as isolation:
            if isinstance(tools, Toolset):
                tools = isolation.enter_context(
                    mock_context(
                        tools, where="replay (tools mode)", how=_REAL_TOOL_HOW, real=real_tools
                    )
                )
                report.real_tools = list(tools.real_tools)
            today = _today_tools(tools)
            clock = time.perf_counter
            if not local:  # every sample's JSON goes to a worker, decoded and graded there
                work = Work(
                    (today, rules, run_mocks, aging),
                    _tools_item,
                    _lost,
                    concurrency,
                    run_sync=_tools_item_sync,
                )
                report.samples = await _collect(runner, work, samples)
                samples = iter(())
            for trace, age in samples:
                begin = clock()
                result = _tools_sample(trace, today, rules, run_mocks=run_mocks)
                result.age_s = age
                result.weight = aging.weight(age)
                result.duration_ms = (clock() - begin) * 1000
                report.samples.append(result)
    else:
        if built is None:
            raise UserError(
                "model mode needs today's agent: pass agent=... (an Agent or a factory "
                "`factory(model, tools) -> Agent`; on the command line --agent module:factory)"
            )
        new_model: Model | Literal["recorded"] | None = None
        if model == "recorded":
            new_model = "recorded"
        elif model is not None and isinstance(agent, _agent_class()):
            if isinstance(model, str):
                from toolproof.models import model_from_string

                new_model = model_from_string(model)
            else:
                new_model = model
        if new_model == "recorded":
            report.new_model = "recorded"
        else:
            report.new_model = (new_model or built.model).name
        for name in real_tools:
            if name not in built.toolset:
                raise UserError(f"replay: real tool {unknown_tool(name, built.toolset.names)}")
        report.real_tools = list(dict.fromkeys(real_tools))
        factory = None if isinstance(agent, _agent_class()) else factory_name(agent)
        report.samples = await _run_model_mode(
            list(samples),
            built,
            new_model,
            rules,
            judge,
            aging,
            concurrency,
            keep_traces,
            report.real_tools,
            factory,
            runner,
        )
    report.duration_s = time.perf_counter() - started
    return report


async def _run_model_mode(
    samples: list[tuple[Trace, float]],
    agent: Agent,
    model: Model | Literal["recorded"] | None,
    rules: ReplayRules,
    judge: Model | None,
    aging: Aging,
    concurrency: int,
    keep_traces: bool,
    real_tools: Sequence[str] = (),
    factory: str | None = None,
    executor: Executor | None = None,
) -> list[SampleResult]:
    recorder, agent.recorder = agent.recorder, None  # replays are not production runs
    try:
        context = _ModelContext(agent, model, rules, judge, aging, keep_traces, real_tools, factory)
        work = Work(context, _model_item, _lost, concurrency)
        return await _collect(executor or LocalExecutor(), work, samples)
    finally:
        agent.recorder = recorder


@dataclass(slots=True)
class _ModelContext:
    agent: Agent
    model: Model | Literal["recorded"] | None
    rules: ReplayRules
    judge: Model | None
    aging: Aging
    keep_traces: bool
    real_tools: Sequence[str]
    factory: str | None


async def _model_item(context: _ModelContext, item: tuple[Any, float]) -> SampleResult | _Skipped:
    trace, age = item
    begin = time.perf_counter()
    try:
        trace = _sample_trace(trace)
        result = await _model_sample(
            trace,
            context.agent,
            context.model,
            context.rules,
            context.judge,
            context.keep_traces,
            context.real_tools,
            context.factory,
        )
    except MockBypassed:
        raise  # a configuration error: stop the replay, nothing ran for real
    except _Unreadable as exc:
        return exc.result
    except Exception as exc:
        result = SampleResult(
            trace_id=trace.id,
            grade="fail",
            findings=[
                Finding(
                    "fail",
                    "run_error",
                    f"replaying the sample failed: {type(exc).__name__}: {exc}",
                )
            ],
            input=trace.input,
            recorded_model=trace.model,
            recorded_output=trace.output,
        )
    result.age_s = age
    result.weight = context.aging.weight(age)
    result.duration_ms = (time.perf_counter() - begin) * 1000
    return result


async def _tools_item(
    context: tuple[Mapping[str, _TodayTool], ReplayRules, bool, Aging], item: tuple[Any, float]
) -> SampleResult | _Skipped:
    return _tools_item_sync(context, item)


def _tools_item_sync(
    context: tuple[Mapping[str, _TodayTool], ReplayRules, bool, Aging], item: tuple[Any, float]
) -> SampleResult | _Skipped:
    today, rules, run_mocks, aging = context
    begin = time.perf_counter()
    try:
        trace = _sample_trace(item[0])
    except _Unreadable as exc:
        return exc.result
    result = _tools_sample(trace, today, rules, run_mocks=run_mocks)
    result.age_s = item[1]
    result.weight = aging.weight(item[1])
    result.duration_ms = (time.perf_counter() - begin) * 1000
    return result


@dataclass(slots=True)
class _Skipped:
    """A stored row a worker could not decode: left out of the report, with a warning."""

    message: str


class _Unreadable(Exception):
    def __init__(self, result: _Skipped) -> None:
        self.result = result


def _sample_trace(sample: Any) -> Trace:
    """A sample as a trace: decoded here when it came from the store as raw JSON."""
    if isinstance(sample, Trace):
        return sample
    from toolproof.replay._store import _decode

    trace_id, payload, version = sample
    try:
        return _decode(payload, version, trace_id)
    except TraceFormatError as exc:
        raise _Unreadable(_Skipped(str(exc))) from None


def _lost(item: tuple[Any, float], error: BaseException) -> SampleResult | _Skipped:
    """The result of a sample whose worker kept dying: an error, not a verdict."""
    sample = item[0]
    trace_id = sample.id if isinstance(sample, Trace) else str(sample[0])
    return SampleResult(
        trace_id=trace_id,
        grade="error",
        findings=[
            Finding(
                "fail",
                "worker_lost",
                f"the worker replaying the sample was lost: {type(error).__name__}: {error}",
            )
        ],
    )


async def _collect(
    executor: Executor, work: Work[Any, Any, SampleResult | _Skipped], items: Iterable[Any]
) -> list[SampleResult]:
    """Every item's result in item order; rows no worker could decode are left out."""
    from toolproof.replay._store import logger

    found: dict[int, SampleResult | _Skipped] = {}
    async with contextlib.aclosing(executor.stream(work, items)) as results:
        async for index, result in results:
            found[index] = result
    kept: list[SampleResult] = []
    for _, entry in sorted(found.items()):
        if isinstance(entry, _Skipped):
            logger.warning("%s; skipped", entry.message)
        elif entry is not None:
            kept.append(entry)
    return kept


def _as_toolset(tools: Any, real_tools: Sequence[str]) -> Any:
    """Python tools as a toolset (so the mock guard applies); schemas stay as they are."""
    if not isinstance(tools, (Toolset, Mapping)):
        tools = list(tools)
        if tools and all(
            isinstance(i, Tool) or (callable(i) and not isinstance(i, ToolInfo)) for i in tools
        ):
            return Toolset(tools)
    if real_tools and not isinstance(tools, Toolset):
        raise UserError(
            "real tools need today's Python tools (an agent, or --tools MODULE), not schemas"
        )
    return tools


def _rules(rules: ReplayRules | Mapping[str, Any] | str | Path | None) -> ReplayRules:
    if rules is None:
        return ReplayRules()
    if isinstance(rules, ReplayRules):
        return rules
    if isinstance(rules, (str, Path)):
        return ReplayRules.from_file(rules)
    return ReplayRules.from_dict(rules)


def _agent_class() -> type[Agent]:
    from toolproof._agent import Agent

    return Agent


def _build_agent(agent: Agent | AgentFactory, model: Model | str | None) -> Agent:
    from toolproof._agent import Agent

    if isinstance(agent, Agent):
        return agent
    if not callable(agent):
        raise UserError(f"agent must be an Agent or a factory(model, tools), got {agent!r}")
    if model is None or model == "recorded":
        from toolproof.models.fake import ScriptedModel

        first: Model | str = ScriptedModel([], name="replay-placeholder")
    elif isinstance(model, str):
        from toolproof.models import model_from_string

        first = model_from_string(model)
    else:
        first = model
    try:
        built = agent(first, None)
    except Exception as exc:  # a bug in the user's factory: one line naming where
        from toolproof._tracebacks import user_location

        where = user_location(exc)
        raise UserError(
            f"agent factory raised {type(exc).__name__}: {exc}" + (f" ({where})" if where else "")
        ) from exc
    if not isinstance(built, Agent):
        raise UserError(f"the agent factory returned {built!r}, not an Agent")
    return built


def _now(now: float | datetime | None) -> float:
    if now is None:
        return time.time()
    if isinstance(now, datetime):
        return (now if now.tzinfo else now.replace(tzinfo=timezone.utc)).timestamp()
    return float(now)


def _samples(
    source: Source, filter: TraceFilter | None, aging: Aging, now: float, *, decode: bool = True
) -> tuple[Iterator[tuple[Any, float]], int, str | None]:
    cut = None if aging.max_age is None else now - aging.max_age
    if isinstance(source, (str, Path)):
        store = TraceStore(source, create=False)
        return _from_store(store, filter, cut, now, close=True, decode=decode)
    if isinstance(source, TraceStore):
        return _from_store(source, filter, cut, now, close=False, decode=decode)
    if filter is not None:
        raise UserError("filter= selects stored traces; pass a TraceStore (or its path) as source")
    traces = list(source)
    expired = 0
    kept: list[tuple[Trace, float]] = []
    for trace in traces:
        if not isinstance(trace, Trace):
            raise UserError(f"replay sources are traces or a TraceStore, got {trace!r}")
        stamp = parse_timestamp(trace.started_at)
        age = 0.0 if stamp is None else max(now - stamp, 0.0)
        if cut is not None and stamp is not None and stamp < cut:
            expired += 1
            continue
        kept.append((trace, age))
    return iter(kept), expired, None


def _from_store(
    store: TraceStore,
    filter: TraceFilter | None,
    cut: float | None,
    now: float,
    *,
    close: bool,
    decode: bool = True,
) -> tuple[Iterator[tuple[Any, float]], int, str | None]:
    base = filter or TraceFilter()
    expired = 0
    selected = base
    if cut is not None:
        expired = store.count(replace(base, until=cut, limit=None)) if not base.until else 0
        since = base.since
        from toolproof.replay._time import parse_time

        if since is None or parse_time(since, now=now) < cut:
            selected = replace(base, since=cut)

    def read() -> Iterator[tuple[Any, float]]:
        try:
            if not decode:  # raw rows: the workers decode them (and skip unreadable ones)
                for trace_id, ts, payload, version in store._raw(selected):
                    yield (trace_id, payload, version), max(now - ts, 0.0)
                return
            for trace, ts in store.query_with_time(selected):
                yield trace, max(now - ts, 0.0)
        finally:
            if close:
                store.close()

    return read(), expired, store.location
