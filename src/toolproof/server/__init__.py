"""An OpenAI-compatible server that reads an agent's trajectory off the wire.

Point any agent (any framework, any language) at it with ``OPENAI_BASE_URL``: it answers
from a script, proxies to a real model while recording, or answers from recordings, and
turns every conversation into the same ``Trace`` toolproof's own agent produces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolproof.server._app import Channel, ToolproofServer
    from toolproof.server._external import ExternalAgent
    from toolproof.server._replay import NoRecording, RecordedModel

__all__ = ["Channel", "ExternalAgent", "NoRecording", "RecordedModel", "ToolproofServer"]


def __getattr__(name: str) -> Any:
    if name in ("Channel", "ToolproofServer"):
        from toolproof.server import _app

        return getattr(_app, name)
    if name == "ExternalAgent":
        from toolproof.server._external import ExternalAgent

        return ExternalAgent
    if name in ("NoRecording", "RecordedModel"):
        from toolproof.server import _replay

        return getattr(_replay, name)
    raise AttributeError(f"module 'toolproof.server' has no attribute {name!r}")
