"""The shop agent as toolproof's own ``Agent``: the same two tools as the programs in agents/."""

from __future__ import annotations

from typing import Any

from toolproof import Agent, Toolset, tool


@tool
def get_price(item: str) -> str:
    """The price of an item in euros.

    Args:
        item: The item.
    """
    return {"apple": "2", "pear": "3"}.get(item, "unknown item")


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
