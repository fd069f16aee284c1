"""One matching vocabulary: Python expectations, YAML specs, mocks and replay agree."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import tool
from toolproof._matching import APPROX_DEFAULT_TOL, compare, compile_value_matcher, json_equal
from toolproof.errors import MissingFixture
from toolproof.testing import ANY, ToolMock, approx

numbers = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
offsets = st.sampled_from([0.0, 1e-9, 5e-7, 1e-6, 2e-6, 1e-3, 0.5])


@settings(deadline=None, max_examples=150)
@given(numbers, offsets, st.sampled_from([None, 0.0, 1e-3, 0.1]), st.sampled_from([None, 1e-3]))
def test_python_approx_and_yaml_approx_decide_alike(
    value: float, offset: float, tol: float | None, rel: float | None
) -> None:
    spec: dict[str, float] = {"approx": value}
    if tol is not None:
        spec["tol"] = tol
    if rel is not None:
        spec["rel"] = rel
    from_yaml = compile_value_matcher(spec)
    from_python = approx(value, abs=tol, rel=rel)
    actual = value + offset
    assert from_python(actual) == from_yaml(actual)
    assert from_python.describe() == from_yaml.describe()
    assert compare(from_python, actual) == from_yaml(actual)


def test_the_default_tolerance_is_one_millionth_absolute() -> None:
    assert APPROX_DEFAULT_TOL == 1e-6
    assert approx(0.3)(0.1 + 0.2) is None
    assert approx(0.0)(9e-7) is None
    assert approx(1e9)(1e9 + 1) == "expected approx(1e+09, tol=1e-06), got 1000000001.0 (off by 1)"
    assert approx(1e9, rel=1e-6)(1e9 + 1) is None
    assert approx(2.0)("2") == 'expected a number approx(2, tol=1e-06), got "2" (a string)'
    assert approx(2.0)(True) is not None


def test_a_fixture_with_approx_answers_like_a_match_spec_in_a_file(tmp_path: Path) -> None:
    @tool
    def convert(amount: float) -> float:
        """Convert an amount.

        Args:
            amount: The amount.
        """
        raise AssertionError("mocked")

    in_python = ToolMock()
    in_python.add("convert", {"amount": approx(9.99)}, returns=72.4)
    fixtures = tmp_path / "fixtures.yaml"
    fixtures.write_text(
        "fixtures:\n  - tool: convert\n    match: {amount: {approx: 9.99}}\n    returns: 72.4\n",
        encoding="utf-8",
    )
    in_file = ToolMock.from_file(fixtures)
    for mock in (in_python, in_file):
        answer = mock.mock_for(convert)
        assert answer is not None
        assert answer(amount=9.9900001) == 72.4
        with pytest.raises(MissingFixture) as info:
            answer(amount=9.991)
        assert "expected approx(9.99, tol=1e-06), got 9.991" in str(info.value)


def test_any_is_a_matcher_everywhere() -> None:
    assert compare({"a": ANY}, {"a": None}) is None
    assert compile_value_matcher({"a": ANY})({"a": [1]}) is None
    assert ANY.describe() == "ANY"


def test_json_equality_never_takes_a_boolean_for_a_number_at_any_depth() -> None:
    assert json_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not json_equal({"a": [1]}, {"a": [True]})
    assert not json_equal({"a": 1}, {"a": "1"})
