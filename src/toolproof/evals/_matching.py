"""Matching vocabulary: argument values, argument sets, and tool-call trajectories.

Three layers, each compiled once and then applied many times (replay grades thousands of
traces per second, so nothing here parses a spec or compiles a regex per call):

1. **Value matchers** (:func:`compile_value_matcher`): a YAML/JSON spec becomes a
   :class:`Matcher`, a callable that returns ``None`` on a match or a reason such as
   ``expected a number <= 20, got 50``. A plain value means "equals"; dicts with an operator
   key (``one_of``, ``approx``, ``range``/``min``/``max``, ``regex``, ``type``, ``any``,
   ``text``, ``optional``, ``equals``, ``fields``) build the other matchers.
2. **Argument sets** (:func:`compile_arguments`, :func:`match_arguments`): expected argument
   specs against a call's arguments in mode ``exact``, ``subset``, ``superset`` or ``ignore``.
3. **Trajectories** (:func:`compile_order`, :func:`match_order`): expected calls against the
   calls an agent made, in mode ``strict``, ``in_order``, ``unordered``, ``subset`` or
   ``superset``. Calls are paired by maximum bipartite matching, so a valid pairing is always
   found when one exists (greedy pairing, as in agentevals, can miss it).

``subset``/``superset`` always name the *expectation* relative to what happened: ``subset``
means "the expected arguments (or calls) are a subset of the actual ones: extras allowed";
``superset`` means "the actual ones must all be expected: nothing extra, some may be absent".

On top of these sit the two public conversions for outside material: :func:`match_bfcl`
(BFCL possible answers) and :func:`match_trajectory` (agentevals-style OpenAI-format
trajectories). Both return a :class:`Verdict`.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, cast, runtime_checkable

from toolproof._text import json_type
from toolproof.errors import ConfigError

__all__ = [
    "ARGS_MODES",
    "BFCL_IGNORED_CHARACTERS",
    "ORDER_MODES",
    "ArgsMode",
    "ArgumentsMatcher",
    "CallSpec",
    "Matcher",
    "OrderMatcher",
    "OrderMode",
    "Verdict",
    "bfcl_expected_calls",
    "compile_arguments",
    "compile_calls",
    "compile_order",
    "compile_value_matcher",
    "match_arguments",
    "match_bfcl",
    "match_order",
    "match_trajectory",
]

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


# --------------------------------------------------------------------------------------
# Compiling specs
# --------------------------------------------------------------------------------------


def _join(where: str, part: str) -> str:
    if not where:
        return part.lstrip(".")
    return where + part


class _Compiler:
    """Compiles specs, collecting every problem so one ``ConfigError`` can list them all."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def problem(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}" if where else message)

    def raise_if_problems(self) -> None:
        if not self.problems:
            return
        if len(self.problems) == 1:
            message = f"invalid matcher spec: {self.problems[0]}"
        else:
            lines = "\n".join(f"  - {p}" for p in self.problems)
            message = f"{len(self.problems)} problems in matcher specs:\n{lines}"
        raise ConfigError(message, list(self.problems))

    def value(self, spec: Any, where: str) -> Any:
        if isinstance(spec, _Base) or (callable(spec) and hasattr(spec, "describe")):
            return spec  # an already compiled matcher (or any Matcher-protocol object)
        if isinstance(spec, Mapping):
            if any(isinstance(key, str) and key in _OPERATORS for key in spec):
                return self.operators(spec, where)
            return _Fields(
                {key: self.value(v, _join(where, _key_path(key))) for key, v in spec.items()},
                "exact",
            )
        if isinstance(spec, (list, tuple)):
            return _Items([self.value(v, f"{where}[{i}]") for i, v in enumerate(spec)])
        return _Equals(spec)

    def operators(self, spec: Mapping[str, Any], where: str) -> Any:
        keys = list(spec)
        operators = [k for k in keys if k in _OPERATORS]
        unknown = [k for k in keys if k not in _OPERATORS and k not in _MODIFIERS]
        if unknown:
            import difflib

            near = [m for m, owner in _MODIFIERS.items() if owner in spec]
            close = difflib.get_close_matches(str(unknown[0]), near, n=1, cutoff=0.4)
            close = close or difflib.get_close_matches(str(unknown[0]), sorted(_OPERATORS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.problem(
                where,
                f"unknown key{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(k) for k in unknown)}{hint} next to {', '.join(operators)}; "
                f"matcher keys are {', '.join(sorted(_OPERATORS))} (with tol/rel for approx, "
                "ignore for text, mode for fields). To match a literal object with these keys, "
                "write {equals: {...}}",
            )
            return _Any()
        for key in keys:
            owner = _MODIFIERS.get(key)
            if owner is not None and owner not in spec:
                self.problem(where, f"'{key}' is only allowed next to '{owner}'")
        if "optional" in spec:
            if len(keys) > 1:
                self.problem(
                    where,
                    "'optional' wraps another spec and takes no other keys: write "
                    "{optional: {type: string}}, not {optional: true, type: string}",
                )
            return _Optional(self.value(spec["optional"], _join(where, ".optional")))
        if "any" in spec:
            if spec["any"] is not True:
                self.problem(
                    where, f"'any' must be true (it matches every value), got {spec['any']!r}"
                )
            if len(keys) > 1:
                self.problem(where, "'any: true' matches every value; remove the other keys")
            return _Any()

        parts: list[Any] = []
        if "type" in spec:
            parts.append(self.type_(spec["type"], _join(where, ".type")))
        if "equals" in spec:
            parts.append(_Equals(spec["equals"]))
        if "one_of" in spec:
            options = spec["one_of"]
            if not isinstance(options, (list, tuple)) or not options:
                self.problem(
                    _join(where, ".one_of"), f"must be a non-empty list, got {_show(options)}"
                )
            else:
                parts.append(
                    _OneOf(
                        [
                            self.value(o, f"{_join(where, '.one_of')}[{i}]")
                            for i, o in enumerate(options)
                        ]
                    )
                )
        if "text" in spec:
            parts.append(self.text(spec, where))
        if "regex" in spec:
            parts.append(self.regex(spec["regex"], _join(where, ".regex")))
        if "approx" in spec:
            parts.append(self.approx(spec, where))
        if "range" in spec or "min" in spec or "max" in spec:
            parts.append(self.range_(spec, where))
        if "fields" in spec:
            parts.append(self.fields(spec, where))
        if not parts:  # every operator key had a problem
            return _Any()
        return parts[0] if len(parts) == 1 else _AllOf(parts)

    def type_(self, spec: Any, where: str) -> Any:
        names = [spec] if isinstance(spec, str) else spec
        if not isinstance(names, (list, tuple)) or not names:
            self.problem(where, f"must be a type name or a list of them, got {_show(spec)}")
            return _Any()
        bad = [n for n in names if n not in _TYPE_NAMES]
        if bad:
            self.problem(
                where,
                f"unknown type {', '.join(repr(b) for b in bad)}; "
                f"allowed: {', '.join(_TYPE_NAMES)}",
            )
            return _Any()
        return _Type(names)

    def text(self, spec: Mapping[str, Any], where: str) -> Any:
        text, ignore = spec["text"], spec.get("ignore")
        if not isinstance(text, str):
            self.problem(_join(where, ".text"), f"must be a string, got {_show(text)}")
            return _Any()
        if ignore is not None and not isinstance(ignore, str):
            self.problem(
                _join(where, ".ignore"),
                f"must be a string of the characters to ignore, got {_show(ignore)}",
            )
            return _Any()
        return _Text(text, ignore)

    def regex(self, pattern: Any, where: str) -> Any:
        if not isinstance(pattern, str):
            self.problem(where, f"must be a string, got {_show(pattern)}")
            return _Any()
        try:
            return _Regex(re.compile(pattern))
        except re.error as exc:
            self.problem(where, f"invalid regular expression {pattern!r}: {exc}")
            return _Any()

    def _number(self, value: Any, where: str, *, allow_none: bool = False) -> float | None:
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, _NUMBER_TYPES):
            self.problem(where, f"must be a number, got {_show(value)}")
            return None
        return value

    def approx(self, spec: Mapping[str, Any], where: str) -> Any:
        value = self._number(spec["approx"], _join(where, ".approx"))
        tol = self._number(spec.get("tol", 0), _join(where, ".tol"))
        rel = self._number(spec.get("rel", 0), _join(where, ".rel"))
        if (tol is not None and tol < 0) or (rel is not None and rel < 0):
            self.problem(where, "tol and rel must not be negative")
            return _Any()
        if value is None or tol is None or rel is None:
            return _Any()
        if "tol" not in spec and "rel" not in spec:
            tol = 1e-6
        return _Approx(value, tol, rel)

    def range_(self, spec: Mapping[str, Any], where: str) -> Any:
        problems_before = len(self.problems)
        if "range" in spec:
            if "min" in spec or "max" in spec:
                self.problem(where, "write either range: [low, high] or min/max, not both")
                return _Any()
            bounds = spec["range"]
            if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
                self.problem(
                    _join(where, ".range"),
                    f"must be [low, high] (null for an open end), got {_show(bounds)}",
                )
                return _Any()
            low = self._number(bounds[0], _join(where, ".range[0]"), allow_none=True)
            high = self._number(bounds[1], _join(where, ".range[1]"), allow_none=True)
            from_min_max = False
        else:
            low = self._number(spec.get("min"), _join(where, ".min"), allow_none=True)
            high = self._number(spec.get("max"), _join(where, ".max"), allow_none=True)
            from_min_max = True
        if low is None and high is None:
            if len(self.problems) == problems_before:
                self.problem(where, "a range needs at least one bound")
            return _Any()
        if low is not None and high is not None and low > high:
            self.problem(where, f"the low bound {low:g} is greater than the high bound {high:g}")
            return _Any()
        return _Range(low, high, from_min_max=from_min_max)

    def fields(self, spec: Mapping[str, Any], where: str) -> Any:
        fields, mode = spec["fields"], spec.get("mode", "exact")
        if mode not in ARGS_MODES:
            self.problem(_join(where, ".mode"), _bad_mode(mode, ARGS_MODES))
            mode = "exact"
        if not isinstance(fields, Mapping):
            self.problem(_join(where, ".fields"), f"must be an object, got {_show(fields)}")
            return _Any()
        base = _join(where, ".fields")
        return _Fields(
            {key: self.value(v, _join(base, _key_path(key))) for key, v in fields.items()}, mode
        )


def _bad_mode(mode: Any, valid: Sequence[str]) -> str:
    return f"unknown mode {mode!r}; valid modes: {', '.join(valid)}"


def compile_value_matcher(spec: Any, *, where: str = "") -> Matcher:
    """Compile a value spec (the YAML/JSON form) into a :class:`Matcher`.

    Spec forms:

    - a plain value: equals (``12`` also matches ``12.0``; ``true`` does not match ``1``);
      dicts and lists match key by key / item by item, so they may nest other specs;
    - ``{equals: v}``: exactly ``v``, taken literally (use it for an object whose keys look
      like matcher keys);
    - ``{one_of: [a, b]}``: any of the specs; ``{approx: 3.14, tol: 0.01}`` (absolute ``tol``
      and/or relative ``rel``; default ``tol`` 1e-6);
    - ``{range: [lo, hi]}`` or ``{min: lo}``, ``{max: hi}`` (inclusive; ``null`` = open);
    - ``{regex: "..."}`` (``re.search``; anchor with ``^...$`` for the whole string);
    - ``{type: string|integer|number|boolean|array|object|null}`` or a list of them;
    - ``{any: true}``; ``{text: "..."}`` (ignores case, whitespace and punctuation; with
      ``ignore: "chars"`` only those characters are ignored);
    - ``{optional: <spec>}``: the argument may be absent; if present it must match;
    - ``{fields: {...}, mode: subset}``: an object matched key by key with an argument mode.

    Several operator keys in one dict must all match: ``{type: integer, max: 20}``.

    Args:
        spec: The spec.
        where: Where the spec comes from (``"suite.yaml:12: cases[0].expect.args.a"``),
            used to name bad specs.

    Returns:
        The compiled matcher: ``matcher(actual)`` is ``None`` or a reason.

    Raises:
        ConfigError: The spec is invalid; the message names ``where`` and lists every
            problem.
    """
    compiler = _Compiler()
    matcher = compiler.value(spec, where)
    compiler.raise_if_problems()
    return cast(Matcher, matcher)


# --------------------------------------------------------------------------------------
# Argument sets
# --------------------------------------------------------------------------------------


class ArgumentsMatcher:
    """Expected arguments, compiled: ``matcher(actual_arguments)`` returns reasons.

    Build it with :func:`compile_arguments`. Reasons name the argument and compare expected
    with actual: ``argument 'b': expected 8, got 9``, ``missing argument 'b' (expected 8)``,
    ``unexpected argument 'c' = 1 (mode 'exact' allows only: a, b)``.
    """

    __slots__ = ("fields", "mode")

    def __init__(self, fields: Mapping[str, Any], mode: str) -> None:
        self.fields = dict(fields)
        self.mode = mode

    def __call__(self, actual: Any) -> list[str]:
        mode = self.mode
        if mode == "ignore":
            return []
        if actual is None:
            actual = {}
        if not isinstance(actual, Mapping):
            return [f"expected arguments as an object, {_got(actual)}"]
        reasons: list[str] = []
        fields = self.fields
        for key, matcher in fields.items():
            if key not in actual:
                if mode == "superset" or _is_optional(matcher):
                    continue
                reasons.append(f"missing argument '{key}' (expected {_describe(matcher)})")
                continue
            explanation = _explain(matcher, actual[key])
            if explanation is not None:
                reasons.append(f"argument '{key}{explanation[0]}': {explanation[1]}")
        if mode != "subset":
            for key, value in actual.items():
                if key not in fields:
                    allowed = (
                        f"allows only: {', '.join(map(str, fields))}"
                        if fields
                        else "allows no arguments"
                    )
                    reasons.append(
                        f"unexpected argument '{key}' = {_show(value)} (mode '{mode}' {allowed})"
                    )
        return reasons

    def describe(self) -> str:
        """``a=12, b=type(integer)`` (with ``, ...`` when extra arguments are allowed)."""
        if self.mode == "ignore":
            return "..."
        parts = [f"{key}={_describe(m)}" for key, m in self.fields.items()]
        if self.mode == "subset":
            parts.append("...")
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"<arguments {self.describe()} mode={self.mode}>"


def _compile_arguments(
    compiler: _Compiler, expected: Any, mode: Any, where: str
) -> ArgumentsMatcher:
    if mode not in ARGS_MODES:
        compiler.problem(where, _bad_mode(mode, ARGS_MODES))
        mode = "subset"
    if expected is None:
        expected = {}
    if not isinstance(expected, Mapping):
        compiler.problem(
            where, f"expected arguments must be an object of name: spec, got {_show(expected)}"
        )
        expected = {}
    fields = {
        key: compiler.value(spec, _join(where, _key_path(key))) for key, spec in expected.items()
    }
    return ArgumentsMatcher(fields, mode)


def compile_arguments(
    expected: Mapping[str, Any], *, mode: ArgsMode = "subset", where: str = ""
) -> ArgumentsMatcher:
    """Compile expected argument specs once, to check many calls.

    Args:
        expected: Argument name -> value spec (see :func:`compile_value_matcher`).
        mode: ``"subset"`` (default): the expected arguments must be present and match,
            extra actual arguments are allowed; ``"exact"``: the same keys (``optional`` ones
            may be absent); ``"superset"``: every actual argument must be expected and match,
            expected ones may be absent; ``"ignore"``: arguments are not checked.
        where: Where the specs come from, used to name bad specs.

    Returns:
        The compiled matcher; calling it with the actual arguments returns the reasons
        (``[]`` on a match).

    Raises:
        ConfigError: A spec or the mode is invalid.
    """
    compiler = _Compiler()
    matcher = _compile_arguments(compiler, expected, mode, where)
    compiler.raise_if_problems()
    return matcher


def match_arguments(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    *,
    mode: ArgsMode = "subset",
    where: str = "",
) -> list[str]:
    """Check a call's arguments against expected argument specs.

    This compiles ``expected`` on every call; to check many calls against the same
    expectation, compile it once with :func:`compile_arguments`.

    Example:
        ```python
        match_arguments({"query": {"text": "leave policy"}, "top_k": {"max": 20}},
                        {"query": "Leave policy", "top_k": 50})
        # ["argument 'top_k': expected a number <= 20, got 50"]
        ```

    Args:
        expected: Argument name -> value spec.
        actual: The call's arguments.
        mode: ``exact``, ``subset`` (default), ``superset`` or ``ignore`` (see
            :func:`compile_arguments`).
        where: Where the specs come from, used to name bad specs.

    Returns:
        The reasons the arguments do not match; ``[]`` when they match.

    Raises:
        ConfigError: A spec or the mode is invalid.
    """
    return compile_arguments(expected, mode=mode, where=where)(actual)


# --------------------------------------------------------------------------------------
# Calls and trajectories
# --------------------------------------------------------------------------------------


class _ArgsCheck(Protocol):
    def __call__(self, actual: Mapping[str, Any] | None) -> list[str]: ...

    def describe(self) -> str: ...


@dataclass(frozen=True, slots=True)
class CallSpec:
    """One expected tool call: a name and, optionally, compiled argument expectations.

    Attributes:
        name: The tool name (exact, case-sensitive).
        arguments: The argument check (an :class:`ArgumentsMatcher`), or ``None`` when any
            arguments will do.
    """

    name: str
    arguments: _ArgsCheck | None = None

    def describe(self) -> str:
        """``search(query="x", ...)``, or ``search`` when any arguments will do."""
        if self.arguments is None:
            return self.name
        return f"{self.name}({self.arguments.describe()})"

    def check(self, call: Any) -> list[str]:
        """Reasons ``call`` is not this call (``[]`` when it is).

        Args:
            call: The actual call, in any form :func:`match_order` accepts.
        """
        if not isinstance(call, _Call):
            call = _as_call(call, 0)
        if call.name != self.name:
            return [f"expected tool {self.name}, got {call.name}"]
        if self.arguments is None:
            return []
        if call.error is not None:
            return [f"arguments could not be read ({call.error})"]
        return self.arguments(call.arguments)


@dataclass(slots=True)
class _Call:
    name: str
    arguments: Mapping[str, Any]
    error: str | None
    index: int

    def signature(self) -> str:
        if self.error is not None:
            return f"{self.name}(<unreadable arguments>)"
        args = ", ".join(f"{k}={_show(v, 40)}" for k, v in self.arguments.items())
        text = f"{self.name}({args})"
        return text if len(text) <= 120 else text[:119] + "…"

    def label(self) -> str:
        return f"call #{self.index + 1} {self.signature()}"


def _parse_arguments(raw: Any) -> tuple[Mapping[str, Any], str | None]:
    if raw is None:
        return {}, None
    if isinstance(raw, Mapping):
        return raw, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            return {}, f"not valid JSON: {exc}"
        if not isinstance(parsed, dict):
            return {}, f"not a JSON object: {_show(parsed)}"
        return parsed, None
    return {}, f"arguments must be an object or JSON text, got {_show(raw)}"


def _as_call(item: Any, index: int) -> _Call:
    """Read one actual call in any of the accepted forms.

    A ``ToolCall``, an OpenAI tool call, ``{name, arguments}``, BFCL's ``{name: {args}}`` or a
    ``(name, arguments)`` pair.
    """
    name: Any
    if isinstance(item, Mapping):
        function = item.get("function")
        if isinstance(function, Mapping):
            name, raw = function.get("name"), function.get("arguments")
        elif "name" in item and isinstance(item.get("name"), str):
            name, raw = item["name"], item.get("arguments")
        elif len(item) == 1:
            ((name, raw),) = item.items()
        else:
            raise TypeError(
                f"cannot read a tool call from {_show(item)}: expected a ToolCall, "
                '{"name": ..., "arguments": {...}}, an OpenAI tool call or {name: {args}}'
            )
        arguments, error = _parse_arguments(raw)
        return _Call(str(name), arguments, error, index)
    if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
        arguments, error = _parse_arguments(item[1])
        return _Call(item[0], arguments, error, index)
    name = getattr(item, "name", None)
    if isinstance(name, str) and hasattr(item, "arguments"):
        error = getattr(item, "arguments_error", None)
        return _Call(name, item.arguments, error, index)
    raise TypeError(f"cannot read a tool call from {item!r}")


def _compile_call(compiler: _Compiler, item: Any, args: str, where: str) -> CallSpec:
    if isinstance(item, CallSpec):
        return item
    if isinstance(item, str):
        return CallSpec(item)
    if isinstance(item, Mapping):
        unknown = [k for k in item if k not in ("name", "arguments", "mode")]
        name = item.get("name")
        if unknown:
            compiler.problem(
                where,
                f"unknown key{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(k) for k in unknown)}; an expected call has name, "
                "arguments and mode",
            )
        if not isinstance(name, str) or not name:
            compiler.problem(where, f"an expected call needs a tool name, got {_show(name)}")
            return CallSpec(str(name))
        if "arguments" not in item and "mode" not in item:
            return CallSpec(name)
        mode = item.get("mode", args)
        return CallSpec(
            name,
            _compile_arguments(compiler, item.get("arguments"), mode, _join(where, ".arguments")),
        )
    compiler.problem(
        where, f"an expected call is a tool name or {{name, arguments}}, got {_show(item)}"
    )
    return CallSpec("?")


def compile_calls(
    expected: Iterable[str | Mapping[str, Any] | CallSpec],
    *,
    args: ArgsMode = "subset",
    where: str = "",
) -> list[CallSpec]:
    """Compile expected calls.

    Args:
        expected: Each a tool name (any arguments), a :class:`CallSpec`, or a mapping
            ``{name: ..., arguments: {arg: spec}, mode: exact|subset|superset|ignore}``.
        args: The argument mode of calls that give ``arguments`` but no ``mode``.
        where: Where the expectations come from, used to name bad specs.

    Returns:
        The compiled calls.

    Raises:
        ConfigError: An expected call or one of its specs is invalid.
    """
    compiler = _Compiler()
    if args not in ARGS_MODES:
        compiler.problem(where, _bad_mode(args, ARGS_MODES))
        args = "subset"
    calls = [
        _compile_call(compiler, item, args, f"{where}[{i}]") for i, item in enumerate(expected)
    ]
    compiler.raise_if_problems()
    return calls


class _Pairing:
    """Which expected calls match which actual calls, and a maximum one-to-one pairing.

    Positions are indices into ``specs`` and ``calls``; reasons show each call's own
    ``index`` (its number in the whole trajectory).
    """

    def __init__(self, specs: Sequence[CallSpec], calls: Sequence[_Call]) -> None:
        self.specs = specs
        self.calls = calls
        by_name: dict[str, list[int]] = {}
        for position, call in enumerate(calls):
            by_name.setdefault(call.name, []).append(position)
        self.by_name = by_name
        self.adjacent: list[list[int]] = [
            [j for j in by_name.get(spec.name, ()) if not spec.check(calls[j])] for spec in specs
        ]
        self.spec_of, self.call_of = _max_matching(self.adjacent, len(calls))

    def unpaired_reasons(self, *, pair_names: bool = False) -> list[str]:
        """Reasons for the unpaired calls of both sides.

        An unpaired expected call and an unpaired actual call of the same tool are reported
        together as one mismatch (expected vs actual); with ``pair_names``, leftovers of
        different tools are paired too, in order (used inside one message).
        """
        specs, calls = self.specs, self.calls
        free = [j for j, i in enumerate(self.spec_of) if i == -1]
        reasons: list[str] = []
        unpaired: list[int] = []
        for i, j in enumerate(self.call_of):
            if j != -1:
                continue
            same = [k for k in free if calls[k].name == specs[i].name]
            if not same or self.adjacent[i]:
                unpaired.append(i)
                continue
            best = min(same, key=lambda k: len(specs[i].check(calls[k])))
            free.remove(best)
            reasons.append(
                f"{calls[best].label()} does not match the expected {specs[i].describe()}: "
                + "; ".join(specs[i].check(calls[best]))
            )
        if pair_names:
            while unpaired and free:
                i, j = unpaired.pop(0), free.pop(0)
                reasons.append(f"expected {specs[i].describe()}, got {calls[j].label()}")
        reasons += [self.missing_reason(i) for i in unpaired]
        return reasons + [self.extra_reason(j) for j in free]

    def missing_reason(self, i: int) -> str:
        spec, calls = self.specs[i], self.calls
        same = self.by_name.get(spec.name, [])
        if not same:
            made = ", ".join(c.name for c in calls[:12]) if calls else "none"
            if len(calls) > 12:
                made += ", …"
            return f"expected call {spec.describe()} was not made (calls made: {made})"
        if self.adjacent[i]:
            wanted = sum(1 for s in self.specs if s.name == spec.name)
            return (
                f"expected call {spec.describe()} was not made: {spec.name} was called "
                f"{len(self.adjacent[i])} time(s) with matching arguments, but {wanted} "
                f"{spec.name} calls are expected"
            )
        free = [j for j in same if self.spec_of[j] == -1]
        if not free:
            taken = ", ".join(calls[j].label() for j in same[:3])
            return (
                f"expected call {spec.describe()} was not made; the {spec.name} calls made "
                f"match other expected calls ({taken})"
            )
        best = min(free, key=lambda j: len(spec.check(calls[j])))
        return (
            f"expected call {spec.describe()} was not made; closest is {calls[best].label()}: "
            + "; ".join(spec.check(calls[best]))
        )

    def extra_reason(self, j: int) -> str:
        call, specs = self.calls[j], self.specs
        same = [i for i, s in enumerate(specs) if s.name == call.name]
        if not same:
            names = ", ".join(dict.fromkeys(s.name for s in specs)) or "none"
            return (
                f"unexpected {call.label()}: {call.name} is not an expected tool "
                f"(expected: {names})"
            )
        if any(j in self.adjacent[i] for i in same):
            made = len(self.by_name.get(call.name, ()))
            return (
                f"unexpected {call.label()}: {call.name} was called {made} times, "
                f"only {len(same)} expected"
            )
        best = min(same, key=lambda i: (self.call_of[i] != -1, len(specs[i].check(call))))
        return (
            f"unexpected {call.label()}: its arguments match no expected {call.name} call; "
            f"closest is {specs[best].describe()}: " + "; ".join(specs[best].check(call))
        )


def _max_matching(adjacent: Sequence[Sequence[int]], n_right: int) -> tuple[list[int], list[int]]:
    """Maximum bipartite matching (augmenting paths, BFS), after a greedy first pass.

    Returns ``(spec_of, call_of)``: ``spec_of[j]`` is the left vertex paired with right vertex
    ``j`` (or -1), ``call_of[i]`` the right vertex paired with left vertex ``i`` (or -1).
    """
    call_of = [-1] * len(adjacent)
    spec_of = [-1] * n_right
    for i, options in enumerate(adjacent):
        for j in options:
            if spec_of[j] == -1:
                spec_of[j], call_of[i] = i, j
                break
    for root in range(len(adjacent)):
        if call_of[root] != -1 or not adjacent[root]:
            continue
        came_from: dict[int, int] = {}
        queue = [root]
        found = -1
        head = 0
        while head < len(queue) and found == -1:
            left = queue[head]
            head += 1
            for j in adjacent[left]:
                if j in came_from:
                    continue
                came_from[j] = left
                if spec_of[j] == -1:
                    found = j
                    break
                queue.append(spec_of[j])
        while found != -1:
            left = came_from[found]
            previous = call_of[left]
            call_of[left], spec_of[found] = found, left
            found = previous if left != root else -1
    return spec_of, call_of


def _calls(count: int) -> str:
    return f"{count} call" if count == 1 else f"{count} calls"


def _cap(reasons: list[str]) -> list[str]:
    if len(reasons) <= _MAX_REASONS:
        return reasons
    extra = len(reasons) - _MAX_REASONS + 1
    return [*reasons[: _MAX_REASONS - 1], f"… and {extra} more differences"]


def _order_reasons(specs: Sequence[CallSpec], calls: Sequence[_Call], mode: str) -> list[str]:
    if mode == "strict":
        return _strict_reasons(specs, calls)
    if mode == "in_order":
        return _in_order_reasons(specs, calls)
    pairing = _Pairing(specs, calls)
    reasons: list[str] = []
    if mode == "unordered" and len(specs) != len(calls):
        any_order = " (in any order)" if len(specs) > 1 else ""
        reasons.append(f"expected {_calls(len(specs))}{any_order}, got {len(calls)}")
    if mode == "unordered":
        return reasons + pairing.unpaired_reasons()
    if mode == "subset":
        reasons += [pairing.missing_reason(i) for i, j in enumerate(pairing.call_of) if j == -1]
    if mode == "superset":
        reasons += [pairing.extra_reason(j) for j, i in enumerate(pairing.spec_of) if i == -1]
    return reasons


def _in_order_reasons(specs: Sequence[CallSpec], calls: Sequence[_Call]) -> list[str]:
    reasons: list[str] = []
    position = 0
    last: _Call | None = None
    for spec in specs:
        found = next((c for c in calls[position:] if not spec.check(c)), None)
        if found is not None:
            position, last = found.index + 1, found
            continue
        after = f" after {last.label()}" if last is not None else ""
        earlier = next((c for c in calls[:position] if not spec.check(c)), None)
        if earlier is not None:
            reasons.append(
                f"expected call {spec.describe()}{after}, but it was only made before that, "
                f"as {earlier.label()}"
            )
            continue
        same = [c for c in calls[position:] if c.name == spec.name] or [
            c for c in calls if c.name == spec.name
        ]
        if same:
            best = min(same, key=lambda c: len(spec.check(c)))
            reasons.append(
                f"expected call {spec.describe()}{after}; closest is {best.label()}: "
                + "; ".join(spec.check(best))
            )
        else:
            made = ", ".join(c.name for c in calls[:12]) if calls else "none"
            reasons.append(
                f"expected call {spec.describe()}{after} was not made (calls made: {made})"
            )
    return reasons


def _strict_reasons(specs: Sequence[CallSpec], calls: Sequence[_Call]) -> list[str]:
    if len(specs) == len(calls):
        reasons = []
        for spec, call in zip(specs, calls, strict=True):
            problems = spec.check(call)
            if problems and call.name == spec.name:
                reasons.append(f"{call.label()}: " + "; ".join(problems))
            elif problems:
                reasons.append(
                    f"call #{call.index + 1}: expected {spec.describe()}, got {call.signature()}"
                )
        if any(spec.name != call.name for spec, call in zip(specs, calls, strict=True)):
            reasons.insert(0, _order_summary(specs, calls))
        return reasons
    import difflib

    reasons = [_order_summary(specs, calls)]
    matcher = difflib.SequenceMatcher(
        None, [s.name for s in specs], [c.name for c in calls], autojunk=False
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "replace"):
            for spec, call in zip(specs[i1:i2], calls[j1:j2], strict=False):
                problems = spec.check(call)
                if problems and call.name == spec.name:
                    reasons.append(f"{call.label()}: " + "; ".join(problems))
                elif problems:
                    reasons.append(
                        f"call #{call.index + 1}: expected {spec.describe()}, "
                        f"got {call.signature()}"
                    )
            i1, j1 = i1 + min(i2 - i1, j2 - j1), j1 + min(i2 - i1, j2 - j1)
        for spec in specs[i1:i2]:
            reasons.append(
                f"missing call {spec.describe()} before call #{j1 + 1}"
                if j1 < len(calls)
                else f"missing call {spec.describe()} at the end"
            )
        for call in calls[j1:j2]:
            reasons.append(f"unexpected {call.label()}")
    return reasons


def _order_summary(specs: Sequence[CallSpec], calls: Sequence[_Call]) -> str:
    return (
        f"expected {_calls(len(specs))} in this order: "
        f"{', '.join(s.name for s in specs) or 'none'}; got {_calls(len(calls))}: "
        f"{', '.join(c.name for c in calls) or 'none'}"
    )


class OrderMatcher:
    """Expected calls and an order mode, compiled: ``matcher(actual_calls)`` returns reasons.

    Build it with :func:`compile_order`.
    """

    __slots__ = ("calls", "mode")

    def __init__(self, calls: Sequence[CallSpec], mode: str) -> None:
        self.calls = list(calls)
        self.mode = mode

    def __call__(self, actual: Iterable[Any]) -> list[str]:
        calls = [_as_call(item, index) for index, item in enumerate(actual)]
        return _cap(_order_reasons(self.calls, calls, self.mode))

    def describe(self) -> str:
        """``in_order: search(query="x", ...), answer``."""
        return f"{self.mode}: {', '.join(c.describe() for c in self.calls)}"

    def __repr__(self) -> str:
        return f"<order {self.describe()}>"


def compile_order(
    expected: Iterable[str | Mapping[str, Any] | CallSpec],
    mode: OrderMode = "in_order",
    *,
    args: ArgsMode = "subset",
    where: str = "",
) -> OrderMatcher:
    """Compile expected calls and an order mode once, to check many trajectories.

    Modes (the expectation is named relative to what happened):

    - ``strict``: exactly the expected calls, in this order, nothing else;
    - ``in_order``: the expected calls appear in this order; other calls may come between;
    - ``unordered``: the same calls in any order, one actual call per expected call;
    - ``subset``: every expected call was made (any order); extra calls are allowed;
    - ``superset``: every actual call was expected (any order); expected ones may be missing.

    Calls are paired one to one by maximum bipartite matching, so when several expected
    calls share a tool name, a valid pairing is found whenever one exists.

    Args:
        expected: Tool names, :class:`CallSpec` objects or ``{name, arguments, mode}``
            mappings (see :func:`compile_calls`).
        mode: The order mode.
        args: The argument mode of expected calls that give arguments but no mode.
        where: Where the expectations come from, used to name bad specs.

    Returns:
        The compiled matcher. Call it with the actual calls (``ToolCall`` objects, OpenAI
        tool calls, ``{"name", "arguments"}`` mappings or ``(name, arguments)`` pairs).

    Raises:
        ConfigError: The mode, an expected call or one of its specs is invalid.
    """
    if mode not in ORDER_MODES:
        problem = _bad_mode(mode, ORDER_MODES)
        message = f"{where}: {problem}" if where else problem
        raise ConfigError(f"invalid order: {message}", [message])
    return OrderMatcher(compile_calls(expected, args=args, where=where), mode)


def match_order(
    expected: Iterable[str | Mapping[str, Any] | CallSpec],
    actual: Iterable[Any],
    mode: OrderMode = "in_order",
    *,
    args: ArgsMode = "subset",
    where: str = "",
) -> list[str]:
    """Check the tool calls an agent made against expected calls and an order mode.

    Example:
        ```python
        match_order(["slack_get_message", "jira_get_ticket", "slack_add_reaction"],
                    trace.tool_calls, "in_order")
        ```

    Args:
        expected: Tool names, or ``{name, arguments, mode}`` mappings (arguments are specs).
        actual: The calls made (``ToolCall`` objects, OpenAI tool calls,
            ``{"name", "arguments"}`` mappings or ``(name, arguments)`` pairs).
        mode: ``strict``, ``in_order`` (default), ``unordered``, ``subset`` or ``superset``
            (see :func:`compile_order`).
        args: The argument mode of expected calls that give arguments but no mode.
        where: Where the expectations come from, used to name bad specs.

    Returns:
        The reasons the calls do not match (``[]`` when they match), each naming the
        expected call and the actual call closest to it.

    Raises:
        ConfigError: The mode, an expected call or one of its specs is invalid.
    """
    return compile_order(expected, mode, args=args, where=where)(actual)


# --------------------------------------------------------------------------------------
# Verdicts and the two public conversions
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class Verdict:
    """The outcome of a match: ``ok`` and, when not ok, the reasons.

    Attributes:
        ok: Whether the actual calls match the expectation.
        reasons: What differs, each stating expected and actual (empty when ``ok``).
    """

    ok: bool
    reasons: list[str] = field(default_factory=list)

    @classmethod
    def from_reasons(cls, reasons: list[str]) -> Verdict:
        """``Verdict(ok=not reasons, reasons=reasons)``."""
        return cls(not reasons, reasons)

    def __str__(self) -> str:
        if self.ok:
            return "match"
        return "no match:\n" + "\n".join(f"  - {reason}" for reason in self.reasons)


# ---- agentevals-style trajectories ---------------------------------------------------

ArgsOverride = str | Sequence[str] | Callable[[Mapping[str, Any], Mapping[str, Any]], Any]


class _KeyPaths:
    """Compare only some (dotted) key paths of the arguments, by JSON equality."""

    __slots__ = ("expected", "paths")

    def __init__(self, expected: Mapping[str, Any], paths: Sequence[str]) -> None:
        self.expected = expected
        self.paths = [(path, path.split(".")) for path in paths]

    def __call__(self, actual: Mapping[str, Any] | None) -> list[str]:
        reasons = []
        for path, parts in self.paths:
            want, got = _walk(self.expected, parts), _walk(actual or {}, parts)
            if want is _ABSENT and got is _ABSENT:
                continue
            if want is _ABSENT:
                reasons.append(f"argument '{path}': expected it absent, got {_show(got)}")
            elif got is _ABSENT:
                reasons.append(f"missing argument '{path}' (expected {_show(want)})")
            elif not _json_equal(want, got):
                where, message = _diff(want, got)
                reasons.append(f"argument '{path}{where}': {message}")
        return reasons

    def describe(self) -> str:
        return (
            ", ".join(f"{path}={_show(_walk(self.expected, parts))}" for path, parts in self.paths)
            + ", ..."
        )


_ABSENT: Any = object()


def _walk(value: Any, parts: Sequence[str]) -> Any:
    for part in parts:
        if not isinstance(value, Mapping) or part not in value:
            return _ABSENT
        value = value[part]
    return value


class _CustomArgs:
    __slots__ = ("expected", "function")

    def __init__(self, function: Callable[..., Any], expected: Mapping[str, Any]) -> None:
        self.function = function
        self.expected = expected

    def __call__(self, actual: Mapping[str, Any] | None) -> list[str]:
        outcome = self.function(self.expected, actual or {})
        if outcome is None or outcome is True:
            return []
        if outcome is False:
            name = getattr(self.function, "__name__", "the custom comparison")
            return [f"{name} rejected arguments {_show(actual)} (expected {_show(self.expected)})"]
        return [str(outcome)]

    def describe(self) -> str:
        return _show(self.expected)[1:-1] if self.expected else ""


@dataclass(slots=True)
class _Msg:
    role: str
    calls: list[_Call] | None  # None: no tool calls


def _read_messages(messages: Iterable[Any], side: str, start: int = 0) -> list[_Msg]:
    out: list[_Msg] = []
    index = start
    for position, message in enumerate(messages):
        if isinstance(message, Mapping):
            role, raw_calls = message.get("role"), message.get("tool_calls")
        else:
            role, raw_calls = getattr(message, "role", None), getattr(message, "tool_calls", None)
        if not isinstance(role, str):
            raise ConfigError(
                f"{side}_messages[{position}] has no role: OpenAI-format messages need "
                '"role" (user, assistant, tool, system)'
            )
        calls: list[_Call] | None = None
        if raw_calls:
            calls = []
            for number, raw in enumerate(raw_calls):
                try:
                    call = _as_call(raw, index)
                except TypeError as exc:
                    raise ConfigError(
                        f"{side}_messages[{position}].tool_calls[{number}]: {exc}"
                    ) from None
                if side == "expected" and call.error is not None:
                    raise ConfigError(
                        f"expected_messages[{position}].tool_calls[{number}] ({call.name}): "
                        f"arguments are {call.error}"
                    )
                calls.append(call)
                index += 1
        out.append(_Msg(role, calls))
    return out


def _trajectory_spec(
    call: _Call, args: str, overrides: Mapping[str, ArgsOverride | None] | None
) -> CallSpec:
    override = overrides.get(call.name) if overrides else None
    literal = {key: _Equals(value) for key, value in call.arguments.items()}
    if not override:
        return CallSpec(call.name, ArgumentsMatcher(literal, args))
    if isinstance(override, str):
        if override not in ARGS_MODES:
            raise ConfigError(
                f"invalid args_by_tool[{call.name!r}]: {_bad_mode(override, ARGS_MODES)} "
                "(or give a list of key paths, or a function)"
            )
        return CallSpec(call.name, ArgumentsMatcher(literal, override))
    if callable(override):
        return CallSpec(call.name, _CustomArgs(override, call.arguments))
    return CallSpec(call.name, _KeyPaths(call.arguments, list(override)))


def _describe_message(message: _Msg) -> str:
    if message.calls:
        calls = ", ".join(c.signature() for c in message.calls)
        return f"an {message.role} message calling {calls}"
    if message.role == "assistant":
        return "an assistant message without tool calls"
    return _article(f"{message.role} message")


def _strict_messages(
    expected: Sequence[_Msg], actual: Sequence[_Msg], specs: Mapping[int, CallSpec]
) -> list[str]:
    if len(expected) != len(actual):
        reasons = [f"expected {len(expected)} messages, got {len(actual)}"]
        for number, (want, got) in enumerate(zip(expected, actual, strict=False), start=1):
            if want.role != got.role or bool(want.calls) != bool(got.calls):
                reasons.append(
                    f"first difference at message #{number}: expected "
                    f"{_describe_message(want)}, got {_describe_message(got)}"
                )
                break
        else:
            shorter = min(len(expected), len(actual)) + 1
            extra = expected[shorter - 1] if len(expected) > len(actual) else actual[shorter - 1]
            which = "missing" if len(expected) > len(actual) else "unexpected"
            reasons.append(f"{which} message #{shorter}: {_describe_message(extra)}")
        return reasons
    reasons = []
    for number, (want, got) in enumerate(zip(expected, actual, strict=True), start=1):
        if want.role != got.role or bool(want.calls) != bool(got.calls):
            reasons.append(
                f"message #{number}: expected {_describe_message(want)}, "
                f"got {_describe_message(got)}"
            )
        elif want.calls and got.calls:
            pairing = _Pairing([specs[c.index] for c in want.calls], got.calls)
            if len(want.calls) != len(got.calls):
                reasons.append(
                    f"message #{number}: expected {len(want.calls)} tool calls "
                    f"({', '.join(c.name for c in want.calls)}), got {len(got.calls)} "
                    f"({', '.join(c.name for c in got.calls)})"
                )
            problems = pairing.unpaired_reasons(pair_names=True)
            reasons += [f"message #{number}: {problem}" for problem in problems]
    return reasons


def match_trajectory(
    expected_messages: Iterable[Any],
    actual_messages: Iterable[Any],
    *,
    order: OrderMode = "strict",
    args: ArgsMode = "exact",
    args_by_tool: Mapping[str, ArgsOverride | None] | None = None,
) -> Verdict:
    """Compare two trajectories of OpenAI-format messages (agentevals-style).

    Only tool calls are compared: message text, tool results and call ids never are.
    ``order="strict"`` also requires the same messages (count, roles, and which assistant
    messages call tools), with each message's calls paired in any order (they are parallel
    calls); the other modes compare the calls of all messages flattened, as
    :func:`match_order` does. Expected arguments are literal values (JSON equality:
    ``1 == 1.0``, ``true != 1``).

    Coming from agentevals? Its ``superset``/``subset`` name the *actual* trajectory, toolproof
    names the *expectation*: agentevals' ``trajectory_match_mode="superset"`` is
    ``order="subset"`` here. ``docs/matching.md`` has the full table.

    Args:
        expected_messages: The reference trajectory: dicts with ``role`` and, for assistant
            messages, ``tool_calls[{function: {name, arguments}}]``, or ``Message`` objects.
        actual_messages: The trajectory to check, in the same forms.
        order: ``strict`` (default), ``in_order``, ``unordered``, ``subset`` (every expected
            call was made, extras allowed) or ``superset`` (every actual call was expected).
        args: How arguments compare: ``exact`` (default), ``subset`` (expected arguments
            present and equal, extras allowed), ``superset`` (actual arguments all expected
            and equal) or ``ignore``.
        args_by_tool: Per-tool overrides: a mode, a list of (dotted) key paths to compare
            (only those), or a function ``(expected_args, actual_args) -> bool | str | None``
            (``True``/``None`` = match, a string = the reason).

    Returns:
        The verdict, with the reasons when the trajectories do not match.

    Raises:
        ConfigError: A mode is invalid, or the expected trajectory cannot be read.
    """
    if order not in ORDER_MODES:
        raise ConfigError(f"invalid order: {_bad_mode(order, ORDER_MODES)}")
    if args not in ARGS_MODES:
        raise ConfigError(f"invalid args: {_bad_mode(args, ARGS_MODES)}")
    expected = _read_messages(expected_messages, "expected")
    actual = _read_messages(actual_messages, "actual")
    specs = {
        call.index: _trajectory_spec(call, args, args_by_tool)
        for message in expected
        for call in message.calls or ()
    }
    if order == "strict":
        return Verdict.from_reasons(_cap(_strict_messages(expected, actual, specs)))
    flat_specs = [specs[index] for index in sorted(specs)]
    flat_calls = [call for message in actual for call in message.calls or ()]
    return Verdict.from_reasons(_cap(_order_reasons(flat_specs, flat_calls, order)))


# ---- BFCL possible answers -----------------------------------------------------------

_BFCL_TYPES = {
    "string": "string",
    "integer": "integer",
    "float": "number",
    "boolean": "boolean",
    "array": "array",
    "tuple": "array",
    "dict": "object",
    "any": "string",
}
_PY_TYPES: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
    type(None): "null",
}
_OMIT = ""  # BFCL's mark, among the acceptable values, for "the parameter may be left out"


