"""Every check's spec is the one description of its value: loader, schema and messages agree.

For each registered check (built-in or user), generated values are loaded the way a suite
loads them. Whatever the value, loading never raises: it compiles a check, turns the check
off (``grounded: false``), or records problems, each with a line and a path that starts at
the key. A value that compiles a check is accepted by the check's published JSON Schema (the
schema is generated from the same spec), and a value the schema refuses never compiles. A
compiled check runs on a real trace without raising.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof import Agent, tool
from toolproof._yaml import Locator, Problems
from toolproof.evals._checks import SessionRecord, compile_expect, registered
from toolproof.testing import ScriptedModel, call


@tool
def search_docs(query: str, limit: int = 3) -> str:
    """Search the documents."""
    return f"results for {query}: doc-1, doc-2 (total 2)"


@tool
def refund_order(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


TOOLS = {t.name: t for t in (search_docs, refund_order)}
BUILTINS = sorted(name for name, d in registered().items() if d.builtin)
WORDS = [
    *TOOLS, "query", "limit", "order_id", "allow", "tool", "relevant", "k", "min", "max",
    "calls", "name", "arguments", "mode", "subset", "exact", "strict", "final", "error",
    "regex", "approx", "refund", "results[*].id", "doc-1", "(", "x",
]  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 12)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(WORDS)
    | st.text(max_size=6)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(WORDS) | st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def _load(
    key: str, value: Any, expect: dict[str, Any] | None = None
) -> tuple[list[Any], list[str]]:
    problems = Problems(Locator(Path("suite.eval.yaml"), {("expect",): 7}))
    mapping = {key: value, **(expect or {})}
    checks = compile_expect(mapping, tools=TOOLS, problems=problems, path=("expect",))
    return [c for c in checks if c.name == key], problems.formatted()


def _record() -> SessionRecord:
    model = ScriptedModel(
        [
            call("search_docs", query="leave"),
            call("refund_order", order_id="A-1"),
            "I refunded order A-1; see doc-1 (2 results).",
        ]
    )
    agent = Agent(model, list(TOOLS.values()))
    return SessionRecord([agent.run_sync("refund A-1").trace])


RECORD = _record()


@pytest.mark.parametrize("key", BUILTINS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES)
def test_any_value_compiles_is_off_or_is_reported_with_its_line(key: str, value: Any) -> None:
    checks, problems = _load(key, value)
    assert not (checks and problems), (checks, problems)
    for problem in problems:
        assert problem.startswith("suite.eval.yaml:7: "), problem
        assert f"expect.{key}" in problem or key not in registered(), problem
    schema = registered()[key].schema
    if schema is None:
        return
    fits = jsonschema.Draft202012Validator(schema).is_valid(value)
    if checks:
        assert fits, f"{key}: {value!r} compiled, but the published schema refuses it"
        result = checks[0](RECORD)
        assert result.status in ("pass", "fail", "skip", "inconclusive")
        assert result.reason
    elif not fits:
        assert problems, f"{key}: {value!r} refused by the schema, but no problem was reported"


def test_the_generated_values_reach_every_outcome() -> None:
    """The strategy is not vacuous: across the built-ins it compiles checks and refuses values."""
    compiled = refused = 0
    for key in BUILTINS:
        for value in (True, ["search_docs"], "search_docs", 3, {"x": 1}, "final"):
            checks, problems = _load(key, value)
            compiled += bool(checks)
            refused += bool(problems)
    assert compiled >= 8 and refused >= 20


def test_every_built_in_is_declared_by_its_spec() -> None:
    """One registration form: each built-in has a spec, and its schema is the spec's."""
    from toolproof.evals import check

    assert not hasattr(check, "compiler")
    for name in BUILTINS:
        definition = registered()[name]
        assert definition.adapter is not None, name
        assert definition.schema == definition.adapter.json_schema(), name


def test_a_spec_model_named_like_a_part_of_the_suite_schema_is_refused() -> None:
    from pydantic import BaseModel

    from toolproof.errors import UserError
    from toolproof.evals import check
    from toolproof.evals._checks import unregister
    from toolproof.evals._suite_model import suite_json_schema

    class CaseEntry(BaseModel):  # the name of the suite's own case model
        words: int

    check("clashing_words", spec=list[CaseEntry])(lambda record, value: True)
    try:
        with pytest.raises(UserError, match=r"clashing_words.*'CaseEntry'"):
            suite_json_schema(strict_checks=True)
        assert "clashing_words" not in suite_json_schema()["$defs"]["Expect"]["properties"]
    finally:
        unregister("clashing_words")
