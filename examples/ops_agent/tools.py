"""The ops agent's tools as they were in production (v1).

``query_users`` was written with ``extra="ignore"``: arguments it does not know are dropped
without a word. That is why nobody noticed when a new model started sending ``options``.
"""

from __future__ import annotations

from typing import Any, Literal

from toolproof import Tool, ToolError, tool

USERS: dict[int, dict[str, Any]] = {
    101: {"name": "Ada Park", "plan": "enterprise", "status": "active", "seats": 40},
    102: {"name": "Ben Ito", "plan": "pro", "status": "active", "seats": 5},
    103: {"name": "Cleo Diaz", "plan": "free", "status": "suspended", "seats": 1},
    104: {"name": "Dev Rao", "plan": "pro", "status": "active", "seats": 12},
    105: {"name": "Eli Moss", "plan": "enterprise", "status": "active", "seats": 250},
    106: {"name": "Fay Lund", "plan": "pro", "status": "trial", "seats": 3},
    107: {"name": "Gus Hale", "plan": "free", "status": "active", "seats": 1},
    108: {"name": "Hana Sato", "plan": "enterprise", "status": "active", "seats": 75},
}

SERVICES: dict[str, dict[str, Any]] = {
    "api": {"state": "up", "latency_ms": 41, "error_rate": 0.002},
    "db": {"state": "degraded", "latency_ms": 380, "error_rate": 0.031},
    "queue": {"state": "up", "latency_ms": 12, "error_rate": 0.0},
}


def lookup_user(user_id: int) -> dict[str, Any]:
    """The user record, or a ToolError the model can act on."""
    if user_id not in USERS:
        raise ToolError(f"no user with id {user_id}")
    return {"user_id": user_id, **USERS[user_id]}


@tool(extra="ignore")
def query_users(user_id: int) -> dict[str, Any]:
    """Look up a user of the platform: name, plan, account status and seats.

    Args:
        user_id: The numeric user id, such as 101.
    """
    return lookup_user(user_id)


@tool
def get_service_status(service: Literal["api", "db", "queue"]) -> dict[str, Any]:
    """Current health of one of our services.

    Args:
        service: The service: api, db or queue.
    """
    return {"service": service, **SERVICES[service]}


TOOLS: list[Tool[..., Any]] = [query_users, get_service_status]
