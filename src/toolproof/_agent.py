"""The agent loop: model -> tool calls -> model ... until a final answer or a stop condition.

Every agent toolproof runs keeps one contract, :class:`Runnable`: a model and tools that
``override`` can swap, a recorder, and ``run_with(input, RunOptions)``. :class:`Agent` runs
toolproof's own loop; the agents toolproof did not build (``ExternalAgent``,
``LangChainAgent``, ``AgentsSDKAgent``) run another loop behind the same contract. Their
common entry points (``run``, ``run_sync``, ``iter``, ``session``, ``override``) are made
once, in :class:`BaseAgent`, from ``run_with``.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from toolproof._agent_run import AgentRun
from toolproof._memory import Memory, MemoryState
from toolproof._messages import Message, ModelSettings
from toolproof._pricing import DEFAULT_PRICES, Price
from toolproof._run import Budget, Recorder, Run, RunOptions, RunResult
from toolproof._thread_loop import blocking
from toolproof._tools import Tool
from toolproof._toolset import Approver, Toolset
from toolproof._trace import Trace, stable_hash
from toolproof.errors import AgentRunError, UserError
from toolproof.models._base import Model

if TYPE_CHECKING:
    from toolproof.events import EventHandler, ModelStep, ToolsStep

__all__ = [
    "Agent",
    "BaseAgent",
    "Budget",
    "Recorder",
    "RunOptions",
    "RunResult",
    "Runnable",
    "Session",
]


@dataclass(slots=True)
class _Override:
    """What ``Agent.override`` swaps in for the runs of one context."""

    model: Model | None = None
    toolset: Toolset | None = None


#: The memory state of runs without memory: never read or written (see ``Run.ask``).
_UNUSED_STATE = MemoryState()

_overrides: contextvars.ContextVar[dict[int, _Override] | None] = contextvars.ContextVar(
    "toolproof_agent_overrides", default=None
)


@runtime_checkable
class Runnable(Protocol):
    """The run contract: what evals, replay, the server and the pytest plugin run.

    toolproof's :class:`Agent` keeps it, and so do the agents it did not build. Suites,
    replay and ``run_agent`` swap the model and the tools through ``override`` (so mocks,
    fixtures and scripted models apply), read the tools from ``toolset``, and run one user
    message with ``run_with``.
    """

    model: Model
    toolset: Toolset
    recorder: Recorder | None
    name: str | None

    def override(
        self, *, model: Model | None = None, tools: Toolset | Sequence[Tool[..., Any]] | None = None
    ) -> AbstractContextManager[None]:
        """Replace the model and/or tools of this agent's runs in the current context."""

    async def run_with(self, input: str, options: RunOptions) -> RunResult:
        """Run the agent on one user message with ``options``."""


def _as_model(model: Model | str, what: str) -> Model:
    if isinstance(model, str):
        from toolproof.models import model_from_string

        model = model_from_string(model)
    if not isinstance(model, Model):
        raise UserError(f"{what}(model=...) needs a Model or a model string, got {model!r}")
    return model


class BaseAgent:
    """The entry points every agent shares, each made from the agent's ``run_with``.

    Args:
        model: A :class:`~toolproof.models.Model`, or a model string.
        tools: The agent's tools.
        settings: Generation settings sent with every request.
        budget: Limits per run.
        recorder: Receives every finished trace.
        name: A name for the agent, recorded in trace metadata.
    """

    def __init__(
        self,
        model: Model | str,
        tools: Sequence[Tool[..., Any] | Callable[..., Any]] | Toolset = (),
        *,
        settings: ModelSettings | None = None,
        budget: Budget | None = None,
        recorder: Recorder | None = None,
        name: str | None = None,
    ) -> None:
        self.model = _as_model(model, type(self).__name__)
        self.toolset = tools if isinstance(tools, Toolset) else Toolset(tools)
        self.settings = settings or ModelSettings()
        self.budget = budget or Budget()
        self.recorder = recorder
        self.name = name

    async def run_with(self, input: str, options: RunOptions) -> RunResult:
        """Run the agent on one user message with ``options``; see :meth:`run`."""
        raise NotImplementedError(f"{type(self).__name__} does not implement run_with")

    def iter_with(self, input: str, options: RunOptions) -> AgentRun:
        """:meth:`iter` with ``options``: here the whole run, then its result."""
        return AgentRun.whole(lambda: self.run_with(input, options))

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
        options = RunOptions(history, metadata, tags, settings, memory_state, budget)
        return await self.run_with(input, options)

    run_sync = blocking(
        run,
        "Agent.run_sync",
        "`await ...run()`",
        thread_loop=True,
        doc="""Run the agent from synchronous code, like ``asyncio.run(agent.run(...))``.

        Takes the same arguments as :meth:`run`. Each thread keeps one event loop for its
        calls (building a loop per call would cost more than a scripted run); several
        threads may call at once, and a forked child process gets its own loop. Ctrl-C
        cancels the run (its trace is kept) and is then raised.

        Raises:
            UserError: Called from inside a running event loop (use ``await agent.run``).
        """,
    )

    def iter(
        self,
        input: str,
        *,
        history: Sequence[Message] = (),
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        settings: ModelSettings | None = None,
        memory_state: MemoryState | None = None,
        budget: Budget | None = None,
    ) -> AgentRun:
        """Run the agent one step at a time: inspect each step, stop when you want.

        Takes the same arguments as :meth:`run`. The returned run is an async context
        manager and an async iterator: it yields a :class:`~toolproof.events.ModelStep` after
        each model response, a :class:`~toolproof.events.ToolsStep` after the step's tool
        calls ran, and last the :class:`~toolproof.RunResult` (also ``run.result``), the same
        result and trace :meth:`run` gives. Leaving the ``async with`` block early ends the
        run with ``stop_reason="cancelled"``; its trace and recorder call are kept. Errors
        are raised from the iteration as :meth:`run` raises them. The wall-clock limit
        counts the time spent between steps too.

        Agents that wrap another framework's loop (LangChain, the Agents SDK) yield only the
        result.

        Example:
            ```python
            async with agent.iter("What is 12 times 8?") as run:
                async for step in run:
                    if isinstance(step, ModelStep) and step.step.response.tool_calls:
                        print("calls", [c.name for c in step.step.response.tool_calls])
            print(run.result.output)
            ```
        """
        options = RunOptions(history, metadata, tags, settings, memory_state, budget)
        return self.iter_with(input, options)

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

    def resolve(self, input: str) -> tuple[Model, Toolset]:
        """The model and tools of a run on ``input`` (``override`` applies)."""
        if not isinstance(input, str):
            raise UserError(f"Agent.run(input=...) must be a string, got {type(input).__name__}")
        override = (_overrides.get() or {}).get(id(self))
        model = override.model if override and override.model else self.model
        toolset = override.toolset if override and override.toolset else self.toolset
        return model, toolset


