"""Tools both ways: LangChain tools as toolproof tools, toolproof tools as ``StructuredTool``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool

from toolproof._messages import ToolCall, ToolResult, error_message
from toolproof._tools import Tool
from toolproof._toolset import Toolset, as_toolset
from toolproof.errors import ToolError, UserError
from toolproof.integrations.langchain._capture import TraceCapture, active
from toolproof.integrations.langchain._messages import run_sync

__all__ = ["from_langchain", "to_langchain"]


# -- tools -----------------------------------------------------------------------------------------


def from_langchain(
    lc_tool: BaseTool,
    *,
    errors: tuple[type[BaseException], ...] = (),
    side_effects: bool = False,
    requires_approval: bool = False,
    timeout: float | None = None,
) -> Tool[..., Any]:
    """Make a LangChain tool (``@tool``, ``StructuredTool``, any ``BaseTool``) a toolproof tool.

    The name, description and argument schema are LangChain's (the model sees what it saw
    before); arguments are validated with the tool's argument types first. Async tools (with
    a coroutine, or a ``BaseTool`` that implements ``_arun``) become async tools.
    A ``ToolException`` the tool raises is reported to the model as a ``ToolError``.

    Args:
        lc_tool: The LangChain tool.
        errors: Exceptions reported to the model instead of stopping the run.
        side_effects: The tool changes the outside world (mock mode never runs it).
        requires_approval: Each call goes through the agent's approver first.
        timeout: Seconds one call may take.

    Returns:
        The toolproof tool; declare its mock with ``@the_tool.mock`` as usual.
    """
    import inspect

    if not isinstance(lc_tool, BaseTool):
        raise UserError(f"from_langchain() expects a LangChain BaseTool, got {lc_tool!r}")
    spec = convert_to_openai_tool(lc_tool)["function"]
    parameters: dict[str, Any] = spec.get("parameters") or {"type": "object", "properties": {}}
    signature, annotations = _signature(lc_tool, parameters)

    def unwrap(value: Any) -> Any:
        if isinstance(value, ToolMessage):
            return value.content
        return value

    if "coroutine" in type(lc_tool).model_fields:  # StructuredTool, Tool: async if given one
        is_async = getattr(lc_tool, "coroutine", None) is not None
    else:  # a BaseTool subclass: async if it implements _arun itself
        is_async = type(lc_tool)._arun is not BaseTool._arun

    if is_async:

        async def call_async(**kwargs: Any) -> Any:
            try:
                return unwrap(await lc_tool.ainvoke(kwargs))
            except ToolException as exc:
                raise ToolError(str(exc)) from exc

        function: Callable[..., Any] = call_async
    else:

        def call_sync(**kwargs: Any) -> Any:
            try:
                return unwrap(lc_tool.invoke(kwargs))
            except ToolException as exc:
                raise ToolError(str(exc)) from exc

        function = call_sync
    function.__name__ = lc_tool.name
    function.__doc__ = spec.get("description") or lc_tool.description
    function.__signature__ = signature  # type: ignore[attr-defined]
    function.__annotations__ = annotations
    made: Tool[..., Any] = Tool(
        function,
        name=lc_tool.name,
        description=spec.get("description") or lc_tool.description or lc_tool.name,
        errors=errors,
        side_effects=side_effects,
        requires_approval=requires_approval,
        timeout=timeout,
        extra="ignore",
        _localns={},
        _parameters=parameters,  # what the model is told is exactly LangChain's schema
    )
    made.is_async = inspect.iscoroutinefunction(function)
    return made


def _signature(lc_tool: BaseTool, parameters: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    import inspect

    from pydantic import BaseModel

    schema = lc_tool.tool_call_schema
    params = []
    annotations: dict[str, Any] = {}
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        for name, info in schema.model_fields.items():
            key = info.alias or name
            annotation = info.annotation if info.annotation is not None else Any
            default = inspect.Parameter.empty if info.is_required() else info.get_default()
            params.append(
                inspect.Parameter(
                    key, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
                )
            )
            annotations[key] = annotation
    else:
        required = set(parameters.get("required") or [])
        for key in parameters.get("properties") or {}:
            default = inspect.Parameter.empty if key in required else None
            params.append(
                inspect.Parameter(
                    key, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Any
                )
            )
            annotations[key] = Any
    return inspect.Signature(params), annotations


ErrorStyle = Literal["message", "raise"]


def to_langchain(
    tools: Toolset | Tool[..., Any] | Sequence[Tool[..., Any]],
    *,
    errors: ErrorStyle = "raise",
) -> list[StructuredTool]:
    """Make toolproof tools LangChain ``StructuredTool`` objects that run through a Toolset.

    Each call is validated and dispatched by the :class:`~toolproof.Toolset` (pass one in mock
    mode and LangChain runs your mocks, fixtures and faults; side-effecting tools without a
    mock are refused), and the full :class:`~toolproof.ToolResult` is the ``ToolMessage``'s
    artifact and reaches :class:`TraceCapture`.

    Args:
        tools: A toolset, a tool, or tools (wrapped in a real-mode toolset).
        errors: What an exception the tool raises (a declared one, or ``ToolError``)
            becomes. ``"raise"`` (default): the exception itself (rebuilt with the same
            class and message), so the LangChain agent handles it as it handles any tool's
            exception; ``create_agent`` lets it end the run, as it would without toolproof.
            ``"message"``: an error ``ToolMessage`` the model reads, as toolproof's own
            loop does. Either way, what toolproof refuses before the tool runs (invalid
            arguments, a rejected approval) and a tool timeout become error
            ``ToolMessage``s, as LangChain reports invalid arguments to the model.

    Returns:
        One ``StructuredTool`` per tool, in the toolset's order.
    """
    if errors not in ("message", "raise"):
        raise UserError(f"to_langchain(errors=...) must be 'message' or 'raise', got {errors!r}")
    toolset = as_toolset(tools)
    return [_structured(toolset, t, errors) for t in toolset]


def _structured(toolset: Toolset, t: Tool[..., Any], errors: ErrorStyle) -> StructuredTool:
    # LangChain passes ``callbacks`` (the tool run's child manager) to a function that has
    # that parameter: its parent_run_id is the tool run this call belongs to.
    async def dispatch(callbacks: Any = None, **kwargs: Any) -> tuple[str, ToolResult]:
        run_id = getattr(callbacks, "parent_run_id", None)
        result = await toolset.execute(ToolCall(t.name, dict(kwargs), id=str(run_id or "")))
        capture = active.get()
        for target in {id(c): c for c in (*_handlers_of(callbacks), capture) if c}.values():
            target._tool_result(run_id, result)
        if result.ok:
            return result.content, result
        if errors == "raise":
            raised = [e for e in (*t.errors, ToolError) if e.__name__ == result.error_type]
            if raised:
                raise raised[0](error_message(result))
        raise _Reported(result.content)

    def dispatch_sync(callbacks: Any = None, **kwargs: Any) -> tuple[str, ToolResult]:
        result: tuple[str, ToolResult] = run_sync(
            lambda: dispatch(callbacks, **kwargs), f"tool {t.name!r}"
        )
        return result

    return StructuredTool(
        name=t.name,
        description=t.description,
        args_schema=t.parameters,
        func=dispatch_sync,
        coroutine=dispatch,
        response_format="content_and_artifact",
        handle_tool_error=True if errors == "message" else _reported_only,
    )


class _Reported(ToolException):
    """An error result toolproof reports to the model as an error ``ToolMessage``."""


def _reported_only(error: ToolException) -> str:
    """The ``handle_tool_error`` of ``errors="raise"``: only toolproof's reports are messages.

    A ``ToolException`` the tool raised itself is raised on, as LangChain does with a tool
    that does not handle its errors.
    """
    if isinstance(error, _Reported):
        return str(error)
    raise error


def _handlers_of(callbacks: Any) -> list[TraceCapture]:
    handlers = getattr(callbacks, "handlers", None) or []
    return [h for h in handlers if isinstance(h, TraceCapture)]
