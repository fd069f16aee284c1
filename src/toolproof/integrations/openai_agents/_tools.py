"""Tools both ways: toolproof tools as SDK ``FunctionTool`` objects, and back."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from agents import FunctionTool
from agents.tool_context import ToolContext

from toolproof._messages import ToolCall, ToolResult
from toolproof._tools import Tool
from toolproof._toolset import Toolset, as_toolset
from toolproof.errors import UserError

__all__ = ["from_function_tool", "to_function_tool"]


# -- tools ----------------------------------------------------------------------------------------

_results_lock = threading.Lock()
#: ToolResults of toolproof-dispatched calls by (SDK trace id, call id), for TraceProcessor
#: and trace_from_result; bounded, oldest first out.
_results: dict[tuple[str, str], ToolResult] = {}
_MAX_RESULTS = 10_000


def _current_trace_id() -> str:
    from agents.tracing import get_current_trace

    current = get_current_trace()
    return str(getattr(current, "trace_id", "") or "")


def _remember(result: ToolResult) -> None:
    with _results_lock:
        if len(_results) >= _MAX_RESULTS:
            for key in list(_results)[: _MAX_RESULTS // 2]:
                del _results[key]
        _results[(_current_trace_id(), result.call_id)] = result


def _known(trace_id: str, call_id: str, content: str | None = None) -> ToolResult | None:
    with _results_lock:
        if trace_id:
            return _results.get((trace_id, call_id))
        # Without the SDK trace id: the latest result of this call id with this content.
        for (_, key), result in reversed(_results.items()):
            if key == call_id and (content is None or result.content == content):
                return result
        return None


def to_function_tool(
    tools: Toolset | Tool[..., Any] | Sequence[Tool[..., Any]],
) -> list[FunctionTool]:
    """Make toolproof tools SDK ``FunctionTool`` objects that run through a Toolset.

    Calls are validated and dispatched by the :class:`~toolproof.Toolset` (pass one in mock
    mode for mocks, fixtures and faults; side-effecting tools without a mock are refused).
    Errors the model can act on come back to it as the tool's output text; bugs in a tool
    (``ToolCrashed``) and refused real calls (``UnmockedToolCall``) stop the run.

    Returns:
        One ``FunctionTool`` per tool, in the toolset's order.
    """
    toolset = as_toolset(tools)
    return [_function_tool(toolset, t) for t in toolset]


def _function_tool(toolset: Toolset, t: Tool[..., Any]) -> FunctionTool:
    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        call_id = getattr(context, "tool_call_id", "") or uuid.uuid4().hex
        call = ToolCall.from_json_arguments(t.name, arguments, call_id)
        result = await toolset.execute(call)
        _remember(result)
        return result.content

    return FunctionTool(
        name=t.name,
        description=t.description,
        params_json_schema=t.parameters,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


def from_function_tool(
    function_tool: FunctionTool,
    *,
    errors: tuple[type[BaseException], ...] = (),
    side_effects: bool = False,
) -> Tool[..., Any]:
    """Make an SDK ``FunctionTool`` (from ``@function_tool``) a toolproof tool.

    The name, description and JSON Schema are the SDK tool's. The tool runs through the
    SDK's own invocation (its argument parsing and error function); an error message the SDK
    returns is the tool's output text.
    """
    import inspect

    if not isinstance(function_tool, FunctionTool):
        raise UserError(f"from_function_tool() expects an SDK FunctionTool, got {function_tool!r}")
    parameters = dict(function_tool.params_json_schema)
    required = set(parameters.get("required") or [])
    params = [
        inspect.Parameter(
            key,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if key in required else None,
            annotation=Any,
        )
        for key in parameters.get("properties") or {}
    ]

    async def run(**kwargs: Any) -> Any:
        arguments = json.dumps({k: v for k, v in kwargs.items() if v is not None or k in required})
        context = ToolContext(
            context=None,
            tool_name=function_tool.name,
            tool_call_id=f"toolproof_{uuid.uuid4().hex[:12]}",
            tool_arguments=arguments,
        )
        return await function_tool.on_invoke_tool(context, arguments)

    run.__name__ = function_tool.name
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: Any for p in params}
    made: Tool[..., Any] = Tool(
        run,
        name=function_tool.name,
        description=function_tool.description or function_tool.name,
        errors=errors,
        side_effects=side_effects,
        extra="ignore",
        _localns={},
        _parameters=parameters,
    )
    return made