def _is_omit(value: Any) -> bool:
    return isinstance(value, str) and value == _OMIT


def _bfcl_function(function: Mapping[str, Any]) -> Mapping[str, Any]:
    inner = function.get("function")
    return inner if isinstance(inner, Mapping) else function


def _bfcl_text(value: str) -> dict[str, Any]:
    return {"text": value, "ignore": BFCL_IGNORED_CHARACTERS}


def _bfcl_scalar(value: Any) -> dict[str, Any]:
    """A string compared the way BFCL standardises strings; anything else by equality."""
    return _bfcl_text(value) if isinstance(value, str) else {"equals": value}


def _answer_type(values: Sequence[Any]) -> str | None:
    """The type of the first acceptable value that is not ``""`` (how BFCL spots variables)."""
    for value in values:
        if not _is_omit(value):
            return _PY_TYPES.get(type(value))
    return None


def _types(schema_type: str, answer_type: str | None) -> list[str]:
    """The schema's type plus, for a "variable" answer, the answer's own type."""
    types = [schema_type]
    if answer_type is not None and answer_type != schema_type:
        types.append(answer_type)
    if {"integer", "number"} <= set(types):
        types = [t for t in types if t != "integer"]
    return types


def _type_spec(types: list[str]) -> str | list[str]:
    return types[0] if len(types) == 1 else types


