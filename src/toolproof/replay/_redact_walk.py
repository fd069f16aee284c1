"""Redaction's one walker: every string of a trace, by the trace's shape.

See ``_redact.py`` for what is redacted; this module holds the shapes of the trace format
(which fields are structural, kept as they are) and ``Walk``, which first collects the
values under sensitive fields and then rewrites every string of the data.
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from toolproof._trace import KEPT, MIRRORS, NUMBER, TRACE_SHAPE, Trace
from toolproof.replay._redact_patterns import DROP, Action, Span, apply

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z_ -]*")


class Rules(Protocol):
    """What the walker asks of a ``Redactor``."""

    mask: str

    def field_action(self, key: str) -> Action | None: ...

    def replacement(self, value: Any, action: Action, label: str = "anon") -> Any: ...

    def static_spans(self, text: str) -> tuple[Span, ...]: ...

    def pseudonym(self, value: Any, label: str = "anon") -> Any: ...


# -- the one walker ------------------------------------------------------------------------
#
# A trace is walked by its declared shape (``toolproof._trace.TRACE_SHAPE``): its structure
# and its numbers are kept as they are (ids, roles, statuses, times, tool names, counts, the
# tools' definitions, which replay validates against), nested objects are walked by their
# own shapes, and every other field, including fields added to the Trace later, is data:
# every string in it is redacted, dict keys in it are matched against the field rules, and
# strings holding JSON are parsed, redacted as data and written back, at any depth.

SKIP = "skip"
DATA = "data"


def _walk_shapes() -> dict[type, dict[str, Any]]:
    """The walk's shape of each trace class: kept fields and nested shapes; the rest is data."""
    shapes: dict[type, dict[str, Any]] = {}

    def shape_of(cls: type) -> dict[str, Any]:
        if cls not in shapes:
            shape: dict[str, Any] = {}
            for name, held in TRACE_SHAPE[cls].items():
                if held in (KEPT, NUMBER):
                    shape[name] = SKIP
                elif isinstance(held, type):
                    shape[name] = shape_of(held)
                elif isinstance(held, list):
                    shape[name] = [shape_of(held[0])]
            shapes[cls] = shape
        return shapes[cls]

    for cls in TRACE_SHAPE:
        shape_of(cls)
    return shapes


#: The walk's shape of each trace class (each nested shape is the very object of its class).
SHAPES = _walk_shapes()
TRACE = SHAPES[Trace]
# Per shape, the keys kept as they are (by the shape's id: shapes are module constants).
_KEPT: dict[int, frozenset[str]] = {
    id(shape): frozenset(key for key, sub in shape.items() if sub is SKIP)
    for shape in SHAPES.values()
}


def _structural(shape: dict[str, Any], prefix: str = "") -> list[str]:
    names = []
    for key, sub in shape.items():
        if sub == SKIP:
            names.append(prefix + key)
        elif isinstance(sub, list):
            names.extend(_structural(sub[0], f"{prefix}{key}[]."))
        elif isinstance(sub, dict):
            names.extend(_structural(sub, f"{prefix}{key}."))
    return names


# The trace fields that redaction leaves as they are; every other string is redacted.
STRUCTURAL_FIELDS: tuple[str, ...] = tuple(_structural(TRACE))

_JSON_FIRST = frozenset('{["')
# Fields whose text is usually the JSON of the field named next to it: redacted once,
# written twice.
_MIRRORS = MIRRORS
_CONTAINERS = (dict, list, str)
KEPT_SCALARS = frozenset({bool, float, type(None)})  # never redacted as data


def may_be_json(text: str) -> bool:
    first = text[:1]
    return first in _JSON_FIRST or (first.isspace() and text.lstrip()[:1] in _JSON_FIRST)


MAX_JSON_DEPTH = 16  # JSON inside strings deeper than this is treated as plain text


