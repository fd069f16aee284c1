"""A module holding one Toolset (with a mock of its own): ``mcp serve`` serves that toolset."""

from __future__ import annotations

from mcp_demo_tools import TOOLS

from toolproof import Toolset

TOOLSET = Toolset(TOOLS, mocks={"cancel_order": lambda order_id, reason="": "toolset mock"})
