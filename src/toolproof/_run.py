"""The state of one agent run: conversation, steps, usage, limits, and how a run ends.

The loop itself (:meth:`toolproof.Agent._steps`) only says what happens in which order; this
module holds what it needs between steps, checks every limit in one place
(:meth:`Run.check`, and :meth:`Clock.within` for the wall-clock limit) and ends the run the
same way whatever the reason (:meth:`Run.finish`). ``toolproof._agent_run`` drives the loop:
one step at a time for ``Agent.iter``, to the end for ``Agent.run``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from toolproof._memory import Memory, MemoryState, estimate_message_tokens
from toolproof._messages import (
    Message,
    ModelSettings,
    ToolCall,
    ToolResult,
    Usage,
    error_text,
)
from toolproof._pricing import find_price
from toolproof._run_clock import Clock, Stop
from toolproof._trace import ErrorInfo, RequestSummary, Step, StopReason, Trace
from toolproof._trace_build import TraceBuilder
from toolproof._trace_build import utc_now as _now
from toolproof.errors import (
    AgentRunError,
    MissingFixture,
    ModelFailed,
    ToolCrashed,
    UnmockedToolCall,
    UserError,
)

if TYPE_CHECKING:
    import logging

    from toolproof._agent import Agent
    from toolproof._toolset import Toolset
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

__all__ = ["Budget", "Recorder", "RunOptions", "RunResult"]

CORRECTION_PREFIX = "Your last message contained a tool call that could not be parsed"

#: The wall-clock limit of a run unless its ``Budget`` says otherwise, in seconds.
DEFAULT_MAX_SECONDS = 600.0

#: The longest cycle of calls (``A B A B`` has 2) that ``max_repeated_calls`` detects.
MAX_REPEAT_PERIOD = 4

_INFO = 20  # logging.INFO, without importing logging to read it


@cache
def _logger() -> logging.Logger:
    """The ``toolproof`` logger; :mod:`logging` loads with the first run, not at import."""
    import logging

    return logging.getLogger("toolproof")


#: What a run builds for a listener: bound as this module's globals by the first run that
#: has a listener (``_emitter``), so ``import toolproof`` neither loads nor creates them.
_EVENT_NAMES = (
    "ModelResponded",
    "RunFinished",
    "RunStarted",
    "ToolFinished",
    "ToolStarted",
    "log_event",
)


def _bind_events() -> None:
    """Bind the event names here, all in one ``dict.update``: no thread sees some bound."""
    if "_events_bound" not in globals():
        from toolproof import events

        names: dict[str, object] = {n: getattr(events, n) for n in _EVENT_NAMES}
        # Stand-ins already bound are kept. (Looked up by name: iterating the module's
        # dict would raise when another thread binds names at the same moment.)
        here = globals()
        names.update((n, here[n]) for n in _EVENT_NAMES if n in here)
        here.update(names, _events_bound=True)


def __getattr__(name: str) -> object:
    if name in _EVENT_NAMES:
        _bind_events()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Recorder(Protocol):
    """Receives the trace of every finished run (see ``toolproof.replay``).

    ``record`` is called on the agent's path, so it must return quickly (queue the work).
    """

    def record(self, trace: Trace) -> None:
        """Store (or queue) one finished trace."""


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


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What one run is given besides its input: every entry point of an agent takes these.

    The fields are the keyword arguments of the same names of :meth:`toolproof.Agent.run`
    (see there what each one does).
    """

    history: Sequence[Message] = ()
    metadata: Mapping[str, Any] | None = None
    tags: Sequence[str] = ()
    settings: ModelSettings | None = None
    memory_state: MemoryState | None = None
    budget: Budget | None = None


