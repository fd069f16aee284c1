"""The agent loop: model -> tool calls -> model ... until a final answer or a stop condition."""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol, TypeVar

from toolproof._memory import Memory, MemoryState, estimate_message_tokens
from toolproof._messages import Message, ModelSettings, ToolCall, ToolResult, Usage
from toolproof._pricing import DEFAULT_PRICES, Price, find_price
from toolproof._tools import Tool
from toolproof._toolset import Approver, Toolset
from toolproof._trace import ErrorInfo, RequestSummary, Step, StopReason, Trace, stable_hash
from toolproof.errors import (
    AgentRunError,
    MissingFixture,
    ModelFailed,
    ToolCrashed,
    UnmockedToolCall,
    UserError,
)
from toolproof.events import (
    Event,
    EventHandler,
    ModelResponded,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolStarted,
    log_event,
)
from toolproof.models._base import Model

__all__ = ["Agent", "Budget", "Recorder", "RunResult", "Session"]

logger = logging.getLogger("toolproof")
_T = TypeVar("_T")

CORRECTION_PREFIX = "Your last message contained a tool call that could not be parsed"


class Recorder(Protocol):
    """Receives the trace of every finished run (see ``toolproof.replay``).

    ``record`` is called on the agent's path, so it must return quickly (queue the work).
    """

    def record(self, trace: Trace) -> None:
        """Store (or queue) one finished trace."""


#: The wall-clock limit of a run unless its ``Budget`` says otherwise, in seconds.
DEFAULT_MAX_SECONDS = 600.0


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits of one run; hitting one ends the run with ``stop_reason="budget"``.

    Attributes:
        max_model_calls: Model requests per run.
        max_tokens: Input plus output tokens per run.
        max_cost: USD per run (needs a known price for the model).
        max_seconds: Wall-clock time per run, 600 s unless set; ``None`` for no limit. It
            covers waiting for the model, for tools (a hung async tool is cancelled) and for
            memory's summarizer; the run ends with ``stop_reason="budget"`` and its trace.
    """

    max_model_calls: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    max_seconds: float | None = DEFAULT_MAX_SECONDS

    def __post_init__(self) -> None:
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise UserError(
                f"Budget(max_seconds=...) must be a positive number of seconds, or None for no "
                f"time limit; got {self.max_seconds!r}"
            )


@dataclass(slots=True)
class RunResult:
    """The outcome of one run.

    Attributes:
        output: The final answer, or ``None`` when the run stopped without one (see
            ``stop_reason`` and ``stop_detail``).
        stop_reason: ``"final"``, ``"max_steps"``, ``"budget"`` or ``"repeated_call"``.
        trace: The complete record of the run.
        messages: The conversation after the run (without the system prompt), ready to be
            passed as ``history`` to the next turn.
    """

    output: str | None
    stop_reason: StopReason
    trace: Trace
    messages: list[Message] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the run ended with a final answer."""
        return self.stop_reason == "final"

    @property
    def stop_detail(self) -> str | None:
        """Why the run stopped, in a sentence, when it did not finish."""
        return self.trace.stop_detail

    @property
    def usage(self) -> Usage:
        """Tokens used by the run."""
        return self.trace.usage

    def __str__(self) -> str:
        if self.output is not None:
            return self.output
        return f"[run stopped: {self.stop_reason}] {self.stop_detail or ''}".strip()


@dataclass(slots=True)
class _Override:
    model: Model | None = None
    toolset: Toolset | None = None


_overrides: contextvars.ContextVar[dict[int, _Override] | None] = contextvars.ContextVar(
    "toolproof_agent_overrides", default=None
)


