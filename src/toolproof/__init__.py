"""toolproof: build tool-calling LLM agents and prove that they work.

The top level holds what an agent is made of. Test doubles and mocks live in
``toolproof.testing``, model adapters in ``toolproof.models``, workflow evals in
``toolproof.evals``, recording and replay in ``toolproof.replay``, errors in
``toolproof.errors`` and run events in ``toolproof.events``.

``import toolproof`` only defines things: no I/O, no environment reads beyond the
documented ``TOOLPROOF_ALLOW_MODEL_REQUESTS`` switch, and no heavy imports.
"""

from toolproof._version import __version__
from toolproof.errors import ToolError, UserError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from toolproof._agent import Agent, Budget, RunResult, Session
    from toolproof._calculator import calculator
    from toolproof._memory import Memory
    from toolproof._messages import Message, ModelSettings, ToolCall, ToolResult, Usage
    from toolproof._tools import Tool, tool
    from toolproof._toolset import Approval, ApprovalRequest, Toolset
    from toolproof._trace import Step, Trace

#: Names of ``__all__`` that are not parts of the agent. The parts are imported together on
#: the first use of any of them (the agent module needs all of them): ``import toolproof``
#: alone, as the command line does, stays at the version and the errors.
_NOT_PARTS = frozenset(("ToolError", "UserError", "__version__", "calculator"))


def _parts() -> dict[str, object]:
    from toolproof._agent import Agent, Budget, RunResult, Session
    from toolproof._memory import Memory
    from toolproof._messages import Message, ModelSettings, ToolCall, ToolResult, Usage
    from toolproof._tools import Tool, tool
    from toolproof._toolset import Approval, ApprovalRequest, Toolset
    from toolproof._trace import Step, Trace

    return {
        "Agent": Agent,
        "Approval": Approval,
        "ApprovalRequest": ApprovalRequest,
        "Budget": Budget,
        "Memory": Memory,
        "Message": Message,
        "ModelSettings": ModelSettings,
        "RunResult": RunResult,
        "Session": Session,
        "Step": Step,
        "Tool": Tool,
        "ToolCall": ToolCall,
        "ToolResult": ToolResult,
        "Toolset": Toolset,
        "Trace": Trace,
        "Usage": Usage,
        "tool": tool,
    }


def __getattr__(name: str) -> object:
    if name in __all__ and name not in _NOT_PARTS:
        # Every part is bound at once, after all of them imported: a thread that races
        # this one imports the same modules (the import lock makes it wait for them) and
        # binds the same objects, and never sees some names bound and others not.
        parts = _parts()
        globals().update(parts)
        return parts[name]
    # The built-in calculator is a Tool, and building a tool imports pydantic: do it on use.
    if name == "calculator":
        from toolproof._calculator import calculator

        return calculator
    raise AttributeError(f"module 'toolproof' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
