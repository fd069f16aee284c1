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

from toolproof._text import cut, json_type

ArgsMode = Literal["exact", "subset", "superset", "ignore"]
OrderMode = Literal["strict", "in_order", "unordered", "subset", "superset"]

#: Argument modes, in the order the docs list them.
ARGS_MODES: tuple[str, ...] = ("exact", "subset", "superset", "ignore")
#: Trajectory (call order) modes.
ORDER_MODES: tuple[str, ...] = ("strict", "in_order", "unordered", "subset", "superset")

#: Characters BFCL's checker removes before comparing strings (besides lower-casing).
BFCL_IGNORED_CHARACTERS = " ,./-_*^"

TYPE_NAMES = ("string", "integer", "number", "boolean", "array", "object", "null")
OPERATORS = frozenset(
    ("equals", "one_of", "approx", "range", "min", "max", "regex", "type", "any", "text")
) | {"optional", "fields"}
MODIFIERS = {"tol": "approx", "rel": "approx", "ignore": "text", "mode": "fields"}
MAX_REASONS = 20


# --------------------------------------------------------------------------------------
# Showing values in reasons
# --------------------------------------------------------------------------------------


def show_value(value: Any, limit: int = 80, default: Callable[[Any], Any] = repr) -> str:
    """A short JSON-like rendering of a value for reasons (strings in double quotes).

    ``default`` shows what JSON cannot (``repr`` unless told).
    """
    try:
        text = json.dumps(value, ensure_ascii=False, default=default)
    except (TypeError, ValueError):
        text = repr(value)
    return cut(text, limit)


def _kind(value: Any) -> str:
    """Like ``json_type`` but integers and floats are both ``number``."""
    kind = json_type(value)
    return "number" if kind == "integer" else kind


def article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeio" else f"a {noun}"


def got_text(actual: Any, expected_kind: str | Iterable[str] | None = None) -> str:
    """``got 5`` or, when the kinds differ, ``got "5" (a string)``."""
    shown = show_value(actual)
    kind = _kind(actual)
    if isinstance(expected_kind, str):
        expected_kind = (expected_kind,)
    if (expected_kind is not None and kind in expected_kind) or actual is None:
        return f"got {shown}"
    return f"got {shown} ({article(json_type(actual))})"


def key_path(key: Any) -> str:
    text = str(key)
    if text.isidentifier():
        return f".{text}"
    return f"[{show_value(key)}]"


def _format_path(path: str) -> str:
    return path[1:] if path.startswith(".") else path


# --------------------------------------------------------------------------------------
# JSON equality: 1 == 1.0, but true is not 1 and "1" is not 1
# --------------------------------------------------------------------------------------

NUMBER_TYPES = (int, float)