class Agent:
    """A tool-calling agent: a model, its tools, and the policies of the loop.

    Args:
        model: A :class:`~toolproof.models.Model`, or a model string such as
            ``"deepseek:deepseek-chat"``.
        tools: Tools (or typed functions), or a :class:`Toolset` for mock modes.
        system_prompt: The system prompt.
        max_steps: Most model calls per run; reaching it ends the run with
            ``stop_reason="max_steps"`` and no output.
        settings: Generation settings sent with every request.
        budget: Token, cost, call-count and time limits per run; by default only the time
            limit, ``Budget().max_seconds`` (600 s).
        tool_timeout: Default time limit of one tool call, in seconds.
        approver: Decides about calls to tools marked ``requires_approval=True``.
        memory: Trims history to a token budget; without it the whole conversation is sent.
        max_repeated_calls: Stop with ``"repeated_call"`` when the same call (name and
            arguments) is made this many times in a row; ``None`` disables the check.
        prices: Prices per model name, merged over ``toolproof.models.DEFAULT_PRICES``.
        on_event: Subscribers to the run's events (progress display, logging...).
        recorder: Receives every finished trace (``toolproof.replay.Recorder``).
        name: A name for the agent, recorded in trace metadata.

    Example:
        ```python
        agent = Agent(model, [multiply_numbers], system_prompt="You are an HR assistant.")
        result = agent.run_sync("What is 12 times 8?")
        print(result.output, result.trace.tool_calls)
        ```
    """

    def __init__(
        self,
        model: Model | str,
        tools: Sequence[Tool[..., Any] | Callable[..., Any]] | Toolset = (),
        *,
        system_prompt: str | None = None,
        max_steps: int = 10,
        settings: ModelSettings | None = None,
        budget: Budget | None = None,
        tool_timeout: float | None = None,
        approver: Approver | None = None,
        memory: Memory | None = None,
        max_repeated_calls: int | None = 3,
        prices: Mapping[str, Price] | None = None,
        on_event: EventHandler | Sequence[EventHandler] | None = None,
        recorder: Recorder | None = None,
        name: str | None = None,
    ) -> None:
        if isinstance(model, str):
            from toolproof.models import model_from_string

            model = model_from_string(model)
        if not isinstance(model, Model):
            raise UserError(f"Agent(model=...) needs a Model or a model string, got {model!r}")
        if max_steps < 1:
            raise UserError(f"Agent(max_steps=...) must be at least 1, got {max_steps}")
        if max_repeated_calls is not None and max_repeated_calls < 2:
            raise UserError("Agent(max_repeated_calls=...) must be at least 2, or None to disable")
        self.model = model
        self.toolset = tools if isinstance(tools, Toolset) else Toolset(tools)
        self.system_prompt = system_prompt
        self.system_prompt_hash = stable_hash(system_prompt) if system_prompt else None
        self.max_steps = max_steps
        self.settings = settings or ModelSettings()
        self.budget = budget or Budget()
        self.tool_timeout = tool_timeout
        self.approver = approver
        self.memory = memory
        self.max_repeated_calls = max_repeated_calls
        self.prices: Mapping[str, Price] = {**DEFAULT_PRICES, **(prices or {})}
        if on_event is None:
            self.handlers: list[EventHandler] = []
        elif callable(on_event):
            self.handlers = [on_event]
        else:
            self.handlers = list(on_event)
        self.recorder = recorder
        self.name = name

    # -- entry points ------------------------------------------------------------------------

    async def run(
        self,
        input: str,
        *,
        history: Sequence[Message] = (),
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        settings: ModelSettings | None = None,
        memory_state: MemoryState | None = None,
        budget: Budget | None = None,
    ) -> RunResult:
        """Run the agent on one user message.

        Args:
            input: The user's message.
            history: Earlier conversation (without system prompt), e.g. from a session.
            metadata: Free-form data recorded in the trace.
            tags: Labels recorded in the trace.
            settings: Generation settings for this run, over the agent's.
            memory_state: Memory calibration and summary to carry across runs.
            budget: Limits of this run, instead of the agent's.

        Returns:
            The result, whose ``stop_reason`` is ``"final"``, ``"max_steps"``, ``"budget"``
            or ``"repeated_call"``.

        Raises:
            AgentRunError: The run stopped on an error (a tool bug, a failed model request);
                ``error.trace`` holds the partial trace with ``stop_reason="error"``.
            asyncio.CancelledError: The task was cancelled; subscribers and the recorder
                still receive the trace with ``stop_reason="cancelled"``.
        """
        if not isinstance(input, str):
            raise UserError(f"Agent.run(input=...) must be a string, got {type(input).__name__}")
        override = (_overrides.get() or {}).get(id(self))
        model = override.model if override and override.model else self.model
        toolset = override.toolset if override and override.toolset else self.toolset
        return await self._loop(
            input,
            model=model,
            toolset=toolset,
            history=list(history),
            settings=self.settings.merged(settings),
            metadata=dict(metadata or {}),
            tags=list(tags),
            memory_state=memory_state or MemoryState(),
            budget=budget or self.budget,
        )

    def run_sync(
        self,
        input: str,
        *,
        history: Sequence[Message] = (),
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        settings: ModelSettings | None = None,
        budget: Budget | None = None,
    ) -> RunResult:
        """Run the agent from synchronous code; wraps :meth:`run` in ``asyncio.run``.

        Raises:
            UserError: Called from inside a running event loop (use ``await agent.run``).
        """
        no_running_loop("Agent.run_sync")
        import asyncio

        return asyncio.run(
            self.run(
                input,
                history=history,
                metadata=metadata,
                tags=tags,
                settings=settings,
                budget=budget,
            )
        )

    def session(self) -> Session:
        """Start a multi-turn conversation that keeps history across user turns."""
        return Session(self)

    @contextmanager
    def override(
        self, *, model: Model | None = None, tools: Toolset | Sequence[Tool[..., Any]] | None = None
    ) -> Iterator[None]:
        """Temporarily replace the model and/or tools of this agent (context-local).

        Example:
            ```python
            with agent.override(model=ScriptedModel(["hi"])):
                assert agent.run_sync("hello").output == "hi"
            ```
        """
        current = dict(_overrides.get() or {})
        toolset = None if tools is None else tools if isinstance(tools, Toolset) else Toolset(tools)
        current[id(self)] = _Override(model=model, toolset=toolset)
        token = _overrides.set(current)
        try:
            yield
        finally:
            _overrides.reset(token)

    # -- the loop ----------------------------------------------------------------------------

    async def _loop(
        self,
        input: str,
        *,
        model: Model,
        toolset: Toolset,
        history: list[Message],
        settings: ModelSettings,
        metadata: dict[str, Any],
        tags: list[str],
        memory_state: MemoryState,
        budget: Budget,
    ) -> RunResult:
        import asyncio  # imported on first run, not by `import toolproof` (it costs ~40 ms)

        clock = time.perf_counter
        started = clock()
        deadline = None if budget.max_seconds is None else started + budget.max_seconds
        seconds = budget.max_seconds
        time_limit = f"time limit reached ({seconds:g} s)" if seconds is not None else ""

        def out_of_time(exc: BaseException) -> bool:
            return (
                isinstance(exc, asyncio.TimeoutError)
                and deadline is not None
                and clock() >= deadline - 1e-3
            )

        if self.name and "agent" not in metadata:
            metadata["agent"] = self.name
        trace = Trace(
            id=uuid.uuid4().hex,
            input=input,
            started_at=_now(),
            history=history,
            system_prompt=self.system_prompt,
            system_prompt_hash=self.system_prompt_hash,
            model=model.name,
            settings=settings.to_dict(),
            tools=toolset.infos(),
            tool_mode=toolset.mode,
            metadata=metadata,
            tags=tags,
        )
        handlers = self.handlers
        log = logger.isEnabledFor(logging.INFO)
        emit = self._emitter(handlers, log)
        emit(RunStarted(trace))

        system = Message.system(self.system_prompt) if self.system_prompt else None
        conversation: list[Message] = [*history, Message.user(input)]
        counts = [estimate_message_tokens(m) for m in conversation]
        protect = len(history)  # index of the current input: memory never drops it
        system_count = estimate_message_tokens(system) if system else 0
        definitions = toolset.definitions()
        price = find_price(self.prices, model.name)
        usage = Usage()
        cost: float | None = 0.0 if price is not None else None
        last_call: str | None = None
        streak = 0
        answered = len(conversation)  # conversation[:answered] is safe to hand back as history
        step_index = 0

        def finish(
            reason: StopReason, output: str | None = None, detail: str | None = None
        ) -> RunResult:
            trace.output = output
            trace.stop_reason = reason
            trace.stop_detail = detail
            self._close(trace, usage, cost, started)
            emit(RunFinished(trace))
            return RunResult(output, reason, trace, conversation[:answered])

        try:
            while True:
                # 1. Stop conditions checked before each model call.
                if step_index >= self.max_steps:
                    pending = ", ".join(c.signature() for c in trace.steps[-1].response.tool_calls)
                    return finish(
                        "max_steps",
                        detail=f"stopped after {step_index} model calls without a final answer "
                        f"(max_steps={self.max_steps}); the last step called {pending}",
                    )
                if budget.max_model_calls is not None and step_index >= budget.max_model_calls:
                    return finish(
                        "budget",
                        detail=f"model call limit reached ({budget.max_model_calls} calls)",
                    )

                # 2. Ask the model.
                step_index += 1
                if self.memory is not None:
                    try:
                        prepared = await _within(
                            self.memory.prepare(
                                system, conversation, counts, memory_state, protect=protect
                            ),
                            deadline,
                        )
                    except asyncio.TimeoutError as exc:
                        if not out_of_time(exc):
                            raise
                        return finish("budget", detail=f"{time_limit} while preparing memory")
                    request_messages = prepared.messages
                    summary = RequestSummary(
                        len(request_messages),
                        prepared.estimated_tokens,
                        prepared.trimmed,
                        prepared.summarized,
                    )
                else:
                    request_messages = [system, *conversation] if system else list(conversation)
                    estimated = sum(counts) + system_count
                    summary = RequestSummary(len(request_messages), estimated)
                step_started = clock()
                try:
                    response = await _within(
                        model.request(request_messages, definitions, settings), deadline
                    )
                except AgentRunError:
                    raise
                except Exception as exc:
                    if out_of_time(exc):
                        return finish("budget", detail=time_limit)
                    raise ModelFailed(
                        f"model {model.name} failed at step {step_index}: {exc}", step=step_index
                    ) from exc
                latency = (clock() - step_started) * 1000
                message = response.message
                step_cost = price.cost(response.usage) if price is not None else None
                step = Step(
                    index=step_index,
                    request=summary,
                    response=message,
                    offset_ms=(step_started - started) * 1000,
                    latency_ms=latency,
                    usage=response.usage,
                    finish_reason=response.finish_reason,
                    model_name=response.model_name,
                    parse_errors=list(response.parse_errors),
                    cost=step_cost,
                )
                trace.steps.append(step)
                usage = usage + response.usage
                if step_cost is not None and cost is not None:
                    cost += step_cost
                if (
                    self.memory is not None
                    and not response.usage.estimated
                    and response.usage.input_tokens
                    and summary.estimated_tokens
                ):
                    raw = summary.estimated_tokens / memory_state.calibration
                    memory_state.calibration = max(
                        0.25, min(4.0, response.usage.input_tokens / raw)
                    )
                conversation.append(message)
                counts.append(estimate_message_tokens(message))
                emit(ModelResponded(step))

                # 3. A final answer ends the run.
                if not message.tool_calls and not response.parse_errors:
                    answered = len(conversation)
                    detail = None
                    if response.finish_reason == "length":
                        detail = "the answer was cut off by the token limit (finish_reason=length)"
                    elif not message.content:
                        detail = "the model returned an empty answer"
                    return finish("final", message.content or "", detail)

                # 4. Budgets and loops are checked before running any tool.
                over = self._over_budget(budget, usage, cost)
                if over is not None:
                    return finish("budget", detail=over)
                if self.max_repeated_calls is not None:
                    for call in message.tool_calls:
                        key = f"{call.name}\x00{_args_key(call)}"
                        streak = streak + 1 if key == last_call else 1
                        last_call = key
                        if streak >= self.max_repeated_calls:
                            return finish(
                                "repeated_call",
                                detail=f"{call.signature()} was requested {streak} times in a row "
                                f"(max_repeated_calls={self.max_repeated_calls})",
                            )

                # 5. Run the tools (parallel calls concurrently), results in call order.
                results = await self._run_tools(message.tool_calls, toolset, step, emit, deadline)
                if results is None:
                    running = ", ".join(c.signature() for c in message.tool_calls)
                    return finish("budget", detail=f"{time_limit} while running {running}")
                step.tool_results = results
                for result in results:
                    tool_message = Message.tool(result)
                    conversation.append(tool_message)
                    counts.append(estimate_message_tokens(tool_message))
                if response.parse_errors:
                    correction = Message.user(
                        f"{CORRECTION_PREFIX}: "
                        + "; ".join(response.parse_errors)
                        + '. Write each call as <tool_call>{"name": "...", "arguments": {...}}'
                        "</tool_call>, or answer without a tool."
                    )
                    conversation.append(correction)
                    counts.append(estimate_message_tokens(correction))
                answered = len(conversation)
        except asyncio.CancelledError:
            finish("cancelled", detail="the run was cancelled")
            raise
        except AgentRunError as exc:
            exc.trace = trace
            exc.step = exc.step or step_index
            tool_name = exc.tool_name if isinstance(exc, (ToolCrashed, UnmockedToolCall)) else None
            cause = exc.__cause__ or exc  # the root cause names the kind of failure
            trace.error = ErrorInfo(type(cause).__name__, str(exc), tool_name)
            finish("error", detail=str(exc))
            raise
        except BaseException as exc:
            trace.error = ErrorInfo(type(exc).__name__, str(exc))
            finish("error", detail=f"{type(exc).__name__}: {exc}")
            raise

    async def _run_tools(
        self,
        calls: list[ToolCall],
        toolset: Toolset,
        step: Step,
        emit: Callable[[Event], None],
        deadline: float | None,
    ) -> list[ToolResult] | None:
        """Run one step's calls; ``None`` when the run's time limit cut them off."""
        import asyncio

        finished: list[ToolResult | None] = [None] * len(calls)  # kept if time runs out

        async def one(call: ToolCall, index: int) -> ToolResult:
            emit(ToolStarted(step.index, call))
            result = await toolset.execute(call, timeout=self.tool_timeout, approver=self.approver)
            finished[index] = result
            emit(ToolFinished(step.index, call, result))
            return result

        async def run_all() -> list[ToolResult]:
            if len(calls) == 1:
                return [await one(calls[0], 0)]
            outcomes: list[ToolResult | BaseException]
            if self.tool_timeout is None and all(toolset.runs_inline(c) for c in calls):
                # Synchronous tools never suspend: tasks would run them one by one anyway, so
                # run them in order directly, with the same semantics as gather() below.
                outcomes = []
                for i, c in enumerate(calls):
                    try:
                        outcomes.append(await one(c, i))
                    except Exception as exc:
                        outcomes.append(exc)
            else:
                outcomes = await asyncio.gather(
                    *(one(c, i) for i, c in enumerate(calls)), return_exceptions=True
                )
            step.tool_results = [o for o in outcomes if isinstance(o, ToolResult)]
            for outcome in outcomes:  # the first failure in call order stops the run
                if isinstance(outcome, BaseException):
                    raise outcome
            return step.tool_results

        try:
            return await _within(run_all(), deadline)
        except AgentRunError as exc:
            exc.step = step.index
            raise
        except MissingFixture as exc:
            raise AgentRunError(str(exc), step=step.index) from exc
        except asyncio.TimeoutError:
            if deadline is not None and time.perf_counter() >= deadline - 1e-3:
                step.tool_results = [r for r in finished if r is not None]
                return None
            raise

    def _over_budget(self, budget: Budget, usage: Usage, cost: float | None) -> str | None:
        if budget.max_tokens is not None and usage.total_tokens > budget.max_tokens:
            return f"token budget exceeded ({usage.total_tokens} > {budget.max_tokens} tokens)"
        if budget.max_cost is not None and cost is not None and cost > budget.max_cost:
            return f"cost budget exceeded (${cost:.6f} > ${budget.max_cost:g})"
        return None

    def _emitter(self, handlers: list[EventHandler], log: bool) -> Callable[[Event], None]:
        if not handlers and not log:
            return _ignore
        targets = [*handlers, log_event] if log else handlers

        def emit(event: Event) -> None:
            for handler in targets:
                try:
                    handler(event)
                except Exception:
                    logger.exception("event handler %r failed; the run continues", handler)

        return emit

    def _close(self, trace: Trace, usage: Usage, cost: float | None, started: float) -> None:
        trace.usage = usage
        trace.cost = cost
        trace.duration_ms = (time.perf_counter() - started) * 1000
        trace.ended_at = _now()
        if self.recorder is not None:
            try:
                self.recorder.record(trace)
            except Exception:
                logger.exception("recorder failed; the run's result is unaffected")


