"""Any value under any suite key ends in a loaded suite or one ``ConfigError`` naming lines.

The suite's models and the loader split the work (shape in the models, the agent's tools in
the loader); a value that one of them lets through must never crash the other.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.errors import ConfigError
from toolproof.evals import load_suite
from toolproof.evals._suite_model import CASE_KEYS, DEFAULT_KEYS, SUITE_KEYS

scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.text(max_size=6)
#: Values some key accepts, so that valid and invalid settings meet in one case.
valid = st.sampled_from(
    [
        {"temperature": 0},
        {"at_least": 1},
        {"rate": 0.5},
        {"multiply_numbers": "real"},
        ["multiply_numbers"],
        {"command": "python agent.py"},
        "scripted",
        "advise",
        2,
        {},
        [],
    ]
)
values = st.recursive(
    scalars | valid | st.sampled_from(["mock", "real", "all", "any", "block", "multiply_numbers"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["at_least", "rate", "temperature", "stop", "command", "http", "a"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=8,
)


@pytest.mark.timeout(300)
@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    suite_values=st.dictionaries(st.sampled_from(sorted(DEFAULT_KEYS)), values, max_size=5),
    case_values=st.dictionaries(
        st.sampled_from(sorted(set(CASE_KEYS) - {"name"})), values, max_size=3
    ),
    extra=st.dictionaries(st.sampled_from(sorted(SUITE_KEYS)), values, max_size=1),
)
def test_any_values_load_or_fail_with_lines(
    suite_values: dict[str, Any], case_values: dict[str, Any], extra: dict[str, Any]
) -> None:
    document: dict[str, Any] = {
        "suite": "s",
        "agent": "evalagents:build_agent",
        **suite_values,
        **extra,
    }
    document.setdefault("cases", [{"name": "a", "input": "hi", **case_values}])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.eval.yaml"
        path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
        problems: list[str] = []
        try:
            load_suite(path)
        except ConfigError as exc:
            problems = exc.problems or ["(none)"]
        for problem in problems:
            assert problem.startswith(f"{path}:"), problem