class Walk:
    """One redaction: first collect the values under sensitive fields, then rewrite."""

    def __init__(self, redactor: Rules) -> None:
        self.r = redactor
        self.values: dict[str, str] = {}  # sensitive text -> its replacement in free text
        self.parsed: dict[str, Any] = {}  # JSON texts parsed so far (None: not JSON)
        self._values_re: re.Pattern[str] | None = None

    # -- JSON inside strings ------------------------------------------------------------------

    def _parse(self, text: str) -> Any:
        """The container (or JSON string) ``text`` encodes, else ``None``."""
        first = text[:1]
        if first not in _JSON_FIRST or len(text) < 2:
            if not first.isspace():
                return None
            first = text.lstrip()[:1]
            if not first or first not in _JSON_FIRST:
                return None
        try:
            return self.parsed[text]
        except KeyError:
            pass
        from pydantic_core import from_json

        try:
            parsed = from_json(text)
        except ValueError:
            parsed = None
        if not isinstance(parsed, (dict, list, str)):
            parsed = None
        self.parsed[text] = parsed
        return parsed

    # -- phase 1: collect values under sensitive fields -------------------------------------

    def collect(self, node: Any, shape: Any, depth: int = 0) -> None:
        if type(shape) is dict:
            if type(node) is not dict:
                self.collect_data(node, depth)
                return
            kept = _KEPT[id(shape)]
            # In the data's order: the first field to hold a value decides its replacement.
            for key in [key for key in node if key not in kept]:
                item = node[key]
                if item is None:
                    continue
                sub = shape.get(key, DATA)
                if sub is not DATA:
                    self.collect(item, sub, depth)
                elif type(item) is str and not may_be_json(item):
                    continue  # plain text holds no fields
                elif not (key in _MIRRORS and self._mirrors(node, key)):
                    # (a mirrored text is the same data as its twin, collected there)
                    self.collect_data(item, depth)
        elif type(shape) is list:
            if type(node) is not list:
                self.collect_data(node, depth)
                return
            for item in node:
                self.collect(item, shape[0], depth)
        elif shape is DATA:
            self.collect_data(node, depth)

    def _mirrors(self, node: dict[str, Any], key: str) -> bool:
        """Whether ``node[key]`` is JSON text of the container next to it (its twin)."""
        text = node[key]
        twin = node.get(_MIRRORS[key])
        if type(text) is not str or not isinstance(twin, (dict, list)):
            return False
        parsed = self._parse(text)
        return parsed is not None and parsed == twin

    def collect_data(self, node: Any, depth: int) -> None:
        kind = type(node)
        if kind is dict:
            field_action = self.r.field_action
            for key, item in node.items():
                action = field_action(str(key))
                if action is not None:
                    self._remember(item, action, depth)
                elif type(item) is str:
                    if may_be_json(item):
                        self.collect_data(item, depth)
                elif isinstance(item, _CONTAINERS):
                    self.collect_data(item, depth)
        elif kind is list:
            for item in node:
                if type(item) is str:
                    if may_be_json(item):
                        self.collect_data(item, depth)
                elif isinstance(item, _CONTAINERS):
                    self.collect_data(item, depth)
        elif kind is str and depth < MAX_JSON_DEPTH:
            parsed = self._parse(node)
            if parsed is not None:
                self.collect_data(parsed, depth + 1)

    def _remember(self, value: Any, action: Action, depth: int) -> None:
        if isinstance(value, dict):
            for item in value.values():
                self._remember(item, action, depth)
        elif isinstance(value, list):
            for item in value:
                self._remember(item, action, depth)
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            text = value if isinstance(value, str) else json.dumps(value)
            if text and text not in self.values:
                replacement = self.r.replacement(value, action)
                # a dropped field's value is masked where it appears in free text
                self.values[text] = self.r.mask if replacement is DROP else str(replacement)
                self._values_re = None
                if isinstance(value, str):
                    # the same value inside JSON text, at every depth of escaping
                    encoded = value
                    for _ in range(3):
                        encoded = json.dumps(encoded)[1:-1]
                        if encoded in self.values:
                            break
                        self.values[encoded] = self.values[text]
                    ascii_form = json.dumps(value, ensure_ascii=True)[1:-1]
                    self.values.setdefault(ascii_form, self.values[text])
            if isinstance(value, str) and depth < MAX_JSON_DEPTH:
                parsed = self._parse(value)
                if parsed is not None:
                    self._remember(parsed, action, depth + 1)

    # -- phase 2: rewrite ---------------------------------------------------------------------

    def rewrite(self, node: Any, shape: Any, depth: int = 0) -> Any:
        if type(shape) is dict:
            if type(node) is not dict:
                return self.rewrite_data(node, depth)
            out = dict(node)
            mirrored = []
            kept = _KEPT[id(shape)]
            for key in [key for key in node if key not in kept]:
                item = node[key]
                if item is None:
                    continue
                sub = shape.get(key, DATA)
                if sub is not DATA:
                    out[key] = self.rewrite(item, sub, depth)
                elif key in _MIRRORS and self._mirrors(node, key):
                    mirrored.append(key)
                else:
                    out[key] = self.rewrite_data(item, depth)
            for key in mirrored:
                # the JSON text of the value next to it, redacted above: written again
                twin, done = node[_MIRRORS[key]], out[_MIRRORS[key]]
                out[key] = node[key] if done == twin else json.dumps(done, ensure_ascii=False)
            return out
        if type(shape) is list:
            if type(node) is not list:
                return self.rewrite_data(node, depth)
            return [self.rewrite(item, shape[0], depth) for item in node]
        if shape is SKIP:
            return node
        return self.rewrite_data(node, depth)

    def rewrite_data(self, node: Any, depth: int) -> Any:
        kind = type(node)
        if kind is str:
            return self.string(node, depth)
        if kind is dict:
            out: dict[Any, Any] = {}
            field_action = self.r.field_action
            for key, item in node.items():
                action = field_action(str(key))
                name = self._key(key) if type(key) is str else key
                if action is None:
                    out[name] = (
                        item if type(item) in KEPT_SCALARS else self.rewrite_data(item, depth)
                    )
                elif action != "drop":
                    out[name] = self._field_value(item, action)
            return out
        if kind is list:
            return [
                item if type(item) in KEPT_SCALARS else self.rewrite_data(item, depth)
                for item in node
            ]
        if kind is int and abs(node) >= 10**8:
            return self._number(node)
        return node

    def _field_value(self, value: Any, action: Action) -> Any:
        if isinstance(value, dict):
            # the values go; the keys are redacted as keys anywhere (a key may be a secret)
            return {
                self._key(k) if type(k) is str else k: self._field_value(v, action)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._field_value(v, action) for v in value]
        replacement = self.r.replacement(value, action)
        return self.r.mask if replacement is DROP else replacement

    def _number(self, number: int) -> int:
        """A long integer that is a phone or card number in its digits (stored as a number)."""
        text = str(number)
        known = self.values.get(text)
        if known is not None:
            return int(known) if known.lstrip("-").isdigit() else 0
        for start, end, _, replacement in self.r.static_spans(text):
            if start == 0 and end == len(text):
                hashed = replacement not in (self.r.mask, "")
                return int(self.r.pseudonym(number)) if hashed else 0
        return number

    def _key(self, key: str) -> str:
        # Keys are names far more often than data: a plain short name without digits or
        # '@' cannot hold an id, an address or a number, so it skips the pattern pass.
        if self.values and key in self.values:
            return self.values[key]
        if len(key) <= 32 and _PLAIN_KEY.fullmatch(key):
            return key
        return self.text(key)

    def string(self, text: str, depth: int) -> str:
        """A string of data: JSON in it is redacted as data, anything else as text."""
        if depth < MAX_JSON_DEPTH:
            parsed = self._parse(text)
            if parsed is not None:
                redacted = self.rewrite_data(parsed, depth + 1)
                if redacted == parsed:
                    return text
                return json.dumps(redacted, ensure_ascii=False)
        return self.text(text)

    def text(self, text: str) -> str:
        if len(text) < 3:
            return self.values.get(text, text) if self.values else text
        spans = list(self.r.static_spans(text))
        if self.values and any(value in text for value in self.values):
            spans.extend(
                (m.start(), m.end(), 1, self.values[m.group(0)])
                for m in self._values_pattern().finditer(text)
            )
        return apply(text, spans)

    def _values_pattern(self) -> re.Pattern[str]:
        if self._values_re is None:
            # Long values anywhere; short ones (and numbers) only as whole words.
            parts = []
            for value in sorted(self.values, key=len, reverse=True):
                escaped = re.escape(value)
                if len(value) >= 4 and not value.lstrip("-").replace(".", "").isdigit():
                    parts.append(escaped)
                else:
                    parts.append(rf"(?<![\w.]){escaped}(?![\w]|\.\d)")
            self._values_re = re.compile("|".join(parts))
        return self._values_re
