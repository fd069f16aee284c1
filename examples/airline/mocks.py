"""A stateful mock of the booking system: reservations and flights share one state.

Evals check the final state (``expect: state:``): which reservation moved to which flight,
which was cancelled, and that nothing else changed.
"""

from __future__ import annotations

import copy
from typing import Any

from toolproof import ToolError
from toolproof.testing import StatefulMock

RESERVATIONS: dict[str, dict[str, Any]] = {
    "ABC123": {
        "code": "ABC123",
        "passenger": "Mia Li",
        "flight": "AC101",
        "origin": "YUL",
        "destination": "YYZ",
        "date": "2025-05-03",
        "status": "confirmed",
    },
    "QRS789": {
        "code": "QRS789",
        "passenger": "Omar Haddad",
        "flight": "AC205",
        "origin": "YYZ",
        "destination": "YVR",
        "date": "2025-06-12",
        "status": "confirmed",
    },
}
FLIGHTS: list[dict[str, Any]] = [
    {
        "flight": "AC099",
        "origin": "YUL",
        "destination": "YYZ",
        "date": "2025-05-03",
        "departs": "07:00",
        "seats": 4,
    },
    {
        "flight": "AC101",
        "origin": "YUL",
        "destination": "YYZ",
        "date": "2025-05-03",
        "departs": "10:00",
        "seats": 0,
    },
]


class Airline(StatefulMock):
    """Reservations and flights; every change is recorded in the state."""

    initial_state = {
        "reservations": copy.deepcopy(RESERVATIONS),
        "flights": copy.deepcopy(FLIGHTS),
        "transfers": [],
    }

    def _reservation(self, code: str) -> dict[str, Any]:
        found = self.state["reservations"].get(code.strip().upper())
        if found is None:
            raise ToolError(f"no reservation {code}")
        return dict(found)

    @StatefulMock.handles("get_reservation")
    def get_reservation(self, code: str) -> dict[str, Any]:
        return self._reservation(code)

    @StatefulMock.handles("search_flights")
    def search_flights(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        return [
            dict(f)
            for f in self.state["flights"]
            if (f["origin"], f["destination"], f["date"]) == (origin, destination, date)
        ]

    @StatefulMock.handles("change_flight")
    def change_flight(self, code: str, flight: str) -> dict[str, Any]:
        reservation = self._reservation(code)
        if reservation["status"] != "confirmed":
            raise ToolError(f"reservation {code} is {reservation['status']}")
        self.state["reservations"][reservation["code"]]["flight"] = flight
        return self._reservation(code)

    @StatefulMock.handles("cancel_reservation")
    def cancel_reservation(self, code: str) -> dict[str, Any]:
        reservation = self._reservation(code)
        self.state["reservations"][reservation["code"]]["status"] = "cancelled"
        return self._reservation(code)

    @StatefulMock.handles("transfer_to_human")
    def transfer_to_human(self, summary: str) -> str:
        self.state["transfers"].append(summary)
        return "transferred"
