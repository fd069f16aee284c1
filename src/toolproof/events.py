"""Events an agent run emits, for progress display, logging and recording.

The loop only emits these typed events; rendering and logging are subscribers
(``Agent(on_event=...)``). A subscriber that raises is logged and ignored: observing a run
never breaks it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, TextIO

from toolproof._messages import ToolCall, ToolResult
from toolproof._trace import Step, Trace

if TYPE_CHECKING:
    import logging

__all__ = [
    "Event",
    "EventHandler",
    "ModelResponded",
    "ModelStep",
    "RunFinished",
    "RunStarted",
    "StepPrinter",
    "ToolFinished",
    "ToolStarted",
    "ToolsStep",
    "format_event",
    "log_event",
]

_INFO = 20  # logging.INFO, without importing logging to read it


@cache
def _logger() -> logging.Logger:
    """The ``toolproof`` logger; :mod:`logging` loads on first use (a run), not at import."""
    import logging

    return logging.getLogger("toolproof")


def __getattr__(name: str) -> object:
    if name == "logger":  # the module's logger, as it was before it loaded on first use
        return _logger()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run began. ``trace`` is filled in as the run proceeds."""

    trace: Trace


@dataclass(frozen=True, slots=True)
class ModelResponded:
    """The model answered a request; its tool calls (if any) run next."""

    step: Step


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """A tool call is about to run (after validation and approval)."""

    step: int
    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A tool call produced its result (ok or error)."""

    step: int
    call: ToolCall
    result: ToolResult


@dataclass(frozen=True, slots=True)
class RunFinished:
    """A run ended, whatever the reason (errors and cancellation included)."""

    trace: Trace


@dataclass(frozen=True, slots=True)
class ModelStep:
    """What ``Agent.iter`` yields after each model response.

    ``step.response`` is the model's message; its tool calls (if any) run next, unless the
    caller stops the run here.
    """

    step: Step


@dataclass(frozen=True, slots=True)
class ToolsStep:
    """What ``Agent.iter`` yields after a step's tool calls ran.

    ``step.tool_results`` holds their results (ok or error) in call order; the model is
    asked again next.
    """

    step: Step


Event = RunStarted | ModelResponded | ToolStarted | ToolFinished | RunFinished
EventHandler = Callable[[Event], None]


def format_event(event: Event) -> str | None:
    """One readable line for an event, in the style ``[step 2] tool(a=1) -> 96.0``."""
    if isinstance(event, ModelResponded):
        step = event.step
        message = step.response
        what = (
            f"{len(message.tool_calls)} tool call{'s' if len(message.tool_calls) != 1 else ''}"
            if message.tool_calls
            else "final answer"
        )
        tokens = f"{step.usage.input_tokens}+{step.usage.output_tokens} tokens"
        return f"[step {step.index}] model: {what} ({step.latency_ms:.1f} ms, {tokens})"
    if isinstance(event, ToolFinished):
        result = event.result
        arrow = "->"  # an error's text starts "Error (<kind>): "
        content = result.content if len(result.content) <= 200 else result.content[:199] + "…"
        return (
            f"[step {event.step}] {event.call.signature()} {arrow} {content} "
            f"({result.duration_ms:.1f} ms)"
        )
    if isinstance(event, RunFinished):
        trace = event.trace
        return (
            f"run {trace.id[:8]} finished: {trace.stop_reason} after {len(trace.steps)} "
            f"step{'s' if len(trace.steps) != 1 else ''} ({trace.duration_ms:.1f} ms)"
        )
    return None


def log_event(event: Event) -> None:
    """Log ``event`` on the ``toolproof`` logger at INFO level."""
    if _logger().isEnabledFor(_INFO):
        line = format_event(event)
        if line is not None:
            _logger().info(line)


class StepPrinter:
    """A subscriber that writes each step as a line: a step log of the run.

    Example:
        ```python
        agent = Agent(model, tools, on_event=StepPrinter())
        ```
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream

    def __call__(self, event: Event) -> None:
        """Print the event's line, if it has one."""
        line = format_event(event)
        if line is not None:
            import sys

            print(line, file=self.stream or sys.stdout)
