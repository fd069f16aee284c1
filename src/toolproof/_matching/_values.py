"""Value matchers: the compiled matcher classes, JSON equality and how values are shown.

Every matcher is a callable that returns ``None`` on a match or a reason such as
``expected a number <= 20, got 50``; ``describe()`` gives the expectation in short form.
Specs are compiled into these classes by :mod:`toolproof._matching._specs`.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from toolproof._text import json_type

ArgsMode = Literal["exact", "subset", "superset", "ignore"]
OrderMode = Literal["strict", "in_order", "unordered", "subset", "superset"]

#: Argument modes, in the order the docs list them.
ARGS_MODES: tuple[str, ...] = ("exact", "subset", "superset", "ignore")
#: Trajectory (call order) modes.
ORDER_MODES: tuple[str, ...] = ("strict", "in_order", "unordered", "subset", "superset")

#: Characters BFCL's checker removes before comparing strings (besides lower-casing).
BFCL_IGNORED_CHARACTERS = " ,./-_*^"

_TYPE_NAMES = ("string", "integer", "number", "boolean", "array", "object", "null")
_OPERATORS = frozenset(
    ("equals", "one_of", "approx", "range", "min", "max", "regex", "type", "any", "text")
) | {"optional", "fields"}
_MODIFIERS = {"tol": "approx", "rel": "approx", "ignore": "text", "mode": "fields"}
_MAX_REASONS = 20


# --------------------------------------------------------------------------------------
# Showing values in reasons
# --------------------------------------------------------------------------------------


def _show(value: Any, limit: int = 80) -> str:
    """A short JSON-like rendering of a value for reasons (strings in double quotes)."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _kind(value: Any) -> str:
    """Like ``json_type`` but integers and floats are both ``number``."""
    kind = json_type(value)
    return "number" if kind == "integer" else kind


def _article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeio" else f"a {noun}"


def _got(actual: Any, expected_kind: str | Iterable[str] | None = None) -> str:
    """``got 5`` or, when the kinds differ, ``got "5" (a string)``."""
    shown = _show(actual)
    kind = _kind(actual)
    if isinstance(expected_kind, str):
        expected_kind = (expected_kind,)
    if (expected_kind is not None and kind in expected_kind) or actual is None:
        return f"got {shown}"
    return f"got {shown} ({_article(json_type(actual))})"


def _key_path(key: Any) -> str:
    text = str(key)
    if text.isidentifier():
        return f".{text}"
    return f"[{_show(key)}]"


def _format_path(path: str) -> str:
    return path[1:] if path.startswith(".") else path


# --------------------------------------------------------------------------------------
# JSON equality: 1 == 1.0, but true is not 1 and "1" is not 1
# --------------------------------------------------------------------------------------

_NUMBER_TYPES = (int, float)


