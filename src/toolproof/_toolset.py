"""Toolset: an agent's tools, which implementation answers them, and how a call is run.

A call is validated, approved, run (real or mock) and turned into a ``ToolResult``.

The error contract lives here: declared errors, ``ToolError``, validation failures,
malformed JSON and unknown tool names become ``status="error"`` results for the model; any
other exception is a bug and stops the run (``ToolCrashed``), as do a return value that
cannot become JSON and ``SystemExit`` / ``KeyboardInterrupt`` / ``GeneratorExit`` raised by
a tool.

Mock isolation lives here too. Every mocked run (an eval suite with ``tools: mock``,
replay, ``mock_tools()``, the pytest plugin's ``run_agent``) enters :func:`mock_context`,
which hands out a mock-mode toolset and marks the context as mocked. One method,
:meth:`Toolset._check_real`, decides whether a tool with side effects may run its real
code: inside a mocked context only when the tool was named as a real tool for that context
and the call goes through the toolset the context handed out; any other toolset (an agent
factory that ignored its ``tools`` argument) is refused with :class:`MockBypassed`.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from toolproof._messages import ToolCall, ToolDefinition, ToolResult, error_text
from toolproof._tools import ArgumentsInvalid, Tool, only_mocks_in, refuse_real_code
from toolproof._trace import ToolInfo
from toolproof.errors import (
    AgentRunError,
    MissingFixture,
    MockBypassed,
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


#: The mocks a toolset takes: ``{tool name: function}``, a provider, or several providers.
Mocks = Mapping[str, Callable[..., Any]] | MockProvider | Iterable[MockProvider]


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


@dataclass(frozen=True, slots=True)
class _MockContext:
    """A mocked run in progress: where it is, which tools may run for real, and its tools."""

    where: str
    real: frozenset[str]
    lineage: object
    how: str  # how to name a real tool here, with {} for its name
    factory: str | None = None


_active: contextvars.ContextVar[_MockContext | None] = contextvars.ContextVar(
    "toolproof_mock_context", default=None
)


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
            Mocked runs (``mock_tools``, suites with ``tools: mock``, replay) drop the
            ``"real"`` ones: there a tool runs for real only when named for that run.
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
        mocks: Mocks | None = None,
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
        # Per tool: the function last run for it and whether it is a coroutine function
        # (``inspect.iscoroutinefunction`` on every call cost more than the lookup).
        self._kinds: dict[str, tuple[Callable[..., Any], bool]] = {}
        self._add_mocks(mocks)
        #: Tools named as real for the mocked run this toolset was handed out for.
        self.real_tools: tuple[str, ...] = ()
        # Copies made with with_mode() share it; a mocked context recognises its tools by it.
        self._lineage: object = object()

    def _add_mocks(
        self,
        mocks: Mocks | None,
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
        mocks: Mocks | None = None,
    ) -> Toolset:
        """A copy of this toolset in another mode, with extra overrides and mocks.

        Switching a real-mode toolset to ``"mock"`` drops its ``"real"`` overrides: in mock
        mode a tool runs for real only when ``overrides`` here asks for it.
        """
        inherited = self.overrides
        if mode == "mock" and self.mode != "mock":
            inherited = {name: value for name, value in inherited.items() if value != "real"}
        copy = self._copy(mode, {**inherited, **(overrides or {})}, mocks)
        copy.real_tools = self.real_tools
        copy._lineage = self._lineage
        return copy

    def _mocked(
        self,
        real: Iterable[str],
        overrides: Mapping[str, ToolMode] | None,
        mocks: Mocks | None,
        where: str,
    ) -> Toolset:
        """A mock-mode copy for a new mocked run, with a lineage of its own.

        Only ``real`` (and ``"real"`` overrides given here) run for real; inherited
        ``"real"`` overrides are dropped.
        """
        given = dict(overrides or {})
        names = [*real, *(name for name, value in given.items() if value == "real")]
        for name in names:
            if not isinstance(name, str) or name not in self.tools:
                raise UserError(f"{where}: real tool {unknown_tool(name, self.tools)}")
        kept = {name: value for name, value in self.overrides.items() if value == "mock"}
        copy = self._copy("mock", {**kept, **given, **dict.fromkeys(names, "real")}, mocks)
        copy.real_tools = tuple(dict.fromkeys(names))
        return copy

    def _copy(
        self,
        mode: ToolMode,
        overrides: Mapping[str, ToolMode],
        mocks: Mocks | None,
    ) -> Toolset:
        """A new toolset of the same tools and mocks, in ``mode``, with ``mocks`` added."""
        copy = Toolset(self.tools.values(), mode=mode, overrides=overrides)
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
            UnmockedToolCall: The tool has side effects, no mock answers it, and it was not
                allowed to run for real (mock mode, or a mocked run that did not name it).
            MockBypassed: A mocked run is in progress and this toolset is not the one it
                handed out, so the tool's real code must not run.
        """
        mode = self.mode_of(t.name)
        if mode == "mock":
            found = self.mock_of(t)
            if found is not None:
                return found, True
        self._check_real(t, mode)
        return t.function, False

    def mock_of(self, t: Tool[..., Any]) -> Callable[..., Any] | None:
        """The mock that answers ``t`` in mock mode (later providers first), or ``None``."""
        for provider in reversed(self._providers):
            found = provider.mock_for(t)
            if found is not None:
                return found
        if t.name in self._mock_map:
            return self._mock_map[t.name]
        return t.mock_function

    def _check_real(self, t: Tool[..., Any], mode: ToolMode) -> None:
        """Decide whether ``t``'s real code may run now (the one place that decides it).

        Tools without side effects always may, except in a run that allows mocks only (an
        attack run): there no tool's real code runs. Outside a mocked run, the toolset's own
        mode decides. Inside one, only a tool named as real for that run, through the toolset
        the run handed out.
        """
        refuse_real_code(t)
        if not t.side_effects:
            return
        context = _active.get()
        if context is None:
            if mode == "real":
                return
            raise UnmockedToolCall(
                f"tool '{t.name}' has side effects and no mock, so mock mode refuses to run "
                f"its real code; declare one with @{t.name}.mock, pass mocks={{'{t.name}': "
                f"...}}, or allow the real tool with overrides={{'{t.name}': 'real'}}",
                tool_name=t.name,
            )
        if self._lineage is not context.lineage:
            by = f" (agent factory {context.factory})" if context.factory else ""
            raise MockBypassed(
                f"tool '{t.name}' has side effects and {context.where} runs tools mocked, but "
                f"the agent{by} is not using the mocked tools toolproof handed it: its real "
                f"code was not run. Pass `tools` into `Agent(...)` (a factory must not build "
                f"its own tools when it is given some); to run the tool for real on purpose, "
                f"name it: {context.how.format(t.name)}",
                tool_name=t.name,
                factory=context.factory,
            )
        if mode == "real" and t.name in context.real:
            return
        raise UnmockedToolCall(
            f"tool '{t.name}' has side effects and no mock, so {context.where} refuses to run "
            f"its real code; give it a mock, or name it to run it for real: "
            f"{context.how.format(t.name)}",
            tool_name=t.name,
        )

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
            return error_result(
                call,
                "UnknownTool",
                f"Unknown tool '{call.name}'. Available tools: {available}.",
                started,
            )
        kwargs = await _arguments(t, call, approver, started)
        if isinstance(kwargs, ToolResult):
            return kwargs
        if t.side_effects or self.mode != "real" or self.overrides or _active.get() is not None:
            function, mocked = self.implementation(t)
        else:  # what implementation() answers for a tool without side effects in real mode
            function, mocked = t.function, False
        is_async = self._is_async(t.name, function)
        limit = t.timeout if t.timeout is not None else timeout
        try:
            if is_async or t.thread or limit is not None:
                value = await _invoke(function, kwargs, limit, thread=t.thread, is_async=is_async)
            else:  # a plain synchronous call, as _invoke makes it, without its coroutine
                value = function(**kwargs)
                if type(value) not in _PLAIN and inspect.isawaitable(value):
                    value = await contained(value)  # e.g. a mock object returning a coroutine
        except ToolError as exc:
            return error_result(call, "ToolError", _text(exc), started, mocked)
        except (AgentRunError, MissingFixture):
            raise
        except Exited as exc:  # SystemExit, KeyboardInterrupt, GeneratorExit, their own
            raise _crashed(t, exc.error) from exc.error
        except Exception as exc:
            if limit is not None and _is_timeout(exc):
                message = f"Tool '{t.name}' timed out after {limit:g} s."
                return error_result(call, "Timeout", message, started, mocked)
            if t.errors and isinstance(exc, t.errors):
                return error_result(call, type(exc).__name__, _exception_text(exc), started, mocked)
            raise _crashed(t, exc) from exc
        except BaseException as exc:  # the same, from a synchronous call made here
            if not escapes(exc):
                raise
            raise _crashed(t, exc) from exc
        return _ok(t, call, value, started, mocked)

    def _is_async(self, name: str, function: Callable[..., Any]) -> bool:
        """Whether ``function`` (answering tool ``name``) is a coroutine function, remembered.

        The tool's code runs in ``execute``'s own frame: a ``StopIteration`` it raises must
        reach the error contract as itself, not as the ``RuntimeError`` a coroutine of its
        own would turn it into.
        """
        kind = self._kinds.get(name)
        if kind is None or kind[0] is not function:
            kind = self._kinds[name] = (function, inspect.iscoroutinefunction(function))
        return kind[1]


