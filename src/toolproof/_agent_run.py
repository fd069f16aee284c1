"""How a run is driven: step by step, to the end, or by another framework's loop.

:class:`AgentRun` steps toolproof's loop (``Agent.iter``) or drains it (``Agent.run``);
:class:`ForeignRun` keeps the same promises for the LangChain and Agents SDK adapters.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from toolproof._messages import Message
from toolproof._run import Budget, Run, RunResult, record
from toolproof._run_clock import Stop
from toolproof._trace import Trace
from toolproof.errors import AgentRunError

if TYPE_CHECKING:
    from toolproof._agent import BaseAgent
    from toolproof.events import ModelStep, ToolsStep

    Item = ModelStep | ToolsStep | RunResult

__all__ = ["AgentRun", "ForeignRun"]

_T = TypeVar("_T")


class AgentRun:
    """One run of an agent, step by step: what :meth:`toolproof.Agent.iter` returns.

    Iterate it (``async for``) to get a :class:`~toolproof.events.ModelStep` after each model
    response, a :class:`~toolproof.events.ToolsStep` after each step's tool calls ran, and last
    the :class:`~toolproof.RunResult`. Leaving the ``async with`` block before the end stops
    the run: its result has ``stop_reason="cancelled"`` and the trace is complete up to there.

    Attributes:
        result: The result once the run ended, else ``None``.
    """

    def __init__(
        self, run: Run | None, steps: Callable[[], AsyncIterator[ModelStep | ToolsStep]]
    ) -> None:
        self._run = run
        self._make = steps
        self._steps: AsyncIterator[ModelStep | ToolsStep] | None = None
        self._done = False
        self.result: RunResult | None = None

    @property
    def trace(self) -> Trace | None:
        """The trace so far (complete once the run ended)."""
        if self.result is not None:
            return self.result.trace
        return self._run.trace if self._run is not None else None

    @property
    def messages(self) -> list[Message]:
        """The conversation so far, without the system prompt."""
        if self.result is not None:
            return self.result.messages
        return list(self._run.conversation) if self._run is not None else []

    async def __aenter__(self) -> AgentRun:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._done:
            return
        self._done = True
        if self._steps is not None:
            closing = getattr(self._steps, "aclose", None)
            if closing is not None:
                await closing()
        if self._run is not None and self._run.result is None:
            if self._steps is None:
                self._run.start()
            import asyncio

            cancelled = isinstance(exc, asyncio.CancelledError)
            detail = "the run was cancelled" if cancelled else "the caller stopped the run early"
            self.result = self._run.finish("cancelled", detail=detail)

    def __aiter__(self) -> AgentRun:
        return self

    async def __anext__(self) -> Item:
        if self._done:
            raise StopAsyncIteration
        run = self._run
        if self._steps is None:
            if run is not None:
                run.start()
            self._steps = self._make()
        if run is not None:
            run.clock.bind()  # this step waits in the caller's task
        try:
            return await self._steps.__anext__()
        except Stop as stop:
            assert run is not None
            self.result = run.finish(stop.reason, stop.output, stop.detail)
        except StopAsyncIteration:  # an agent that yields only its result (no own loop)
            if self.result is None:
                raise
        except BaseException as exc:
            self._done = True
            if run is not None and run.result is None:
                run.fail(exc)
            raise
        self._done = True
        return self.result

    @staticmethod
    async def complete(run: Run) -> RunResult:
        """What ``Agent.run`` does: the loop of ``Agent._steps`` to its end, in one coroutine.

        The same calls in the same order, without the generator and the step objects an
        ``Agent.iter`` caller gets (tests/core/test_agent_iter.py checks that both give the
        same result, trace and events).
        """
        run.start()  # notes the task the run waits in
        try:
            while True:
                run.check()  # steps and model calls
                step = await run.ask()
                run.final(step)  # a final answer ends the run
                run.check(step)  # tokens, cost, repeated calls: before any tool runs
                await run.run_tools(step)
        except Stop as stop:
            return run.finish(stop.reason, stop.output, stop.detail)
        except BaseException as exc:
            run.fail(exc)
            raise

    @staticmethod
    def whole(run: Callable[[], Coroutine[Any, Any, RunResult]]) -> AgentRun:
        """An ``AgentRun`` of a loop toolproof does not step (another framework's): the result."""

        async def steps() -> AsyncIterator[ModelStep | ToolsStep]:
            driver.result = await run()
            nothing: tuple[ModelStep | ToolsStep, ...] = ()
            for item in nothing:  # an async generator that yields no step
                yield item

        driver = AgentRun(None, steps)
        return driver


class ForeignRun:
    """The limits and the end of a run whose loop is another framework's.

    ``LangChainAgent`` and ``AgentsSDKAgent`` run a framework's own agent; this keeps what
    every toolproof run promises: ``Agent.override`` applies, the wall-clock limit cancels
    the run and ends it with ``budget``, the recorder gets the trace, and a failed run
    raises one :class:`~toolproof.errors.AgentRunError` carrying it.
    """

    def __init__(self, agent: BaseAgent, input: str, budget: Budget | None) -> None:
        self.agent = agent
        self.model, self.toolset = agent.resolve(input)
        self.limit = (budget or agent.budget).max_seconds
        self.started = time.perf_counter()
        self.timed_out = False
        self.failure: Exception | None = None

    async def call(self, awaitable: Awaitable[_T]) -> _T | None:
        """Await the framework's run within the time limit; keep its exception for later."""
        try:
            return await self.limited(awaitable)
        except Exception as exc:
            self.note(exc)
        return None

    async def limited(self, awaitable: Awaitable[_T]) -> _T:
        """Await the framework's run within the time limit (``TimeoutError`` past it)."""
        import asyncio

        return await asyncio.wait_for(awaitable, self.limit)

    def note(self, exc: Exception) -> None:
        """Keep how the framework's run failed: past the time limit, or its exception."""
        import asyncio

        if isinstance(exc, asyncio.TimeoutError):
            self.timed_out = True
        else:
            self.failure = exc

    def describe(self, trace: Trace, history: Sequence[Message]) -> None:
        """Record the run's model, tools and history in ``trace``."""
        trace.model = self.model.name
        trace.tools = self.toolset.infos()
        trace.tool_mode = self.toolset.mode
        trace.history = list(history)

    def finish(
        self, trace: Trace, *, framework: str, error: AgentRunError | None = None
    ) -> RunResult:
        """Close the run: the time-limit stop, the recorder, then the result or the error.

        Args:
            trace: The run's trace as the framework left it.
            framework: Names the failed run in the error (``"the LangChain agent"``).
            error: The toolproof error behind the failure (a tool bug, a refused real call),
                raised as it is with the trace attached.
        """
        if self.timed_out:
            trace.stop_reason, trace.output = "budget", None
            assert self.limit is not None
            trace.stop_detail = f"the run took longer than max_seconds={self.limit:g}"
        record(self.agent.recorder, trace)
        failure = self.failure
        if failure is not None:
            steps = len(trace.steps)
            if error is not None:
                error.trace, error.step = trace, error.step or steps
                raise error
            raise AgentRunError(
                f"{framework} failed at step {steps}: {type(failure).__name__}: {failure}",
                trace=trace,
                step=steps,
            ) from failure
        conversation = [m for m in trace.messages if m.role != "system"]
        return RunResult(trace.output, trace.stop_reason, trace, conversation)
