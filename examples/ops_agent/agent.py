"""The ops agent factories: as deployed (v1 tools) and after the tool upgrade (v2 tools)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from examples.ops_agent import tools as v1
from examples.ops_agent import tools_v2 as v2
from toolproof import Agent, Tool, Toolset
from toolproof.models import Model

SYSTEM_PROMPT = (
    "You are the on-call assistant of an internal operations team. Look users and services "
    "up with the tools before answering, and only state what a tool returned."
)


def build_agent(
    model: Model | str, tools: Toolset | Sequence[Tool[..., Any]] | None = None, **options: Any
) -> Agent:
    """The ops agent as deployed: the v1 tools."""
    return Agent(
        model, v1.TOOLS if tools is None else tools, system_prompt=SYSTEM_PROMPT, **options
    )


def build_agent_v2(
    model: Model | str, tools: Toolset | Sequence[Tool[..., Any]] | None = None, **options: Any
) -> Agent:
    """The ops agent after the tool upgrade: strict ``query_users`` and two new tools."""
    return Agent(
        model, v2.TOOLS if tools is None else tools, system_prompt=SYSTEM_PROMPT, **options
    )