def _bfcl_list(value: Sequence[Any], items_type: str | None, *, typed: bool) -> list[Any]:
    """A list answer: item by item, in order; with ``typed``, each item of the schema's type."""
    schema_type = _BFCL_TYPES.get(str(items_type))
    # BFCL checks the items' types one level deep, with the same "variable" escape as for
    # parameters (items of another type than the schema's, in the answer, are allowed).
    item_types = _type_spec(_types(schema_type, _answer_type(value))) if schema_type else None
    items: list[Any] = []
    for item in value:
        if items_type == "dict" and isinstance(item, dict):
            items.append(_bfcl_dict(item))  # an object, compared key by key
            continue
        spec = {"equals": item} if items_type == "dict" else _bfcl_scalar(item)
        items.append({"type": item_types, **spec} if typed and item_types else spec)
    return items


def _bfcl_dict(answer: Mapping[str, Any]) -> dict[str, Any]:
    """A dict answer ``{key: [acceptable...]}`` as ``{fields: {key: spec}}`` (exact keys)."""
    fields: dict[str, Any] = {}
    for key, acceptable in answer.items():
        values = acceptable if isinstance(acceptable, list) else [acceptable]
        spec: dict[str, Any] = {"one_of": [_bfcl_scalar(v) for v in values]}
        fields[key] = {"optional": spec} if any(map(_is_omit, values)) else spec
    return {"fields": fields, "mode": "exact"}


