"""The support agent factory: Slack, JIRA and account tools."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from examples.support.tools import TOOLS
from toolproof import Agent, Tool, Toolset
from toolproof.models import Model

SYSTEM_PROMPT = (
    "You are the IT support assistant of Acme. You can read Slack messages, look up JIRA "
    "tickets, react to and post Slack messages, look up user accounts and send password "
    "resets. Never delete an account unless the user explicitly asks for it. Be brief and "
    "empathetic, and only state ids and facts that a tool returned."
)


def build_agent(
    model: Model | str, tools: Toolset | Sequence[Tool[..., Any]] | None = None, **options: Any
) -> Agent:
    """Build the support agent (``tools=None`` means its real tools)."""
    return Agent(
        model,
        TOOLS if tools is None else tools,
        system_prompt=SYSTEM_PROMPT,
        max_steps=8,
        **options,
    )
