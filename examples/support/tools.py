"""Workplace tools: Slack, JIRA and account support, each real and mocked.

Every tool has a real implementation (it calls the service's HTTP API with a token from the
environment) and a mock declared with ``@tool.mock`` that returns static test data, as in
Sierra's approach: ``tools: mock`` in a suite swaps all of them at once. Tools that change
something (``side_effects=True``) can never run for real in mock mode.

For evals that check what the agent changed, ``examples.support.mocks.Workspace`` answers
the same tools from a shared state.
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

from toolproof import Tool, ToolError, tool

CURRENT_MESSAGE: dict[str, str] = {
    "ts": "1718000000.000100",
    "channel": "C042SUPPORT",
    "user": "mia.li",
    "text": "The login page keeps returning 500, ticket: https://acme.atlassian.net/browse/PROJ-123",
}
TICKETS: dict[str, dict[str, str]] = {
    "PROJ-123": {
        "key": "PROJ-123",
        "summary": "Login page returns HTTP 500",
        "status": "In Progress",
        "assignee": "wang.lei",
    }
}
USERS: dict[str, dict[str, str]] = {
    "U1001": {"id": "U1001", "email": "mia.li@example.com", "name": "Mia Li", "status": "locked"}
}


def _call_api(base_env: str, token_env: str, path: str, payload: dict[str, Any] | None) -> Any:
    """POST (or GET) a JSON API with a bearer token; errors become ToolError for the model."""
    base, token = os.environ.get(base_env), os.environ.get(token_env)
    if not base or not token:
        raise ToolError(f"this tool is not configured: set {base_env} and {token_env}")
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(
        base.rstrip("/") + path,
        data=data,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"null")
    except OSError as exc:
        raise ToolError(f"the service did not answer: {exc}") from exc


# -- Slack and JIRA ---------------------------------------------------------------------------


@tool
def slack_get_message(ts: str = "current") -> dict[str, str]:
    """Read a Slack message: its text, author and channel.

    Args:
        ts: The message timestamp; "current" is the message the user invoked you on.
    """
    result: dict[str, str] = _call_api(
        "SLACK_API_URL", "SLACK_TOKEN", f"/conversations.message?ts={ts}", None
    )
    return result


@slack_get_message.mock
def _mock_get_message(ts: str = "current") -> dict[str, str]:
    return {**CURRENT_MESSAGE, "ts": CURRENT_MESSAGE["ts"] if ts == "current" else ts}


@tool
def jira_get_ticket(key: str) -> dict[str, str]:
    """Look up a JIRA ticket by its key.

    Args:
        key: The ticket key, for example PROJ-123.
    """
    result: dict[str, str] = _call_api(
        "JIRA_API_URL", "JIRA_TOKEN", f"/rest/api/2/issue/{key}", None
    )
    return result


@jira_get_ticket.mock
def _mock_get_ticket(key: str) -> dict[str, str]:
    if key.upper() not in TICKETS:
        raise ToolError(f"ticket {key} does not exist")
    return TICKETS[key.upper()]


@tool(side_effects=True)
def slack_add_reaction(ts: str, emoji: str) -> str:
    """Add an emoji reaction to a Slack message.

    Args:
        ts: The message timestamp.
        emoji: The emoji name without colons, for example smile.
    """
    _call_api("SLACK_API_URL", "SLACK_TOKEN", "/reactions.add", {"timestamp": ts, "name": emoji})
    return "ok"


@slack_add_reaction.mock
def _mock_add_reaction(ts: str, emoji: str) -> str:
    return "ok"


@tool(side_effects=True)
def slack_send_message(channel: str, text: str) -> str:
    """Post a message to a Slack channel.

    Args:
        channel: The channel id, for example C042SUPPORT.
        text: The message.
    """
    _call_api(
        "SLACK_API_URL", "SLACK_TOKEN", "/chat.postMessage", {"channel": channel, "text": text}
    )
    return "sent"


@slack_send_message.mock
def _mock_send_message(channel: str, text: str) -> str:
    return "sent"


# -- accounts ---------------------------------------------------------------------------------


@tool
def user_lookup(query: str) -> dict[str, str]:
    """Find a user account by email address or name.

    Args:
        query: An email address or a name.
    """
    result: dict[str, str] = _call_api(
        "ACCOUNTS_API_URL", "ACCOUNTS_TOKEN", f"/users/search?q={query}", None
    )
    return result


@user_lookup.mock
def _mock_user_lookup(query: str) -> dict[str, str]:
    for user in USERS.values():
        if query.lower() in (user["email"], user["name"].lower()):
            return user
    raise ToolError(f"no user matches {query!r}")


@tool(side_effects=True)
def password_reset(user_id: str) -> str:
    """Unlock an account and email its owner a password-reset link.

    Args:
        user_id: The account id from user_lookup, for example U1001.
    """
    _call_api("ACCOUNTS_API_URL", "ACCOUNTS_TOKEN", f"/users/{user_id}/password-reset", {})
    return "reset link sent"


@password_reset.mock
def _mock_password_reset(user_id: str) -> str:
    return "reset link sent"


@tool(side_effects=True)
def account_delete(user_id: str) -> str:
    """Delete a user account permanently. Only when the user explicitly asks for it.

    Args:
        user_id: The account id.
    """
    _call_api("ACCOUNTS_API_URL", "ACCOUNTS_TOKEN", f"/users/{user_id}/delete", {})
    return "deleted"


@account_delete.mock
def _mock_account_delete(user_id: str) -> str:
    return "deleted"


#: Slack and JIRA tools (the HR assistant is given them too).
WORKPLACE_TOOLS: list[Tool[..., Any]] = [
    slack_get_message,
    jira_get_ticket,
    slack_add_reaction,
    slack_send_message,
]
ACCOUNT_TOOLS: list[Tool[..., Any]] = [user_lookup, password_reset, account_delete]
TOOLS: list[Tool[..., Any]] = [*WORKPLACE_TOOLS, *ACCOUNT_TOOLS]
