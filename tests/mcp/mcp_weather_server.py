"""A small MCP server written with the MCP SDK (MCPServer), as a third party would write it.

``python mcp_weather_server.py`` serves version 1 over stdio; ``--v2`` serves version 2, whose
``get_forecast`` requires a new ``units`` argument (a breaking schema change).
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

V2 = "--v2" in sys.argv
server = MCPServer("weather")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def get_weather(city: str) -> str:
    """Current weather in a city."""
    if city == "Atlantis":
        raise ValueError(f"unknown city {city}")
    return f"Sunny in {city}, 21 C"


if V2:

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def get_forecast(city: str, days: int, units: str) -> dict[str, object]:
        """Forecast for the next days."""
        return {"city": city, "days": days, "units": units, "outlook": "rain"}

else:

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def get_forecast(city: str, days: int = 3) -> dict[str, object]:
        """Forecast for the next days."""
        return {"city": city, "days": days, "outlook": "rain"}


@server.tool()
def book_umbrella(city: str) -> str:
    """Order an umbrella to be delivered (not read-only)."""
    return f"umbrella booked for {city}"


@server.tool(name="weather.alerts")
def alerts(city: str) -> str:
    """A tool whose name toolproof cannot offer to a model (it is left out)."""
    return "none"


if __name__ == "__main__":
    server.run()
