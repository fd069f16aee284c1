"""Small text helpers shared by messages, reports and the CLI."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["clip", "json_type"]


def clip(text: str, limit: int, *, flatten: bool = True) -> str:
    """``text`` stripped and cut to ``limit`` characters, ending in an ellipsis when cut.

    With ``flatten`` (the default) whitespace runs fold to one space, so a multi-line value
    fits on one line.
    """
    text = " ".join(text.split()) if flatten else text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_type(value: Any) -> str:
    """The JSON Schema type name of a value (``"integer"``, ``"object"``...), for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