async def _arguments(
    t: Tool[..., Any], call: ToolCall, approver: Approver | None, started: float
) -> dict[str, Any] | ToolResult:
    """The call's validated (and approved) arguments, or the error result the model sees."""
    if call.arguments_error is not None:
        return error_result(
            call,
            "InvalidArguments",
            f"Could not read the arguments for tool '{call.name}': {call.arguments_error}. "
            "Send the arguments as one JSON object.",
            started,
        )
    try:
        kwargs = t.validate(call.arguments)
    except ArgumentsInvalid as exc:
        return error_result(call, "ValidationError", str(exc), started)
    if not t.requires_approval:
        return kwargs
    decision = await _ask(approver, t, call, kwargs)
    if decision.action == "reject":
        reason = decision.reason or "the call was rejected"
        return error_result(call, "Rejected", f"Tool '{t.name}' was not run: {reason}.", started)
    if decision.action == "edit":
        try:
            return t.validate(decision.arguments or {})
        except ArgumentsInvalid as exc:
            raise UserError(f"the approver edited the call into invalid arguments: {exc}") from None
    return kwargs


def _ok(t: Tool[..., Any], call: ToolCall, value: Any, started: float, mocked: bool) -> ToolResult:
    """The successful result of a call that returned ``value``.

    Raises:
        ToolCrashed: The value cannot become JSON (a bug in the tool).
    """
    try:
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
    except Exception as exc:  # a value a trace cannot hold is a bug in the tool
        raise ToolCrashed(
            f"tool '{t.name}' returned a value that cannot be turned into JSON "
            f"({type(exc).__name__}: {_text(exc, 200)}); a bug in the tool: return "
            "JSON-friendly data (strings, numbers, lists, dicts, pydantic models, "
            "dataclasses)",
            tool_name=t.name,
        ) from exc


