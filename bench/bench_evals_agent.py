"""The agent of ``bench_evals.py``'s suite, in a module of its own.

A suite's agent module is the user's code: this one imports what an agent module usually
does (toolproof and its tool), not the benchmark's HTTP machinery, so the whole-command
figure measures ``toolproof run``, not the loading of the benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolproof import Agent, Tool, Toolset, tool
from toolproof.models import Model


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


def build_agent(
    model: Model | str, tools: Toolset | Sequence[Tool[..., Any]] | None = None
) -> Agent:
    """The agent the generated suite names (``bench_evals_agent:build_agent``)."""
    return Agent(model, [multiply_numbers] if tools is None else tools, system_prompt="Be brief.")
