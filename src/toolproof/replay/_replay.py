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
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from toolproof._agent import Runnable
from toolproof._executor import Executor, LocalExecutor, Work, executor_from_string
from toolproof._thread_loop import blocking
from toolproof._tools import Tool
from toolproof._toolset import Toolset, factory_name, mock_context, unknown_tool
from toolproof._trace import ToolInfo, Trace
from toolproof.errors import (
    MockBypassed,
    TraceFormatError,
    UserError,
)
from toolproof.models._base import Model
from toolproof.replay._grading import (
    Finding,
    SampleResult,
    sample_result,
)
from toolproof.replay._model_mode import REAL_TOOL_HOW, ReplayModel, mock_from_trace, model_sample
from toolproof.replay._recorded import RecordedTrace, read_recorded, read_store
from toolproof.replay._report import ReplayReport
from toolproof.replay._rules import Aging, ReplayRules
from toolproof.replay._store import TraceFilter, TraceStore
from toolproof.replay._time import parse_timestamp
from toolproof.replay._tools_mode import TodayTool, today_tools, tools_sample

__all__ = [
    "AgentFactory",
    "ReplayMode",
    "ReplayModel",
    "ReplayOptions",
    "areplay",
    "mock_from_trace",
    "replay",
    "replay_model",
    "replay_tools",
]

ReplayMode = Literal["tools", "model"]

#: Builds today's agent: ``factory(model, tools)``; ``tools=None`` means its own tools.
AgentFactory = Callable[[Any, Any], Runnable]

Source = TraceStore | str | Path | Iterable[Trace]


# -- the entry points ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """What both replay modes take besides the samples and today's agent or tools.

    The fields are :func:`areplay`'s arguments of the same names, checked and resolved
    (:meth:`make`): the rules loaded, the gate and aging taken from them when unset.
    """

    rules: ReplayRules
    gate: float | None
    aging: Aging
    executor: Executor
    filter: TraceFilter | None = None
    concurrency: int = 4
    now: float = 0.0
    real_tools: Sequence[str] = ()

    @classmethod
    def make(
        cls,
        *,
        rules: ReplayRules | Mapping[str, Any] | str | Path | None = None,
        filter: TraceFilter | None = None,
        gate: float | None = None,
        aging: Aging | None = None,
        concurrency: int = 4,
        now: float | datetime | None = None,
        real_tools: Sequence[str] = (),
        executor: str | Executor | None = None,
    ) -> ReplayOptions:
        """Check and resolve the options (see :func:`areplay` for each).

        Raises:
            UserError: A concurrency below 1 or a gate outside 0..1.
        """
        if concurrency < 1:
            raise UserError(f"replay concurrency must be at least 1, got {concurrency}")
        loaded = _rules(rules)
        gate = gate if gate is not None else loaded.gate
        if gate is not None and not 0 <= gate <= 1:
            raise UserError(f"the gate is a failure rate between 0 and 1, got {gate}")
        return cls(
            loaded,
            gate,
            aging if aging is not None else loaded.aging,
            executor_from_string(executor),
            filter,
            concurrency,
            _now(now),
            real_tools,
        )

    @property
    def local(self) -> bool:
        """Whether the samples run in this process."""
        return isinstance(self.executor, LocalExecutor)

    def report(self, mode: ReplayMode, expired: int, source: str | None) -> ReplayReport:
        """The empty report of a replay starting now."""
        started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return ReplayReport(
            mode=mode,
            gate=self.gate,
            aging=self.aging,
            expired=expired,
            started_at=started_at.replace("+00:00", "Z"),
            source=source,
        )


# -- the entry points ------------------------------------------------------------------------


async def areplay(
    source: Source,
    *,
    mode: ReplayMode = "tools",
    tools: Toolset | Sequence[Tool[..., Any] | ToolInfo] | Mapping[str, Any] | None = None,
    agent: Runnable | AgentFactory | None = None,
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
    if mode not in ("tools", "model"):
        raise UserError(f"replay mode must be 'tools' or 'model', got {mode!r}")
    options = ReplayOptions.make(
        rules=rules,
        filter=filter,
        gate=gate,
        aging=aging,
        concurrency=concurrency,
        now=now,
        real_tools=real_tools,
        executor=executor,
    )
    if mode == "tools":
        return await replay_tools(source, _todays_tools(tools, agent), options, run_mocks=run_mocks)
    agent = _model_mode_agent(agent, model)
    return await replay_model(source, agent, model, options, judge=judge, keep_traces=keep_traces)


def _todays_tools(
    tools: Toolset | Sequence[Tool[..., Any] | ToolInfo] | Mapping[str, Any] | None,
    agent: Runnable | AgentFactory | None,
) -> Toolset | Sequence[Tool[..., Any] | ToolInfo] | Mapping[str, Any]:
    """Tools mode's tools: those given, else the agent's (a factory is built to get them)."""
    built = _build_agent(agent, None) if agent is not None else None
    if tools is not None:
        return tools
    if built is None:
        raise UserError(
            "tools mode needs today's tools: pass tools=... (or --tools), or an agent "
            "(--agent module:factory) whose tools are used"
        )
    return built.toolset


def _model_mode_agent(
    agent: Runnable | AgentFactory | None, model: Model | str | None
) -> Runnable | AgentFactory:
    """Model mode's agent, checked: an agent, or a factory with the model that answers."""
    if agent is None:
        raise UserError(
            "model mode needs today's agent: pass agent=... (an Agent or a factory "
            "`factory(model, tools) -> Agent`; on the command line --agent module:factory)"
        )
    if model is None and not isinstance(agent, Runnable):
        raise UserError(
            "model mode with an agent factory needs the model that answers: pass model=... "
            "(a Model, a model string, or 'recorded'; on the command line --model)"
        )
    return agent


