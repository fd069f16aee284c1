"""Toolset: an agent's tools, which implementation answers them, and how a call is run.

A call is validated, approved, run (real or mock) and turned into a ``ToolResult``.

The error contract lives here: declared errors, ``ToolError``, validation failures,
malformed JSON and unknown tool names become ``status="error"`` results for the model; any
other exception is a bug and stops the run (``ToolCrashed``).
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from toolproof._messages import ToolCall, ToolDefinition, ToolResult
from toolproof._tools import ArgumentsInvalid, Tool
from toolproof._trace import ToolInfo
from toolproof.errors import (
    AgentRunError,
    MissingFixture,
    ToolCrashed,
    ToolError,
    UnmockedToolCall,
    UserError,
)

__all__ = [
    "Approval",
    "ApprovalRequest",
    "Approver",
    "MockProvider",
    "ToolMode",
    "Toolset",
]

ToolMode = Literal["real", "mock"]


@runtime_checkable
class MockProvider(Protocol):
    """Anything that can supply mock implementations by tool name (fixture mocks do)."""

    def mock_for(self, tool: Tool[..., Any]) -> Callable[..., Any] | None:
        """The implementation that answers ``tool`` in mock mode, or ``None``."""


@dataclass(frozen=True, slots=True)
class Approval:
    """The approver's decision about one tool call.

    Use :meth:`approve`, :meth:`reject` or :meth:`edit`.

    Attributes:
        action: ``"approve"``, ``"reject"`` or ``"edit"``.
        reason: Why the call was rejected (shown to the model).
        arguments: The replacement arguments for ``"edit"``.
    """

    action: Literal["approve", "reject", "edit"]
    reason: str | None = None
    arguments: dict[str, Any] | None = None

    @classmethod
    def approve(cls) -> Approval:
        """Run the call as the model asked."""
        return cls("approve")

    @classmethod
    def reject(cls, reason: str = "the user rejected this call") -> Approval:
        """Do not run the call; the model receives an error result with ``reason``."""
        return cls("reject", reason=reason)

    @classmethod
    def edit(cls, arguments: dict[str, Any]) -> Approval:
        """Run the call with other arguments (validated again)."""
        return cls("edit", arguments=dict(arguments))


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What an approver is asked about.

    Attributes:
        tool: The tool to run.
        call: The model's call.
        arguments: The validated arguments, as the tool will receive them.
    """

    tool: Tool[..., Any]
    call: ToolCall
    arguments: dict[str, Any] = field(default_factory=dict)


#: An approver returns an :class:`Approval` (or ``True`` / ``False`` as shorthand), directly
#: or from a coroutine.
Approver = Callable[[ApprovalRequest], Approval | bool | Awaitable[Approval | bool]]


