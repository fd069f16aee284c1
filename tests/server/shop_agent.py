"""The shop agent as toolproof's own ``Agent``: the same two tools as the programs in agents/."""

from __future__ import annotations

from typing import Any

from toolproof import Agent, ToolError, Toolset, tool
from toolproof.testing import StatefulMock


@tool
def get_price(item: str) -> str:
    """The price of an item in euros.

    Args:
        item: The item.
    """
    prices = {"apple": "2", "pear": "3"}
    if item not in prices:
        raise ToolError(f"no price for {item}")
    return prices[item]


@tool
def multiply(a: float, b: float) -> str:
    """a times b.

    Args:
        a: One factor.
        b: The other.
    """
    return f"{a * b:g}"


def build_agent(model: Any, tools: Toolset | None = None) -> Agent:
    """The factory a suite names (``agent: shop_agent:build_agent``)."""
    return Agent(model, [get_price, multiply] if tools is None else tools)


class Basket(StatefulMock):
    """A stateful mock of get_price that remembers what was asked."""

    initial_state = {"asked": []}

    @StatefulMock.handles("get_price")
    def price(self, item: str) -> str:
        self.state["asked"].append(item)
        raise ToolError(f"no price for {item}")
