"""A small agent: weather and a safe calculator, a step limit, and memory that trims.

Built by hand, such an agent is a loop with a config, a tool registry, memory and a step
limit (``MAX_ITERATIONS = 5``); with toolproof the same agent is a few lines, and its eval
set is a YAML suite (``toolchain.eval.yaml``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolproof import Agent, Memory, Tool, Toolset, calculator, tool
from toolproof.models import Model

WEATHER = {"Beijing": "sunny, 25 °C", "Shanghai": "light rain, 22 °C", "Guangzhou": "cloudy, 28 °C"}

SYSTEM_PROMPT = (
    "You are an agent that completes tasks with tools. When you need more information, call "
    "a tool as its description says; when a required parameter is missing, ask the user "
    "instead of guessing. When the task is done, give the final answer directly."
)


@tool
def get_weather(city: str) -> dict[str, str]:
    """Get the current weather of a city; use it when the user asks about the weather.

    Args:
        city: The city name, for example Beijing.
    """
    return {"city": city, "weather": WEATHER.get(city, f"no weather data for {city}")}


TOOLS: list[Tool[..., Any]] = [get_weather, calculator]


def build_agent(
    model: Model | str, tools: Toolset | Sequence[Tool[..., Any]] | None = None, **options: Any
) -> Agent:
    """Build the toolchain agent: at most 5 model calls per turn, history trimmed to fit.

    The memory budget is small on purpose, so the eval set's long conversation exercises
    trimming (a long conversation must trim its context without crashing).
    """
    options.setdefault("memory", Memory(max_tokens=250))
    return Agent(
        model,
        TOOLS if tools is None else tools,
        system_prompt=SYSTEM_PROMPT,
        max_steps=5,
        **options,
    )
