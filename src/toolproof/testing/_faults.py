"""Fault injection into any tool implementation, and an agent-level mock switch.

``with_faults(toolset, Fault.raises("get_order", on_call=2), ...)`` returns a toolset whose
named tools fail as told, on every call or only on chosen calls, and otherwise answer as
before (declared mock, fixture mock, stateful mock or real function). Use it to check that
the agent degrades gracefully: the failure becomes an error result, the run continues, and
the final answer reports the problem.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from toolproof._matching._objects import compare, format_call
from toolproof._toolset import MockProvider, ToolMode, Toolset, mock_context
from toolproof.errors import ToolError, UserError

if TYPE_CHECKING:
    from toolproof._agent import Runnable
    from toolproof._tools import Tool

__all__ = ["Fault", "mock_tools", "with_faults"]

#: What ``Fault.malformed`` returns unless told otherwise: an upstream error page where data
#: was expected.
MALFORMED_DEFAULT = "<html><body><h1>502 Bad Gateway</h1></body></html>"


@dataclass(frozen=True)
class Fault:
    """A failure to inject into one tool.

    Build it with :meth:`raises`, :meth:`malformed` or :meth:`timeout`, then apply it with
    :func:`with_faults`.

    Attributes:
        tool: The tool that fails.
        kind: ``"raises"``, ``"malformed"`` or ``"timeout"``.
        error: For ``raises``: the exception (instance or class), or ``None`` for the tool's
            first declared error (``ToolError`` when it declares none).
        value: For ``malformed``: what the tool returns instead of its real output.
        seconds: For ``timeout``: how long the call hangs before timing out (``None``: it
            times out at once).
        on_call: 1-based numbers of the calls that fail (counting the calls of ``tool``
            that match ``when``); ``None`` fails every call.
        when: Only calls whose arguments match these (values may be matchers) fail.
    """

    tool: str
    kind: Literal["raises", "malformed", "timeout"]
    error: BaseException | type[BaseException] | None = None
    value: Any = None
    seconds: float | None = None
    on_call: tuple[int, ...] | None = None
    when: Mapping[str, Any] | None = field(default=None, hash=False)

    @classmethod
    def raises(
        cls,
        tool: str,
        error: BaseException | type[BaseException] | None = None,
        *,
        on_call: int | Iterable[int] | None = None,
        when: Mapping[str, Any] | None = None,
    ) -> Fault:
        """The tool raises ``error`` (default: its first declared error, else ``ToolError``).

        A declared error or ``ToolError`` becomes an error result the model sees; any other
        exception stops the run as a crash, as it would from the real tool.
        """
        if error is not None and not (
            isinstance(error, BaseException)
            or (isinstance(error, type) and issubclass(error, BaseException))
        ):
            raise UserError(f"Fault.raises({tool!r}, ...) needs an exception, got {error!r}")
        return cls(tool, "raises", error=error, on_call=_calls(on_call), when=when)

    @classmethod
    def malformed(
        cls,
        tool: str,
        value: Any = MALFORMED_DEFAULT,
        *,
        on_call: int | Iterable[int] | None = None,
        when: Mapping[str, Any] | None = None,
    ) -> Fault:
        """The tool returns ``value`` (default: an HTML error page) instead of its output."""
        return cls(tool, "malformed", value=value, on_call=_calls(on_call), when=when)

    @classmethod
    def timeout(
        cls,
        tool: str,
        *,
        seconds: float | None = None,
        on_call: int | Iterable[int] | None = None,
        when: Mapping[str, Any] | None = None,
    ) -> Fault:
        """The tool times out: it raises ``TimeoutError`` (after hanging ``seconds``, if set).

        With a time limit (``@tool(timeout=...)`` or ``Agent(tool_timeout=...)``) the model
        receives a "timed out" error result; a hang longer than the limit is cut off by it.
        """
        if seconds is not None and seconds < 0:
            raise UserError(f"Fault.timeout(seconds=...) must not be negative, got {seconds!r}")
        return cls(tool, "timeout", seconds=seconds, on_call=_calls(on_call), when=when)

    def describe(self) -> str:
        """A short description such as ``raises KeyError on get_order (call 2)``."""
        what = {
            "raises": f"raises {_error_name(self.error)}",
            "malformed": "malformed output",
            "timeout": "timeout",
        }[self.kind]
        calls = ""
        if self.on_call is not None:
            calls = f" (call{'s' if len(self.on_call) > 1 else ''} "
            calls += ", ".join(map(str, self.on_call)) + ")"
        when = f" when {format_call(self.tool, self.when)}" if self.when else ""
        return f"{what} on {self.tool}{calls}{when}"

    def _trigger(self, tool: Tool[..., Any]) -> Any:
        if self.kind == "malformed":
            return self.value
        if self.kind == "timeout":
            if self.seconds:
                time.sleep(self.seconds)
            raise TimeoutError(
                f"injected timeout in tool '{tool.name}' (Fault.timeout); with no time limit "
                "set by @tool(timeout=...) or Agent(tool_timeout=...) it stops the run"
            )
        error = self.error
        if error is None:
            error = tool.errors[0] if tool.errors else ToolError
        if isinstance(error, type):
            error = error(f"injected failure in tool '{tool.name}'")
        raise error

    async def _trigger_async(self, tool: Tool[..., Any]) -> Any:
        if self.kind == "timeout" and self.seconds:
            import asyncio

            await asyncio.sleep(self.seconds)
            return Fault(self.tool, "timeout")._trigger(tool)
        return self._trigger(tool)


def _calls(on_call: int | Iterable[int] | None) -> tuple[int, ...] | None:
    if on_call is None:
        return None
    numbers = (on_call,) if isinstance(on_call, int) else tuple(on_call)
    if not numbers or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in numbers):
        raise UserError(
            f"on_call must be a call number (1 = first call) or several, got {on_call!r}"
        )
    return numbers


def _error_name(error: BaseException | type[BaseException] | None) -> str:
    if error is None:
        return "its declared error"
    return error.__name__ if isinstance(error, type) else type(error).__name__


class _FaultProvider:
    """Answers the faulted tools: the fault when it applies, else the toolset's own answer."""

    def __init__(self, base: Toolset, faults: Sequence[Fault]) -> None:
        self.base = base
        self.faults = list(faults)
        self.counts = [0] * len(self.faults)
        self._lock = threading.Lock()

    def _pick(self, name: str, kwargs: dict[str, Any]) -> Fault | None:
        chosen = None
        with self._lock:
            for index, fault in enumerate(self.faults):
                if fault.tool != name:
                    continue
                if fault.when and not all(
                    k in kwargs and compare(v, kwargs[k]) is None for k, v in fault.when.items()
                ):
                    continue
                self.counts[index] += 1
                if chosen is None and (
                    fault.on_call is None or self.counts[index] in fault.on_call
                ):
                    chosen = fault
        return chosen

    def mock_for(self, tool: Tool[..., Any]) -> Callable[..., Any] | None:
        if not any(f.tool == tool.name for f in self.faults):
            return None
        fallback, _ = self.base.implementation(tool)
        name = tool.name

        if inspect.iscoroutinefunction(fallback):

            async def answer_async(**kwargs: Any) -> Any:
                fault = self._pick(name, kwargs)
                if fault is not None:
                    return await fault._trigger_async(tool)
                return await fallback(**kwargs)

            return answer_async

        def answer(**kwargs: Any) -> Any:
            fault = self._pick(name, kwargs)
            if fault is not None:
                return fault._trigger(tool)
            return fallback(**kwargs)

        return answer


