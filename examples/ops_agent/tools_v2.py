"""The ops agent's tools two months later (v2): two new tools, and a strict ``query_users``.

``query_users`` now rejects arguments it does not know (toolproof's default,
``extra="forbid"``). On its own that is good hygiene; together with the new model, which
adds ``options`` to some calls, it is an outage.
"""

from __future__ import annotations

from typing import Any, Literal

from examples.ops_agent.tools import SERVICES, get_service_status, lookup_user
from toolproof import Tool, tool

INCIDENTS: dict[str, list[dict[str, Any]]] = {
    "db": [{"id": "INC-311", "title": "replica lag", "open": True}],
    "api": [],
    "queue": [],
}


@tool(name="query_users")
def query_users(user_id: int) -> dict[str, Any]:
    """Look up a user of the platform: name, plan, account status and seats.

    Args:
        user_id: The numeric user id, such as 101.
    """
    return lookup_user(user_id)


@tool
def list_incidents(service: Literal["api", "db", "queue"], limit: int = 10) -> list[dict[str, Any]]:
    """Open and recent incidents of a service, newest first.

    Args:
        service: The service: api, db or queue.
        limit: At most this many incidents.
    """
    return INCIDENTS[service][:limit]


@tool(side_effects=True, requires_approval=True)
def restart_service(service: Literal["api", "db", "queue"]) -> str:
    """Restart a service (asks a human first).

    Args:
        service: The service: api, db or queue.
    """
    SERVICES[service]["state"] = "restarting"
    return f"{service} is restarting"


TOOLS: list[Tool[..., Any]] = [query_users, get_service_status, list_incidents, restart_service]
