"""``model_from_string``: ``"provider:model"`` strings to model instances."""

from __future__ import annotations

from typing import Any

from toolproof.errors import UserError
from toolproof.models._base import Model

__all__ = ["model_from_string"]


def model_from_string(spec: str, **options: Any) -> Model:
    """Build a model from a string such as ``"deepseek:deepseek-chat"``.

    Args:
        spec: ``"provider:model"``.
        **options: Passed to the adapter (``api_key=``, ``base_url=``, ``timeout=``...).

    Returns:
        The model.

    Raises:
        UserError: The string names no known provider or is malformed.
    """
    raise UserError(f"unknown model {spec!r}: no model providers are available yet")
