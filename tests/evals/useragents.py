"""The agent, models and user functions the simulated-user tests' suites name.

Suites written in ``tmp_path`` import this module by name (pytest puts ``tests/evals`` on
``sys.path``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolproof import Agent, Message, Toolset, tool
from toolproof.testing import FunctionModel, RequestInfo, StatefulMock, call

SYSTEM_MARKER = "SYSTEM-PROMPT-MARKER-41c9"
RESULT_MARKER = "TOOL-RESULT-MARKER-77d2"


@tool
def lookup(code: str) -> str:
    """Look up a booking.

    Args:
        code: The booking code.
    """
    return f"{RESULT_MARKER} booking {code}: flight AC101"


@tool(side_effects=True)
def cancel(code: str) -> str:
    """Cancel a booking.

    Args:
        code: The booking code.
    """
    raise AssertionError("only the mock runs")


@tool
def transfer_to_human(summary: str) -> str:
    """Hand the conversation to a person.

    Args:
        summary: What the user needs.
    """
    return "transferred"


class Bookings(StatefulMock):
    """The cancelled bookings."""

    initial_state = {"cancelled": []}

    @StatefulMock.handles("cancel")
    def cancel(self, code: str) -> str:
        self.state["cancelled"].append(code)
        return "cancelled"


def build_agent(model: Any, tools: Toolset | None = None, **options: Any) -> Agent:
    return Agent(
        model,
        [lookup, cancel, transfer_to_human] if tools is None else tools,
        system_prompt=f"You are the {SYSTEM_MARKER} agent.",
        **options,
    )


def agent_model(secret: str = "XK-1") -> FunctionModel:
    """An agent that looks the booking up with ``secret`` on each turn, then answers.

    "cancel" in the user's message makes it cancel; "human" makes it transfer. Its answers
    never repeat the tool results.
    """

    def respond(messages: Sequence[Message], info: RequestInfo) -> Any:
        last = messages[-1]
        if last.role == "tool":
            return "Done. Anything else?"
        text = (last.content or "").lower()
        if "human" in text:
            return call("transfer_to_human", summary="wants a person")
        if "cancel" in text:
            return call("cancel", code=secret)
        return call("lookup", code=secret)

    return FunctionModel(respond, name="agent")


def user_model(replies: Sequence[str]) -> FunctionModel:
    """A user model that answers ``replies`` in order, and records what it was sent."""
    queue = list(replies)

    def respond(messages: Sequence[Message], info: RequestInfo) -> str:
        return queue.pop(0) if queue else "###DONE###"

    return FunctionModel(respond, name="user")


#: For ``--model useragents:AGENT``.
AGENT = agent_model()

#: For ``--user-model useragents:REVEALING``: gives the booking code before being asked.
REVEALING = user_model(["Hi, my booking code is ABC123.", "Thanks. ###DONE###"])


def say_code_when_asked(conversation: Sequence[Message]) -> str | None:
    """A user function: the code when the agent asked something, else done."""
    if conversation and "?" in (conversation[-1].content or ""):
        return "It is ABC123."
    return None
