"""Redaction of a ``Trace`` object, without its plain form: what the recorder stores.

The rules are those of ``_redact_walk.Walk`` over ``Trace.to_dict()`` (the same shapes,
the same structural fields kept, the same two phases: collect the values under sensitive
fields, then rewrite every string of the data), applied to the trace's own objects:

- the shape of each trace class is compiled once from its dataclass fields and the shapes
  of ``_redact_walk`` (a field the shapes do not name is data, as in the plain walk);
- data that holds nothing to redact is not copied: the redacted trace shares it with the
  original, and only the objects with a redacted field are built again, through their
  constructors (which make every field storable, see ``_messages.py``).

The result is a ``Trace`` built like any other, so ``Trace.to_json`` writes it with the
codec's own guarantee that it reads back: no decode of the written JSON is needed to know
it. A trace whose objects are not the trace classes (something set after construction)
raises ``Unsupported``, and the recorder redacts its plain form instead.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from toolproof._trace import Trace
from toolproof.replay._redact_walk import (
    _MIRRORS,
    KEPT_SCALARS,
    MAX_JSON_DEPTH,
    SHAPES,
    SKIP,
    Rules,
    Walk,
    may_be_json,
)

if TYPE_CHECKING:
    from toolproof.replay._redact import Redactor

__all__ = ["redact_trace_object"]


class Unsupported(Exception):
    """A trace whose objects are not the trace classes: redact its plain form instead."""


class _Sensitive(Exception):
    """The one-pass walk met a sensitive field: the trace takes both phases."""


#: What the caches of a redactor's one-pass walks may hold, in characters of text.
_CACHE_CHARS = 4_000_000


class _Caches:
    """What one-pass walks of a redactor learn about texts and keys (no values collected).

    Without values under sensitive fields the redaction of a text or a key depends on the
    text and the redactor's rules only, so it is kept across traces.
    """

    __slots__ = ("chars", "keys", "parsed", "texts")

    def __init__(self) -> None:
        # text -> redacted (_SAME: kept as it is; None: holds a sensitive key)
        self.texts: dict[str, Any] = {}
        self.keys: dict[str, Any] = {}  # key -> redacted (_SAME, or None: a sensitive field)
        self.parsed: dict[str, Any] = {}  # text -> the JSON it holds (None: not JSON)
        self.chars = 0

    def count(self, text: str) -> None:
        self.chars += len(text) + 64  # (an entry's own cost, for short texts)
        if self.chars > _CACHE_CHARS:
            self.texts.clear()
            self.parsed.clear()
            self.keys.clear()
            self.chars = len(text)


_DATA, _ONE, _MANY = 0, 1, 2

# (field, kind, class of the nested object or None, whether the field mirrors a twin)
_Plan = tuple[tuple[str, int, Any, bool], ...]

_BY_SHAPE = {id(shape): cls for cls, shape in SHAPES.items()}


def _plan(cls: type) -> _Plan:
    shape = SHAPES[cls]
    plan: list[tuple[str, int, Any, bool]] = []
    for item in dataclasses.fields(cls):
        sub = shape.get(item.name)
        if sub is SKIP:
            continue
        if type(sub) is dict:
            plan.append((item.name, _ONE, _BY_SHAPE[id(sub)], False))
        elif type(sub) is list:
            plan.append((item.name, _MANY, _BY_SHAPE[id(sub[0])], False))
        else:
            plan.append((item.name, _DATA, None, item.name in _MIRRORS))
    return tuple(plan)


_JSON_TYPES = frozenset({str, int, float, bool, dict, list})
_UNKNOWN: Any = object()
_SAME: Any = object()  # a key kept as it is

_PLANS: dict[type, _Plan] = {cls: _plan(cls) for cls in SHAPES}
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(item.name for item in dataclasses.fields(cls)) for cls in SHAPES
}


def _keep_plan(
    cls: type,
) -> tuple[Callable[[Any], tuple[Any, ...]], tuple[tuple[str, int, Any], ...]]:
    """The data fields of ``cls`` read in one call, and its nested trace objects."""
    names = tuple(name for name, kind, _, _ in _PLANS[cls] if kind == _DATA)
    getter = attrgetter(*names) if len(names) > 1 else attrgetter(*names, *names)
    nested = tuple((name, kind, sub) for name, kind, sub, _ in _PLANS[cls] if kind != _DATA)
    return getter, nested


#: Per trace class: ``(data fields getter, nested objects)`` (a field of one name is read
#: twice: ``attrgetter`` of one name returns the value, not a tuple).
_KEEP_PLANS = {cls: _keep_plan(cls) for cls in SHAPES}


def redact_trace_object(redactor: Redactor, trace: Trace) -> Trace:
    """``trace`` redacted as ``Redactor.redact_data(trace.to_dict())`` redacts its data.

    Returns ``trace`` itself when nothing in it is redacted.

    Raises:
        Unsupported: An object of the trace is not of its trace class.
    """
    caches = getattr(redactor, "_one_pass", None)
    if caches is None:
        caches = _Caches()
        redactor._one_pass = caches
    try:
        # Most traces hold no sensitive field: one pass, with what earlier traces taught.
        walk = _ObjectWalk(redactor, caches)
        if walk.keeps(trace, Trace):
            return trace
        out: Trace = walk.rewrite_object(trace, Trace)
    except _Sensitive:
        walk = _ObjectWalk(redactor, caches, one_pass=False)
        walk.collect_object(trace, Trace)
        out = walk.rewrite_object(trace, Trace)
    return out


class _ObjectWalk(Walk):
    """The plain walk's two phases over trace objects; unchanged data is not copied.

    With ``one_pass`` there is no collect phase: the walk assumes no value lies under a
    sensitive field and raises ``_Sensitive`` at the first sensitive key it meets (the
    collect phase would have found that key: both phases visit the same keys).
    """

    def __init__(self, redactor: Rules, caches: _Caches, *, one_pass: bool = True) -> None:
        super().__init__(redactor)
        self.one_pass = one_pass
        self.caches = caches
        self.parsed = caches.parsed  # read only: parsed JSON is never changed, only copied

    # -- phase 1 -----------------------------------------------------------------------------

    def collect_object(self, node: Any, cls: type) -> None:
        if type(node) is not cls:
            raise Unsupported(f"{type(node).__name__} where a {cls.__name__} belongs")
        for name, kind, sub, mirror in _PLANS[cls]:
            value = getattr(node, name)
            if value is None:
                continue
            if kind == _DATA:
                kind_of = type(value)
                if kind_of is str:
                    if not may_be_json(value) or (mirror and self._mirrors_object(node, name)):
                        continue
                    self.collect_data(value, 0)
                elif kind_of is dict or kind_of is list:
                    self.collect_data(value, 0)
            elif kind == _ONE:
                self.collect_object(value, sub)
            else:
                if type(value) is not list:
                    raise Unsupported(f"{name} is not a list")
                for item in value:
                    self.collect_object(item, sub)

    def _parse(self, text: str) -> Any:
        if text not in self.parsed:
            self.caches.count(text)
        return super()._parse(text)

    def _mirrors_object(self, node: Any, name: str) -> bool:
        """Whether ``node.<name>`` is the JSON text of the container next to it."""
        twin = getattr(node, _MIRRORS[name], None)
        if not isinstance(twin, (dict, list)):
            return False
        parsed = self._parse(getattr(node, name))
        return parsed is not None and parsed == twin

    # -- phase 2 -----------------------------------------------------------------------------

    def keeps(self, node: Any, cls: type) -> bool:
        """Whether the one pass keeps every data field of ``node`` as it is (no copy).

        ``rewrite_object`` without building anything: each data value goes through the
        same ``string`` and ``redact`` (and their caches), and the answer is ``True`` only
        when every one of them came back as the very object it was given, so that
        ``rewrite_object`` would return ``node`` itself. A mirrored text is checked as a
        text as well as through its twin (``rewrite_object`` checks only its twin): both
        unchanged keep it unchanged there too. Anything else (an object that is not of its
        trace class, a value of another type, one changed value) answers ``False`` and
        the caller runs ``rewrite_object``; ``_Sensitive`` propagates as it does there.
        """
        if type(node) is not cls:
            return False
        getter, nested = _KEEP_PLANS[cls]
        texts = self.caches.texts
        for value in getter(node):
            kind_of = type(value)
            if kind_of is str:
                if value and texts.get(value) is not _SAME and self.string(value, 0) is not value:
                    return False
            elif kind_of is dict or kind_of is list:
                if value and self.redact(value, 0) is not value:
                    return False
            elif kind_of is int:
                if not -(10**8) < value < 10**8 and self._number(value) is not value:
                    return False
            elif value is not None and kind_of is not float and kind_of is not bool:
                return False
        for name, kind, sub in nested:
            value = getattr(node, name)
            if value is None:
                continue
            if kind == _ONE:
                if not self.keeps(value, sub):
                    return False
                continue
            if type(value) is not list:
                return False
            for item in value:
                if not self.keeps(item, sub):
                    return False
        return True

    def rewrite_object(self, node: Any, cls: type) -> Any:
        if type(node) is not cls:
            raise Unsupported(f"{type(node).__name__} where a {cls.__name__} belongs")
        # (built only when a field changes: most objects keep every field)
        changes: dict[str, Any] | None = None
        mirrored: list[str] | None = None
        texts = self.caches.texts if self.one_pass else None
        for name, kind, sub, mirror in _PLANS[cls]:
            value: Any = getattr(node, name)
            new: Any
            if value is None:
                continue
            if kind == _DATA:
                kind_of = type(value)
                if kind_of not in _JSON_TYPES:
                    # (a field that holds an object: the plain walk redacts its plain form)
                    raise Unsupported(f"{cls.__name__}.{name} holds {kind_of.__name__}")
                if not value:
                    continue  # (an empty text or container, zero, false: kept as it is)
                if kind_of is str:
                    if mirror and self._mirrors_object(node, name):
                        if mirrored is None:
                            mirrored = []
                        mirrored.append(name)
                        continue
                    if texts is not None and texts.get(value) is _SAME:
                        continue  # a text seen before, kept as it is (see ``string``)
                    new = self.string(value, 0)
                else:
                    new = self.redact(value, 0)
            elif kind == _ONE:
                new = self.rewrite_object(value, sub)
            else:
                new = self._rewrite_list(value, name, sub)
            if new is not value:
                if changes is None:
                    changes = {}
                changes[name] = new
        if changes is None:
            return node  # (a mirrored text's twin is unchanged: the text is kept too)
        for name in mirrored or ():
            # the JSON text of the value next to it, redacted above: written again
            twin_name = _MIRRORS[name]
            twin = getattr(node, twin_name)
            done = changes.get(twin_name, twin)
            if done is not twin and done != twin:
                changes[name] = json.dumps(done, ensure_ascii=False)
        values = {field: getattr(node, field) for field in _FIELDS[cls]}
        values.update(changes)
        return cls(**values)

    def _rewrite_list(self, value: Any, name: str, sub: type) -> Any:
        """Each item of the list field ``name`` rewritten; ``value`` itself when all are kept."""
        if type(value) is not list:
            raise Unsupported(f"{name} is not a list")
        new = value
        for index, item in enumerate(value):
            done = self.rewrite_object(item, sub)
            if done is not item:
                if new is value:
                    new = list(value)
                new[index] = done
        return new

    def redact(self, node: Any, depth: int) -> Any:
        """``rewrite_data(node)``, and ``node`` itself when nothing in it changes."""
        kind = type(node)
        if kind is str:
            return self.string(node, depth)
        if kind is dict:
            if self.one_pass:
                return self._redact_dict(node, depth)
            out: dict[Any, Any] | None = None
            field_action = self.r.field_action
            for key, item in node.items():
                action = field_action(str(key))
                name = self._key(key) if type(key) is str else key
                if action is None:
                    new = item if type(item) in KEPT_SCALARS else self.redact(item, depth)
                    if out is None:
                        if new is item and name is key:
                            continue
                        out = self._copy_until(node, key)
                    out[name] = new
                    continue
                if out is None:
                    out = self._copy_until(node, key)
                if action != "drop":
                    out[name] = self._field_value(item, action)
            return node if out is None else out
        if kind is list:
            items: list[Any] | None = None
            for index, item in enumerate(node):
                new = item if type(item) in KEPT_SCALARS else self.redact(item, depth)
                if new is not item:
                    if items is None:
                        items = list(node)
                    items[index] = new
            return node if items is None else items
        if kind is int and abs(node) >= 10**8:
            return self._number(node)
        return node

    def _redact_dict(self, node: dict[Any, Any], depth: int) -> Any:
        """``redact`` of a dict in the one pass: a sensitive key stops the pass."""
        out: dict[Any, Any] | None = None
        keys = self.caches.keys
        texts = self.caches.texts
        for key, item in node.items():
            name = keys.get(key, _UNKNOWN) if type(key) is str else _UNKNOWN
            if name is _UNKNOWN:
                name = self._one_pass_key(key)
            if name is _SAME:
                name = key
            elif name is None:
                raise _Sensitive
            # (inline: the leaves ``redact`` keeps, without a call per leaf)
            leaf = type(item)
            if leaf in KEPT_SCALARS:
                new = item
            elif leaf is int:
                new = item if -(10**8) < item < 10**8 else self._number(item)
            elif leaf is str and depth == 0 and texts.get(item) is _SAME:
                new = item
            else:
                new = self.redact(item, depth)
            if out is None:
                if new is item and name is key:
                    continue
                out = self._copy_until(node, key)
            out[name] = new
        return node if out is None else out

    def _one_pass_key(self, key: Any) -> Any:
        if self.r.field_action(str(key)) is not None:
            name = None
        else:
            name = self._key(key) if type(key) is str else key
            if name == key and type(name) is type(key):
                name = _SAME
        if type(key) is str and len(self.caches.keys) < 10_000:
            self.caches.keys[key] = name
        return name

    @staticmethod
    def _copy_until(node: dict[Any, Any], stop: Any) -> dict[Any, Any]:
        """The items of ``node`` before the key ``stop`` (kept as they are so far)."""
        out = {}
        for key, item in node.items():
            if key is stop:
                break
            out[key] = item
        return out

    def string(self, text: str, depth: int) -> str:
        """A string of data: JSON in it is redacted as data, anything else as text."""
        if self.one_pass and depth == 0:
            texts = self.caches.texts
            done = texts.get(text, _UNKNOWN)
            if done is _UNKNOWN:
                try:
                    done = self._string(text, depth)
                except _Sensitive:
                    done = None
                self.caches.count(text)
                texts[text] = _SAME if done == text else done
            if done is _SAME:
                return text
            if done is None:
                raise _Sensitive
            return str(done)
        return self._string(text, depth)

    def _string(self, text: str, depth: int) -> str:
        if depth < MAX_JSON_DEPTH:
            parsed = self._parse(text)
            if parsed is not None:
                redacted = self.redact(parsed, depth + 1)
                if redacted is parsed or redacted == parsed:
                    return text
                return json.dumps(redacted, ensure_ascii=False)
        return self.text(text)
