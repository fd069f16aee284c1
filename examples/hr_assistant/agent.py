"""The HR assistant agent factory, used by the demo, the tests and the eval suite."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from examples.hr_assistant.tools import get_leave_balance, get_weather, multiply_numbers
from examples.support.tools import WORKPLACE_TOOLS
from toolproof import Agent, Tool, Toolset, calculator
from toolproof.models import Model

SYSTEM_PROMPT = (
    "You are an HR assistant. Use a tool whenever the answer depends on data or arithmetic, "
    "and only state numbers and employee ids that the user gave or a tool returned. You can "
    "multiply numbers, evaluate arithmetic, look up annual leave, check the weather, read Slack "
    "messages and JIRA tickets, and react to or post Slack messages; you cannot do anything "
    "else. If a tool reports an error, explain it to the user."
)

#: The HR tools, plus the workplace Slack and JIRA tools of the support example.
TOOLS: list[Tool[..., Any]] = [
    multiply_numbers,
    get_leave_balance,
    calculator,
    get_weather,
    *WORKPLACE_TOOLS,
]


def build_agent(
    model: Model | str, tools: Toolset | Sequence[Tool[..., Any]] | None = None, **options: Any
) -> Agent:
    """Build the HR assistant.

    Args:
        model: The model, or a model string such as ``"deepseek:deepseek-chat"``.
        tools: The tools (a ``Toolset`` in real or mock mode); defaults to the real tools.
        **options: Other ``Agent`` options (``on_event``, ``recorder``, ``memory``...).
    """
    return Agent(
        model,
        TOOLS if tools is None else tools,
        system_prompt=SYSTEM_PROMPT,
        max_steps=5,
        **options,
    )
