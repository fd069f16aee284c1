"""Airline tools: look up, change and cancel reservations, or hand over to a person.

The real implementations call the airline's booking API; ``examples.airline.mocks.Airline``
answers the same tools from a shared state in evals, so a suite can check what the agent
changed (``expect: state:``).
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

from toolproof import ToolError, tool


def _booking_api(path: str, payload: dict[str, Any] | None = None) -> Any:
    base, token = os.environ.get("AIRLINE_API_URL"), os.environ.get("AIRLINE_API_TOKEN")
    if not base or not token:
        raise ToolError("this tool is not configured: set AIRLINE_API_URL and AIRLINE_API_TOKEN")
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
        raise ToolError(f"the booking service did not answer: {exc}") from exc


@tool(errors=[ToolError])
def get_reservation(code: str) -> dict[str, Any]:
    """Look up a reservation by its booking code.

    Args:
        code: The six-character booking code, e.g. ABC123.
    """
    return dict(_booking_api(f"/reservations/{code}"))


@tool(errors=[ToolError])
def search_flights(origin: str, destination: str, date: str) -> list[dict[str, Any]]:
    """Find flights with free seats between two airports on a date.

    Args:
        origin: The IATA code of the departure airport, e.g. YUL.
        destination: The IATA code of the arrival airport, e.g. YYZ.
        date: The date, as YYYY-MM-DD.
    """
    return list(_booking_api(f"/flights?from={origin}&to={destination}&date={date}"))


@tool(side_effects=True, errors=[ToolError])
def change_flight(code: str, flight: str) -> dict[str, Any]:
    """Move a reservation to another flight (only after the passenger confirmed).

    Args:
        code: The booking code.
        flight: The new flight number, e.g. AC099.
    """
    return dict(_booking_api(f"/reservations/{code}/flight", {"flight": flight}))


@tool(side_effects=True, errors=[ToolError])
def cancel_reservation(code: str) -> dict[str, Any]:
    """Cancel a reservation (only after the passenger confirmed).

    Args:
        code: The booking code.
    """
    return dict(_booking_api(f"/reservations/{code}/cancel", {}))


@tool
def transfer_to_human(summary: str) -> str:
    """Hand the conversation over to a human agent, for what the tools cannot do.

    Args:
        summary: What the passenger needs, for the human agent.
    """
    return "transferred"


TOOLS = [get_reservation, search_flights, change_flight, cancel_reservation, transfer_to_human]