@contextmanager
def mock_context(
    toolset: Toolset,
    *,
    where: str,
    how: str,
    real: Iterable[str] = (),
    overrides: Mapping[str, ToolMode] | None = None,
    mocks: Mocks | None = None,
    factory: str | None = None,
    only_mocks: bool = False,
) -> Iterator[Toolset]:
    """Run the block as a mocked run; yields the mock-mode toolset to hand to the agent.

    Every mocked entry point goes through here. Inside the block a tool with side effects
    runs its real code only when it is in ``real`` (or a ``"real"`` entry of ``overrides``),
    and only through the yielded toolset (or copies of it): inherited ``"real"`` overrides
    are dropped, and any other toolset is refused with :class:`MockBypassed`.

    Args:
        toolset: The agent's own toolset.
        where: The mocked run, for messages (``"the eval case 'x' (tools: mock)"``).
        how: How the user names a real tool there, with ``{}`` for its name.
        real: Tools that run for real on purpose.
        overrides: Per-tool modes given for this run.
        mocks: Mocks for this run.
        factory: The agent factory (``module:function``), for messages.
        only_mocks: No tool's real code runs in the block, not even a tool without side
            effects or one named in ``real`` (attack runs: planted text may steer any call).

    Raises:
        UserError: ``real`` names a tool the toolset does not have.
    """
    mocked = toolset._mocked(() if only_mocks else real, overrides, mocks, where)
    context = _MockContext(where, frozenset(mocked.real_tools), mocked._lineage, how, factory)
    token = _active.set(context)
    try:
        with only_mocks_in(where if only_mocks else None):
            yield mocked
    finally:
        _active.reset(token)


