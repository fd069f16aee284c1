"""Tool schema snapshots: what the model is told about each tool, as committed JSON.

A snapshot holds, for every tool, its name, description, parameter schema and return
schema, as deterministic JSON (sorted keys, two-space indent, trailing newline). The tools
layer owns the format so replay can read snapshots; ``toolproof.testing`` diffs and asserts
them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from toolproof._schema import clean_schema
from toolproof._tools import Tool
from toolproof.errors import UserError

SNAPSHOT_FORMAT = "toolproof.tool-schemas"
#: Bump when a field is removed or changes meaning; readers refuse versions they do not know.
SNAPSHOT_VERSION = 1


# -- snapshots -------------------------------------------------------------------------------


def return_schema(t: Tool[..., Any]) -> dict[str, Any] | None:
    """The JSON Schema of a tool's return annotation (``None`` when it has none)."""
    if not t.has_return_annotation:
        return None
    from pydantic import TypeAdapter
    from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

    try:
        schema = TypeAdapter(t.return_annotation).json_schema()
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError):
        return {"x-python-type": _type_name(t.return_annotation)}
    return clean_schema(schema)


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__qualname__", None) or repr(annotation)


def snapshot_tools(tools: Iterable[Tool[..., Any]]) -> dict[str, Any]:
    """The snapshot of ``tools``: ``{"format", "version", "tools": {name: entry}}``."""
    entries = {}
    for t in tools:
        entries[t.name] = {
            "description": t.description,
            "parameters": t.parameters,
            "returns": return_schema(t),
        }
    return {
        "format": SNAPSHOT_FORMAT,
        "version": SNAPSHOT_VERSION,
        "tools": dict(sorted(entries.items())),
    }


def dump_snapshot(snapshot: Mapping[str, Any]) -> str:
    """Deterministic JSON text of a snapshot."""
    return json.dumps(snapshot, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load_snapshot(path: str | Path) -> dict[str, Any]:
    """Read a snapshot file.

    Raises:
        UserError: The file is missing, not JSON, or not a toolproof schema snapshot.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such snapshot file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{path} is not a toolproof schema snapshot: not UTF-8 text ({exc.reason})"
        ) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UserError(
            f"{path} is not a toolproof schema snapshot: invalid JSON ({exc})"
        ) from None
    return check_snapshot(data, str(path))


def check_snapshot(data: Any, label: str) -> dict[str, Any]:
    hint = "write one with `toolproof schema snapshot MODULE -o FILE`"
    if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
        raise UserError(
            f'{label} is not a toolproof schema snapshot (no "format": "{SNAPSHOT_FORMAT}"); {hint}'
        )
    version = data.get("version")
    if version != SNAPSHOT_VERSION:
        raise UserError(
            f"{label}: snapshot version {version!r} is not supported (this toolproof reads "
            f"version {SNAPSHOT_VERSION}); {hint}"
        )
    tools = data.get("tools")
    if not isinstance(tools, dict) or not all(
        isinstance(entry, dict) and isinstance(entry.get("parameters"), dict)
        for entry in tools.values()
    ):
        raise UserError(
            f"{label}: 'tools' must map each tool name to its description, parameters and "
            f"returns; {hint}"
        )
    return data
