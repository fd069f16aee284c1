"""Fixtures of the replay tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh store path in the test's temporary folder."""
    return tmp_path / "traces.db"
