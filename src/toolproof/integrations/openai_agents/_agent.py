"""``AgentsSDKAgent``: an OpenAI Agents SDK agent wherever toolproof expects an ``Agent``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from agents import FunctionTool

from toolproof._agent import BaseAgent, RunOptions
from toolproof._agent import RunResult as ToolproofRunResult
from toolproof._messages import Message
from toolproof._tools import Tool
from toolproof._toolset import Toolset
from toolproof._trace import ErrorInfo, RequestSummary, Trace
from toolproof._trace_build import TraceBuilder, utc_now
from toolproof.errors import UserError
from toolproof.integrations.openai_agents._models import AgentsModel
from toolproof.integrations.openai_agents._tools import _known, to_function_tool
from toolproof.integrations.openai_agents._traces import trace_from_result
from toolproof.models._base import Model

__all__ = ["AgentsSDKAgent"]


# -- SDK agents where toolproof expects an Agent --------------------------------------------------


def _trace_of(model: AgentsModel, input: str) -> Trace:
    """The run's trace rebuilt from what the model was asked and answered."""
    build = TraceBuilder(Trace(id=uuid.uuid4().hex, input=input, started_at=utc_now()))
    requests = model.requests
    for index, response in enumerate(model.responses):
        step = build.step(
            response.message,
            request=RequestSummary(len(requests[index].messages)),
            usage=response.usage,
            finish_reason=response.finish_reason,
            model_name=response.model_name,
        )
        if index + 1 < len(requests):
            build.answer(requests[index + 1].messages, step)
            # (the results of calls toolproof dispatched are known whole, not only as text)
            step.tool_results = [_known("", r.call_id, r.content) or r for r in step.tool_results]
    return build.finish()


def _input_items(history: Sequence[Message], text: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in history:
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": message.text,
                }
            )
        elif message.role == "assistant":
            if message.content:
                items.append({"role": "assistant", "content": message.content})
            for c in message.tool_calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.name,
                        "arguments": c.arguments_json(),
                    }
                )
        elif message.role in ("user", "system"):
            items.append({"role": message.role, "content": message.text})
    items.append({"role": "user", "content": text})
    return items


class AgentsSDKAgent(BaseAgent):
    """An OpenAI Agents SDK agent that toolproof can run, evaluate and record.

    On each run it builds the SDK agent from an :class:`AgentsModel` backed by this agent's
    toolproof model and ``FunctionTool`` versions of its tools (so a suite's scripted model,
    mock mode, fixtures and faults apply), runs it with ``Runner.run`` and returns a
    :class:`~toolproof.RunResult` whose trace comes from :func:`trace_from_result`.

    Args:
        build: ``build(model, tools)`` returns the SDK ``Agent``.
        model: A toolproof model or model string.
        tools: Tools or a toolset.
        max_steps: The SDK's ``max_turns``; exceeding it ends the run with ``"max_steps"``.
        sdk_tracing: Let the SDK's own tracing run (its default processor exports to the
            network when ``OPENAI_API_KEY`` is set); off by default, the trace comes from the
            run's result.
        name: Recorded in trace metadata.
        recorder: Receives every finished trace.

    Example:
        ```python
        def build_agent(model, tools=None):
            return AgentsSDKAgent(
                lambda sdk_model, sdk_tools: Agent(name="support", model=sdk_model,
                                                   tools=sdk_tools),
                model, TOOLS if tools is None else tools,
            )
        ```
    """

    def __init__(
        self,
        build: Callable[[AgentsModel, list[FunctionTool]], Any],
        model: Model | str,
        tools: Sequence[Tool[..., Any] | Callable[..., Any]] | Toolset = (),
        *,
        max_steps: int = 10,
        sdk_tracing: bool = False,
        name: str | None = None,
        recorder: Any = None,
    ) -> None:
        if not callable(build):
            raise UserError(f"AgentsSDKAgent(build=...) must be callable, got {build!r}")
        if max_steps < 1:
            raise UserError(f"AgentsSDKAgent(max_steps=...) must be at least 1, got {max_steps}")
        super().__init__(model, tools, name=name, recorder=recorder)
        self.max_steps = max_steps
        self.build = build
        self.sdk_tracing = sdk_tracing

    async def run_with(self, input: str, options: RunOptions) -> ToolproofRunResult:
        """Run the SDK agent on one user message; see :meth:`toolproof.Agent.run`.

        Of the budget, the wall-clock limit (``max_seconds``) applies: the run is cancelled
        and ends with stop reason ``budget``. Turns are limited by ``max_steps``.

        Raises:
            AgentRunError: The SDK run raised; ``error.trace`` holds the partial trace.
        """
        from agents import RunConfig, Runner
        from agents.exceptions import AgentsException, MaxTurnsExceeded

        from toolproof._agent_run import ForeignRun
        from toolproof.errors import AgentRunError

        run = ForeignRun(self, input, options.budget)
        sdk_model = AgentsModel(run.model)
        sdk_agent = self.build(sdk_model, to_function_tool(run.toolset))
        items: Any = _input_items(options.history, input)
        data: Any = await run.call(
            Runner.run(
                sdk_agent,
                items,
                max_turns=self.max_steps,
                run_config=RunConfig(tracing_disabled=not self.sdk_tracing),
            )
        )
        failure = run.failure
        if isinstance(failure, AgentsException):
            data = failure.run_data
        if data is not None and (data.raw_responses or not sdk_model.responses):
            trace = trace_from_result(data)
        else:  # the SDK kept nothing: rebuild the steps from what the model was asked
            trace = _trace_of(sdk_model, input)
        trace.input = input
        run.describe(trace, options.history)
        instructions = getattr(sdk_agent, "instructions", None)
        trace.system_prompt = instructions if isinstance(instructions, str) else None
        named = {"agent": self.name} if self.name else {}
        trace.metadata = {**dict(options.metadata or {}), **named}
        trace.tags = list(options.tags)
        trace.ended_at = utc_now()
        trace.duration_ms = (time.perf_counter() - run.started) * 1000
        if isinstance(failure, MaxTurnsExceeded):
            trace.stop_reason, trace.output = "max_steps", None
            trace.stop_detail = f"stopped after {self.max_steps} turns (max_turns): {failure}"
            run.failure = None
        elif failure is not None and not run.timed_out:
            root = failure.__cause__ if failure.__cause__ is not None else failure
            trace.stop_reason, trace.output = "error", None
            trace.error = ErrorInfo(
                type(root).__name__, str(failure), getattr(root, "tool_name", None)
            )
            trace.stop_detail = str(failure)
        cause = failure.__cause__ if failure is not None else None
        error = cause if isinstance(cause, AgentRunError) else None  # a tool bug, a refused call
        return run.finish(trace, framework="the Agents SDK run", error=error)