class Toolset:
    """The tools of an agent and which implementation answers each of them.

    Args:
        tools: Tools, or plain typed functions (made into tools with ``@tool`` defaults).
        mode: ``"real"`` runs real implementations; ``"mock"`` runs each tool's mock. In mock
            mode a tool without a mock runs for real unless it has ``side_effects=True``, in
            which case the run fails naming the tool.
        overrides: Per-tool modes that win over ``mode`` (``{"get_weather": "real"}``).
        mocks: Extra mock implementations: a mapping of tool name to function, or providers
            such as fixture mocks; they win over mocks declared with ``@my_tool.mock``.

    Raises:
        UserError: Two tools share a name, or an override or mock names an unknown tool.
    """

    def __init__(
        self,
        tools: Iterable[Tool[..., Any] | Callable[..., Any]] = (),
        *,
        mode: ToolMode = "real",
        overrides: Mapping[str, ToolMode] | None = None,
        mocks: Mapping[str, Callable[..., Any]]
        | MockProvider
        | Iterable[MockProvider]
        | None = None,
    ) -> None:
        from toolproof._tools import tool as make_tool

        if mode not in ("real", "mock"):
            raise UserError(f"tool mode must be 'real' or 'mock', got {mode!r}")
        self.tools: dict[str, Tool[..., Any]] = {}
        for item in tools:
            t = item if isinstance(item, Tool) else make_tool(item)
            if t.name in self.tools:
                raise UserError(f"two tools are named {t.name!r}; tool names must be unique")
            self.tools[t.name] = t
        self.mode: ToolMode = mode
        self.overrides: dict[str, ToolMode] = dict(overrides or {})
        for name, value in self.overrides.items():
            self._check_name(name, "overrides")
            if value not in ("real", "mock"):
                raise UserError(f"override for {name!r} must be 'real' or 'mock', got {value!r}")
        self._mock_map: dict[str, Callable[..., Any]] = {}
        self._providers: list[MockProvider] = []
        self._definitions: list[ToolDefinition] | None = None
        self._infos: list[ToolInfo] | None = None
        self._add_mocks(mocks)

    def _add_mocks(
        self,
        mocks: Mapping[str, Callable[..., Any]] | MockProvider | Iterable[MockProvider] | None,
    ) -> None:
        if mocks is None:
            return
        if isinstance(mocks, MockProvider):
            self._providers.append(mocks)
        elif isinstance(mocks, Mapping):
            for name, function in mocks.items():
                self._check_name(name, "mocks")
                self._mock_map[name] = function
        else:
            for provider in mocks:
                if not isinstance(provider, MockProvider):
                    raise UserError(f"mocks must be a mapping or mock providers, got {provider!r}")
                self._providers.append(provider)

    def _check_name(self, name: str, where: str) -> None:
        if name not in self.tools:
            known = ", ".join(sorted(self.tools)) or "(none)"
            raise UserError(f"{where} names unknown tool {name!r}; tools: {known}")

    # -- views -------------------------------------------------------------------------------

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def __iter__(self) -> Any:
        return iter(self.tools.values())

    def __len__(self) -> int:
        return len(self.tools)

    def __getitem__(self, name: str) -> Tool[..., Any]:
        return self.tools[name]

    @property
    def names(self) -> list[str]:
        """The tool names, in registration order."""
        return list(self.tools)

    def definitions(self) -> list[ToolDefinition]:
        """What the model is told about each tool."""
        if self._definitions is None:
            self._definitions = [t.definition for t in self.tools.values()]
        return self._definitions

    def infos(self) -> list[ToolInfo]:
        """The tools as recorded in traces (a new list; the entries are shared)."""
        if self._infos is None:
            self._infos = [t.info for t in self.tools.values()]
        return list(self._infos)

    def runs_inline(self, call: ToolCall) -> bool:
        """Whether this call would run synchronously on the event loop, never suspending.

        Such calls gain nothing from concurrent tasks, so the agent runs them in order
        directly (the observable order of events is the same).
        """
        t = self.tools.get(call.name)
        if t is None or call.arguments_error is not None:
            return True
        if t.requires_approval or t.thread or t.timeout is not None:
            return False
        return self.mode_of(t.name) == "real" and not t.is_async

    def with_mode(
        self,
        mode: ToolMode,
        *,
        overrides: Mapping[str, ToolMode] | None = None,
        mocks: Mapping[str, Callable[..., Any]]
        | MockProvider
        | Iterable[MockProvider]
        | None = None,
    ) -> Toolset:
        """A copy of this toolset in another mode, with extra overrides and mocks."""
        copy = Toolset(
            self.tools.values(), mode=mode, overrides={**self.overrides, **(overrides or {})}
        )
        copy._mock_map = dict(self._mock_map)
        copy._providers = list(self._providers)
        copy._add_mocks(mocks)
        return copy

    def mode_of(self, name: str) -> ToolMode:
        """The mode that applies to one tool."""
        return self.overrides.get(name, self.mode)

    def implementation(self, t: Tool[..., Any]) -> tuple[Callable[..., Any], bool]:
        """The function that answers ``t`` now, and whether it is a mock.

        Raises:
            UnmockedToolCall: Mock mode, the tool has side effects, and no mock exists.
        """
        if self.mode_of(t.name) == "real":
            return t.function, False
        for provider in reversed(self._providers):
            found = provider.mock_for(t)
            if found is not None:
                return found, True
        if t.name in self._mock_map:
            return self._mock_map[t.name], True
        if t.mock_function is not None:
            return t.mock_function, True
        if t.side_effects:
            raise UnmockedToolCall(
                f"tool '{t.name}' has side effects and no mock, so mock mode refuses to run its "
                f"real code; declare one with @{t.name}.mock, pass mocks={{'{t.name}': ...}}, "
                f"or allow the real tool with overrides={{'{t.name}': 'real'}}",
                tool_name=t.name,
            )
        return t.function, False

    # -- execution ---------------------------------------------------------------------------

    async def execute(
        self,
        call: ToolCall,
        *,
        timeout: float | None = None,
        approver: Approver | None = None,
    ) -> ToolResult:
        """Validate, approve and run one call; return its result.

        Errors the model can act on come back as ``status="error"`` results. Bugs raise.

        Args:
            call: The model's call.
            timeout: Default limit in seconds when the tool sets none.
            approver: Decides about tools with ``requires_approval=True``; without one, such
                calls are rejected.

        Raises:
            ToolCrashed: The tool raised an exception it did not declare.
            UnmockedToolCall: Mock mode cannot run this tool.
        """
        started = time.perf_counter()
        t = self.tools.get(call.name)
        if t is None:
            available = ", ".join(self.tools) or "none"
            return _error(
                call,
                "UnknownTool",
                f"Unknown tool '{call.name}'. Available tools: {available}.",
                started,
            )
        if call.arguments_error is not None:
            return _error(
                call,
                "InvalidArguments",
                f"Could not read the arguments for tool '{call.name}': {call.arguments_error}. "
                "Send the arguments as one JSON object.",
                started,
            )
        try:
            kwargs = t.validate(call.arguments)
        except ArgumentsInvalid as exc:
            return _error(call, "ValidationError", str(exc), started)

        if t.requires_approval:
            decision = await _ask(approver, t, call, kwargs)
            if decision.action == "reject":
                reason = decision.reason or "the call was rejected"
                return _error(call, "Rejected", f"Tool '{t.name}' was not run: {reason}.", started)
            if decision.action == "edit":
                try:
                    kwargs = t.validate(decision.arguments or {})
                except ArgumentsInvalid as exc:
                    raise UserError(
                        f"the approver edited the call into invalid arguments: {exc}"
                    ) from None

        function, mocked = self.implementation(t)
        limit = t.timeout if t.timeout is not None else timeout
        try:
            value = await _invoke(function, kwargs, limit, thread=t.thread)
        except ToolError as exc:
            return _error(call, "ToolError", str(exc), started, mocked)
        except (AgentRunError, MissingFixture):
            raise
        except Exception as exc:
            if limit is not None and _is_timeout(exc):
                message = f"Tool '{t.name}' timed out after {limit:g} s."
                return _error(call, "Timeout", message, started, mocked)
            if t.errors and isinstance(exc, t.errors):
                return _error(call, type(exc).__name__, _exception_text(exc), started, mocked)
            raise ToolCrashed(
                f"tool '{t.name}' raised {type(exc).__name__}: {exc} (a bug in the tool: declare "
                f"expected errors with @tool(errors=(...)) or raise ToolError to report them to "
                "the model)",
                tool_name=t.name,
            ) from exc
        jsonable, content = _render(value)
        return ToolResult(
            call_id=call.id,
            name=call.name,
            status="ok",
            content=content,
            value=jsonable,
            duration_ms=(time.perf_counter() - started) * 1000,
            mocked=mocked,
        )


