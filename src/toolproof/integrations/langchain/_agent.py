"""``LangChainAgent``: a LangChain or LangGraph agent wherever toolproof expects an ``Agent``."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool

from toolproof._agent import BaseAgent, RunOptions, RunResult
from toolproof._agent_run import ForeignRun
from toolproof._messages import Message
from toolproof._tools import Tool
from toolproof._toolset import Toolset
from toolproof.errors import AgentRunError, UserError
from toolproof.integrations.langchain._capture import TraceCapture, capturing
from toolproof.integrations.langchain._chat import ToolproofChatModel
from toolproof.integrations.langchain._messages import home_loop, to_langchain_messages
from toolproof.integrations.langchain._tools import ErrorStyle, to_langchain
from toolproof.models._base import Model

__all__ = ["LangChainAgent"]


# -- LangChain agents where toolproof expects an Agent -------------------------------------------

#: Builds the LangChain agent from a chat model and LangChain tools.
AgentBuilder = Callable[[BaseChatModel, list[StructuredTool]], Any]


class LangChainAgent(BaseAgent):
    """A LangChain or LangGraph agent that toolproof can run, evaluate and record.

    On each run it builds the LangChain agent from a chat model backed by this agent's
    toolproof model and LangChain versions of this agent's tools (so a suite's scripted
    model, mock mode, fixtures and faults apply), runs it with :func:`capture_trace`, and
    returns a :class:`~toolproof.RunResult` with the trace. What the builder returns decides
    how it is run: a runnable or graph (``create_agent(...)``) gets
    ``{"messages": [...history, user input]}`` through ``ainvoke``; an object with ``run``
    (sync or async) gets the input text; a callable is called with the input text.

    Args:
        build: ``build(chat_model, tools)`` returns the LangChain agent.
        model: A toolproof model or model string.
        tools: Tools or a toolset.
        system_prompt: Sent first in the messages of a runnable agent. The trace records
            the system messages the model received, whoever set them (this argument, or
            ``create_agent(..., system_prompt=...)`` in ``build``).
        tool_errors: What an exception a tool raises becomes; see :func:`to_langchain`.
            ``"raise"`` (default) lets the LangChain agent handle it as it would without
            toolproof (``create_agent`` ends the run with it); ``"message"`` turns it into an
            error message the model reads.
        name: Recorded in trace metadata.
        recorder: Receives every finished trace.

    Example:
        ```python
        def build_agent(model, tools=None):
            return LangChainAgent(
                lambda chat, lc_tools: create_agent(chat, lc_tools),
                model, tools if tools is not None else [multiply_numbers],
            )
        ```
    """

    def __init__(
        self,
        build: AgentBuilder,
        model: Model | str,
        tools: Sequence[Tool[..., Any] | Callable[..., Any]] | Toolset = (),
        *,
        system_prompt: str | None = None,
        tool_errors: ErrorStyle = "raise",
        name: str | None = None,
        recorder: Any = None,
    ) -> None:
        if not callable(build):
            raise UserError(f"LangChainAgent(build=...) must be callable, got {build!r}")
        if tool_errors not in ("message", "raise"):
            raise UserError(
                f"LangChainAgent(tool_errors=...) must be 'message' or 'raise', got {tool_errors!r}"
            )
        super().__init__(model, tools, name=name, recorder=recorder)
        self.system_prompt = system_prompt
        self.build = build
        self.tool_errors: ErrorStyle = tool_errors

    async def run_with(self, input: str, options: RunOptions) -> RunResult:
        """Run the LangChain agent on one user message; see :meth:`toolproof.Agent.run`.

        Of the budget, the wall-clock limit (``max_seconds``) applies: the run is cancelled
        and ends with stop reason ``budget``. Step limits are the LangChain agent's own.

        Raises:
            AgentRunError: The LangChain run raised; ``error.trace`` holds the partial trace.
        """
        run = ForeignRun(self, input, options.budget)
        settings = self.settings.merged(options.settings)
        chat = ToolproofChatModel(backend=run.model, settings=settings)
        lc_tools = to_langchain(run.toolset, errors=self.tool_errors)
        meta = dict(options.metadata or {})
        if self.name and "agent" not in meta:
            meta["agent"] = self.name
        captured = TraceCapture(input=input, metadata=meta, tags=options.tags)
        token = home_loop.set(asyncio.get_running_loop())
        try:
            with capturing(captured):  # records a failure in the trace on its way out
                target = self.build(chat, lc_tools)
                await run.limited(self._invoke(target, input, list(options.history)))
        except Exception as exc:
            run.note(exc)
        finally:
            home_loop.reset(token)
        trace = captured.trace
        run.describe(trace, options.history)
        trace.settings = settings.to_dict()
        failure = run.failure
        error = failure if isinstance(failure, AgentRunError) else None
        return run.finish(trace, framework="the LangChain agent", error=error)

    async def _invoke(self, target: Any, input: str, history: list[Message]) -> Any:
        import inspect

        messages = [*to_langchain_messages(history), HumanMessage(input)]
        if self.system_prompt:
            messages.insert(0, SystemMessage(self.system_prompt))
        if hasattr(target, "ainvoke"):
            return await target.ainvoke({"messages": messages})
        runner = getattr(target, "arun", None) or getattr(target, "run", None)
        if runner is None and callable(target):
            runner = target
        if runner is None:
            raise UserError(
                f"the LangChain agent builder returned {target!r}: return a runnable or graph, "
                "an object with run(input), or a callable taking the input"
            )
        if inspect.iscoroutinefunction(runner):
            return await runner(input)
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        value = await loop.run_in_executor(None, lambda: context.run(runner, input))
        if inspect.isawaitable(value):
            value = await value
        return value
