"""Stateful mocks: a mock that owns state (an orders table...) which later calls change.

Tests and evals assert on ``mock.state`` after the run, the tau-bench way of grading: did the
agent leave the world in the right state, whatever it said.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from toolproof._mocks import RecordedCall, jsonable_value
from toolproof.errors import UserError

if TYPE_CHECKING:
    from toolproof._tools import Tool

__all__ = ["StatefulMock"]

F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__toolproof_handles__"


class StatefulMock:
    """A mock provider whose methods answer tools and share ``self.state``.

    Subclass it, mark a method per tool with :meth:`handles`, and give the starting state as
    the class attribute ``initial_state`` (deep-copied for each instance) or pass ``state=``.
    Each handler takes exactly the tool's parameters (``toolproof mocks check`` verifies it)
    and may raise the tool's declared errors or ``ToolError``.

    Args:
        state: The starting state (deep-copied); defaults to ``initial_state``.

    Attributes:
        state: The current state; JSON-able, so evals can compare it with an expected one.
        calls: Every call received, in order (``fixture`` is always ``None``).

    Example:
        ```python
        class Orders(StatefulMock):
            initial_state = {"orders": {"A1": {"status": "paid"}}}

            @StatefulMock.handles("cancel_order")
            def cancel(self, order_id: str) -> str:
                order = self.state["orders"].get(order_id)
                if order is None:
                    raise ToolError(f"order {order_id} does not exist")
                order["status"] = "cancelled"
                return "cancelled"

        orders = Orders()
        agent = Agent(model, Toolset(TOOLS, mode="mock", mocks=[orders]))
        agent.run_sync("cancel order A1")
        assert orders.state["orders"]["A1"]["status"] == "cancelled"
        ```
    """

    initial_state: ClassVar[Mapping[str, Any]] = {}
    _handlers: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            own: dict[str, str] = {}
            for attr, value in vars(klass).items():
                target = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
                tool_name = getattr(target, _MARK, None)
                if tool_name is None:
                    continue
                if tool_name in own:
                    raise UserError(
                        f"{cls.__qualname__}: methods {own[tool_name]!r} and {attr!r} both "
                        f"handle tool {tool_name!r}; keep one"
                    )
                own[tool_name] = attr
            # A subclass method for the same tool replaces the inherited one.
            handlers = {k: v for k, v in handlers.items() if k not in own} | own
        cls._handlers = handlers

    def __init__(self, state: Mapping[str, Any] | None = None) -> None:
        source = self.initial_state if state is None else state
        if not isinstance(source, Mapping):
            raise UserError(f"{type(self).__name__}(state=...) must be a mapping, got {source!r}")
        self._initial: dict[str, Any] = copy.deepcopy(dict(source))
        self.state: dict[str, Any] = copy.deepcopy(self._initial)
        self.calls: list[RecordedCall] = []

    @staticmethod
    def handles(tool_name: str) -> Callable[[F], F]:
        """Mark a method as the mock of the tool named ``tool_name``.

        Raises:
            UserError: Used without a tool name (``@StatefulMock.handles`` alone).
        """
        if not isinstance(tool_name, str):
            raise UserError(
                "@StatefulMock.handles needs the tool's name: @StatefulMock.handles('get_order')"
            )

        def mark(function: F) -> F:
            setattr(function, _MARK, tool_name)
            return function

        return mark

    @classmethod
    def handled_tools(cls) -> dict[str, str]:
        """Tool name -> the name of the method that answers it."""
        return dict(cls._handlers)

    def mock_for(self, tool: Tool[..., Any]) -> Callable[..., Any] | None:
        """The bound handler for ``tool`` (recording each call), or ``None``."""
        attr = self._handlers.get(tool.name)
        if attr is None:
            return None
        method = getattr(self, attr)
        name = tool.name

        if inspect.iscoroutinefunction(method):

            async def answer_async(**kwargs: Any) -> Any:
                self.calls.append(RecordedCall(name, jsonable_value(kwargs), None))
                return await method(**kwargs)

            return answer_async

        def answer(**kwargs: Any) -> Any:
            self.calls.append(RecordedCall(name, jsonable_value(kwargs), None))
            return method(**kwargs)

        return answer

    def count(self, tool: str) -> int:
        """How many calls of ``tool`` this mock answered."""
        return sum(1 for call in self.calls if call.tool == tool)

    def reset(self) -> None:
        """Return to the starting state and forget the calls."""
        self.state = copy.deepcopy(self._initial)
        self.calls.clear()

    def __repr__(self) -> str:
        tools = ", ".join(self._handlers) or "no tools"
        return f"<{type(self).__name__} mock of {tools}>"
