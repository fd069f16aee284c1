"""JSON Schema fragments of the built-in checks' values (for the published suite schema)."""

from __future__ import annotations

from typing import Any

from toolproof.evals._checks import ARG_MODES

NAME: dict[str, Any] = {"type": "string"}
NAMES: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
TEXTS: dict[str, Any] = {
    "anyOf": [{"type": "string"}, {"type": "array", "minItems": 1, "items": {"type": "string"}}]
}
COUNT: dict[str, Any] = {
    "anyOf": [
        {"type": "integer", "minimum": 0},
        {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "properties": {
                "min": {"type": "integer", "minimum": 0},
                "max": {"type": "integer", "minimum": 0},
            },
        },
    ]
}
CALL: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": NAME,
        "arguments": {"type": "object"},
        "mode": {"enum": list(ARG_MODES)},
    },
}
