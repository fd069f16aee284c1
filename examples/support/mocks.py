"""A stateful mock of the support workspace: Slack, JIRA and accounts share one state.

Evals assert on the final state (``expect: state:``): which reactions were added, which
messages were posted, whose password was reset, which accounts were deleted. A suite names
the class (``mocks: examples.support.mocks:Workspace``) and gets a fresh instance per trial.
"""

from __future__ import annotations

import copy

from examples.support.tools import CURRENT_MESSAGE, TICKETS, USERS
from toolproof import ToolError
from toolproof.testing import StatefulMock


class Workspace(StatefulMock):
    """Slack messages and reactions, JIRA tickets and user accounts."""

    initial_state = {
        "messages": {"current": dict(CURRENT_MESSAGE)},
        "tickets": copy.deepcopy(TICKETS),
        "users": copy.deepcopy(USERS),
        "reactions": [],
        "sent": [],
        "password_resets": [],
        "deleted": [],
    }

    @StatefulMock.handles("slack_get_message")
    def get_message(self, ts: str = "current") -> dict[str, str]:
        for key, message in self.state["messages"].items():
            if ts in (key, message["ts"]):
                return dict(message)
        raise ToolError(f"message {ts} not found")

    @StatefulMock.handles("jira_get_ticket")
    def get_ticket(self, key: str) -> dict[str, str]:
        ticket = self.state["tickets"].get(key.upper())
        if ticket is None:
            raise ToolError(f"ticket {key} does not exist")
        return dict(ticket)

    @StatefulMock.handles("slack_add_reaction")
    def add_reaction(self, ts: str, emoji: str) -> str:
        self.get_message(ts)
        self.state["reactions"].append({"ts": ts, "emoji": emoji.strip(":")})
        return "ok"

    @StatefulMock.handles("slack_send_message")
    def send_message(self, channel: str, text: str) -> str:
        self.state["sent"].append({"channel": channel, "text": text})
        return "sent"

    @StatefulMock.handles("user_lookup")
    def lookup(self, query: str) -> dict[str, str]:
        for user in self.state["users"].values():
            if query.lower() in (user["email"], user["name"].lower()):
                return dict(user)
        raise ToolError(f"no user matches {query!r}")

    @StatefulMock.handles("password_reset")
    def reset(self, user_id: str) -> str:
        user = self.state["users"].get(user_id)
        if user is None:
            raise ToolError(f"user {user_id} does not exist")
        user["status"] = "active"
        self.state["password_resets"].append(user_id)
        return "reset link sent"

    @StatefulMock.handles("account_delete")
    def delete(self, user_id: str) -> str:
        if self.state["users"].pop(user_id, None) is None:
            raise ToolError(f"user {user_id} does not exist")
        self.state["deleted"].append(user_id)
        return "deleted"