def _bfcl_parameter(
    prop: Mapping[str, Any], values: list[Any], *, omittable: bool, where: str
) -> dict[str, Any]:
    """One parameter's acceptable values as a spec that accepts what BFCL's checker accepts."""
    bfcl_type = str(prop.get("type"))
    schema_type = _BFCL_TYPES.get(bfcl_type)
    if schema_type is None:
        raise ConfigError(
            f"{where}: unknown BFCL type {prop.get('type')!r}; known: {', '.join(_BFCL_TYPES)}"
        )
    answer_type = _answer_type(values)
    # BFCL's "variable" escape: acceptable values of another type than the schema's (a
    # variable name for a number, or null) are accepted as that type and compared exactly.
    variable = answer_type is not None and answer_type != schema_type
    types = _types(schema_type, answer_type)
    if None in values and "null" not in types:
        types.append("null")  # null listed: the model may send null, whatever the type
    options: list[Any]
    if variable:
        options = [{"equals": v} for v in values]
    else:
        items = prop.get("items")
        items_type = str(items.get("type")) if isinstance(items, Mapping) else None
        # BFCL's item type check passes outright when some acceptable value is not a list.
        typed = all(isinstance(v, list) for v in values)
        options = []
        for value in values:
            if schema_type == "array" and _is_omit(value):
                options.append({"equals": []})  # BFCL reads "" as an empty list here
            elif isinstance(value, list):
                options.append(_bfcl_list(value, items_type, typed=typed))
            elif isinstance(value, dict):
                options.append(_bfcl_dict(value))
            else:
                options.append(_bfcl_scalar(value))
    spec: dict[str, Any] = {"type": _type_spec(types), "one_of": options}
    return {"optional": spec} if omittable else spec


