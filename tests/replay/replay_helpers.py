"""Helpers of the replay tests: a small ops agent's tool and traces built by real runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolproof import Agent, Trace, tool
from toolproof.testing import ScriptedModel, call


@tool
def query_users(user_id: int, fields: list[str] | None = None) -> dict[str, Any]:
    """Look up a user of the service.

    Args:
        user_id: The numeric user id.
        fields: Which fields to return (all when omitted).
    """
    return {"user_id": user_id, "name": f"user{user_id}", "plan": "pro", "active": True}


def run_trace(
    script: Sequence[Any],
    *,
    input: str = "Who is user 123?",
    tags: Sequence[str] = (),
    metadata: dict[str, Any] | None = None,
    tools: Sequence[Any] = (query_users,),
) -> Trace:
    """The trace of one real agent run with a scripted model."""
    agent = Agent(ScriptedModel(list(script)), list(tools), system_prompt="You are an ops agent.")
    return agent.run_sync(input, tags=tags, metadata=metadata).trace


def user_trace(user_id: int = 123, **options: Any) -> Trace:
    """A run that looks a user up and answers from the result."""
    return run_trace(
        [call("query_users", user_id=user_id), f"User {user_id} is user{user_id} on plan pro."],
        input=f"Who is user {user_id}?",
        **options,
    )