def as_toolset(tools: Toolset | Tool[..., Any] | Iterable[Tool[..., Any]]) -> Toolset:
    """``tools`` as a Toolset: a Toolset itself, or one of the tool or tools given."""
    if isinstance(tools, Toolset):
        return tools
    if isinstance(tools, Tool):
        return Toolset([tools])
    return Toolset(list(tools))


def check_uses_tools(used: Toolset, handed: Toolset, factory: str) -> None:
    """Stop before anything runs when an agent factory ignored the toolset it was handed.

    Raises:
        MockBypassed: ``used`` is neither ``handed`` nor a copy of it.
    """
    if used._lineage is handed._lineage:
        return
    function = factory.rpartition(":")[2] or factory
    raise MockBypassed(
        f"agent factory {factory} ignores its `tools` argument: the Agent it returned runs its "
        "own tools instead of the ones toolproof passed it, so mocks would be bypassed and "
        f"real code would run. Pass `tools` into `Agent(...)`, e.g. `def {function}(model, "
        "tools=None): "
        "return Agent(model, TOOLS if tools is None else tools)`",
        factory=factory,
    )


def factory_name(factory: object) -> str:
    """``module:function`` of an agent factory, for messages."""
    module = getattr(factory, "__module__", None) or "?"
    name = getattr(factory, "__qualname__", None) or type(factory).__qualname__
    return f"{module}:{name}"