def _json_equal(expected: Any, actual: Any) -> bool:
    te = type(expected)
    if te is type(actual):
        if te is dict:
            return expected.keys() == actual.keys() and all(
                _json_equal(v, actual[k]) for k, v in expected.items()
            )
        if te is list or te is tuple:
            return len(expected) == len(actual) and all(map(_json_equal, expected, actual))
        return bool(expected == actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return False
    if isinstance(expected, _NUMBER_TYPES) and isinstance(actual, _NUMBER_TYPES):
        return expected == actual
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(map(_json_equal, expected, actual))
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(
            _json_equal(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, str) and isinstance(actual, str):
        return str(expected) == str(actual)
    return False


def json_equal(expected: Any, actual: Any) -> bool:
    """JSON equality of two values: ``1 == 1.0``, but ``True`` is not ``1`` (at any depth)."""
    return _json_equal(expected, actual)


def _diff(expected: Any, actual: Any, path: str = "") -> tuple[str, str]:
    """Where and how ``actual`` first differs from ``expected`` (call only when they differ)."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        for key, value in expected.items():
            if key not in actual:
                return path + _key_path(key), f"missing (expected {_show(value)})"
        for key, value in actual.items():
            if key not in expected:
                return path + _key_path(key), f"unexpected key (value {_show(value)})"
        for key, value in expected.items():
            if not _json_equal(value, actual[key]):
                return _diff(value, actual[key], path + _key_path(key))
    elif isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        if len(expected) != len(actual):
            return path, (
                f"expected {len(expected)} items {_show(expected)}, "
                f"got {len(actual)} items {_show(actual)}"
            )
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            if not _json_equal(want, got):
                return _diff(want, got, f"{path}[{index}]")
    return path, f"expected {_show(expected)}, {_got(actual, _kind(expected))}"


# --------------------------------------------------------------------------------------
# Value matchers
# --------------------------------------------------------------------------------------

Explanation = tuple[str, str]
"""``(path, message)``: where inside the value the mismatch is (``""``, ``".to"``, ``"[1]"``)."""


@runtime_checkable
class Matcher(Protocol):
    """A compiled value matcher.

    ``matcher(actual)`` returns ``None`` when ``actual`` matches, otherwise a reason a person
    can act on (``expected a number <= 20, got 50``). ``describe()`` gives the expectation in
    short form (``range(max=20)``), for messages and reports.
    """

    def __call__(self, actual: Any) -> str | None: ...

    def describe(self) -> str: ...


class _Base:
    """Base of the built-in matchers: ``explain`` also says where a nested mismatch is."""

    __slots__ = ()
    optional: ClassVar[bool] = False

    def __call__(self, actual: Any) -> str | None:
        explanation = self.explain(actual)
        if explanation is None:
            return None
        path, message = explanation
        return f"at {_format_path(path)}: {message}" if path else message

    def explain(self, actual: Any) -> Explanation | None:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<matcher {self.describe()}>"


def _explain(matcher: Any, actual: Any) -> Explanation | None:
    """Apply a built-in matcher or any ``Matcher``-protocol object (bool results allowed)."""
    if isinstance(matcher, _Base):
        return matcher.explain(actual)
    outcome = matcher(actual)
    if outcome is None or outcome is True:
        return None
    if outcome is False:
        return "", f"{_describe(matcher)} rejected {_show(actual)}"
    return "", str(outcome)


def _describe(matcher: Any) -> str:
    describe = getattr(matcher, "describe", None)
    if callable(describe):
        return str(describe())
    return getattr(matcher, "__name__", type(matcher).__name__)


def _is_optional(matcher: Any) -> bool:
    return bool(getattr(matcher, "optional", False))


class _Equals(_Base):
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def explain(self, actual: Any) -> Explanation | None:
        if _json_equal(self.value, actual):
            return None
        return _diff(self.value, actual)

    def describe(self) -> str:
        return _show(self.value)


class _OneOf(_Base):
    __slots__ = ("options",)

    def __init__(self, options: Sequence[Any]) -> None:
        self.options = tuple(options)

    def explain(self, actual: Any) -> Explanation | None:
        first: Explanation | None = None
        for option in self.options:
            explanation = _explain(option, actual)
            if explanation is None:
                return None
            if first is None:
                first = explanation
        if len(self.options) == 1 and first is not None:
            return first
        texts = [o for o in self.options if isinstance(o, _Text)]
        if len(texts) == len(self.options) and len({t.ignore for t in texts}) == 1:
            listing = ", ".join(_show(t.text) for t in texts[:8])
            if len(texts) > 8:
                listing += f", … ({len(texts) - 8} more)"
            return "", f"expected one of {listing} {texts[0].how()}, {_got(actual, 'string')}"
        return "", f"expected one of {self._listing()}, {_got(actual, self._kinds())}"

    def _kinds(self) -> set[str] | None:
        kinds = set()
        for option in self.options:
            if isinstance(option, _Equals):
                kinds.add(_kind(option.value))
            elif isinstance(option, _Text):
                kinds.add("string")
            else:
                return None
        return kinds

    def _listing(self) -> str:
        shown = [_describe(option) for option in self.options[:8]]
        if len(self.options) > 8:
            shown.append(f"… ({len(self.options) - 8} more)")
        return ", ".join(shown)

    def describe(self) -> str:
        if len(self.options) == 1:
            return _describe(self.options[0])
        return f"one_of({self._listing()})"


class _Approx(_Base):
    __slots__ = ("rel", "tol", "value")

    def __init__(self, value: float, tol: float, rel: float) -> None:
        self.value = value
        self.tol = tol
        self.rel = rel

    def explain(self, actual: Any) -> Explanation | None:
        if isinstance(actual, bool) or not isinstance(actual, _NUMBER_TYPES):
            return "", f"expected a number {self.describe()}, {_got(actual, 'number')}"
        if math.isclose(actual, self.value, rel_tol=self.rel, abs_tol=self.tol):
            return None
        off = abs(actual - self.value)
        return "", f"expected {self.describe()}, got {_show(actual)} (off by {off:g})"

    def describe(self) -> str:
        parts = [f"{self.value:g}"]
        if self.tol:
            parts.append(f"tol={self.tol:g}")
        if self.rel:
            parts.append(f"rel={self.rel:g}")
        return f"approx({', '.join(parts)})"


#: The tolerance of ``approx`` when neither ``tol`` nor ``rel`` is given (YAML and Python).
APPROX_DEFAULT_TOL = 1e-6


def approx_matcher(value: float, *, tol: float | None = None, rel: float | None = None) -> Any:
    """The one ``approx`` matcher of YAML specs and of ``toolproof.testing.approx``.

    With neither tolerance given the value may be off by :data:`APPROX_DEFAULT_TOL`
    (absolute); a tolerance left out when the other is given is ``0``.
    """
    if tol is None and rel is None:
        tol = APPROX_DEFAULT_TOL
    return _Approx(value, tol or 0, rel or 0)


class _Range(_Base):
    __slots__ = ("from_min_max", "high", "low")

    def __init__(self, low: float | None, high: float | None, *, from_min_max: bool) -> None:
        self.low = low
        self.high = high
        self.from_min_max = from_min_max

    def explain(self, actual: Any) -> Explanation | None:
        if isinstance(actual, bool) or not isinstance(actual, _NUMBER_TYPES):
            message = f"expected a number {self._bounds()}, {_got(actual, 'number')}"
            if self.from_min_max and isinstance(actual, Mapping):
                message += (
                    " (min/max make a range matcher; to match an object with keys min and "
                    "max, write {fields: {min: ..., max: ...}})"
                )
            return "", message
        if (self.low is not None and actual < self.low) or (
            self.high is not None and actual > self.high
        ):
            return "", f"expected a number {self._bounds()}, got {_show(actual)}"
        return None

    def _bounds(self) -> str:
        if self.low is not None and self.high is not None:
            return f"in range [{self.low:g}, {self.high:g}]"
        if self.low is not None:
            return f">= {self.low:g}"
        return f"<= {self.high:g}"

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return f"range({self.low:g}, {self.high:g})"
        if self.low is not None:
            return f"range(min={self.low:g})"
        return f"range(max={self.high:g})"


class _Regex(_Base):
    __slots__ = ("pattern",)

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern

    def explain(self, actual: Any) -> Explanation | None:
        if isinstance(actual, str) and self.pattern.search(actual) is not None:
            return None
        return "", f"expected a string matching {self.describe()}, {_got(actual, 'string')}"

    def describe(self) -> str:
        return f"/{self.pattern.pattern}/"


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, _NUMBER_TYPES) and not isinstance(value, bool)


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: isinstance(value, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: isinstance(value, bool),
    "array": lambda value: isinstance(value, (list, tuple)),
    "object": lambda value: isinstance(value, Mapping),
    "null": lambda value: value is None,
}


class _Type(_Base):
    __slots__ = ("checks", "names")

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.checks = tuple(_TYPE_CHECKS[name] for name in self.names)

    def explain(self, actual: Any) -> Explanation | None:
        for check in self.checks:
            if check(actual):
                return None
        wanted = " or ".join(_article(name) if name != "null" else "null" for name in self.names)
        return "", f"expected {wanted}, {_got(actual)}"

    def describe(self) -> str:
        return f"type({'|'.join(self.names)})"


class _Any(_Base):
    __slots__ = ()

    def explain(self, actual: Any) -> Explanation | None:
        return None

    def describe(self) -> str:
        return "any"


_ASCII_IGNORED = "".join(
    chr(code)
    for code in range(128)
    if chr(code).isspace() or unicodedata.category(chr(code)).startswith("P")
)
_ASCII_TABLE = str.maketrans("", "", _ASCII_IGNORED)


def _normalize_text(text: str) -> str:
    """Case-fold and drop whitespace and punctuation (Unicode-aware, NFKC)."""
    if text.isascii():
        return text.translate(_ASCII_TABLE).lower()
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(
        ch for ch in text if not (ch.isspace() or unicodedata.category(ch).startswith("P"))
    )


class _Text(_Base):
    __slots__ = ("ignore", "normalized", "table", "text")

    def __init__(self, text: str, ignore: str | None) -> None:
        self.text = text
        self.ignore = ignore
        self.table: dict[int, str | None] | None = None
        if ignore is not None:
            # BFCL's standardisation exactly: drop the ignored characters, lower-case, and
            # compare ' as " (so 'x' and "x" are equal).
            table: dict[int, str | None] = {} if "'" in ignore else {ord("'"): '"'}
            table.update((ord(ch), None) for ch in ignore)
            self.table = table
        self.normalized = self.normalize(text)

    def normalize(self, text: str) -> str:
        if self.table is None:
            return _normalize_text(text)
        return text.translate(self.table).lower()

    def explain(self, actual: Any) -> Explanation | None:
        if isinstance(actual, str) and self.normalize(actual) == self.normalized:
            return None
        return "", f"expected {_show(self.text)} {self.how()}, {_got(actual, 'string')}"

    def how(self) -> str:
        if self.ignore is None:
            return "ignoring case, spaces and punctuation"
        return f"ignoring case and the characters {_show(self.ignore)}"

    def describe(self) -> str:
        return f"text({_show(self.text)})"


class _Optional(_Base):
    __slots__ = ("inner",)
    optional: ClassVar[bool] = True

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def explain(self, actual: Any) -> Explanation | None:
        return _explain(self.inner, actual)

    def describe(self) -> str:
        return f"optional({_describe(self.inner)})"


class _AllOf(_Base):
    __slots__ = ("parts",)

    def __init__(self, parts: Sequence[Any]) -> None:
        self.parts = tuple(parts)

    def explain(self, actual: Any) -> Explanation | None:
        for part in self.parts:
            explanation = _explain(part, actual)
            if explanation is not None:
                return explanation
        return None

    def describe(self) -> str:
        parts = self.parts
        if len(parts) == 2 and isinstance(parts[0], _Type) and _literals_fit(parts[1], parts[0]):
            parts = parts[1:]  # "36" says enough; the reasons still say "expected an integer"
        return " & ".join(_describe(part) for part in parts)


def _literals_fit(matcher: Any, type_: _Type) -> bool:
    """Whether every literal a matcher accepts already has one of ``type_``'s types."""
    options = matcher.options if isinstance(matcher, _OneOf) else (matcher,)
    for option in options:
        if isinstance(option, _Equals):
            value = option.value
        elif isinstance(option, _Text):
            value = option.text
        else:
            return False
        if not any(check(value) for check in type_.checks):
            return False
    return True


class _Fields(_Base):
    """An object whose keys hold matchers (a literal dict spec, or ``{fields: ...}``)."""

    __slots__ = ("fields", "mode")

    def __init__(self, fields: Mapping[str, Any], mode: str) -> None:
        self.fields = dict(fields)
        self.mode = mode

    def explain(self, actual: Any) -> Explanation | None:
        if not isinstance(actual, Mapping):
            return "", f"expected an object {self.describe()}, {_got(actual, 'object')}"
        if self.mode == "ignore":
            return None
        for key, matcher in self.fields.items():
            if key not in actual:
                if self.mode == "superset" or _is_optional(matcher):
                    continue
                return _key_path(key), f"missing (expected {_describe(matcher)})"
            explanation = _explain(matcher, actual[key])
            if explanation is not None:
                return _key_path(key) + explanation[0], explanation[1]
        if self.mode in ("exact", "superset"):
            for key, value in actual.items():
                if key not in self.fields:
                    allowed = ", ".join(map(str, self.fields)) or "none"
                    return _key_path(key), (
                        f"unexpected key (value {_show(value)}); expected keys: {allowed}"
                    )
        return None

    def describe(self) -> str:
        inner = ", ".join(f"{key}: {_describe(m)}" for key, m in self.fields.items())
        if self.mode == "exact":
            return f"{{{inner}}}"
        return f"fields({{{inner}}}, mode={self.mode})"


class _Items(_Base):
    """A list whose items hold matchers, position by position (a literal list spec)."""

    __slots__ = ("items",)

    def __init__(self, items: Sequence[Any]) -> None:
        self.items = tuple(items)

    def explain(self, actual: Any) -> Explanation | None:
        if not isinstance(actual, (list, tuple)):
            return "", f"expected a list {self.describe()}, {_got(actual, 'array')}"
        if len(actual) != len(self.items):
            return "", (
                f"expected {len(self.items)} items {self.describe()}, "
                f"got {len(actual)} items {_show(actual)}"
            )
        for index, (matcher, value) in enumerate(zip(self.items, actual, strict=True)):
            explanation = _explain(matcher, value)
            if explanation is not None:
                return f"[{index}]" + explanation[0], explanation[1]
        return None

    def describe(self) -> str:
        return f"[{', '.join(_describe(m) for m in self.items)}]"