@dataclass(slots=True)
class RunResult:
    """The outcome of one run.

    Attributes:
        output: The final answer, or ``None`` when the run stopped without one (see
            ``stop_reason`` and ``stop_detail``).
        stop_reason: ``"final"``, ``"max_steps"``, ``"budget"`` or ``"repeated_call"``
            (``"cancelled"`` when a caller of ``Agent.iter`` stopped early).
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


class Run:
    """Everything one run carries from step to step, and its limits."""

    def __init__(
        self,
        agent: Agent,
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
    ) -> None:
        self.agent, self.model, self.toolset, self.settings = agent, model, toolset, settings
        self.memory: Memory | None = agent.memory
        self.memory_state, self.budget = memory_state, budget
        if agent.name and "agent" not in metadata:
            metadata["agent"] = agent.name
        self.build = TraceBuilder(
            Trace(
                id=_run_id(),
                input=input,
                started_at=_now(),
                history=history,
                system_prompt=agent.system_prompt,
                system_prompt_hash=agent.system_prompt_hash,
                model=model.name,
                settings=settings.to_dict(),
                tools=toolset.infos(),
                tool_mode=toolset.mode,
                metadata=metadata,
                tags=tags,
            )
        )
        self.trace = self.build.trace
        self.emit = _emitter(agent.handlers)
        self.observed = self.emit is not _ignore  # events are built only for a listener
        self.system, system_count = _system_message(agent.system_prompt)
        user = Message.user(input)
        if history:
            self.conversation: list[Message] = [*history, user]
            self.counts = [estimate_message_tokens(m) for m in self.conversation]
        else:
            self.conversation = [user]
            self.counts = [estimate_message_tokens(user)]
        self.tokens = sum(self.counts) + system_count  # what the request estimates
        self.protect = len(history)  # index of the current input: memory never drops it
        self.answered = len(self.conversation)  # conversation[:answered] is safe as history
        self.definitions = toolset.definitions()
        self.price = find_price(agent.prices, model.name)
        self.spent = 0  # input plus output tokens so far (the run's usage is summed at its end)
        self.cost: float | None = 0.0 if self.price is not None else None
        self.index = 0  # model calls started
        self.calls: list[ToolCall] = []  # every call the model asked for, in order
        self.keys: dict[int, str] = {}  # their arguments as JSON, made when compared
        # Side-effecting calls that succeeded (None: running), by name and arguments.
        self.effects: dict[str, ToolResult | None] | None = None
        self.clock = Clock(budget.max_seconds)
        self.started = 0.0
        self.result: RunResult | None = None
        self._finished: list[ToolResult | None] = []

    def start(self) -> None:
        self.started = time.perf_counter()
        self.clock.start(self.started)
        if self.observed:
            self.emit(RunStarted(self.trace))

    # -- the one place that checks limits -------------------------------------------------------

    def check(self, step: Step | None = None) -> None:
        """Raise :class:`Stop` when a limit ends the run.

        Before a model call (``step`` is ``None``): steps and model calls. Before a step's
        tools run: tokens, cost and repeated calls. The wall-clock limit is the clock's.
        """
        agent, budget = self.agent, self.budget
        if step is None:
            if self.index >= agent.max_steps:
                pending = ", ".join(c.signature() for c in self.trace.steps[-1].response.tool_calls)
                raise Stop(
                    "max_steps",
                    detail=f"stopped after {self.index} model calls without a final answer "
                    f"(max_steps={agent.max_steps}); the last step called {pending}",
                )
            if budget.max_model_calls is not None and self.index >= budget.max_model_calls:
                raise Stop(
                    "budget", detail=f"model call limit reached ({budget.max_model_calls} calls)"
                )
            return
        spent, cost = self.spent, self.cost
        if budget.max_tokens is not None and spent > budget.max_tokens:
            raise Stop(
                "budget",
                detail=f"token budget exceeded ({spent} > {budget.max_tokens} tokens)",
            )
        if budget.max_cost is not None and cost is not None and cost > budget.max_cost:
            over = f"cost budget exceeded (${cost:.6f} > ${budget.max_cost:g})"
            raise Stop("budget", detail=over)
        if agent.max_repeated_calls is not None:
            for call in step.response.tool_calls:
                self._repeated(call, agent.max_repeated_calls)

    def _repeated(self, call: ToolCall, limit: int) -> None:
        """Stop when the last calls are one call, or a cycle of calls, ``limit`` times over.

        ``A A A`` is a repeat of period 1, ``A B A B A B`` of period 2; cycles of up to
        ``MAX_REPEAT_PERIOD`` calls are found (``period * (limit - 1)`` comparisons each).
        """
        calls = self.calls
        calls.append(call)
        n = len(calls)
        if n < limit:
            return
        for period in range(1, MAX_REPEAT_PERIOD + 1):
            if period * limit > n:
                return
            if all(
                self._same(i, i - period) for i in range(n - 1, n - 1 - period * (limit - 1), -1)
            ):
                break
        else:
            return
        if period == 1:
            detail = f"{call.signature()} was requested {limit} times in a row"
        else:
            cycle = ", ".join(c.signature() for c in calls[n - period :])
            detail = f"the calls {cycle} were requested {limit} times in a row, in this order"
        raise Stop("repeated_call", detail=f"{detail} (max_repeated_calls={limit})")

    def _same(self, i: int, j: int) -> bool:
        """Whether calls ``i`` and ``j`` have the same name and arguments."""
        calls, keys = self.calls, self.keys
        if calls[i].name != calls[j].name:  # arguments are compared only then
            return False
        if i not in keys:
            keys[i] = _args_key(calls[i])
        if j not in keys:
            keys[j] = _args_key(calls[j])
        return keys[i] == keys[j]

    # -- the model ------------------------------------------------------------------------------

    async def ask(self) -> Step:
        """Send the conversation to the model; record its answer as the next step."""
        within, memory = self.clock.within, self.memory
        if memory is not None:
            prepared = await within(
                memory.prepare(
                    self.system,
                    self.conversation,
                    self.counts,
                    self.memory_state,
                    protect=self.protect,
                ),
                " while preparing memory",
            )
            if prepared.overflow is not None:
                raise Stop("budget", detail=prepared.overflow)
            messages = prepared.messages
            summary = RequestSummary(
                message_count=len(messages),
                estimated_tokens=prepared.estimated_tokens,
                trimmed_messages=prepared.trimmed,
                summarized=prepared.summarized,
            )
        else:
            system = self.system
            messages = [system, *self.conversation] if system else list(self.conversation)
            summary = RequestSummary(message_count=len(messages), estimated_tokens=self.tokens)
        model = self.model
        self.index += 1
        step_started = time.perf_counter()
        try:
            response = await within(model.request(messages, self.definitions, self.settings))
        except AgentRunError:
            raise
        except Exception as exc:
            raise ModelFailed(
                f"model {model.name} failed at step {self.index}: {exc}", step=self.index
            ) from exc
        latency = (time.perf_counter() - step_started) * 1000
        price, usage = self.price, response.usage
        step_cost = price.cost(usage) if price is not None else None
        step = self.build.step(
            response.message,
            request=summary,
            usage=usage,
            finish_reason=response.finish_reason,
            model_name=response.model_name,
            offset_ms=(step_started - self.started) * 1000,
            latency_ms=latency,
            parse_errors=response.parse_errors,
            cost=step_cost,
        )
        self.spent += usage.input_tokens + usage.output_tokens
        if step_cost is not None and self.cost is not None:
            self.cost += step_cost
        estimated = summary.estimated_tokens
        if memory is not None and not usage.estimated and usage.input_tokens and estimated:
            raw = estimated / self.memory_state.calibration
            self.memory_state.calibration = max(0.25, min(4.0, usage.input_tokens / raw))
        self._add(response.message)
        if self.observed:
            self.emit(ModelResponded(step))
        return step

    def final(self, step: Step) -> None:
        """End the run when ``step`` is a final answer (no tool calls, nothing unparsed)."""
        message = step.response
        if message.tool_calls or step.parse_errors:
            return
        self.answered = len(self.conversation)
        detail = None
        if step.finish_reason == "length":
            detail = "the answer was cut off by the token limit (finish_reason=length)"
        elif not message.content:
            detail = "the model returned an empty answer"
        raise Stop("final", message.content or "", detail)

    def _add(self, message: Message) -> None:
        self.conversation.append(message)
        count = estimate_message_tokens(message)
        self.counts.append(count)
        self.tokens += count

    # -- the tools ------------------------------------------------------------------------------

    async def run_tools(self, step: Step) -> None:
        """Run the step's calls (parallel calls concurrently); results join in call order."""
        calls = step.response.tool_calls
        try:
            results = await self.clock.within(self._tools(calls, step))
        except Stop as stop:
            step.tool_results = [r for r in self._finished if r is not None]
            running = ", ".join(c.signature() for c in calls)
            stop.detail = self.clock.limit_detail(f" while running {running}")
            raise
        except AgentRunError as exc:
            exc.step = step.index
            raise
        except MissingFixture as exc:
            raise AgentRunError(str(exc), step=step.index) from exc
        step.tool_results = results
        for result in results:
            self._add(Message.tool(result))
        if step.parse_errors:
            self._add(
                Message.user(
                    f"{CORRECTION_PREFIX}: "
                    + "; ".join(step.parse_errors)
                    + '. Write each call as <tool_call>{"name": "...", "arguments": {...}}'
                    "</tool_call>, or answer without a tool."
                )
            )
        self.answered = len(self.conversation)

    async def _tools(self, calls: list[ToolCall], step: Step) -> list[ToolResult]:
        toolset, emit, observed, execute = self.toolset, self.emit, self.observed, self._execute
        # What ran, in call order, kept if the time limit cuts the rest off.
        finished: list[ToolResult | None] = [None] * len(calls)
        self._finished = finished

        if len(calls) == 1:  # the most common step, as one() below runs it
            call = calls[0]
            if observed:
                emit(ToolStarted(step.index, call))
            result = await execute(call)
            finished[0] = result
            if observed:
                emit(ToolFinished(step.index, call, result))
            return [result]

        async def one(call: ToolCall, index: int) -> ToolResult:
            if observed:
                emit(ToolStarted(step.index, call))
            result = await execute(call)
            finished[index] = result
            if observed:
                emit(ToolFinished(step.index, call, result))
            return result

        outcomes: list[ToolResult | BaseException]
        if self.agent.tool_timeout is None and all(toolset.runs_inline(c) for c in calls):
            # Synchronous tools never suspend: tasks would run them one by one anyway, so
            # run them in order directly, with the same semantics as gather() below.
            outcomes = []
            for i, c in enumerate(calls):
                try:
                    outcomes.append(await one(c, i))
                except Exception as exc:
                    outcomes.append(exc)
        else:
            import asyncio

            outcomes = await asyncio.gather(
                *(one(c, i) for i, c in enumerate(calls)), return_exceptions=True
            )
        step.tool_results = [o for o in outcomes if isinstance(o, ToolResult)]
        for outcome in outcomes:  # the first failure in call order stops the run
            if isinstance(outcome, BaseException):
                raise outcome
        return step.tool_results

    def _execute(self, call: ToolCall) -> Awaitable[ToolResult]:
        """Run one call, unless it repeats a side-effecting call that succeeded in this run.

        The repeat gets an ``AlreadyRan`` error result holding the earlier result. A call
        that failed (an error result) may be retried.
        """
        agent = self.agent
        t = self.toolset.tools.get(call.name)
        if (
            t is None
            or not (t.side_effects or t.requires_approval)
            or call.arguments_error is not None
        ):  # the toolset's coroutine itself: no frame of ours around it
            return self.toolset.execute(call, timeout=agent.tool_timeout, approver=agent.approver)
        return self._once(call, f"{call.name}\n{_args_key(call)}")

    async def _once(self, call: ToolCall, key: str) -> ToolResult:
        effects = self.effects
        if effects is None:
            effects = self.effects = {}
        if key in effects:
            earlier = effects[key]
            said = (
                "the same call is running in this step."
                if earlier is None
                else f"this call already succeeded in this run. Its result: {earlier.content}"
            )
            text = f"{call.signature()} was not run again: the tool has side effects and {said}"
            return ToolResult(
                call.id, call.name, "error", error_text("AlreadyRan", text), None, "AlreadyRan"
            )
        effects[key] = None
        agent = self.agent
        result = await self.toolset.execute(
            call, timeout=agent.tool_timeout, approver=agent.approver
        )
        if result.ok:
            effects[key] = result
        else:
            del effects[key]
        return result

    # -- the end --------------------------------------------------------------------------------

    def finish(
        self, reason: StopReason, output: str | None = None, detail: str | None = None
    ) -> RunResult:
        """End the run: complete the trace, hand it to the recorder and the subscribers."""
        trace = self.build.finish(reason, output=output, detail=detail)
        trace.duration_ms = (time.perf_counter() - self.started) * 1000
        trace.ended_at = _now()
        self.clock.stop()
        record(self.agent.recorder, trace)
        if self.observed:
            self.emit(RunFinished(trace))
        self.result = RunResult(output, reason, trace, self.conversation[: self.answered])
        return self.result

    def fail(self, exc: BaseException) -> None:
        """End the run on an exception that the caller will see (re-raised by the caller)."""
        import asyncio

        trace = self.trace
        if isinstance(exc, asyncio.CancelledError):
            self.finish("cancelled", detail="the run was cancelled")
        elif isinstance(exc, AgentRunError):
            exc.trace = trace
            exc.step = exc.step or self.index
            tool_name = exc.tool_name if isinstance(exc, (ToolCrashed, UnmockedToolCall)) else None
            cause = exc.__cause__ or exc  # the root cause names the kind of failure
            trace.error = ErrorInfo(type(cause).__name__, str(exc), tool_name)
            self.finish("error", detail=str(exc))
        else:
            trace.error = ErrorInfo(type(exc).__name__, str(exc))
            self.finish("error", detail=f"{type(exc).__name__}: {exc}")


