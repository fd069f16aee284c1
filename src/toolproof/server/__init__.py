"""An OpenAI-compatible server that reads an agent's trajectory off the wire.

Point any agent (any framework, any language) at it with ``OPENAI_BASE_URL``: it answers
from a script, proxies to a real model while recording, or answers from recordings, and
turns every conversation into the same ``Trace`` toolproof's own agent produces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolproof.server._app import ToolproofServer
    from toolproof.server._external import ExternalAgent
    from toolproof.server._replay import RecordedModel

__all__ = ["ExternalAgent", "RecordedModel", "ToolproofServer"]


def __getattr__(name: str) -> Any:
    if name == "ToolproofServer":
        from toolproof.server._app import ToolproofServer

        return ToolproofServer
    if name == "ExternalAgent":
        from toolproof.server._external import ExternalAgent

        return ExternalAgent
    if name == "RecordedModel":
        from toolproof.server._replay import RecordedModel

        return RecordedModel
    raise AttributeError(f"module 'toolproof.server' has no attribute {name!r}")
