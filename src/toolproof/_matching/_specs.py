"""Compiling value specs (the YAML/JSON/Python form) into matchers, listing every problem."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, cast

from toolproof._matching._values import (
    ARGS_MODES,
    MODIFIERS,
    NUMBER_TYPES,
    OPERATORS,
    TYPE_NAMES,
    AllOf,
    AnyMatcher,
    BaseMatcher,
    Equals,
    Fields,
    Items,
    Matcher,
    OneOf,
    OptionalMatcher,
    Range,
    Regex,
    TextMatcher,
    TypeMatcher,
    approx_matcher,
    key_path,
    show_value,
)
from toolproof.errors import ConfigError

#: The largest bound a matcher takes: comparisons and messages need it as a float.
_LARGEST = int(sys.float_info.max)

# --------------------------------------------------------------------------------------
# Compiling specs
# --------------------------------------------------------------------------------------


def join_path(where: str, part: str) -> str:
    if not where:
        return part.lstrip(".")
    return where + part


class Compiler:
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
        if isinstance(spec, BaseMatcher) or (callable(spec) and hasattr(spec, "describe")):
            return spec  # an already compiled matcher (or any Matcher-protocol object)
        if isinstance(spec, Mapping):
            if any(isinstance(key, str) and key in OPERATORS for key in spec):
                return self.operators(spec, where)
            return Fields(
                {key: self.value(v, join_path(where, key_path(key))) for key, v in spec.items()},
                "exact",
            )
        if isinstance(spec, (list, tuple)):
            return Items([self.value(v, f"{where}[{i}]") for i, v in enumerate(spec)])
        return Equals(spec)

    def operators(self, spec: Mapping[str, Any], where: str) -> Any:
        keys = list(spec)
        operators = [k for k in keys if k in OPERATORS]
        unknown = [k for k in keys if k not in OPERATORS and k not in MODIFIERS]
        if unknown:
            import difflib

            near = [m for m, owner in MODIFIERS.items() if owner in spec]
            close = difflib.get_close_matches(str(unknown[0]), near, n=1, cutoff=0.4)
            close = close or difflib.get_close_matches(str(unknown[0]), sorted(OPERATORS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.problem(
                where,
                f"unknown key{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(k) for k in unknown)}{hint} next to {', '.join(operators)}; "
                f"matcher keys are {', '.join(sorted(OPERATORS))} (with tol/rel for approx, "
                "ignore for text, mode for fields). To match a literal object with these keys, "
                "write {equals: {...}}",
            )
            return AnyMatcher()
        for key in keys:
            owner = MODIFIERS.get(key)
            if owner is not None and owner not in spec:
                self.problem(where, f"'{key}' is only allowed next to '{owner}'")
        if "optional" in spec:
            if len(keys) > 1:
                self.problem(
                    where,
                    "'optional' wraps another spec and takes no other keys: write "
                    "{optional: {type: string}}, not {optional: true, type: string}",
                )
            return OptionalMatcher(self.value(spec["optional"], join_path(where, ".optional")))
        if "any" in spec:
            if spec["any"] is not True:
                self.problem(
                    where, f"'any' must be true (it matches every value), got {spec['any']!r}"
                )
            if len(keys) > 1:
                self.problem(where, "'any: true' matches every value; remove the other keys")
            return AnyMatcher()

        parts: list[Any] = []
        if "type" in spec:
            parts.append(self.type_(spec["type"], join_path(where, ".type")))
        if "equals" in spec:
            parts.append(Equals(spec["equals"]))
        if "one_of" in spec:
            options = spec["one_of"]
            if not isinstance(options, (list, tuple)) or not options:
                self.problem(
                    join_path(where, ".one_of"),
                    f"must be a non-empty list, got {show_value(options)}",
                )
            else:
                parts.append(
                    OneOf(
                        [
                            self.value(o, f"{join_path(where, '.one_of')}[{i}]")
                            for i, o in enumerate(options)
                        ]
                    )
                )
        if "text" in spec:
            parts.append(self.text(spec, where))
        if "regex" in spec:
            parts.append(self.regex(spec["regex"], join_path(where, ".regex")))
        if "approx" in spec:
            parts.append(self.approx(spec, where))
        if "range" in spec or "min" in spec or "max" in spec:
            parts.append(self.range_(spec, where))
        if "fields" in spec:
            parts.append(self.fields(spec, where))
        if not parts:  # every operator key had a problem
            return AnyMatcher()
        return parts[0] if len(parts) == 1 else AllOf(parts)

    def type_(self, spec: Any, where: str) -> Any:
        names = [spec] if isinstance(spec, str) else spec
        if not isinstance(names, (list, tuple)) or not names:
            self.problem(where, f"must be a type name or a list of them, got {show_value(spec)}")
            return AnyMatcher()
        bad = [n for n in names if n not in TYPE_NAMES]
        if bad:
            self.problem(
                where,
                f"unknown type {', '.join(repr(b) for b in bad)}; allowed: {', '.join(TYPE_NAMES)}",
            )
            return AnyMatcher()
        return TypeMatcher(names)

    def text(self, spec: Mapping[str, Any], where: str) -> Any:
        text, ignore = spec["text"], spec.get("ignore")
        if not isinstance(text, str):
            self.problem(join_path(where, ".text"), f"must be a string, got {show_value(text)}")
            return AnyMatcher()
        if ignore is not None and not isinstance(ignore, str):
            self.problem(
                join_path(where, ".ignore"),
                f"must be a string of the characters to ignore, got {show_value(ignore)}",
            )
            return AnyMatcher()
        return TextMatcher(text, ignore)

    def regex(self, pattern: Any, where: str) -> Any:
        if not isinstance(pattern, str):
            self.problem(where, f"must be a string, got {show_value(pattern)}")
            return AnyMatcher()
        try:
            return Regex(re.compile(pattern))
        except re.error as exc:
            self.problem(where, f"invalid regular expression {pattern!r}: {exc}")
            return AnyMatcher()

    def _number(self, value: Any, where: str, *, allow_none: bool = False) -> float | None:
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, NUMBER_TYPES):
            self.problem(where, f"must be a number, got {show_value(value)}")
            return None
        if isinstance(value, int) and abs(value) > _LARGEST:
            self.problem(where, "must be a number a float can hold (at most about 1.8e308)")
            return None
        return value

    def approx(self, spec: Mapping[str, Any], where: str) -> Any:
        value = self._number(spec["approx"], join_path(where, ".approx"))
        tol = self._number(spec.get("tol", 0), join_path(where, ".tol"))
        rel = self._number(spec.get("rel", 0), join_path(where, ".rel"))
        if (tol is not None and tol < 0) or (rel is not None and rel < 0):
            self.problem(where, "tol and rel must not be negative")
            return AnyMatcher()
        if value is None or tol is None or rel is None:
            return AnyMatcher()
        return approx_matcher(
            value, tol=tol if "tol" in spec else None, rel=rel if "rel" in spec else None
        )

    def range_(self, spec: Mapping[str, Any], where: str) -> Any:
        problems_before = len(self.problems)
        if "range" in spec:
            if "min" in spec or "max" in spec:
                self.problem(where, "write either range: [low, high] or min/max, not both")
                return AnyMatcher()
            bounds = spec["range"]
            if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
                self.problem(
                    join_path(where, ".range"),
                    f"must be [low, high] (null for an open end), got {show_value(bounds)}",
                )
                return AnyMatcher()
            low = self._number(bounds[0], join_path(where, ".range[0]"), allow_none=True)
            high = self._number(bounds[1], join_path(where, ".range[1]"), allow_none=True)
            from_min_max = False
        else:
            low = self._number(spec.get("min"), join_path(where, ".min"), allow_none=True)
            high = self._number(spec.get("max"), join_path(where, ".max"), allow_none=True)
            from_min_max = True
        if low is None and high is None:
            if len(self.problems) == problems_before:
                self.problem(where, "a range needs at least one bound")
            return AnyMatcher()
        if low is not None and high is not None and low > high:
            self.problem(where, f"the low bound {low:g} is greater than the high bound {high:g}")
            return AnyMatcher()
        return Range(low, high, from_min_max=from_min_max)

    def fields(self, spec: Mapping[str, Any], where: str) -> Any:
        fields, mode = spec["fields"], spec.get("mode", "exact")
        if mode not in ARGS_MODES:
            self.problem(join_path(where, ".mode"), bad_mode(mode, ARGS_MODES))
            mode = "exact"
        if not isinstance(fields, Mapping):
            self.problem(
                join_path(where, ".fields"), f"must be an object, got {show_value(fields)}"
            )
            return AnyMatcher()
        base = join_path(where, ".fields")
        return Fields(
            {key: self.value(v, join_path(base, key_path(key))) for key, v in fields.items()}, mode
        )


def bad_mode(mode: Any, valid: Sequence[str]) -> str:
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
    compiler = Compiler()
    matcher = compiler.value(spec, where)
    compiler.raise_if_problems()
    return cast(Matcher, matcher)


# --------------------------------------------------------------------------------------
# Argument sets
# --------------------------------------------------------------------------------------
