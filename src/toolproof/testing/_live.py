"""Whether live model tests are switched on: shared by the fixtures and the suite items."""

from __future__ import annotations

import os

import pytest

__all__ = ["LIVE_ENV", "is_live"]

#: The environment variable that switches live model tests on, like ``--toolproof-live``.
LIVE_ENV = "TOOLPROOF_LIVE"


def is_live(config: pytest.Config) -> bool:
    """Whether live model tests are switched on (``--toolproof-live`` or ``TOOLPROOF_LIVE``)."""
    if config.getoption("toolproof_live", default=False):
        return True
    return os.environ.get(LIVE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}
