"""Free-form values become plain JSON data: every scalar kind, in every position, both modes.

Generated scalars include subclasses of ``str``, ``int``, ``float`` and ``bool``, lone
surrogates, non-finite floats and integers too long to read back, placed at the top, as
dict values, as dict keys and as list or tuple items. Lenient conversion returns plain data
that encodes and decodes back equal; strict conversion either returns the value unchanged
or raises one ``TraceFormatError`` naming the path of the offending part.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof._messages import json_data
from toolproof.errors import TraceFormatError


class Text(str):
    pass


class Number(int):
    pass


class Real(float):
    pass


surrogate_text = st.text(
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(), max_size=8
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.just(10**4500),
    st.just(-(10**4500)),
    st.floats(allow_nan=True, allow_infinity=True),
    surrogate_text,
    surrogate_text.map(Text),
    st.integers().map(Number),
    st.floats(allow_nan=True, allow_infinity=True).map(Real),
)
key_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), surrogate_text)


def placed(value: Any, where: int, key: Any) -> tuple[Any, str]:
    """``value`` at the top, in a dict, in a list or in a tuple; with its path."""
    if where == 0:
        return value, ""
    if where == 1:
        return {"k": value}, "['k']"
    if where == 2:
        return [0, value], "[1]"
    if where == 3:
        return (value,), "[0]"
    return {key: "v"}, ""


def plain(value: Any) -> bool:
    """Exactly plain JSON data: the built-in types only, finite, keys strings."""
    kind = type(value)
    if value is None or kind is bool:
        return True
    if kind is int:
        return value.bit_length() <= 14_000  # longer integers do not read back from JSON
    if kind is float:
        return math.isfinite(value)
    if kind is str:
        return not any("\ud800" <= ch <= "\udfff" for ch in value)
    if kind is list:
        return all(plain(item) for item in value)
    if kind is dict:
        return all(type(k) is str and plain(k) and plain(v) for k, v in value.items())
    return False


@settings(max_examples=400, deadline=None)
@given(scalars, st.integers(0, 4), key_scalars)
def test_lenient_conversion_gives_plain_data_that_reads_back(
    value: Any, where: int, key: Any
) -> None:
    data, _ = placed(value, where, key)
    converted = json_data(data)
    assert plain(converted)
    text = json.dumps(converted, ensure_ascii=False, allow_nan=False)
    assert json.loads(text) == converted
    assert json_data(converted) is converted  # plain data is kept as the same object


@settings(max_examples=400, deadline=None)
@given(scalars, st.integers(0, 3))
def test_strict_conversion_keeps_plain_data_or_names_the_offending_path(
    value: Any, where: int
) -> None:
    data, path = placed(value, where, None)
    if plain(data):
        assert json_data(data, "metadata", strict=True) is data
        return
    with pytest.raises(TraceFormatError) as caught:
        json_data(data, "metadata", strict=True)
    message = str(caught.value)
    assert message.startswith("metadata" + path + ": ") or (
        where == 3 and message.startswith("metadata: tuple is not a plain list")
    )
    assert "\n" not in message


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (Text("x"), "Text is not a plain string"),
        (Number(1), "Number is not a plain integer"),
        (Real(1.5), "Real is not a plain float"),
        ("a\ud800", "the string has lone surrogates, which UTF-8 cannot hold"),
        (10**4500, "an integer of more than 4,000 digits; store it as a string"),
        (math.nan, "nan is not a JSON number; store it as a string"),
        (-math.inf, "-inf is not a JSON number; store it as a string"),
    ],
    ids=["str-subclass", "int-subclass", "float-subclass", "surrogate", "huge", "nan", "-inf"],
)
def test_strict_reasons_are_word_for_word(value: Any, reason: str) -> None:
    with pytest.raises(TraceFormatError) as caught:
        json_data({"a": [value]}, "metadata", strict=True)
    assert str(caught.value) == f"metadata['a'][0]: {reason}"