class Agent(BaseAgent):
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
            arguments), or the same cycle of up to four calls (``A, B, A, B``), is made this
            many times in a row; ``None`` disables the check.
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
        super().__init__(
            model, tools, settings=settings, budget=budget, recorder=recorder, name=name
        )
        if max_steps < 1:
            raise UserError(f"Agent(max_steps=...) must be at least 1, got {max_steps}")
        if max_repeated_calls is not None and max_repeated_calls < 2:
            raise UserError("Agent(max_repeated_calls=...) must be at least 2, or None to disable")
        self.system_prompt = system_prompt
        self.system_prompt_hash = stable_hash(system_prompt) if system_prompt else None
        self.max_steps = max_steps
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

    # -- the run contract ---------------------------------------------------------------------

    async def run_with(self, input: str, options: RunOptions) -> RunResult:
        """Run the agent on one user message with ``options``; see :meth:`run`."""
        return await AgentRun.complete(self._own_run(input, options))

    def iter_with(self, input: str, options: RunOptions) -> AgentRun:
        """:meth:`iter` with ``options``: toolproof's loop, one step at a time."""
        run = self._own_run(input, options)
        return AgentRun(run, lambda: self._steps(run))

    def _own_run(self, input: str, options: RunOptions) -> Run:
        """The state of a run of toolproof's own loop (``run`` and ``iter`` both start here)."""
        model, toolset = self.resolve(input)
        memory_state = options.memory_state
        return Run(
            self,
            input,
            model=model,
            toolset=toolset,
            history=list(options.history),
            settings=self.settings.merged(options.settings),
            metadata=dict(options.metadata or {}),
            tags=list(options.tags),
            memory_state=memory_state or (_UNUSED_STATE if self.memory is None else MemoryState()),
            budget=options.budget or self.budget,
        )

    # -- the loop ----------------------------------------------------------------------------

    async def _steps(self, run: Run) -> AsyncIterator[ModelStep | ToolsStep]:
        """The agent loop. Every way out (final answer, a limit) raises ``_Stop`` from ``run``.

        ``Agent.run`` runs the same calls in the same order in one coroutine
        (``AgentRun.complete``): change both together.
        """
        from toolproof.events import ModelStep, ToolsStep  # with the first run, not at import

        while True:
            run.check()  # steps and model calls
            step = await run.ask()  # memory, then the model; the answer is the next step
            yield ModelStep(step)
            run.final(step)  # a final answer ends the run
            run.check(step)  # tokens, cost, repeated calls: before any tool runs
            await run.run_tools(step)  # parallel calls concurrently, results in call order
            yield ToolsStep(step)


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

    def __init__(self, agent: Runnable) -> None:
        self.agent = agent
        self.history: list[Message] = []
        self.traces: list[Trace] = []
        self.memory_state = MemoryState()

    async def run(self, input: str, **options: Any) -> RunResult:
        """Run one user turn; on success the turn joins the history.

        Args:
            input: The user's message.
            **options: The other options of :meth:`Agent.run` (``metadata``, ``tags``,
                ``settings``, ``budget``); the session gives the history and memory state.
        """
        run = RunOptions(history=self.history, memory_state=self.memory_state, **options)
        try:
            result = await self.agent.run_with(input, run)
        except AgentRunError as exc:
            if exc.trace is not None:
                self.traces.append(exc.trace)
            raise
        self.history = result.messages
        self.traces.append(result.trace)
        return result

    run_sync = blocking(
        run,
        "Session.run_sync",
        "`await ...run()`",
        thread_loop=True,
        doc="Run one user turn from synchronous code (the arguments of :meth:`run`).",
    )