def json_equal(expected: Any, actual: Any) -> bool:
    """JSON equality of two values: ``1 == 1.0``, but ``True`` is not ``1`` (at any depth)."""
    te = type(expected)
    if te is type(actual):
        if te is dict:
            return expected.keys() == actual.keys() and all(
                json_equal(v, actual[k]) for k, v in expected.items()
            )
        if te is list or te is tuple:
            return len(expected) == len(actual) and all(map(json_equal, expected, actual))
        return bool(expected == actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return False
    if isinstance(expected, NUMBER_TYPES) and isinstance(actual, NUMBER_TYPES):
        return expected == actual
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(map(json_equal, expected, actual))
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(
            json_equal(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, str) and isinstance(actual, str):
        return str(expected) == str(actual)
    return False


def diff_values(expected: Any, actual: Any, path: str = "") -> tuple[str, str]:
    """Where and how ``actual`` first differs from ``expected`` (call only when they differ)."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        for key, value in expected.items():
            if key not in actual:
                return path + key_path(key), f"missing (expected {show_value(value)})"
        for key, value in actual.items():
            if key not in expected:
                return path + key_path(key), f"unexpected key (value {show_value(value)})"
        for key, value in expected.items():
            if not json_equal(value, actual[key]):
                return diff_values(value, actual[key], path + key_path(key))
    elif isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        if len(expected) != len(actual):
            return path, (
                f"expected {len(expected)} items {show_value(expected)}, "
                f"got {len(actual)} items {show_value(actual)}"
            )
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            if not json_equal(want, got):
                return diff_values(want, got, f"{path}[{index}]")
    return path, f"expected {show_value(expected)}, {got_text(actual, _kind(expected))}"


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


class BaseMatcher:
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


def explain_matcher(matcher: Any, actual: Any) -> Explanation | None:
    """Apply a built-in matcher or any ``Matcher``-protocol object (bool results allowed)."""
    if isinstance(matcher, BaseMatcher):
        return matcher.explain(actual)
    outcome = matcher(actual)
    if outcome is None or outcome is True:
        return None
    if outcome is False:
        return "", f"{describe_matcher(matcher)} rejected {show_value(actual)}"
    return "", str(outcome)


def describe_matcher(matcher: Any) -> str:
    describe = getattr(matcher, "describe", None)
    if callable(describe):
        return str(describe())
    return getattr(matcher, "__name__", type(matcher).__name__)


def is_optional(matcher: Any) -> bool:
    return bool(getattr(matcher, "optional", False))


class Equals(BaseMatcher):
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def explain(self, actual: Any) -> Explanation | None:
        if json_equal(self.value, actual):
            return None
        return diff_values(self.value, actual)

    def describe(self) -> str:
        return show_value(self.value)


class OneOf(BaseMatcher):
    __slots__ = ("options",)

    def __init__(self, options: Sequence[Any]) -> None:
        self.options = tuple(options)

    def explain(self, actual: Any) -> Explanation | None:
        first: Explanation | None = None
        for option in self.options:
            explanation = explain_matcher(option, actual)
            if explanation is None:
                return None
            if first is None:
                first = explanation
        if len(self.options) == 1 and first is not None:
            return first
        texts = [o for o in self.options if isinstance(o, TextMatcher)]
        if len(texts) == len(self.options) and len({t.ignore for t in texts}) == 1:
            listing = ", ".join(show_value(t.text) for t in texts[:8])
            if len(texts) > 8:
                listing += f", … ({len(texts) - 8} more)"
            return "", f"expected one of {listing} {texts[0].how()}, {got_text(actual, 'string')}"
        return "", f"expected one of {self._listing()}, {got_text(actual, self._kinds())}"

    def _kinds(self) -> set[str] | None:
        kinds = set()
        for option in self.options:
            if isinstance(option, Equals):
                kinds.add(_kind(option.value))
            elif isinstance(option, TextMatcher):
                kinds.add("string")
            else:
                return None
        return kinds

    def _listing(self) -> str:
        shown = [describe_matcher(option) for option in self.options[:8]]
        if len(self.options) > 8:
            shown.append(f"… ({len(self.options) - 8} more)")
        return ", ".join(shown)

    def describe(self) -> str:
        if len(self.options) == 1:
            return describe_matcher(self.options[0])
        return f"one_of({self._listing()})"


class _Approx(BaseMatcher):
    __slots__ = ("rel", "tol", "value")

    def __init__(self, value: float, tol: float, rel: float) -> None:
        self.value = value
        self.tol = tol
        self.rel = rel

    def explain(self, actual: Any) -> Explanation | None:
        if isinstance(actual, bool) or not isinstance(actual, NUMBER_TYPES):
            return "", f"expected a number {self.describe()}, {got_text(actual, 'number')}"
        if math.isclose(actual, self.value, rel_tol=self.rel, abs_tol=self.tol):
            return None
        off = abs(actual - self.value)
        return "", f"expected {self.describe()}, got {show_value(actual)} (off by {off:g})"

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


class Range(BaseMatcher):
    __slots__ = ("from_min_max", "high", "low")

    def __init__(self, low: float | None, high: float | None, *, from_min_max: bool) -> None:
        self.low = low
        self.high = high
        self.from_min_max = from_min_max

    def explain(self, actual: Any) -> Explanation | None:
        if isinstance(actual, bool) or not isinstance(actual, NUMBER_TYPES):
            message = f"expected a number {self._bounds()}, {got_text(actual, 'number')}"
            if self.from_min_max and isinstance(actual, Mapping):
                message += (
                    " (min/max make a range matcher; to match an object with keys min and "
                    "max, write {fields: {min: ..., max: ...}})"
                )
            return "", message
        if (self.low is not None and actual < self.low) or (
            self.high is not None and actual > self.high
        ):
            return "", f"expected a number {self._bounds()}, got {show_value(actual)}"
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


class Regex(BaseMatcher):
    __slots__ = ("pattern",)

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern

    def explain(self, actual: Any) -> Explanation | None:
        if isinstance(actual, str) and self.pattern.search(actual) is not None:
            return None
        return "", f"expected a string matching {self.describe()}, {got_text(actual, 'string')}"

    def describe(self) -> str:
        return f"/{self.pattern.pattern}/"


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, NUMBER_TYPES) and not isinstance(value, bool)


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: isinstance(value, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: isinstance(value, bool),
    "array": lambda value: isinstance(value, (list, tuple)),
    "object": lambda value: isinstance(value, Mapping),
    "null": lambda value: value is None,
}


class TypeMatcher(BaseMatcher):
    __slots__ = ("checks", "names")

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.checks = tuple(_TYPE_CHECKS[name] for name in self.names)

    def explain(self, actual: Any) -> Explanation | None:
        for check in self.checks:
            if check(actual):
                return None
        wanted = " or ".join(article(name) if name != "null" else "null" for name in self.names)
        return "", f"expected {wanted}, {got_text(actual)}"

    def describe(self) -> str:
        return f"type({'|'.join(self.names)})"


class AnyMatcher(BaseMatcher):
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


class TextMatcher(BaseMatcher):
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
        return "", f"expected {show_value(self.text)} {self.how()}, {got_text(actual, 'string')}"

    def how(self) -> str:
        if self.ignore is None:
            return "ignoring case, spaces and punctuation"
        return f"ignoring case and the characters {show_value(self.ignore)}"

    def describe(self) -> str:
        return f"text({show_value(self.text)})"


class OptionalMatcher(BaseMatcher):
    __slots__ = ("inner",)
    optional: ClassVar[bool] = True

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def explain(self, actual: Any) -> Explanation | None:
        return explain_matcher(self.inner, actual)

    def describe(self) -> str:
        return f"optional({describe_matcher(self.inner)})"


class AllOf(BaseMatcher):
    __slots__ = ("parts",)

    def __init__(self, parts: Sequence[Any]) -> None:
        self.parts = tuple(parts)

    def explain(self, actual: Any) -> Explanation | None:
        for part in self.parts:
            explanation = explain_matcher(part, actual)
            if explanation is not None:
                return explanation
        return None

    def describe(self) -> str:
        parts = self.parts
        if (
            len(parts) == 2
            and isinstance(parts[0], TypeMatcher)
            and _literals_fit(parts[1], parts[0])
        ):
            parts = parts[1:]  # "36" says enough; the reasons still say "expected an integer"
        return " & ".join(describe_matcher(part) for part in parts)


def _literals_fit(matcher: Any, type_: TypeMatcher) -> bool:
    """Whether every literal a matcher accepts already has one of ``type_``'s types."""
    options = matcher.options if isinstance(matcher, OneOf) else (matcher,)
    for option in options:
        if isinstance(option, Equals):
            value = option.value
        elif isinstance(option, TextMatcher):
            value = option.text
        else:
            return False
        if not any(check(value) for check in type_.checks):
            return False
    return True


class Fields(BaseMatcher):
    """An object whose keys hold matchers (a literal dict spec, or ``{fields: ...}``)."""

    __slots__ = ("fields", "mode")

    def __init__(self, fields: Mapping[str, Any], mode: str) -> None:
        self.fields = dict(fields)
        self.mode = mode

    def explain(self, actual: Any) -> Explanation | None:
        if not isinstance(actual, Mapping):
            return "", f"expected an object {self.describe()}, {got_text(actual, 'object')}"
        if self.mode == "ignore":
            return None
        for key, matcher in self.fields.items():
            if key not in actual:
                if self.mode == "superset" or is_optional(matcher):
                    continue
                return key_path(key), f"missing (expected {describe_matcher(matcher)})"
            explanation = explain_matcher(matcher, actual[key])
            if explanation is not None:
                return key_path(key) + explanation[0], explanation[1]
        if self.mode in ("exact", "superset"):
            for key, value in actual.items():
                if key not in self.fields:
                    allowed = ", ".join(map(str, self.fields)) or "none"
                    return key_path(key), (
                        f"unexpected key (value {show_value(value)}); expected keys: {allowed}"
                    )
        return None

    def describe(self) -> str:
        inner = ", ".join(f"{key}: {describe_matcher(m)}" for key, m in self.fields.items())
        if self.mode == "exact":
            return f"{{{inner}}}"
        return f"fields({{{inner}}}, mode={self.mode})"


class Items(BaseMatcher):
    """A list whose items hold matchers, position by position (a literal list spec)."""

    __slots__ = ("items",)

    def __init__(self, items: Sequence[Any]) -> None:
        self.items = tuple(items)

    def explain(self, actual: Any) -> Explanation | None:
        if not isinstance(actual, (list, tuple)):
            return "", f"expected a list {self.describe()}, {got_text(actual, 'array')}"
        if len(actual) != len(self.items):
            return "", (
                f"expected {len(self.items)} items {self.describe()}, "
                f"got {len(actual)} items {show_value(actual)}"
            )
        for index, (matcher, value) in enumerate(zip(self.items, actual, strict=True)):
            explanation = explain_matcher(matcher, value)
            if explanation is not None:
                return f"[{index}]" + explanation[0], explanation[1]
        return None

    def describe(self) -> str:
        return f"[{', '.join(describe_matcher(m) for m in self.items)}]"