async def replay_tools(
    source: Source,
    tools: Toolset | Sequence[Tool[..., Any] | ToolInfo] | Mapping[str, Any],
    options: ReplayOptions,
    *,
    run_mocks: bool = False,
) -> ReplayReport:
    """Tools mode: the recorded model outputs through today's tools (see :func:`areplay`)."""
    started = time.perf_counter()
    # stored rows are read as data where that is exact (see _recorded.py), raw for workers
    reading: _Reading = "view" if options.local else "raw"
    samples, expired, source_name = _samples(source, options, reading=reading)
    report = options.report("tools", expired, source_name)
    tools = _as_toolset(tools, options.real_tools)
    with contextlib.ExitStack() as isolation:
        if isinstance(tools, Toolset):
            tools = isolation.enter_context(
                mock_context(
                    tools, where="replay (tools mode)", how=REAL_TOOL_HOW, real=options.real_tools
                )
            )
            report.real_tools = list(tools.real_tools)
        today = today_tools(tools)
        aging, rules = options.aging, options.rules
        if not options.local:  # every sample's JSON goes to a worker, decoded and graded there
            context = (today, rules, run_mocks, aging)
            work = Work(context, _tools_item, _lost, options.concurrency, run_sync=_tools_item_sync)
            report.samples = await _collect(options.executor, work, samples)
            samples = iter(())
        clock = time.perf_counter
        decays = aging.half_life is not None  # (else every weight is 1.0, the default)
        for trace, age in samples:
            begin = clock()
            result = tools_sample(trace, today, rules, run_mocks=run_mocks)
            result.age_s = age
            if decays:
                result.weight = aging.weight(age)
            result.duration_ms = (clock() - begin) * 1000
            report.samples.append(result)
    report.duration_s = time.perf_counter() - started
    return report


async def replay_model(
    source: Source,
    agent: Runnable | AgentFactory,
    model: Model | str | None,
    options: ReplayOptions,
    *,
    judge: Model | None = None,
    keep_traces: bool = False,
) -> ReplayReport:
    """Model mode: today's agent answers the recorded questions (see :func:`areplay`)."""
    started = time.perf_counter()
    built = _build_agent(agent, model)
    samples, expired, source_name = _samples(
        source, options, reading="trace" if options.local else "raw"
    )
    report = options.report("model", expired, source_name)
    new_model: Model | Literal["recorded"] | None = None
    if model == "recorded":
        new_model = "recorded"
    elif model is not None and isinstance(agent, Runnable):
        if isinstance(model, str):
            from toolproof.models import model_from_string

            new_model = model_from_string(model)
        else:
            new_model = model
    report.new_model = "recorded" if new_model == "recorded" else (new_model or built.model).name
    for name in options.real_tools:
        if name not in built.toolset:
            raise UserError(f"replay: real tool {unknown_tool(name, built.toolset.names)}")
    report.real_tools = list(dict.fromkeys(options.real_tools))
    factory = None if isinstance(agent, Runnable) else factory_name(agent)
    recorder, built.recorder = built.recorder, None  # replays are not production runs
    try:
        context = _ModelContext(
            built, new_model, options.rules, judge, options.aging, keep_traces,
            report.real_tools, factory,
        )  # fmt: skip
        work = Work(context, _model_item, _lost, options.concurrency)
        report.samples = await _collect(options.executor, work, list(samples))
    finally:
        built.recorder = recorder
    report.duration_s = time.perf_counter() - started
    return report