class Session:
    """A multi-turn conversation with an agent: each turn sees the earlier ones.

    Attributes:
        agent: The agent.
        history: The conversation so far (without the system prompt).
        traces: The trace of each turn.

    Example:
        ```python
        chat = agent.session()
        chat.run_sync("What is E001's leave balance?")
        chat.run_sync("And E002's?")
        ```
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.history: list[Message] = []
        self.traces: list[Trace] = []
        self.memory_state = MemoryState()

    async def run(self, input: str, **kwargs: Any) -> RunResult:
        """Run one user turn; on success the turn joins the history."""
        try:
            result = await self.agent.run(
                input, history=self.history, memory_state=self.memory_state, **kwargs
            )
        except AgentRunError as exc:
            if exc.trace is not None:
                self.traces.append(exc.trace)
            raise
        self.history = result.messages
        self.traces.append(result.trace)
        return result

    def run_sync(self, input: str, **kwargs: Any) -> RunResult:
        """Run one user turn from synchronous code."""
        no_running_loop("Session.run_sync")
        import asyncio

        return asyncio.run(self.run(input, **kwargs))


async def _within(awaitable: Awaitable[_T], deadline: float | None) -> _T:
    """Await ``awaitable``, cancelling it at ``deadline`` (``asyncio.TimeoutError``)."""
    import asyncio

    if deadline is None:
        return await awaitable
    remaining = max(deadline - time.perf_counter(), 0.0)
    if sys.version_info >= (3, 11):
        # A timer on the running task: no extra task per await, unlike wait_for (every run
        # has a deadline by default, so this is on the loop's hot path).
        async with asyncio.timeout(remaining):
            return await awaitable
    return await asyncio.wait_for(awaitable, remaining)  # pragma: no cover - Python 3.10


def _args_key(call: ToolCall) -> str:
    try:
        return json.dumps(call.arguments, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(call.arguments)


def _ignore(event: Event) -> None:
    return None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def no_running_loop(what: str, instead: str = "`await ...run()`") -> None:
    """Raise a clear error when a synchronous wrapper is called inside an event loop."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise UserError(f"{what}() cannot be called from a running event loop; use {instead}")