def unknown_tool(name: object, tools: Iterable[str]) -> str:
    """``'nme' is unknown (did you mean 'name'?); tools: ...`` for a name no tool has."""
    import difflib

    known = sorted(tools)
    close = difflib.get_close_matches(str(name), known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{name!r} is unknown{hint}; the agent's tools are: {', '.join(known) or '(none)'}"


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


class Exited(Exception):
    """Carries a ``BaseException`` of the user's code out of a tool, a trial or a check.

    ``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit`` or the user's own, raised as
    they are, would stop the event loop (or the process) instead of the run, and decide the
    exit code.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(type(error).__name__)
        self.error = error


_T = TypeVar("_T")


def escapes(exc: BaseException) -> bool:
    """Whether ``exc`` would leave the event loop: neither an error nor a cancellation."""
    import asyncio

    return not isinstance(exc, (Exception, asyncio.CancelledError))


async def contained(awaitable: Awaitable[_T]) -> _T:
    """``await awaitable``, with what :func:`escapes` raised as :class:`Exited`."""
    try:
        return await awaitable
    except BaseException as exc:
        if not escapes(exc):
            raise
        raise Exited(exc) from exc


def _call_contained(function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    try:
        return function(**kwargs)
    except BaseException as exc:
        if not escapes(exc):
            raise
        raise Exited(exc) from exc


async def _invoke(
    function: Callable[..., Any],
    kwargs: dict[str, Any],
    limit: float | None,
    *,
    thread: bool,
    is_async: bool,
) -> Any:
    import asyncio

    if is_async:
        if limit is None:
            return await contained(_call_contained(function, kwargs))
        return await asyncio.wait_for(contained(_call_contained(function, kwargs)), limit)
    if thread or limit is not None:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, lambda: _call_contained(function, kwargs))
        return await (future if limit is None else asyncio.wait_for(future, limit))
    value = _call_contained(function, kwargs)
    if inspect.isawaitable(value):  # a sync callable (e.g. a mock object) returning a coroutine
        value = contained(value)
        value = await (value if limit is None else asyncio.wait_for(value, limit))
    return value


def _crashed(t: Tool[..., Any], exc: BaseException) -> ToolCrashed:
    return ToolCrashed(
        f"tool '{t.name}' raised {type(exc).__name__}: {_text(exc)} (a bug in the tool: declare "
        f"expected errors with @tool(errors=(...)) or raise ToolError to report them to "
        "the model)",
        tool_name=t.name,
    )


def _text(exc: BaseException, limit: int | None = None) -> str:
    """``str(exc)``, even when its ``__str__`` raises, with lone surrogates escaped."""
    try:
        text = str(exc)
    except Exception:
        text = f"<{type(exc).__name__} whose message cannot be shown>"
    if limit is not None:
        from toolproof._text import cut

        text = cut(text, limit)
    return _escape_surrogates(text)


def _escape_surrogates(text: str) -> str:
    """Lone surrogates cannot be written as UTF-8: escape them as backslash text."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


_PLAIN = (str, int, float, bool, type(None))


def _render(value: Any) -> tuple[Any, str]:
    """The JSON form of a tool's return value, and the text the model sees.

    Raises:
        Exception: The value cannot become JSON (undecodable bytes, a cycle, very deep
            nesting, an int too large to print, an object whose ``__str__`` raises).
    """
    if isinstance(value, str):
        value = _escape_surrogates(str(value))
        return value, value
    kind = type(value)
    if kind is int:  # what json.dumps writes, without its machinery (~1 µs a call)
        return value, int.__repr__(value)
    if kind is float and value - value == 0.0:  # finite; NaN and infinities go to json
        return value, float.__repr__(value)
    if kind in _PLAIN:
        return value, json.dumps(value)
    from pydantic_core import to_jsonable_python

    try:
        jsonable = to_jsonable_python(value, fallback=str)
    except UnicodeEncodeError:  # a lone surrogate in a key: escape the strings, then retry
        jsonable = to_jsonable_python(_escape_strings(value), fallback=str)
    content = json.dumps(jsonable, ensure_ascii=False)
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates somewhere inside: escape every string
        jsonable = _escape_strings(jsonable)
        content = json.dumps(jsonable, ensure_ascii=False)
    return jsonable, content


def _escape_strings(value: Any) -> Any:
    if isinstance(value, str):
        return _escape_surrogates(value)
    if isinstance(value, (list, tuple)):
        return [_escape_strings(item) for item in value]
    if isinstance(value, dict):
        return {_escape_surrogates(str(k)): _escape_strings(v) for k, v in value.items()}
    return value


def _exception_text(exc: BaseException) -> str:
    try:
        if len(exc.args) == 1:
            return _escape_surrogates(str(exc.args[0]))
    except Exception:
        return f"<{type(exc).__name__} whose message cannot be shown>"
    return _text(exc) or type(exc).__name__


def error_result(
    call: ToolCall, error_type: str, message: str, started: float, mocked: bool = False
) -> ToolResult:
    """The error result the model sees for ``call``, timed from ``started``."""
    return ToolResult(
        call_id=call.id,
        name=call.name,
        status="error",
        content=error_text(error_type, message),
        error_type=error_type,
        duration_ms=(time.perf_counter() - started) * 1000,
        mocked=mocked,
    )
