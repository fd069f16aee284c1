"""Fixtures of the replay tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The examples package (examples.ops_agent) is imported as from the project root.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh store path in the test's temporary folder."""
    return tmp_path / "traces.db"