replay = blocking(
    areplay,
    "replay",
    "`await areplay(...)`",
    doc="""Replay recorded samples and grade them (see :func:`areplay` for the arguments).

    Raises:
        UserError: Called from a running event loop (use ``await areplay(...)``), or a
            misconfiguration (see :func:`areplay`).
    """,
)


@dataclass(slots=True)
class _ModelContext:
    agent: Runnable
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
        result = await model_sample(
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
        failed = f"replaying the sample failed: {type(exc).__name__}: {exc}"
        result = sample_result(trace, [Finding("fail", "run_error", failed)])
    result.age_s = age
    result.weight = context.aging.weight(age)
    result.duration_ms = (time.perf_counter() - begin) * 1000
    return result


async def _tools_item(
    context: tuple[Mapping[str, TodayTool], ReplayRules, bool, Aging], item: tuple[Any, float]
) -> SampleResult | _Skipped:
    return _tools_item_sync(context, item)


def _tools_item_sync(
    context: tuple[Mapping[str, TodayTool], ReplayRules, bool, Aging], item: tuple[Any, float]
) -> SampleResult | _Skipped:
    today, rules, run_mocks, aging = context
    begin = time.perf_counter()
    try:
        trace = _sample_view(item[0])
    except _Unreadable as exc:
        return exc.result
    result = tools_sample(trace, today, rules, run_mocks=run_mocks)
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


def _sample_view(sample: Any) -> Trace | RecordedTrace:
    """A sample for tools mode: read as data where that is exact, else as a trace."""
    if isinstance(sample, Trace):
        return sample
    view = read_recorded(sample[1], sample[2])
    return view if view is not None else _sample_trace(sample)


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


def _build_agent(agent: Runnable | AgentFactory, model: Model | str | None) -> Runnable:
    if isinstance(agent, Runnable):
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
    if not isinstance(built, Runnable):
        raise UserError(f"the agent factory returned {built!r}, not an Agent")
    return built


def _now(now: float | datetime | None) -> float:
    if now is None:
        return time.time()
    if isinstance(now, datetime):
        return (now if now.tzinfo else now.replace(tzinfo=timezone.utc)).timestamp()
    return float(now)


#: How stored rows come out of the store: decoded traces, data views for tools mode where
#: exact (else decoded traces), or raw rows that workers decode.
_Reading = Literal["trace", "view", "raw"]


def _samples(
    source: Source, options: ReplayOptions, *, reading: _Reading = "trace"
) -> tuple[Iterator[tuple[Any, float]], int, str | None]:
    filter, now = options.filter, options.now
    cut = None if options.aging.max_age is None else now - options.aging.max_age
    if isinstance(source, (str, Path)):
        store = TraceStore(source, create=False)
        store._scan_only()
        return _from_store(store, filter, cut, now, close=True, reading=reading)
    if isinstance(source, TraceStore):
        return _from_store(source, filter, cut, now, close=False, reading=reading)
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
    reading: _Reading = "trace",
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
            if reading == "raw":  # the workers decode them (and skip unreadable ones)
                for trace_id, ts, payload, version in store._raw(selected):
                    yield (trace_id, payload, version), max(now - ts, 0.0)
                return
            if reading == "view":
                for ts, recorded in read_store(store, selected):
                    yield recorded, max(now - ts, 0.0)
                return
            for trace, ts in store.query_with_time(selected):
                yield trace, max(now - ts, 0.0)
        finally:
            if close:
                store.close()

    return read(), expired, store.location
