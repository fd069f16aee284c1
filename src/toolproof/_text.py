"""Small text helpers shared by messages, reports and the CLI."""

from __future__ import annotations

__all__ = ["clip"]


def clip(text: str, limit: int, *, flatten: bool = True) -> str:
    """``text`` stripped and cut to ``limit`` characters, ending in an ellipsis when cut.

    With ``flatten`` (the default) whitespace runs fold to one space, so a multi-line value
    fits on one line.
    """
    text = " ".join(text.split()) if flatten else text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
