"""Shortened text: every reason, message and report cell cut to a limit follows one rule.

The text is kept when it fits; otherwise its first ``limit - 1`` characters are kept and an
ellipsis ends it, so the result never exceeds the limit. Generated text of every kind (long,
empty, unicode, lone surrogates) and generated values (nested data, functions, objects JSON
cannot write) go through the shared rule and the renderings built on it.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from toolproof._matching._objects import MASKED, describe_value, format_call
from toolproof._matching._values import show_value
from toolproof._reporting import md_escape
from toolproof._text import clip, cut

TEXT = st.text(st.characters(codec="utf-8") | st.characters(categories=["Cs"]), max_size=120)
LIMITS = st.integers(min_value=1, max_value=90)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT
VALUES = st.recursive(
    SCALARS | st.sampled_from([len, print, {1, 2}, b"bytes", object]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


def expected_cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@given(TEXT, LIMITS)
def test_cut_keeps_what_fits_and_ends_the_rest_in_an_ellipsis(text: str, limit: int) -> None:
    out = cut(text, limit)
    assert len(out) <= limit
    if len(text) <= limit:
        assert out == text
    else:
        assert out == text[: limit - 1] + "…"
    assert cut(out, limit) == out


@given(TEXT, LIMITS)
def test_clip_and_markdown_cells_cut_by_the_same_rule(text: str, limit: int) -> None:
    flat = " ".join(text.split())
    assert clip(text, limit) == expected_cut(flat, limit)
    assert clip(text, limit, flatten=False) == expected_cut(text.strip(), limit)
    assert md_escape(text, limit=limit) == md_escape(expected_cut(flat, limit))


def _json_or_repr(value: Any, default: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=default)
    except (TypeError, ValueError):
        return repr(value)


@given(VALUES, LIMITS)
def test_values_in_reasons_are_json_cut_to_their_limit(value: Any, limit: int) -> None:
    assert show_value(value, limit) == expected_cut(_json_or_repr(value, repr), limit)
    assert len(show_value(value, limit)) <= limit


@given(st.dictionaries(st.from_regex(r"[a-z]{1,8}", fullmatch=True), VALUES, max_size=4))
def test_call_arguments_show_strings_quoted_and_other_values_as_json(
    arguments: dict[str, Any],
) -> None:
    shown = format_call("tool", arguments)
    parts = []
    for key, value in arguments.items():
        if callable(value) or value == MASKED:
            continue  # a function is shown by name (describe_value), a masked value as ***
        text = repr(value) if isinstance(value, str) else _json_or_repr(value, _described)
        parts.append(f"{key}={expected_cut(text, 80)}")
    for part in parts:
        assert part in shown
    assert shown.startswith("tool(") and shown.endswith(")")


def _described(value: Any) -> Any:
    return describe_value(value) if callable(value) else repr(value)
