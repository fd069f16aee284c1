"""The one way a ``Trace`` is assembled, whichever producer read the run.

Every producer (the agent loop, the wire server, the OpenAI-format import, LangChain capture,
the Agents SDK, OpenTelemetry import, the MCP server) parses its own format and feeds a
:class:`TraceBuilder`, which owns what every trace must agree on:

- **steps** are numbered from 1, in the order they are added;
- **pairing**: a tool result belongs to the step whose call it answers, takes that call's
  name, and a step's results are kept in call order (results that answer no call follow,
  in the order they came); a call is answered once;
- **sums**: the trace's usage is the sum of its steps', its cost the sum of their costs
  when every step has one;
- **the end**: a producer that knows why its run ended says so; one that only saw the
  conversation gets the one rule for recorded conversations (see :meth:`TraceBuilder.finish`);
- **versions**: tool schemas and the system prompt are hashed by the rule of
  :func:`toolproof._trace.schema_hash` and :func:`toolproof._trace.stable_hash`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from toolproof._messages import Message, ToolResult, Usage, sum_usage
from toolproof._trace import ErrorInfo, RequestSummary, Step, StopReason, Trace, stable_hash

__all__ = ["INCOMPLETE_DETAIL", "TraceBuilder", "split_request", "utc_now"]

#: Why a recorded conversation that ended right after tool calls has no answer.
INCOMPLETE_DETAIL = "the recorded conversation ended after tool calls, without an answer"


def split_request(messages: Sequence[Message]) -> tuple[str | None, list[Message], str]:
    """A run's first request as its system prompt, history and input.

    The input is the last user message; the history, the messages before it other than
    system messages; the system prompt, the system messages' text (``None``: none).
    """
    system = "\n\n".join(m.text for m in messages if m.role == "system") or None
    rest = [m for m in messages if m.role != "system"]
    last = max((i for i, m in enumerate(rest) if m.role == "user"), default=None)
    if last is None:
        return system, rest, ""
    return system, rest[:last], rest[last].text


class TraceBuilder:
    """Builds one :class:`~toolproof.Trace` from what a producer read, step by step.

    Args:
        trace: The trace to fill: its identity, input, history, tools and metadata as the
            producer knows them; its steps are added through the builder.
        mode_from_results: The producer does not know which implementations answered:
            the trace's ``tool_mode`` is ``"mock"`` when a result says it was mocked.
    """

    __slots__ = ("mode_from_results", "trace")

    def __init__(self, trace: Trace, *, mode_from_results: bool = False) -> None:
        self.trace = trace
        self.mode_from_results = mode_from_results

    def step(
        self,
        response: Message,
        *,
        request: RequestSummary | None = None,
        usage: Usage | None = None,
        finish_reason: str | None = None,
        model_name: str | None = None,
        offset_ms: float = 0.0,
        latency_ms: float = 0.0,
        parse_errors: Sequence[str] = (),
        cost: float | None = None,
    ) -> Step:
        """Add the next model call (numbered after the last) and return its step."""
        steps = self.trace.steps
        step = Step(
            len(steps) + 1,
            RequestSummary(0) if request is None else request,
            response,
            offset_ms,
            latency_ms,
            Usage() if usage is None else usage,
            finish_reason,
            model_name,
            [],
            list(parse_errors),
            cost,
        )
        steps.append(step)
        return step

    # -- pairing -----------------------------------------------------------------------------

    def result(self, result: ToolResult, step: Step | None = None) -> None:
        """Add a tool result to ``step`` (default: the last), paired with the call it answers.

        A result whose call id answers no call of the step is kept after the paired ones.
        """
        target = step if step is not None else self.trace.steps[-1]
        calls = target.response.tool_calls
        call = next((c for c in calls if c.id == result.call_id), None)
        if call is not None and not result.name:
            result.name = call.name
        results = target.tool_results
        results.append(result)
        if len(results) > 1:
            order = {c.id: i for i, c in enumerate(calls)}
            results.sort(key=lambda r: order.get(r.call_id, len(order)))

    def answer(self, messages: Iterable[Message], step: Step | None = None) -> None:
        """Tool messages that answer open calls of ``step`` (default: the last) as its results.

        What a request sends back is what the model saw: each tool message whose id names a
        call of the step not answered yet becomes that call's result (its text, and its
        status when the message has one); other messages are not results of this step.
        """
        steps = self.trace.steps
        if step is None:
            if not steps:
                return
            step = steps[-1]
        open_calls = {c.id: c for c in step.response.tool_calls}
        for r in step.tool_results:
            open_calls.pop(r.call_id, None)
        for message in messages:
            if message.role != "tool" or message.tool_call_id not in open_calls:
                continue
            call = open_calls.pop(message.tool_call_id)
            status = message.status or "ok"
            error_type = "ToolMessage" if status == "error" else None
            self.result(
                ToolResult(call.id, call.name, status, message.text, None, error_type), step
            )

    # -- the end -----------------------------------------------------------------------------

    def finish(
        self,
        reason: StopReason | None = None,
        *,
        output: str | None = None,
        detail: str | None = None,
        error: ErrorInfo | None = None,
    ) -> Trace:
        """Sum usage and cost, hash the system prompt, and end the trace.

        With ``reason`` the producer says why its run ended. Without it the run is read off
        a recorded conversation, and ended by the one rule for those: an ``error`` stops it
        with that error; a last step that asked for tools and got no answer leaves it
        ``cancelled`` (the conversation was cut there: a replay stops there too); a last step
        without tool calls is its final answer; no step at all is an error.
        """
        trace = self.trace
        steps = trace.steps
        trace.usage = sum_usage([step.usage for step in steps])
        costs = [step.cost for step in steps if step.cost is not None]
        trace.cost = sum(costs) if costs and len(costs) == len(steps) else None
        if reason is None:
            reason, output, detail = _ending(steps, error)
        trace.stop_reason, trace.output, trace.stop_detail = reason, output, detail
        if error is not None:
            trace.error = error
        if trace.system_prompt and trace.system_prompt_hash is None:
            trace.system_prompt_hash = stable_hash(trace.system_prompt)
        if not trace.model:
            trace.model = next((s.model_name for s in steps if s.model_name), None) or ""
        if self.mode_from_results and any(r.mocked for s in steps for r in s.tool_results):
            trace.tool_mode = "mock"
        return trace


def _ending(steps: list[Step], error: ErrorInfo | None) -> tuple[StopReason, str | None, Any]:
    """The stop reason, output and detail of a recorded conversation (see ``finish``)."""
    if error is not None:
        return "error", None, f"{error.type}: {error.message}"
    if not steps:
        return "error", None, "no model call was recorded"
    last = steps[-1].response
    if last.tool_calls:
        pending = ", ".join(call.signature() for call in last.tool_calls)
        return "cancelled", None, f"{INCOMPLETE_DETAIL} ({pending})"
    output = last.content or ""
    return "final", output, None if output else "the model returned an empty answer"


_second: tuple[int, str] = (-1, "")  # the last whole second and its ISO 8601 text, with "."
_millis: tuple[str, ...] = ()  # "000Z" to "999Z", made by the first call


def utc_now() -> str:
    """UTC now as ``2026-12-01T11:37:22.008Z`` (milliseconds truncated, as ``isoformat`` does).

    Formatting the date costs more than the rest of a trace's bookkeeping, so the text of the
    current second is kept (one tuple, replaced whole, so threads never see half of it) and
    the milliseconds are looked up, not formatted.
    """
    global _second, _millis
    whole, fraction = divmod(time.time_ns(), 1_000_000_000)  # the clock datetime.now() reads
    second = _second
    if second[0] != whole:
        second = _second = (whole, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(whole)))
        if not _millis:
            _millis = tuple(f"{ms:03d}Z" for ms in range(1000))
    return second[1] + _millis[fraction // 1_000_000]
