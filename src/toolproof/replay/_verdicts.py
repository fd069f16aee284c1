"""Verdicts on recorded arguments that tools mode may keep: when a check is a pure function.

Tools mode asks each of today's tools whether it still accepts each recorded call's
arguments; a store repeats the same arguments in many traces. A verdict may be kept and
reused only when it depends on nothing but the arguments themselves:

- a JSON Schema (schema-only tools): jsonschema runs no code of the user's (no format
  checker is used);
- a Python tool's argument model, when :func:`pure_arguments` finds, walking its
  pydantic core schema once, nothing but pydantic's own checks: no validator function of
  any kind (before, after, wrap, plain), no ``__init__`` or ``model_post_init``, no
  dataclass ``__post_init__``, no default factory other than an empty builtin container,
  no default that is not plain data, no check against the current time (past and future
  dates), no ``isinstance`` or callable check, no enum with a ``_missing_`` hook. Anything
  the walk does not know is taken as impure: such a tool is asked every time.

Verdicts are kept under the arguments' ``repr``, which tells apart every two JSON values
that differ, even only in type (``1``, ``1.0``, ``True``, ``"1"``) or in key order, in a
bounded, least recently used set per tool (``_TodayTool.reject`` in ``_tools_mode.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["accepted_shapes", "pure_arguments"]


def pure_arguments(schema: Any) -> bool:
    """Whether validating with this pydantic core schema runs only pydantic's own checks.

    Conservative: a schema type or key this walk does not know makes it impure.
    """
    try:
        return _Walk().pure(schema)
    except Exception:  # a layout this walk does not expect: impure
        return False


def accepted_shapes(schema: Any) -> Callable[[Any], bool] | None:
    """A quick test of parsed JSON values that this return-type check surely accepts.

    Only for the plainest checks: ``Any``, ``str``, ``int``, ``float``, ``bool``,
    ``dict[str, Any]`` (or ``dict``), lists of those and ``X | None``, without constraints
    or options. For a value made of exactly the types a JSON parser returns (``dict`` with
    text keys, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``), the test is
    true only when pydantic's check accepts the value; when it is false the check itself
    is asked (it decides, and words the problem). ``None``: no quick test for this check.
    """
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if kind == "any" and set(schema) == {"type"}:
        return _anything
    if kind in _EXACT and set(schema) == {"type"}:
        exact = _EXACT[kind]
        return lambda value: type(value) is exact
    if kind == "dict" and set(schema) == {"type", "keys_schema", "values_schema"}:
        if schema["keys_schema"] in ({"type": "str"}, {"type": "any"}) and schema[
            "values_schema"
        ] == {"type": "any"}:
            return _a_dict  # (a parsed object's keys are text)
        return None
    if kind == "list" and set(schema) == {"type", "items_schema"}:
        items = accepted_shapes(schema["items_schema"])
        if items is None:
            return None
        if items is _anything:
            return _a_list
        return lambda value: type(value) is list and all(map(items, value))
    if kind == "nullable" and set(schema) == {"type", "schema"}:
        inner = accepted_shapes(schema["schema"])
        if inner is None:
            return None
        return lambda value: value is None or inner(value)
    return None


_EXACT: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool}


def _anything(value: Any) -> bool:
    return True


def _a_dict(value: Any) -> bool:
    return type(value) is dict


def _a_list(value: Any) -> bool:
    return type(value) is list


#: Keys every schema may carry that play no part in validation, or only pydantic's own.
_COMMON = frozenset(
    {"type", "ref", "metadata", "serialization", "strict", "config", "custom_error_type"}
    | {"custom_error_message", "custom_error_context"}
)
_BOUNDS = frozenset({"le", "lt", "ge", "gt"})
#: Leaf schemas (no inner schema) and the keys they may carry.
_LEAVES: dict[str, frozenset[str]] = {
    "any": frozenset(),
    "none": frozenset(),
    "bool": frozenset(),
    "int": _BOUNDS | {"multiple_of"},
    "float": _BOUNDS | {"multiple_of", "allow_inf_nan"},
    "decimal": _BOUNDS | {"multiple_of", "allow_inf_nan", "max_digits", "decimal_places"},
    "str": frozenset(
        {"pattern", "max_length", "min_length", "strip_whitespace", "to_lower", "to_upper"}
        | {"regex_engine", "coerce_numbers_to_str"}
    ),
    "bytes": frozenset({"max_length", "min_length"}),
    # (no ``now_op``: past and future dates depend on the clock)
    "date": _BOUNDS,
    "time": _BOUNDS | {"tz_constraint", "microseconds_precision"},
    "datetime": _BOUNDS | {"tz_constraint", "microseconds_precision"},
    "timedelta": _BOUNDS | {"microseconds_precision"},
    "uuid": frozenset({"version"}),
    "url": frozenset({"max_length", "allowed_schemes", "host_required", "default_host"})
    | {"default_port", "default_path", "preserve_empty_path"},
    "multi-host-url": frozenset({"max_length", "allowed_schemes", "host_required"})
    | {"default_host", "default_port", "default_path", "preserve_empty_path"},
}
_SIZES = frozenset({"min_length", "max_length", "fail_fast"})
#: Factories of defaults that are pure: they make an empty builtin container.
_FACTORIES = (list, dict, set, frozenset, tuple)
_PLAIN_LITERALS = (str, int, bool, type(None))


def _plain(value: Any) -> bool:
    """A default value that is plain data (its copy runs no code of the user's)."""
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return True
    if kind in (list, tuple):
        return all(_plain(item) for item in value)
    if kind is dict:
        return all(type(key) is str and _plain(item) for key, item in value.items())
    return False


class _Walk:
    def __init__(self) -> None:
        self.refs: dict[str, Any] = {}
        self.seen: set[str] = set()

    def pure(self, schema: Any) -> bool:
        if not isinstance(schema, dict):
            return False
        kind = schema.get("type")
        if "ref" in schema:
            self.refs[schema["ref"]] = schema
        if kind in _LEAVES:
            return set(schema) <= _COMMON | _LEAVES[kind]
        method = getattr(self, "_" + str(kind).replace("-", "_"), None)
        if method is None:  # function-*, is-instance, callable, call, arguments...: impure
            return False
        return bool(method(schema))

    def _keys(self, schema: dict[str, Any], *allowed: str) -> bool:
        return set(schema) <= _COMMON | set(allowed)

    def _definitions(self, schema: dict[str, Any]) -> bool:
        for entry in schema["definitions"]:
            self.refs[entry["ref"]] = entry
        return self._keys(schema, "schema", "definitions") and all(
            self.pure(entry) for entry in [schema["schema"], *schema["definitions"]]
        )

    def _definition_ref(self, schema: dict[str, Any]) -> bool:
        ref = schema["schema_ref"]
        if ref in self.seen:
            return True  # (being walked, or walked: its verdict is part of the whole)
        self.seen.add(ref)
        target = self.refs.get(ref)
        return self._keys(schema, "schema_ref") and target is not None and self.pure(target)

    def _list(self, schema: dict[str, Any]) -> bool:
        return self._keys(schema, "items_schema", *_SIZES) and self.pure(
            schema.get("items_schema", {"type": "any"})
        )

    _set = _frozenset = _list

    def _tuple(self, schema: dict[str, Any]) -> bool:
        return self._keys(schema, "items_schema", "variadic_item_index", *_SIZES) and all(
            self.pure(item) for item in schema.get("items_schema", [])
        )

    def _dict(self, schema: dict[str, Any]) -> bool:
        return (
            self._keys(schema, "keys_schema", "values_schema", *_SIZES)
            and self.pure(schema.get("keys_schema", {"type": "any"}))
            and self.pure(schema.get("values_schema", {"type": "any"}))
        )

    def _nullable(self, schema: dict[str, Any]) -> bool:
        return self._keys(schema, "schema") and self.pure(schema["schema"])

    _custom_error = _nullable

    def _json(self, schema: dict[str, Any]) -> bool:
        return self._keys(schema, "schema") and self.pure(schema.get("schema", {"type": "any"}))

    def _default(self, schema: dict[str, Any]) -> bool:
        if "default_factory" in schema:
            if schema["default_factory"] not in _FACTORIES or schema.get(
                "default_factory_takes_data"
            ):
                return False
        elif not _plain(schema.get("default")):
            return False
        allowed = ("schema", "default", "default_factory", "default_factory_takes_data")
        return (
            self._keys(schema, *allowed, "on_error", "validate_default", "copy_default")
            and schema.get("on_error", "raise") in ("raise", "omit", "default")
            and self.pure(schema["schema"])
        )

    def _union(self, schema: dict[str, Any]) -> bool:
        choices = [c[0] if isinstance(c, tuple) else c for c in schema["choices"]]
        return self._keys(schema, "choices", "auto_collapse", "mode") and all(
            self.pure(choice) for choice in choices
        )

    def _tagged_union(self, schema: dict[str, Any]) -> bool:
        discriminator = schema["discriminator"]
        if callable(discriminator):
            return False
        allowed = ("choices", "discriminator", "from_attributes")
        return self._keys(schema, *allowed) and all(
            self.pure(choice) for choice in schema["choices"].values()
        )

    def _chain(self, schema: dict[str, Any]) -> bool:
        return self._keys(schema, "steps") and all(self.pure(step) for step in schema["steps"])

    def _lax_or_strict(self, schema: dict[str, Any]) -> bool:
        return (
            self._keys(schema, "lax_schema", "strict_schema")
            and self.pure(schema["lax_schema"])
            and self.pure(schema["strict_schema"])
        )

    def _json_or_python(self, schema: dict[str, Any]) -> bool:
        return (
            self._keys(schema, "json_schema", "python_schema")
            and self.pure(schema["json_schema"])
            and self.pure(schema["python_schema"])
        )

    def _literal(self, schema: dict[str, Any]) -> bool:
        return self._keys(schema, "expected") and all(
            type(value) in _PLAIN_LITERALS for value in schema["expected"]
        )

    def _enum(self, schema: dict[str, Any]) -> bool:
        # (no ``missing``: an enum's _missing_ hook is the user's code)
        return self._keys(schema, "cls", "members", "sub_type") and all(
            type(member.value) in _PLAIN_LITERALS or type(member.value) is float
            for member in schema["members"]
        )

    def _model(self, schema: dict[str, Any]) -> bool:
        # (no ``post_init``: model_post_init, private attributes; no custom ``__init__``)
        allowed = ("cls", "schema", "custom_init", "root_model", "generic_origin")
        return (
            self._keys(schema, *allowed, "revalidate_instances")
            and schema.get("custom_init") is False
            and self.pure(schema["schema"])
        )

    def _model_fields(self, schema: dict[str, Any]) -> bool:
        allowed = ("fields", "model_name", "computed_fields", "extra_behavior", "from_attributes")
        if not self._keys(schema, *allowed, "extras_schema", "extras_keys_schema"):
            return False
        fields = schema["fields"].values()
        extras = [schema[k] for k in ("extras_schema", "extras_keys_schema") if k in schema]
        return all(self._field(f, "model-field") for f in fields) and all(map(self.pure, extras))

    def _typed_dict(self, schema: dict[str, Any]) -> bool:
        allowed = ("fields", "computed_fields", "extra_behavior", "total", "cls", "cls_name")
        if not self._keys(schema, *allowed, "extras_schema"):
            return False
        extras = [schema["extras_schema"]] if "extras_schema" in schema else []
        return all(self._field(f, "typed-dict-field") for f in schema["fields"].values()) and all(
            map(self.pure, extras)
        )

    def _dataclass(self, schema: dict[str, Any]) -> bool:
        # (no ``post_init``: the dataclass's __post_init__ is the user's code)
        allowed = ("cls", "schema", "fields", "revalidate_instances", "slots", "frozen")
        return (
            self._keys(schema, *allowed, "generic_origin", "post_init")
            and not schema.get("post_init")
            and self.pure(schema["schema"])
        )

    def _dataclass_args(self, schema: dict[str, Any]) -> bool:
        allowed = ("dataclass_name", "fields", "computed_fields", "extra_behavior")
        return (
            self._keys(schema, *allowed, "collect_init_only")
            and not schema.get("collect_init_only")
            and all(self._field(f, "dataclass-field") for f in schema["fields"])
        )

    def _field(self, field: Any, kind: str) -> bool:
        allowed = {"type", "schema", "validation_alias", "serialization_alias", "metadata"}
        allowed |= {"serialization_exclude", "serialization_exclude_if", "frozen", "required"}
        if kind == "dataclass-field":
            allowed |= {"name", "kw_only", "init", "init_only"}
        return (
            isinstance(field, dict)
            and field.get("type") == kind
            and set(field) <= allowed
            and not field.get("init_only")
            and self.pure(field["schema"])
        )
