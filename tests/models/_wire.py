"""The recorded OpenAI-wire exchanges of ``tests/data/conformance/openai-wire``."""

from __future__ import annotations

from pathlib import Path

from _shared import SHARED

WIRE_DIR: Path = SHARED / "conformance" / "openai-wire"


def wire_files() -> list[str]:
    """The recording file names, or one placeholder that makes the test skip if absent."""
    if not WIRE_DIR.exists():
        return ["(openai-wire absent)"]
    return sorted(p.name for p in WIRE_DIR.glob("*.json"))
