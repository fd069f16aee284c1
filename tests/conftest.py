"""Shared test configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ``../shared``; the test is skipped when that material is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not present (it ships with the development workspace, not the repo)")
    return path
