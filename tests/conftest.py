"""Shared test configuration. Helpers for ``../shared`` material live in ``_shared.py``."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

from _shared import ROOT, SHARED, shared_path

__all__ = ["ROOT", "SHARED", "shared_path"]

# Property tests must not fail because a CI machine is busy: no per-example deadline.
settings.register_profile("toolproof", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("toolproof")

# A real PostgreSQL server for the store tests (skipped with the reason when there is none).
from _postgres import pg_url, postgres_server  # noqa: E402, F401
