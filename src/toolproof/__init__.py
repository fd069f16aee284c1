"""toolproof: build tool-calling LLM agents and prove that they work.

The top level holds what an agent is made of. Test doubles and mocks live in
``toolproof.testing``, model adapters in ``toolproof.models``, workflow evals in
``toolproof.evals``, recording and replay in ``toolproof.replay``, errors in
``toolproof.errors`` and run events in ``toolproof.events``.

``import toolproof`` only defines things: no I/O, no environment reads beyond the
documented ``TOOLPROOF_ALLOW_MODEL_REQUESTS`` switch, and no heavy imports.
"""

from toolproof._agent import Agent, Budget, RunResult, Session
from toolproof._memory import Memory
from toolproof._messages import Message, ModelSettings, ToolCall, ToolResult, Usage
from toolproof._tools import Tool, tool
from toolproof._toolset import Approval, ApprovalRequest, Toolset
from toolproof._trace import Step, Trace
from toolproof._version import __version__
from toolproof.errors import ToolError, UserError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from toolproof._calculator import calculator


def __getattr__(name: str) -> object:
    # The built-in calculator is a Tool, and building a tool imports pydantic: do it on use.
    if name == "calculator":
        from toolproof._calculator import calculator

        return calculator
    raise AttributeError(f"module 'toolproof' has no attribute {name!r}")


__all__ = [
    "Agent",
    "Approval",
    "ApprovalRequest",
    "Budget",
    "Memory",
    "Message",
    "ModelSettings",
    "RunResult",
    "Session",
    "Step",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "Toolset",
    "Trace",
    "Usage",
    "UserError",
    "__version__",
    "calculator",
    "tool",
]
