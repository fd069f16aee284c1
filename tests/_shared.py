"""Where the tests find ``../shared/`` (conformance material and datasets).

Importable from every test module as ``from _shared import shared_path`` (``tests/`` is on
pytest's ``pythonpath``). A user's clone has no ``../shared``: tests that need it skip with
the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ``../shared``; the calling test is skipped when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (it ships with the development workspace, not the repo)")
    return path
