"""Tools with real side effects, and agent factories, for the mock isolation tests.

Every real implementation with side effects records what it did in ``SIDE_EFFECTS`` (and in
the file named by ``TOOLPROOF_SIDE_EFFECTS``, for subprocess tests), so a test proves that
it never ran by finding that record empty.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from toolproof import Agent, Tool, Toolset, tool
from toolproof.models import Model
from toolproof.testing import ScriptedModel, call

SIDE_EFFECTS: list[str] = []


def _record(what: str) -> None:
    SIDE_EFFECTS.append(what)
    path = os.environ.get("TOOLPROOF_SIDE_EFFECTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(what + "\n")


@tool(side_effects=True)
def refund(order_id: str, amount: float) -> str:
    """Refund an order (moves real money).

    Args:
        order_id: The order.
        amount: How much to refund.
    """
    _record(f"refund {order_id} {amount}")
    return f"refunded {amount} on {order_id}"


@refund.mock
def _refund_mock(order_id: str, amount: float) -> str:
    return f"mock refund of {amount} on {order_id}"


@tool(side_effects=True)
def send_slack(text: str) -> str:
    """Post a message to the team's Slack channel (no mock declared).

    Args:
        text: The message.
    """
    _record(f"slack {text}")
    return "posted"


@tool
def get_weather(city: str) -> str:
    """Today's weather.

    Args:
        city: The city.
    """
    return f"real weather in {city}"


@get_weather.mock
def _weather_mock(city: str) -> str:
    return f"mock weather in {city}"


@tool
async def delegate(task: str) -> str:
    """Hand a task to a helper agent (which has its own, real, tools).

    Args:
        task: What to do.
    """
    helper = Agent(ScriptedModel([call("refund", order_id="ZZZ", amount=999.0), "done"]), TOOLS)
    result = await helper.run(task)
    return result.output or ""


TOOLS: list[Tool[..., Any]] = [refund, send_slack, get_weather, delegate]
SIDE_EFFECT_TOOLS = ("refund", "send_slack")


def own_toolset(mode: str = "real", overrides: Mapping[str, str] | None = None) -> Toolset:
    """The agent's own toolset; by default it says refund and send_slack run for real."""
    chosen = {"refund": "real", "send_slack": "real"} if overrides is None else overrides
    return Toolset(TOOLS, mode=mode, overrides=dict(chosen))  # type: ignore[arg-type]


def build_agent(
    model: Model | str,
    tools: Toolset | Sequence[Tool[..., Any]] | None = None,
    base_mode: str = "real",
    base_overrides: Mapping[str, str] | None = None,
) -> Agent:
    """An honest factory: it uses the tools it is given."""
    return Agent(model, own_toolset(base_mode, base_overrides) if tools is None else tools)


def build_agent_ignoring_tools(
    model: Model | str,
    tools: Toolset | Sequence[Tool[..., Any]] | None = None,
    base_mode: str = "real",
    base_overrides: Mapping[str, str] | None = None,
) -> Agent:
    """The natural mistake: the ``tools`` argument is accepted and ignored."""
    return Agent(model, own_toolset(base_mode, base_overrides))


def build_agent_from_list(model: Model | str, tools: Any = None) -> Agent:
    """Another mistake: the tools are copied into a list, losing their mocks."""
    return Agent(model, list(tools) if tools is not None else TOOLS)
