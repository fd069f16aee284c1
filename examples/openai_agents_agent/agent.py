"""A support agent built with the OpenAI Agents SDK: one agent, two tools, no handoffs.

The tools are toolproof tools (with a mock for the one that changes the outside world), given
to the SDK as ``FunctionTool`` objects; the SDK's ``Runner`` drives the tool loop.
"""

from __future__ import annotations

from typing import Any

from agents import Agent
from agents.models.interface import Model as SDKModel

from toolproof import Tool, Toolset, tool
from toolproof.integrations.openai_agents import AgentsSDKAgent, to_function_tool
from toolproof.models import Model

INSTRUCTIONS = (
    "You are a support agent for an online shop. Look orders up before answering, refund "
    "only delivered orders, and say so when an order does not exist."
)

ORDERS = {
    "A-1": {"status": "delivered", "total": 30.0},
    "A-2": {"status": "shipped", "total": 12.5},
}


@tool(errors=(KeyError,))
def get_order(order_id: str) -> dict[str, Any]:
    """Look up an order's status and total.

    Args:
        order_id: The order id, such as A-1.
    """
    return {"order_id": order_id, **ORDERS[order_id.strip().upper()]}


@tool(side_effects=True)
def refund_order(order_id: str, amount: float) -> str:
    """Refund a delivered order.

    Args:
        order_id: The order id.
        amount: The amount to refund, at most the order's total.
    """
    raise RuntimeError("the payment service is not reachable from this example")


@refund_order.mock
def _mock_refund(order_id: str, amount: float) -> str:
    return f"refund of {amount:.2f} for {order_id} created"


TOOLS: list[Tool[..., Any]] = [get_order, refund_order]


def build_agent(model: SDKModel | str, tools: Toolset | None = None) -> Agent[Any]:
    """The SDK agent, with ``tools`` (a toolset in real or mock mode; default: real tools)."""
    return Agent(
        name="support",
        instructions=INSTRUCTIONS,
        model=model,
        tools=list(to_function_tool(tools if tools is not None else Toolset(TOOLS))),
    )


def build_suite_agent(model: Model | str, tools: Toolset | None = None) -> AgentsSDKAgent:
    """The same SDK agent as a toolproof agent, for eval suites, ``run_agent`` and replay."""
    return AgentsSDKAgent(
        lambda sdk_model, sdk_tools: Agent(
            name="support", instructions=INSTRUCTIONS, model=sdk_model, tools=list(sdk_tools)
        ),
        model,
        TOOLS if tools is None else tools,
        name="support",
    )
