"""The OpenAI Agents SDK: a scripted model, tools both ways, and trace capture.

Install with ``pip install "toolproof[openai-agents]"``. This module imports ``agents``.

- :class:`ScriptedAgentsModel` answers the SDK's ``Runner`` from a toolproof script
  (``call(...)`` and strings); :class:`AgentsModel` puts any toolproof model behind the SDK's
  ``Model`` interface. Both record every request.
- :func:`to_function_tool` makes toolproof tools SDK ``FunctionTool`` objects dispatched by a
  :class:`~toolproof.Toolset` (mock mode, fixtures and faults apply);
  :func:`from_function_tool` makes an SDK ``FunctionTool`` (``@function_tool``) a toolproof
  tool.
- :class:`TraceProcessor` is an SDK tracing processor that turns each SDK trace into a
  toolproof :class:`~toolproof.Trace` (for checks, the recorder and replay);
  :func:`trace_from_result` builds one from a ``RunResult`` directly.

Tests should install toolproof's processor with ``agents.set_trace_processors([...])``, which
also removes the SDK's default exporter, so nothing is sent to the network.
"""

from __future__ import annotations

from toolproof.integrations.openai_agents._agent import AgentsSDKAgent
from toolproof.integrations.openai_agents._models import (
    AgentsModel,
    AgentsRequest,
    ScriptedAgentsModel,
)
from toolproof.integrations.openai_agents._tools import from_function_tool, to_function_tool
from toolproof.integrations.openai_agents._traces import TraceProcessor, trace_from_result

__all__ = [
    "AgentsModel",
    "AgentsRequest",
    "AgentsSDKAgent",
    "ScriptedAgentsModel",
    "TraceProcessor",
    "from_function_tool",
    "to_function_tool",
    "trace_from_result",
]
