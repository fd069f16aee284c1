"""Fixture data checked by its models: every problem of every fixture at once, each named
by its fixture; any YAML-shaped value is a mock or one ``ConfigError``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof._mocks import ToolMock
from toolproof.errors import ConfigError


def test_every_problem_of_every_fixture_is_reported() -> None:
    with pytest.raises(ConfigError) as info:
        ToolMock.from_dict(
            {
                "strict": "yes",
                "fixtures": [
                    {
                        "tool": "search",
                        "match": {"top_k": {"range": [1]}, "query": {"regex": "("}},
                        "times": -1,
                    },
                    {"tool": "lookup", "raises": "Not An Error"},
                    "lookup",
                ],
            }
        )
    problems = info.value.problems
    assert problems[0] == "fixture data: 'strict' must be true or false, got 'yes'"
    assert problems[1].startswith("fixture #1: match.top_k.range: must be [low, high]")
    assert problems[2].startswith("fixture #1: match.query")
    assert problems[3:] == [
        "fixture #1: 'times' must be a positive integer, got -1",
        "fixture #2: 'Not An Error' is not an exception name",
        "fixture #3: a fixture must be a mapping, got str",
    ]


def test_a_fixture_that_returns_none_on_purpose_keeps_it() -> None:
    mock = ToolMock.from_dict({"fixtures": [{"tool": "t", "returns": None}, {"tool": "u"}]})
    assert [f.returns for f in mock.fixtures] == [None, None]
    with pytest.raises(ConfigError, match="give 'returns' or 'raises', not both"):
        ToolMock.from_dict({"fixtures": [{"tool": "t", "returns": None, "raises": None}]})


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "fixtures",
                    "tool",
                    "arguments",
                    "match",
                    "returns",
                    "raises",
                    "times",
                    "mask",
                    "key_args",
                    "strict",
                    "version",
                    "type",
                    "message",
                    "range",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=15,
)


@pytest.mark.timeout(300)
@settings(deadline=None, max_examples=150)
@given(data=values)
def test_any_value_is_a_mock_or_one_config_error(data: Any) -> None:
    try:
        ToolMock.from_dict(data)
    except ConfigError as exc:
        message = str(exc)
        assert message