def record(recorder: Recorder | None, trace: Trace) -> None:
    """Hand ``trace`` to ``recorder``; a failing recorder never breaks a run."""
    if recorder is not None:
        try:
            recorder.record(trace)
        except Exception:
            _logger().exception("recorder failed; the run's result is unaffected")


def _emitter(handlers: Sequence[EventHandler]) -> Callable[[Event], None]:
    log = _logger().isEnabledFor(_INFO)
    if not handlers and not log:
        return _ignore
    _bind_events()
    targets = [*handlers, log_event] if log else list(handlers)

    def emit(event: Event) -> None:
        for handler in targets:
            try:
                handler(event)
            except Exception:
                _logger().exception("event handler %r failed; the run continues", handler)

    return emit


_systems: dict[str, tuple[Message, int]] = {}  # system prompt -> its message and estimate


def _system_message(prompt: str | None) -> tuple[Message | None, int]:
    """The system message of ``prompt`` and its token estimate (messages are never mutated)."""
    if not prompt:
        return None, 0
    found = _systems.get(prompt)
    if found is None:
        if len(_systems) >= 256:
            _systems.clear()
        message = Message.system(prompt)
        found = _systems[prompt] = (message, estimate_message_tokens(message))
    return found


def _run_id() -> str:
    """A random version-4 UUID as 32 hex digits, as ``uuid.uuid4().hex`` (without its object).

    The random bytes are read 64 ids at a time (one system call instead of one per run);
    a forked child drops the ids its parent read (see ``_forget_ids``).
    """
    try:
        return _ids.pop()  # atomic: two threads never take the same id
    except IndexError:
        pass
    block = os.urandom(16 * 64).hex()
    # The 13th hex digit is the version (4), the 17th the RFC 4122 variant (8, 9, a or b).
    _ids.extend(
        [
            f"{block[i : i + 12]}4{block[i + 13 : i + 16]}{_VARIANT[block[i + 16]]}"
            f"{block[i + 17 : i + 32]}"
            for i in range(0, len(block), 32)
        ]
    )
    return _ids.pop()


_ids: list[str] = []  # run ids made from random bytes already read
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def _forget_ids() -> None:
    _ids.clear()  # the parent process uses them


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_ids)


def _args_key(call: ToolCall) -> str:
    try:
        return json.dumps(call.arguments, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(call.arguments)


def _ignore(event: Event) -> None:
    return None
