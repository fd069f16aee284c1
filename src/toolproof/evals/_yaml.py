"""YAML with line numbers (kept here for imports; the code lives in ``toolproof._yaml``)."""

from __future__ import annotations

from toolproof._yaml import DocPath, Locator, Problems, describe_type, format_path, load_yaml

__all__ = ["DocPath", "Locator", "Problems", "describe_type", "format_path", "load_yaml"]
