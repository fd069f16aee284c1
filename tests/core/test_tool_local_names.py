"""A tool's type hints may name classes local to the function that defines it.

With postponed annotations every hint is text, read where the tool is made: the names
local to the code that applies ``@tool`` (or builds ``Tool``) must be found, whichever
way the tool is made.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from toolproof import Tool, tool


def _property(made: Any, name: str) -> Any:
    return made.parameters["properties"][name]


def test_a_local_model_in_a_hint_is_found_by_every_way_of_making_a_tool() -> None:
    class Point(BaseModel):
        x: int
        y: int

    @tool
    def bare(point: Point) -> int:
        """Sum the coordinates.

        Args:
            point: A point.
        """
        return point.x + point.y

    @tool(name="with_options", timeout=5)
    def with_options(point: Point) -> int:
        """Sum the coordinates.

        Args:
            point: A point.
        """
        return point.x + point.y

    def plain(point: Point) -> int:
        """Sum the coordinates.

        Args:
            point: A point.
        """
        return point.x + point.y

    made = [bare, with_options, Tool(plain), tool(plain)]
    for each in made:
        schema = each.parameters
        definition = schema.get("$defs", {}).get("Point") or _property(each, "point")
        assert set(definition["properties"]) == {"x", "y"}, (each.name, schema)
        assert each.validate({"point": {"x": 1, "y": 2}})["point"] == Point(x=1, y=2)