async def _ask(
    approver: Approver | None, t: Tool[..., Any], call: ToolCall, kwargs: dict[str, Any]
) -> Approval:
    if approver is None:
        return Approval.reject(
            "it requires approval and no approver is configured (pass Agent(approver=...))"
        )
    decision = approver(ApprovalRequest(tool=t, call=call, arguments=dict(kwargs)))
    if inspect.isawaitable(decision):
        decision = await decision
    if decision is True:
        return Approval.approve()
    if decision is False:
        return Approval.reject()
    if not isinstance(decision, Approval):
        raise UserError(f"an approver must return an Approval or a bool, got {decision!r}")
    return decision


def _is_timeout(exc: BaseException) -> bool:
    import asyncio

    return isinstance(exc, (asyncio.TimeoutError, TimeoutError))


async def _invoke(
    function: Callable[..., Any], kwargs: dict[str, Any], limit: float | None, *, thread: bool
) -> Any:
    import asyncio

    if inspect.iscoroutinefunction(function):
        if limit is None:
            return await function(**kwargs)
        return await asyncio.wait_for(function(**kwargs), limit)
    if thread or limit is not None:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, lambda: function(**kwargs))
        return await (future if limit is None else asyncio.wait_for(future, limit))
    value = function(**kwargs)
    if inspect.isawaitable(value):  # a sync callable (e.g. a mock object) returning a coroutine
        value = await (value if limit is None else asyncio.wait_for(value, limit))
    return value


_PLAIN = (str, int, float, bool, type(None))


def _render(value: Any) -> tuple[Any, str]:
    """The JSON form of a tool's return value, and the text the model sees."""
    if isinstance(value, str):
        return value, value
    if type(value) in _PLAIN:
        return value, json.dumps(value)
    from pydantic_core import to_jsonable_python

    jsonable = to_jsonable_python(value, fallback=str)
    return jsonable, json.dumps(jsonable, ensure_ascii=False)


def _exception_text(exc: BaseException) -> str:
    if len(exc.args) == 1:
        return str(exc.args[0])
    return str(exc) or type(exc).__name__


def _error(
    call: ToolCall, error_type: str, message: str, started: float, mocked: bool = False
) -> ToolResult:
    return ToolResult(
        call_id=call.id,
        name=call.name,
        status="error",
        content=message,
        error_type=error_type,
        duration_ms=(time.perf_counter() - started) * 1000,
        mocked=mocked,
    )
