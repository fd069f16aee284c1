"""Shared test configuration. Helpers for ``../shared`` material live in ``_shared.py``."""

from __future__ import annotations

from _shared import ROOT, SHARED, shared_path

__all__ = ["ROOT", "SHARED", "shared_path"]