def with_faults(toolset: Toolset, *faults: Fault) -> Toolset:
    """A copy of ``toolset`` whose tools fail as ``faults`` say.

    Calls a fault does not select are answered as ``toolset`` would answer them. Results of
    faulted tools are marked ``mocked``.

    Example:
        ```python
        tools = with_faults(
            Toolset(TOOLS, mode="mock"),
            Fault.raises("get_leave_balance", on_call=2),
            Fault.timeout("get_weather"),
        )
        ```

    Raises:
        UserError: A fault names a tool the toolset does not have.
    """
    for fault in faults:
        if not isinstance(fault, Fault):
            raise UserError(f"with_faults expects Fault objects, got {fault!r}")
        if fault.tool not in toolset:
            known = ", ".join(toolset.names) or "(none)"
            raise UserError(f"fault names unknown tool {fault.tool!r}; tools: {known}")
    if not faults:
        return toolset
    overrides: dict[str, ToolMode] = {f.tool: "mock" for f in faults}
    return toolset.with_mode(
        toolset.mode, overrides=overrides, mocks=[_FaultProvider(toolset, faults)]
    )


@contextmanager
def mock_tools(
    agent: Runnable,
    *mocks: MockProvider | Mapping[str, Callable[..., Any]],
    faults: Sequence[Fault] = (),
    overrides: Mapping[str, ToolMode] | None = None,
    mode: ToolMode = "mock",
    real: Iterable[str] = (),
) -> Iterator[Toolset]:
    """Run ``agent``'s tools in mock mode (with extra mocks and faults) inside the block.

    It uses :meth:`Agent.override`, so it is local to the current context and undone on exit.
    Inside the block a tool with ``side_effects=True`` never runs its real code unless it is
    named in ``real`` (or as ``"real"`` in ``overrides``): ``"real"`` overrides the agent's
    toolset already had are dropped, and a real call through any other toolset is refused
    with :class:`~toolproof.errors.MockBypassed`.

    Args:
        agent: The agent.
        *mocks: Mock providers (``ToolMock``, ``StatefulMock``...) or ``{name: function}``
            mappings; later ones win.
        faults: Faults to inject (see :class:`Fault`).
        overrides: Per-tool modes (``{"get_weather": "mock"}``); ``"real"`` entries run
            those tools for real, like ``real``.
        mode: The mode of the other tools; ``"real"`` runs the agent's tools as they are
            (only ``mocks`` of tools overridden to ``"mock"``, and faults, apply).
        real: Tools that run their real implementation on purpose (``["get_weather"]``).

    Yields:
        The toolset in use.

    Raises:
        UserError: ``real`` or ``overrides`` names a tool the agent does not have.

    Example:
        ```python
        with mock_tools(agent, tool_mock, faults=[Fault.timeout("get_weather")]):
            result = agent.run_sync("weather in Beijing?")
        ```
    """
    with (
        mocked_tools(agent, mocks, faults, overrides, mode, real, "mock_tools()") as toolset,
        agent.override(tools=toolset),
    ):
        yield toolset


@contextmanager
def mocked_tools(
    agent: Runnable,
    mocks: Sequence[MockProvider | Mapping[str, Callable[..., Any]]],
    faults: Sequence[Fault],
    overrides: Mapping[str, ToolMode] | None,
    mode: ToolMode,
    real: Iterable[str],
    where: str,
) -> Iterator[Toolset]:
    """The toolset of :func:`mock_tools` (and ``run_agent``), as a mocked run when mocked."""
    if mode == "real":
        if list(real):
            raise UserError(f"{where}: real=... names tools to run for real in mock mode")
        toolset = agent.toolset.with_mode(mode, overrides=overrides)
        for mock in mocks:
            toolset = toolset.with_mode(mode, mocks=mock)
        yield with_faults(toolset, *faults)
        return
    how = where.replace("()", "(..., real=['{}'])")
    with mock_context(
        agent.toolset, where=where, how=how, real=real, overrides=overrides
    ) as toolset:
        for mock in mocks:
            toolset = toolset.with_mode("mock", mocks=mock)
        yield with_faults(toolset, *faults)
