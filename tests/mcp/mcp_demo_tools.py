"""Tools served by ``toolproof mcp serve`` in the MCP tests.

``cancel_order`` has side effects: its real code appends a line to the file named by the
``MCP_DEMO_SIDE_EFFECTS`` environment variable, so a test can prove it never ran.
"""

from __future__ import annotations

import os
from pathlib import Path

from toolproof import ToolError, tool
from toolproof.testing import StatefulMock

ORDERS = {"A1": {"status": "paid", "total": 30}, "B2": {"status": "shipped", "total": 12}}


@tool(errors=(KeyError,))
def get_order(order_id: str) -> dict[str, object]:
    """Look up an order by its id.

    Args:
        order_id: The order id, such as A1.
    """
    return {"order_id": order_id, **ORDERS[order_id]}


@tool(side_effects=True)
def cancel_order(order_id: str, reason: str = "customer request") -> str:
    """Cancel an order (this really cancels it).

    Args:
        order_id: The order to cancel.
        reason: Why it is cancelled.
    """
    target = os.environ.get("MCP_DEMO_SIDE_EFFECTS")
    if target:
        with Path(target).open("a", encoding="utf-8") as handle:
            handle.write(f"cancelled {order_id}: {reason}\n")
    return f"order {order_id} cancelled"


@tool
def add(a: int, b: int = 1) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


TOOLS = [get_order, cancel_order, add]


class Orders(StatefulMock):
    """A stateful mock of the order system."""

    initial_state = {"cancelled": []}

    @StatefulMock.handles("cancel_order")
    def cancel(self, order_id: str, reason: str = "customer request") -> str:
        if order_id not in ORDERS:
            raise ToolError(f"order {order_id} does not exist")
        self.state["cancelled"].append(order_id)
        return f"mock-cancelled {order_id} ({len(self.state['cancelled'])} so far)"