class _NoValue(_Base):
    """A parameter of the possible answer that no call can get right (BFCL rejects it)."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem

    def explain(self, actual: Any) -> Explanation | None:
        return "", f"{self.problem}, so no value passes"

    def describe(self) -> str:
        return f"<{self.problem}>"


def _bfcl_calls(
    functions: Sequence[Mapping[str, Any]],
    possible_answer: Sequence[Mapping[str, Mapping[str, Sequence[Any]]]],
    *,
    underscore_names: bool,
    impossible: list[str] | None,
) -> list[dict[str, Any]]:
    """The expected calls; with ``impossible``, parameters no call can pass get a ``_NoValue``.

    Without ``impossible`` such a possible answer raises ``ConfigError``; with it, the
    problems are appended there and the specs reject every call, as BFCL's checker does.
    """
    docs = {str(f.get("name")): f for f in map(_bfcl_function, functions)}
    calls: list[dict[str, Any]] = []
    for number, entry in enumerate(possible_answer):
        where = f"possible_answer[{number}]"
        if not isinstance(entry, Mapping) or len(entry) != 1:
            raise ConfigError(f"{where}: expected {{function_name: {{parameter: [values]}}}}")
        ((name, answers),) = entry.items()
        doc = docs.get(name)
        if doc is None:
            raise ConfigError(
                f"{where}: function {name!r} is not among the functions "
                f"({', '.join(docs) or 'none'})"
            )
        parameters = doc.get("parameters") or {}
        properties = parameters.get("properties") or {}
        required = set(parameters.get("required") or ())
        arguments: dict[str, Any] = {}
        problems: dict[str, str] = {}
        for param in sorted(required - set(answers)):
            # The call must give it (it is required) but may not (the answer does not list it).
            problems[param] = f"{name} requires {param!r} but the possible answer does not list it"
        for param, listed in answers.items():
            values = list(listed) if isinstance(listed, (list, tuple)) else [listed]
            omittable = any(map(_is_omit, values))
            if param not in properties:
                # Giving it is an unexpected parameter; leaving it out is fine only with "".
                if not omittable:
                    problems[param] = (
                        f"the possible answer lists {param!r}, which {name} does not declare"
                    )
                continue
            arguments[param] = _bfcl_parameter(
                properties[param],
                values,
                omittable=omittable and param not in required,
                where=f"{where}.{param}",
            )
        for param, problem in problems.items():
            if impossible is None:
                raise ConfigError(f"{where}: {problem}, so no call could pass")
            impossible.append(f"{where}: {problem}, so no call can pass")
            arguments[param] = _NoValue(problem)
        call_name = name.replace(".", "_") if underscore_names else name
        calls.append({"name": call_name, "arguments": arguments, "mode": "exact"})
    return calls


def bfcl_expected_calls(
    functions: Sequence[Mapping[str, Any]],
    possible_answer: Sequence[Mapping[str, Mapping[str, Sequence[Any]]]],
    *,
    underscore_names: bool = False,
) -> list[dict[str, Any]]:
    """Translate a BFCL possible answer into toolproof's expected-call specs.

    The result is plain data in the suite's YAML form, one ``{name, arguments, mode:
    exact}`` per expected call, so BFCL material can be turned into suites. Per parameter:
    the schema type (BFCL's ``float`` accepts integers, ``integer`` does not accept ``5.0``
    and booleans are never numbers), ``one_of`` the acceptable values (strings compared
    ignoring case and the characters ``" ,./-_*^"`` as BFCL does, lists in order with their
    items' type, dicts key by key), ``null`` when ``None`` is acceptable, and ``optional``
    when ``""`` is acceptable and the schema does not require the parameter. A parameter the
    function does not declare, listed with ``""``, is left out (a call giving it fails).

    Args:
        functions: The BFCL function docs (``{name, parameters: {properties, required}}``;
            OpenAI ``{type: function, function: {...}}`` also works).
        possible_answer: ``[{function_name: {parameter: [acceptable values...]}}]``.
        underscore_names: Expect ``a_b`` for a function named ``a.b`` (BFCL does this for
            native function-calling models, whose APIs do not allow dots in names).

    Returns:
        The expected calls, ready for :func:`compile_calls`.

    Raises:
        ConfigError: The answer names a function the functions do not declare, or no call
            could pass it (it requires a parameter the function does not declare, or leaves
            out one the schema requires), so a suite made from it could never pass.
            :func:`match_bfcl` rejects the calls instead, as BFCL does.
    """
    return _bfcl_calls(
        functions, possible_answer, underscore_names=underscore_names, impossible=None
    )


def match_bfcl(
    functions: Sequence[Mapping[str, Any]],
    possible_answer: Sequence[Mapping[str, Mapping[str, Sequence[Any]]]],
    calls: Iterable[Any],
    *,
    underscore_names: bool = False,
) -> Verdict:
    """Check tool calls against a BFCL possible answer (Berkeley Function Calling Leaderboard).

    As BFCL's AST checker: the number of calls must equal the number of expected calls, and
    the calls must pair one to one (in any order) with the expected ones, each with the
    expected name, no parameter outside the answer or the schema, every required parameter
    and every parameter without ``""`` among its values present, the schema's types (an
    integer passes for a float; ``null`` passes where ``None`` is acceptable) and an
    acceptable value. Unlike BFCL's greedy pairing, the pairing is a maximum bipartite
    matching, so a valid pairing is never missed. ``docs/matching.md`` lists every rule.

    Example:
        ```python
        functions = [{"name": "math.gcd", "parameters": {"type": "dict", "properties": {
            "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}]
        answer = [{"math.gcd": {"a": [36], "b": [48]}}]
        match_bfcl(functions, answer, [{"math.gcd": {"a": 36, "b": 48}}]).ok  # True
        ```

    Args:
        functions: The function docs offered to the model.
        possible_answer: BFCL's ``[{function_name: {parameter: [acceptable values]}}]``
            (``""`` among the values: the parameter may be omitted).
        calls: The model's calls: BFCL's ``[{name: {args}}]``, ``{"name", "arguments"}``
            mappings, OpenAI tool calls or ``ToolCall`` objects.
        underscore_names: Expect ``a_b`` for a function named ``a.b`` (native
            function-calling APIs do not allow dots in names).

    Returns:
        The verdict, with one reason per expected call that found no match and per extra
        call. A possible answer no call can pass (it lists a parameter the function does
        not declare, without ``""``, or leaves out one the schema requires) rejects every
        call, as BFCL does, and its first reason says why.

    Raises:
        ConfigError: The possible answer names a function that is not among the functions,
            or is not of BFCL's form.
    """
    impossible: list[str] = []
    expected = _bfcl_calls(
        functions, possible_answer, underscore_names=underscore_names, impossible=impossible
    )
    matcher = compile_order(expected, "unordered", args="exact", where="possible_answer")
    actual = [_as_call(item, index) for index, item in enumerate(calls)]
    reasons = _order_reasons(matcher.calls, actual, "unordered")
    if reasons and not underscore_names:
        dotted = {c["name"].replace(".", "_"): c["name"] for c in expected if "." in c["name"]}
        for call in actual:
            if call.name in dotted:
                reasons.append(
                    f"hint: {call.name} is {dotted[call.name]} with dots as underscores; "
                    "pass underscore_names=True for models whose API cannot send dots"
                )
                break
    return Verdict.from_reasons(_cap([*impossible, *reasons]))
