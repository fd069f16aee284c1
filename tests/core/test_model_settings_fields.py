"""ModelSettings: every field that is set (falsy values included) is sent and wins a merge."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from toolproof import ModelSettings

#: Per field, values including the falsy ones that still count as set.
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "temperature": st.sampled_from([0.0, 0.7, 2.0]),
    "max_tokens": st.sampled_from([0, 1, 4096]),
    "seed": st.sampled_from([0, 7]),
    "stop": st.sampled_from([[], ["\n"], ["END", "STOP"]]),
    "tool_choice": st.sampled_from(["", "auto", "none", "required", "search"]),
    "parallel_tool_calls": st.booleans(),
}
EXTRA = st.dictionaries(st.sampled_from(["top_p", "user", "logprobs"]), st.integers(0, 3))


def test_the_generated_fields_are_all_the_optional_settings() -> None:
    names = [f.name for f in dataclasses.fields(ModelSettings)]
    assert names == [*VALUES, "extra"]


@st.composite
def settings(draw: st.DrawFn) -> ModelSettings:
    chosen = {name: draw(st.none() | values) for name, values in VALUES.items()}
    return ModelSettings(**chosen, extra=draw(EXTRA))


@given(settings())
def test_to_dict_holds_exactly_the_fields_that_are_set_in_field_order(s: ModelSettings) -> None:
    expected = {name: getattr(s, name) for name in VALUES if getattr(s, name) is not None}
    if s.extra:
        expected["extra"] = s.extra
    out = s.to_dict()
    assert out == expected
    assert list(out) == list(expected)
    if s.extra:
        assert out["extra"] is not s.extra  # a copy: changing the dict leaves the settings


@given(settings(), settings())
def test_merged_takes_every_field_the_other_sets(base: ModelSettings, other: ModelSettings) -> None:
    merged = base.merged(other)
    for name in VALUES:
        mine, theirs = getattr(base, name), getattr(other, name)
        assert getattr(merged, name) == (theirs if theirs is not None else mine)
    assert merged.extra == {**base.extra, **other.extra}
    assert base.merged(None) is base
