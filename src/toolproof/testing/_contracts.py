"""Tool schema contracts: snapshots of what the model is told, and a classified diff.

A snapshot holds, for every tool, its name, description, parameter schema and return
schema, as deterministic JSON (sorted keys, two-space indent, trailing newline) so it can be
committed and reviewed. ``diff_snapshots`` classifies every change as breaking (a call the
old schema accepted may now be rejected, or the output changed shape) or compatible.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolproof._matching._values import show_value
from toolproof._snapshots import (
    SNAPSHOT_FORMAT,
    dump_snapshot,
    load_snapshot,
    return_schema,
    snapshot_tools,
)
from toolproof._text import json_type
from toolproof._tools import Tool
from toolproof.errors import UserError

__all__ = [
    "SNAPSHOT_FORMAT",
    "SchemaChange",
    "assert_schema_snapshot",
    "diff_snapshots",
    "dump_snapshot",
    "load_side",
    "load_snapshot",
    "return_schema",
    "snapshot_tools",
    "text_diff",
]

_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
# Keywords that only narrow what is accepted when they increase (minimum...) or decrease
# (maximum...).
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_NOTE_ONLY = ("description", "title", "examples", "default")


def load_side(spec: str) -> tuple[dict[str, Any], str]:
    """A snapshot read from a snapshot file, or built from a tool module.

    A module is ``pkg.tools``, ``path/tools.py`` or ``module:attr``.

    Raises:
        UserError: Neither a snapshot file nor an importable module with tools.
    """
    path = Path(spec)
    if path.suffix != ".py" and path.is_file():
        return load_snapshot(path), spec
    from toolproof._loading import collect_tools

    tools, _ = collect_tools([spec])
    if not tools:
        raise UserError(
            f"no tools found in {spec} (looked for tools, toolsets, agents and lists of tools)"
        )
    return snapshot_tools(tools), spec


def text_diff(old_text: str, new_text: str, old_label: str, new_label: str) -> str:
    """A unified diff of two snapshot texts."""
    lines = difflib.unified_diff(
        old_text.splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        fromfile=old_label,
        tofile=new_label,
    )
    return "".join(lines)


def assert_schema_snapshot(
    tools: Iterable[Tool[..., Any]] | Any, path: str | Path, *, update: bool = False
) -> None:
    """Assert that the tools' schemas equal the snapshot at ``path``.

    Args:
        tools: Tools, a toolset, an agent, or a module holding tools.
        path: The snapshot file.
        update: Write the current schemas to ``path`` instead of comparing (the pytest
            option ``--toolproof-update-snapshots`` sets it).

    Raises:
        AssertionError: The snapshot is missing or differs; the message shows the classified
            changes and a unified diff, and says how to accept them.
    """
    __tracebackhide__ = True
    from toolproof._loading import tools_in

    found = tools_in(tools)
    if not found:
        raise UserError(f"assert_schema_snapshot found no tools in {tools!r}")
    current = snapshot_tools(found)
    current_text = dump_snapshot(current)
    path = Path(path)
    if update:
        from toolproof._reporting import open_output

        if not path.is_file() or path.read_text(encoding="utf-8") != current_text:
            with open_output(path) as out:
                out.write(current_text)
        return
    accept = (
        "If the change is intended, run pytest with --toolproof-update-snapshots (or "
        f"`toolproof schema snapshot MODULE -o {path}`) and commit {path.name}."
    )
    if not path.exists():
        raise AssertionError(f"schema snapshot {path} does not exist. {accept}")
    old_text = path.read_bytes().decode("utf-8", "replace")
    if old_text == current_text:
        return
    old = load_snapshot(path) if old_text.strip() else {}  # (says what is wrong with it)
    changes = diff_snapshots(old, current) if old else []
    lines = [f"tool schemas differ from the snapshot {path}:"]
    lines.extend(f"  {change}" for change in changes)
    lines.append(text_diff(old_text, current_text, f"{path} (snapshot)", "current tools").rstrip())
    lines.append(accept)
    raise AssertionError("\n".join(lines))


# -- diff ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SchemaChange:
    """One difference between two snapshots.

    Attributes:
        tool: The tool concerned.
        breaking: Whether calls or consumers that worked before may now fail.
        kind: The category (``"removed parameter"``, ``"new optional parameter"``...).
        detail: A readable sentence.
    """

    tool: str
    breaking: bool
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{'BREAKING  ' if self.breaking else 'compatible'} {self.tool}: {self.detail}"


def diff_snapshots(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[SchemaChange]:
    """Classify every change from ``old`` to ``new`` (snapshots), tool by tool.

    Breaking: tool removed, new required parameter, removed parameter, parameter now
    required, narrowed type, removed enum value, tightened bounds or pattern, extra fields
    now forbidden, changed return structure. Compatible: new tool, new optional parameter,
    parameter now optional, widened type, added enum value, relaxed bounds, description or
    default change.
    """
    old_tools: Mapping[str, Any] = old.get("tools", {})
    new_tools: Mapping[str, Any] = new.get("tools", {})
    changes: list[SchemaChange] = []
    for name in sorted(set(old_tools) | set(new_tools)):
        if name not in new_tools:
            changes.append(SchemaChange(name, True, "tool removed", "tool removed"))
            continue
        if name not in old_tools:
            changes.append(SchemaChange(name, False, "new tool", "new tool"))
            continue
        before, after = old_tools[name], new_tools[name]
        if before.get("description") != after.get("description"):
            changes.append(
                SchemaChange(name, False, "description changed", "tool description changed")
            )
        walker = _Walker(name, before.get("parameters") or {}, after.get("parameters") or {})
        walker.compare_object(before.get("parameters") or {}, after.get("parameters") or {}, "")
        found = walker.changes + _return_changes(name, before.get("returns"), after.get("returns"))
        changes.extend(sorted(found, key=lambda change: not change.breaking))
    return changes


def _return_changes(name: str, old: Any, new: Any) -> list[SchemaChange]:
    if old == new:
        return []
    if old is None:
        return [SchemaChange(name, False, "return type declared", "return type now declared")]
    if new is None:
        return [
            SchemaChange(name, True, "changed return structure", "return type no longer declared")
        ]
    walker = _Walker(name, old, new, noun="field", output=True)
    walker.compare_value(old, new, "")
    if not walker.changes:  # e.g. only a $defs name changed
        return [SchemaChange(name, True, "changed return structure", "return schema changed")]
    return walker.changes


class _Walker:
    """Compares two JSON Schemas, recording classified changes."""

    def __init__(
        self,
        tool: str,
        old_root: Mapping[str, Any],
        new_root: Mapping[str, Any],
        *,
        noun: str = "parameter",
        output: bool = False,
    ) -> None:
        self.tool = tool
        self.roots = (old_root, new_root)
        self.noun = noun
        self.output = output
        self.changes: list[SchemaChange] = []

    def add(self, breaking: bool, kind: str, detail: str) -> None:
        if self.output and kind not in ("description changed", "default changed"):
            breaking, kind = True, "changed return structure"
            detail = f"return value: {detail}"
        elif self.output:
            detail = f"return value: {detail}"
        self.changes.append(SchemaChange(self.tool, breaking, kind, detail))

    def _name(self, path: str) -> str:
        return f"{self.noun} {path!r}" if path else "the value"

    # -- objects ------------------------------------------------------------------------------

    def compare_object(
        self,
        old: Mapping[str, Any],
        new: Mapping[str, Any],
        prefix: str,
        seen: frozenset[str] = frozenset(),
    ) -> None:
        old_props: Mapping[str, Any] = old.get("properties") or {}
        new_props: Mapping[str, Any] = new.get("properties") or {}
        old_required = set(old.get("required") or ())
        new_required = set(new.get("required") or ())
        for key in old_props:
            path = f"{prefix}{key}"
            if key not in new_props:
                self.add(True, f"removed {self.noun}", f"removed {self._name(path)}")
        for key, schema in new_props.items():
            path = f"{prefix}{key}"
            if key not in old_props:
                if key in new_required:
                    self.add(
                        True,
                        f"new required {self.noun}",
                        f"new required {self._name(path)} ({_summary(schema, self.roots[1])})",
                    )
                else:
                    self.add(
                        False,
                        f"new optional {self.noun}",
                        f"new optional {self._name(path)} ({_summary(schema, self.roots[1])})",
                    )
                continue
            if key in new_required and key not in old_required:
                self.add(True, f"{self.noun} now required", f"{self._name(path)} is now required")
            elif key in old_required and key not in new_required:
                self.add(False, f"{self.noun} now optional", f"{self._name(path)} is now optional")
            self.compare_value(old_props[key], schema, path, seen)
        self._compare_extra(old, new, prefix, seen)

    def _compare_extra(
        self, old: Mapping[str, Any], new: Mapping[str, Any], prefix: str, seen: frozenset[str]
    ) -> None:
        before = old.get("additionalProperties", True)
        after = new.get("additionalProperties", True)
        where = f" in {self._name(prefix.rstrip('.'))}" if prefix else ""
        if before is not False and after is False:
            self.add(
                True,
                "extra fields now forbidden",
                f"extra fields now forbidden{where} (additionalProperties: false)",
            )
        elif before is False and after is not False:
            self.add(False, "extra fields now allowed", f"extra fields now allowed{where}")
        elif isinstance(before, Mapping) and isinstance(after, Mapping):
            self.compare_value(before, after, f"{prefix}*", seen)

    # -- values -------------------------------------------------------------------------------

    def compare_value(
        self, old: Any, new: Any, path: str, seen: frozenset[str] = frozenset()
    ) -> None:
        old_s, old_ref = _resolve(old, self.roots[0])
        new_s, new_ref = _resolve(new, self.roots[1])
        key = f"{old_ref}|{new_ref}"
        if old_ref and new_ref:
            if key in seen:  # recursive models: compared once
                return
            seen = seen | {key}
        if old_s == new_s:
            return
        name = self._name(path)
        if old_s.get("description") != new_s.get("description"):
            self.add(False, "description changed", f"description of {name} changed")
        before_default, after_default = old_s.get("default"), new_s.get("default")
        if ("default" in old_s or "default" in new_s) and before_default != after_default:
            self.add(
                False,
                "default changed",
                f"default of {name} changed from {show_value(before_default, 60)} to "
                f"{show_value(after_default, 60)}",
            )
        self._compare_types(old_s, new_s, name)
        self._compare_enum(old_s, new_s, name)
        self._compare_bounds(old_s, new_s, name)
        # Structure: unwrap Optional[...] and compare the one remaining branch.
        old_inner, new_inner = _single_branch(old_s), _single_branch(new_s)
        if (
            old_inner is not None
            and new_inner is not None
            and (old_inner, new_inner)
            != (
                old_s,
                new_s,
            )
        ):
            self.compare_value(old_inner, new_inner, path, seen)
            return
        if _is_object(old_s) and _is_object(new_s):
            self.compare_object(old_s, new_s, f"{path}." if path else "", seen)
        if isinstance(old_s.get("items"), Mapping) and isinstance(new_s.get("items"), Mapping):
            self.compare_value(old_s["items"], new_s["items"], f"{path}[]", seen)

    def _compare_types(self, old: Mapping[str, Any], new: Mapping[str, Any], name: str) -> None:
        before, after = _accepted(old, self.roots[0]), _accepted(new, self.roots[1])
        if before == after:
            return
        shown = f"{_types_text(before)} -> {_types_text(after)}"
        if _covers(after, before):
            self.add(False, "widened type", f"widened type of {name}: {shown}")
        elif _covers(before, after):
            self.add(True, "narrowed type", f"narrowed type of {name}: {shown}")
        else:
            self.add(True, "changed type", f"changed type of {name}: {shown}")

    def _compare_enum(self, old: Mapping[str, Any], new: Mapping[str, Any], name: str) -> None:
        before, after = _enum(old), _enum(new)
        if before is None and after is None:
            return
        if before is None:
            self.add(
                True,
                "restricted to enum",
                f"{name} is now restricted to {_values(after or [])}",
            )
            return
        if after is None:
            self.add(False, "enum lifted", f"{name} is no longer restricted to fixed values")
            return
        removed = [v for v in before if v not in after]
        added = [v for v in after if v not in before]
        if removed:
            self.add(
                True,
                "removed enum value",
                f"removed enum value{'s' if len(removed) > 1 else ''} {_values(removed)} "
                f"from {name}",
            )
        if added:
            self.add(
                False,
                "added enum value",
                f"added enum value{'s' if len(added) > 1 else ''} {_values(added)} to {name}",
            )

    def _compare_bounds(self, old: Mapping[str, Any], new: Mapping[str, Any], name: str) -> None:
        for keyword in (*_LOWER_BOUNDS, *_UPPER_BOUNDS):
            before, after = old.get(keyword), new.get(keyword)
            if before == after or not _is_number(before, after):
                continue
            lower = keyword in _LOWER_BOUNDS
            if before is None:
                tighter = True
            elif after is None:
                tighter = False
            else:
                tighter = after > before if lower else after < before
            shown = f"{keyword} {show_value(before, 60)} -> {show_value(after, 60)}"
            if tighter:
                self.add(True, "narrowed bounds", f"narrowed {name}: {shown}")
            else:
                self.add(False, "relaxed bounds", f"relaxed {name}: {shown}")
        for keyword in ("pattern", "format", "const"):
            before, after = old.get(keyword), new.get(keyword)
            if before == after or keyword == "const":
                continue
            shown = f"{keyword} {show_value(before, 60)} -> {show_value(after, 60)}"
            if after is None:
                self.add(False, "relaxed bounds", f"relaxed {name}: {shown}")
            else:
                self.add(True, "narrowed bounds", f"narrowed {name}: {shown}")


def _resolve(schema: Any, root: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """Follow a local ``$ref`` (keeping sibling keys); returns the schema and the ref."""
    if not isinstance(schema, Mapping):
        return ({} if schema is True else {"not": {}}), ""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return dict(schema), ""
    target: Any = root
    for part in ref[2:].split("/"):
        target = target.get(part) if isinstance(target, Mapping) else None
    if not isinstance(target, Mapping):
        return dict(schema), ref
    merged = {k: v for k, v in target.items() if k != "title"}
    merged.update({k: v for k, v in schema.items() if k != "$ref"})
    return merged, ref


def _accepted(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> frozenset[str]:
    """The JSON types a schema accepts (ignoring enum values)."""
    if depth > 20:
        return _TYPES
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list):
        out: set[str] = set()
        for branch in branches:
            out |= _accepted(_resolve(branch, root)[0], root, depth + 1)
        return frozenset(out)
    declared = schema.get("type")
    if isinstance(declared, str):
        return frozenset({declared})
    if isinstance(declared, list):
        return frozenset(t for t in declared if isinstance(t, str))
    values = _enum(schema)
    if values is not None:
        return frozenset(json_type(v) for v in values)
    return _TYPES


def _covers(wide: frozenset[str], narrow: frozenset[str]) -> bool:
    return all(t in wide or (t == "integer" and "number" in wide) for t in narrow)


def _types_text(types: frozenset[str]) -> str:
    if types == _TYPES:
        return "any"
    return " | ".join(sorted(types))


def _enum(schema: Mapping[str, Any]) -> list[Any] | None:
    if "enum" in schema and isinstance(schema["enum"], list):
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and branches:
        values: list[Any] = []
        for branch in branches:
            if not isinstance(branch, Mapping):
                return None
            if branch.get("type") == "null" and len(branch) == 1:
                continue
            sub = _enum(branch)
            if sub is None:
                return None
            values.extend(sub)
        return values or None
    return None


def _single_branch(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The one non-null branch of an ``anyOf``/``oneOf``, or the schema itself."""
    branches = schema.get("anyOf") or schema.get("oneOf")
    if not isinstance(branches, list):
        return schema
    rest = [b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")]
    return rest[0] if len(rest) == 1 and isinstance(rest[0], Mapping) else None


def _is_object(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object" or "properties" in schema


def _is_number(*values: Any) -> bool:
    return all(
        v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values
    )


def _summary(schema: Any, root: Mapping[str, Any]) -> str:
    resolved, _ = _resolve(schema, root)
    values = _enum(resolved)
    if values is not None:
        return f"one of {_values(values)}"
    return _types_text(_accepted(resolved, root))


def _values(values: list[Any]) -> str:
    return ", ".join(show_value(v, 60) for v in values)
