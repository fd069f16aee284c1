"""Python-side expectations: ``ANY``, ``approx`` and the comparison of expected with actual values.

A fixture or an assertion may hold, instead of a plain value:

- a matcher object (the ``Matcher`` protocol, such as a compiled spec: ``__call__(actual)``
  returns ``None`` on a match or a reason string), such as :data:`ANY` or :func:`approx`;
- a type (``str``, ``int``...): the actual value must be an instance;
- any other callable: a predicate; ``True`` (or ``None``) means a match.

Plain values compare by equality, dicts and lists element by element (so matchers may be
nested), and booleans never equal numbers (``True`` is not ``1`` in a tool call).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolproof._matching._values import AnyMatcher, approx_matcher, show_value
from toolproof._text import cut

__all__ = ["ANY", "approx", "compare", "describe_value", "format_call", "mask_arguments"]

MASKED = "***"


class _AnyValue(AnyMatcher):
    """Matches every value (including ``None``); shown as ``ANY``."""

    __slots__ = ()

    def describe(self) -> str:
        return "ANY"

    def __repr__(self) -> str:
        return "ANY"


#: Matches any value: ``mock.add("search", {"query": "leave", "top_k": ANY}, returns=...)``.
ANY: Any = _AnyValue()


def approx(expected: float, *, rel: float | None = None, abs: float | None = None) -> Any:
    """Match a number close to ``expected``: the ``{approx: ...}`` matcher of YAML files.

    With neither tolerance given, the number may be off by at most ``1e-6`` (absolute), as in
    YAML; ``rel`` and ``abs`` (YAML's ``rel`` and ``tol``) set either or both, and the value
    matches when it is within either of them.

    Example:
        ```python
        assert_tool_called(trace, "multiply_numbers", a=approx(0.1 + 0.2), b=3)
        ```
    """
    return approx_matcher(float(expected), tol=abs, rel=rel)


def describe_value(value: Any) -> str:
    """A short readable form of an expected value or matcher."""
    if isinstance(value, type):
        return f"<any {value.__name__}>"
    if callable(value):
        describe = getattr(value, "describe", None)
        if callable(describe):
            return str(describe())
        return f"<{getattr(value, '__name__', type(value).__name__)}>"
    return _short(value)


def compare(expected: Any, actual: Any) -> str | None:
    """Compare an actual value with an expected value or matcher.

    Returns:
        ``None`` when they match, otherwise the reason (``"expected 8, got 9"``).
    """
    if isinstance(expected, type):
        if isinstance(actual, expected) and not (
            isinstance(actual, bool) and expected in (int, float)
        ):
            return None
        return f"expected {describe_value(expected)}, got {_short(actual)}"
    if callable(expected):
        outcome = expected(actual)
        if outcome is None or outcome is True:
            return None
        if outcome is False:
            return f"{describe_value(expected)} rejected {_short(actual)}"
        return str(outcome)
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        missing = [k for k in expected if k not in actual]
        extra = [k for k in actual if k not in expected]
        if missing or extra:
            return f"expected {_short(expected)}, got {_short(actual)}"
        for key, value in expected.items():
            reason = compare(value, actual[key])
            if reason is not None:
                return f"[{key!r}]: {reason}"
        return None
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        if len(expected) != len(actual):
            return f"expected {_short(expected)}, got {_short(actual)}"
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            reason = compare(want, got)
            if reason is not None:
                return f"[{index}]: {reason}"
        return None
    if isinstance(expected, bool) != isinstance(actual, bool) or expected != actual:
        return f"expected {_short(expected)}, got {_short(actual)}"
    return None


def mask_arguments(value: Any, mask: frozenset[str]) -> Any:
    """A copy of ``value`` with the values of keys named in ``mask`` (at any depth) hidden."""
    if not mask:
        return value
    if isinstance(value, Mapping):
        return {
            k: MASKED if str(k).lower() in mask else mask_arguments(v, mask)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [mask_arguments(v, mask) for v in value]
    return value


def format_call(name: str, arguments: Mapping[str, Any] | None) -> str:
    """``name(a=12, b=8)``, with strings quoted and masked values shown as ``***``."""
    if arguments is None:
        return f"{name}(<any arguments>)"
    parts = [f"{k}={_format_arg(v)}" for k, v in arguments.items()]
    return f"{name}({', '.join(parts)})"


def _format_arg(value: Any) -> str:
    if value == MASKED and isinstance(value, str):
        return MASKED
    if callable(value):
        return describe_value(value)
    return _short(value)


def _short(value: Any, limit: int = 80) -> str:
    if isinstance(value, str):
        return cut(repr(value), limit)
    return show_value(value, limit, default=_default)


def _default(value: Any) -> Any:
    if callable(value):
        return describe_value(value)
    return repr(value)
