"""Every number option of run, replay and plan: a bad value is one usage error naming the option.

The values are generated (numbers in and out of range, NaN, infinities, signs, percentages,
underscores, other digits, any text); each option's words are stated here once and must
hold for every value: accepted values arrive as the number, the others end the parse with
exit code 2 and ``argument OPTION: <what was expected>, got <value>`` (no traceback).
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.cli import build_parser


def _percent(text: str) -> float:
    return float(text.rstrip("%")) / (100 if text.endswith("%") else 1)


WHOLE = (int, "a whole number", lambda v: v >= 1, "must be at least 1, got {value}")
RATE = (
    float,
    "a rate such as 0.1",
    lambda v: 0 <= v <= 1,
    "must be a rate between 0 and 1, got {text}",
)
LEVEL = (
    float,
    "a number such as 0.95",
    lambda v: 0 < v < 1,
    "must be between 0 and 1 (e.g. 0.95), got {text}",
)
POSITIVE = (float, "a number", lambda v: v > 0, "must be positive, got {text}")
ATTACK = (
    float,
    "a rate with 0 <= rate < 1",
    lambda v: 0 <= v < 1,
    "expected a rate with 0 <= rate < 1, got {text!r}",
)
GATE = (
    _percent,
    "a rate such as 0.05 or 5%",
    lambda v: 0 <= v <= 1,
    "a rate is between 0 and 1, got {text!r}",
)

#: (command line before the option, option as errors name it, dest, its words).
OPTIONS: list[tuple[list[str], str, str, tuple[Callable[[str], Any], str, Any, str]]] = [
    (["run", "s.eval.yaml"], "--trials", "trials", WHOLE),
    (["run", "s.eval.yaml"], "--concurrency/-j", "concurrency", WHOLE),
    (["run", "s.eval.yaml"], "--rpm", "rpm", POSITIVE),
    (["run", "s.eval.yaml"], "--tpm", "tpm", POSITIVE),
    (["run", "s.eval.yaml"], "--max-attack-success", "max_attack_success", ATTACK),
    (["run", "s.eval.yaml"], "--max-failure-rate", "max_failure_rate", RATE),
    (["run", "s.eval.yaml"], "--confidence", "confidence", LEVEL),
    (["replay"], "--gate", "gate", GATE),
    (["replay"], "--confidence", "confidence", LEVEL),
    (["plan"], "--drop", "drop", RATE),
    (["plan"], "--cases", "cases", WHOLE),
    (["plan"], "--power", "power", RATE),
    (["plan"], "--rate", "rate", RATE),
    (["plan"], "--icc", "icc", RATE),
    (["plan"], "--confidence", "confidence", LEVEL),
    (["runs", "compare"], "--confidence", "confidence", LEVEL),
]

VALUES = st.one_of(
    st.integers(-3, 12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.floats(0, 1).map(lambda v: f"{v * 100:g}%"),
    st.sampled_from(
        ["", " 3 ", "1_000", "0x10", "１", "٣", "nan", "-inf", "1e-320", "5%", "%", "0.5%%", "-0"]
    ),
    st.text(max_size=8),
)


def _parse(argv: list[str]) -> tuple[int, Any, str]:
    """Parse as the command line does: (exit code, the namespace or None, error output)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:
            return int(exc.code or 0), None, err.getvalue()
    return 0, args, err.getvalue()


@pytest.mark.parametrize(
    ("head", "option", "dest", "rule"), OPTIONS, ids=[f"{h[0]} {o}" for h, o, _, _ in OPTIONS]
)
@settings(max_examples=60, deadline=None)
@given(text=VALUES)
def test_a_number_option_takes_its_range_and_names_itself_otherwise(
    head: list[str], option: str, dest: str, rule: Any, text: str
) -> None:
    parse, expected, fits, problem = rule
    try:
        value = parse(text)
    except ValueError:
        value, message = None, f"expected {expected}, got {text!r}"
    else:
        message = None if fits(value) else problem.format(text=text, value=value)
    code, args, err = _parse([*head, f"{option.split('/')[0]}={text}"])
    assert "Traceback" not in err
    if message is None:
        assert code == 0, err
        got = getattr(args, dest)
        assert got == value or (math.isnan(got) and math.isnan(value))
    else:
        assert code == 2
        assert f"error: argument {option}: {message}\n" in err, err
