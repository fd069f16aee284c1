"""User turns chosen by a function of the conversation (``{reply: module:function}``).

A function receives the conversation as the user sees it (its own messages and the
agent's answers, never tool calls) and returns the next message, or ``None`` when the user
is done.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolproof import Message


def give_code_when_asked(conversation: Sequence[Message]) -> str | None:
    """Give the booking code only once the agent asked for it."""
    last = (conversation[-1].content or "").lower() if conversation else ""
    if "code" in last or "booking" in last:
        return "It's QRS789."
    return "I'd like to cancel my trip to Vancouver, please."


def confirm_if_exact(conversation: Sequence[Message]) -> str | None:
    """Say yes only when the agent names the reservation it will cancel."""
    last = conversation[-1].content or "" if conversation else ""
    if "QRS789" in last and "cancel" in last.lower():
        return "Yes, please cancel it."
    return "Which reservation do you mean exactly?"
