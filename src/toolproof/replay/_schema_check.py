"""Tool schema files, and the recorded calls a new schema would reject (``schema diff --store``).

:func:`load_schema_file` is the one reader of schema files for every command
(``schema diff`` / ``check``, ``replay --schemas``): it takes a toolproof schema snapshot
(``toolproof schema snapshot``) or OpenAI tool schemas (``tools.json``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolproof.errors import UserError
from toolproof.replay._grading import mask_value
from toolproof.replay._rules import DEFAULT_MASK
from toolproof.replay._store import TraceFilter, TraceStore

if TYPE_CHECKING:
    from toolproof._trace import ToolInfo


def load_schema_file(path: str | Path) -> list[ToolInfo]:
    """The tools of a schema file: a toolproof snapshot, or OpenAI tool schemas.

    OpenAI form is ``[{"type": "function", "function": {name, description, parameters}}]``
    (or ``{"tools": [...]}``, or bare ``{name, description, parameters}`` objects).

    Raises:
        UserError: The file cannot be read, is not JSON, or is neither form.
    """
    from toolproof._trace import tool_info
    from toolproof.replay._import import load_tool_infos

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such schema file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UserError(f"{path}: invalid JSON ({exc})") from None
    if isinstance(data, Mapping) and "format" in data:
        from toolproof._snapshots import check_snapshot

        snapshot = check_snapshot(data, str(path))
        infos = []
        for name, entry in snapshot["tools"].items():
            description = str(entry.get("description") or "")
            parameters = dict(entry.get("parameters") or {"type": "object", "properties": {}})
            infos.append(tool_info(name, description, parameters))
        return infos
    try:
        return load_tool_infos(data)
    except UserError as exc:
        detail = str(exc).removeprefix("tools").removeprefix(": ")
        raise UserError(
            f"{path} is neither a toolproof schema snapshot nor OpenAI tool schemas: {detail}"
        ) from None


def schema_snapshot(infos: Sequence[ToolInfo]) -> dict[str, Any]:
    """A schema snapshot (as ``schema snapshot`` writes) of tools known by their schemas."""
    from toolproof._snapshots import SNAPSHOT_FORMAT, SNAPSHOT_VERSION

    entries = {
        info.name: {"description": info.description, "parameters": info.parameters, "returns": None}
        for info in infos
    }
    return {
        "format": SNAPSHOT_FORMAT,
        "version": SNAPSHOT_VERSION,
        "tools": dict(sorted(entries.items())),
    }


__all__ = ["SchemaRejections", "count_schema_rejections", "load_schema_file", "schema_snapshot"]


@dataclass(slots=True)
class SchemaRejections:
    """The recorded calls of one tool checked against its new parameters schema.

    Attributes:
        tool: The tool name.
        checked: Recorded calls checked.
        rejected: How many of them the new schema rejects.
        examples: A few rejected calls: trace id, the call (sensitive values masked) and why.
    """

    tool: str
    checked: int = 0
    rejected: int = 0
    examples: list[str] = field(default_factory=list)


def count_schema_rejections(
    store: str | Path | TraceStore,
    schemas: Mapping[str, Mapping[str, Any]],
    *,
    examples: int = 3,
    mask: Sequence[str] = DEFAULT_MASK,
    filter: TraceFilter | None = None,
) -> list[SchemaRejections]:
    """Validate every recorded call in ``store`` against the new parameter schemas.

    A recorded tool missing from ``schemas`` has all its calls rejected ("tool no longer
    exists"). Calls whose recorded arguments were not valid JSON are not counted (they were
    rejected when recorded already).

    Args:
        store: The trace store or its path.
        schemas: Tool name -> the NEW parameters JSON Schema.
        examples: Rejected calls to keep per tool.
        mask: Argument names whose values are masked in the examples.
        filter: Check only these stored traces.

    Returns:
        One entry per tool recorded or named in ``schemas``, sorted by tool name.

    Raises:
        UserError: The store is missing, or a schema is not a valid JSON Schema.

    Example:
        ```python
        new = {"query_users": {"type": "object", "properties": {"user_id": {"type": "integer"}},
                               "required": ["user_id"], "additionalProperties": False}}
        for entry in count_schema_rejections(".toolproof/traces.db", new):
            print(entry.tool, entry.rejected, "of", entry.checked, entry.examples)
        ```
    """
    checkers = _checkers(schemas)
    masked = {m.lower() for m in mask}
    results: dict[str, SchemaRejections] = {name: SchemaRejections(name) for name in schemas}
    opened = store if isinstance(store, TraceStore) else TraceStore(store, create=False)
    try:
        # (each row decoded once, by the codec: unreadable rows are skipped with a warning)
        for _, _, trace in opened._decoded(filter, newest_first=True):
            for step in trace.steps:
                for call in step.response.tool_calls:
                    if call.arguments_error:
                        continue
                    entry = results.setdefault(call.name, SchemaRejections(call.name))
                    entry.checked += 1
                    reason = _rejection(checkers.get(call.name), call.arguments, masked)
                    if reason is None:
                        continue
                    entry.rejected += 1
                    if len(entry.examples) < examples:
                        shown = json.dumps(
                            mask_value("", call.arguments, mask),
                            ensure_ascii=False,
                            sort_keys=True,
                        )
                        entry.examples.append(f"{trace.id[:12]}: {call.name}({shown}): {reason}")
    finally:
        if opened is not store:
            opened.close()
    return [results[name] for name in sorted(results)]


def _checkers(schemas: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A JSON Schema validator per tool.

    Raises:
        UserError: A schema is not a valid JSON Schema.
    """
    from jsonschema import Draft202012Validator, validators

    checkers: dict[str, Any] = {}
    for name, schema in schemas.items():
        cls = validators.validator_for(dict(schema), default=Draft202012Validator)
        try:
            cls.check_schema(dict(schema))
        except Exception as exc:
            message = getattr(exc, "message", str(exc))
            raise UserError(
                f"the new schema of tool '{name}' is not valid JSON Schema: {message}"
            ) from None
        checkers[name] = cls(dict(schema))
    return checkers


def _rejection(checker: Any, arguments: dict[str, Any], masked: set[str]) -> str | None:
    """Why the new schema rejects a recorded call, or ``None`` when it accepts it."""
    from jsonschema.exceptions import best_match

    if checker is None:
        return "tool no longer exists"
    error = best_match(checker.iter_errors(arguments))
    return None if error is None else _reason(error, masked)


def _reason(error: Any, masked: set[str]) -> str:
    path = [str(p) for p in error.absolute_path]
    message = str(error.message)
    if any(part.lower() in masked for part in path):
        message = message.replace(repr(error.instance), "***")
        message = message.replace(json.dumps(error.instance, default=str), "***")
    return message + (f" (at {'/'.join(path)})" if path else "")
