"""The airline support agent factory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from examples.airline.tools import TOOLS
from toolproof import Agent, Tool, Toolset
from toolproof.models import Model

SYSTEM_PROMPT = (
    "You are the support agent of Maple Air. You can look up reservations by booking code, "
    "search flights, change a reservation's flight and cancel a reservation. Ask for the "
    "booking code before anything else. Before changing or cancelling, state exactly what "
    "you will do and wait for the passenger's explicit yes. For anything the tools cannot "
    "do (compensation, lost luggage, complaints), call transfer_to_human. Only state facts "
    "a tool returned."
)


def build_agent(
    model: Model | str, tools: Toolset | Sequence[Tool[..., Any]] | None = None, **options: Any
) -> Agent:
    """Build the airline agent (``tools=None`` means its real tools)."""
    return Agent(
        model,
        TOOLS if tools is None else tools,
        system_prompt=SYSTEM_PROMPT,
        max_steps=8,
        **options,
    )
