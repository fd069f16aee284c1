"""The value of ``claims_backed``, read by its spec: ``true``, or action verbs and their tools.

Generated good mappings (verbs in any case and spacing, a verb written twice, one tool or a
list) compile one check that names each verb's tools, fit the published JSON Schema and
decide by the named tools. Generated bad values (a key that is not a verb, tools that are
not a non-empty list of names, a tool the agent lacks, a value of the wrong shape) never
compile a check and never raise: each is reported at its line and key, and the published
schema refuses it unless only the agent's tools can tell.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof import Agent, tool
from toolproof._yaml import Locator, Problems
from toolproof.evals import SessionRecord
from toolproof.evals._builtins.claims import ACTIONS
from toolproof.evals._checks import compile_expect, registered
from toolproof.testing import ScriptedModel, call


@tool
def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    return f"cancelled {order_id}"


@tool
def close_ticket(ticket: str) -> str:
    """Close a support ticket."""
    return f"closed {ticket}"


TOOLS = {t.name: t for t in (cancel_order, close_ticket)}
VERBS = sorted(ACTIONS)


def load(value: Any, tools: Any = TOOLS) -> tuple[list[Any], list[str]]:
    problems = Problems(Locator(Path("claims.eval.yaml"), {("expect",): 5}))
    mapping = {"claims_backed": value}
    checks = compile_expect(mapping, tools=tools, problems=problems, path=("expect",))
    return checks, problems.formatted()


@functools.cache
def published() -> jsonschema.Draft202012Validator:
    schema = registered()["claims_backed"].schema
    assert schema is not None
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def written(verb: str) -> st.SearchStrategy[str]:
    """``verb`` as a person may write it: any case (``up`` stays lower case), spaces around."""
    head, _, up = verb.partition(" ")
    cased = st.sampled_from([head, head.capitalize(), head.upper()]).map(
        lambda word: f"{word} {up}" if up else word
    )
    return st.tuples(st.sampled_from(["", " "]), cased, st.sampled_from(["", "  "])).map("".join)


NAMES = st.sampled_from(sorted(TOOLS))
TOOLS_OF_VERB = NAMES | st.lists(NAMES, min_size=1, max_size=3)
VERB = st.sampled_from(["cancel", "close", "look up"]) | st.sampled_from(VERBS)
VERB_LISTS = st.lists(VERB, min_size=1, max_size=4)
GOOD_MAPPINGS = VERB_LISTS.flatmap(  # a verb may come twice, written differently
    lambda verbs: st.lists(
        st.tuples(st.sampled_from(verbs).flatmap(written), TOOLS_OF_VERB), min_size=1, max_size=5
    ).map(dict)
)


def merged(value: dict[str, Any]) -> dict[str, list[str]]:
    """The tools of each verb, as the check reads them: ``Cancel`` is ``cancel``."""
    named: dict[str, list[str]] = {}
    for verb, names in value.items():
        for name in [names] if isinstance(names, str) else names:
            if name not in named.setdefault(verb.strip().lower(), []):
                named[verb.strip().lower()].append(name)
    return named


def _record(answer: str, *calls: str) -> SessionRecord:
    script: list[Any] = [
        call(name, **{next(iter(TOOLS[name].parameters["properties"])): "A1"}) for name in calls
    ]
    agent = Agent(ScriptedModel([*script, answer]), list(TOOLS.values()))
    return SessionRecord([agent.run_sync("please").trace])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=GOOD_MAPPINGS)
def test_a_good_mapping_compiles_names_its_tools_and_fits_the_schema(value: dict[str, Any]) -> None:
    checks, problems = load(value)
    assert problems == []
    (check,) = checks
    assert published().is_valid(value), value
    named = merged(value)
    assert check.describe.endswith(
        " (" + ", ".join(f"{verb}: {tools!r}" for verb, tools in named.items()) + ")"
    )
    verb, tools = next(iter(named.items()))
    past = {"cancel": "cancelled", "close": "closed"}.get(verb)
    if past is None:
        return
    claimed = f"I have {past} it."
    for tool_name in tools:  # a call of any tool of the verb backs the claim
        backed = check(_record(claimed, tool_name))
        assert backed.status == "pass", backed.reason
    unbacked = check(_record(claimed))
    assert unbacked.status == "fail" and " or ".join(tools) in unbacked.reason


NOT_VERB = st.sampled_from(["cancel it", "x1", "", "re-fund", "look  up", "cancel_order"]) | (
    st.integers(-(2**63), 2**63 - 1)  # pydantic shows larger keys as text in its locations
)
NOT_TOOLS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.just([])
    | st.lists(st.integers() | st.none(), min_size=1, max_size=2)
    | st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=1)
)
UNKNOWN = st.sampled_from(["cancel_ordr", "refund_order", "Cancel_order"])


@st.composite
def bad_values(draw: Any) -> tuple[Any, str, bool]:
    """(a broken value, the path of its problem, whether only the agent's tools can tell)."""
    good = draw(GOOD_MAPPINGS)
    how = draw(st.sampled_from(["key", "tools", "unknown", "shape"]))
    first = next(iter(good))
    if how == "key":
        key = draw(NOT_VERB)
        shown = f"[{key}]" if isinstance(key, int) else f".{key}"
        return {**good, key: draw(TOOLS_OF_VERB)}, f"expect.claims_backed{shown}", False
    if how == "tools":
        return {**good, first: draw(NOT_TOOLS)}, f"expect.claims_backed.{first}", False
    if how == "unknown":
        names = draw(st.lists(NAMES, max_size=2))
        return {**good, first: [*names, draw(UNKNOWN)]}, f"expect.claims_backed.{first}", True
    shape = (
        st.none() | st.integers() | st.text(max_size=5) | st.just({}) | st.lists(NAMES, max_size=2)
    )
    return draw(shape), "expect.claims_backed", False


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bad=bad_values())
def test_a_bad_value_is_reported_at_its_key_and_the_schema_refuses_it(
    bad: tuple[Any, str, bool],
) -> None:
    value, path, needs_tools = bad
    checks, problems = load(value)
    assert checks == [], (value, problems)
    assert any(p.startswith(f"claims.eval.yaml:5: {path}: ") for p in problems), (path, problems)
    assert all(p.startswith("claims.eval.yaml:5: expect.claims_backed") for p in problems)
    if needs_tools:  # the tools' names are checked only when the agent's tools are known
        unchecked, none = load(value, tools=None)
        assert len(unchecked) == 1 and none == []
        assert published().is_valid(value)
    elif not all(isinstance(k, str) for k in getattr(value, "keys", list)()):
        pass  # JSON has no integer keys: the schema never sees this value
    else:
        assert not published().is_valid(value), (value, problems)


def test_a_verb_written_twice_is_one_verb_with_the_tools_of_both() -> None:
    (check,), problems = load({"cancel": "cancel_order", " Cancel": ["close_ticket"]})
    assert problems == []
    assert check.describe.endswith("(cancel: ['cancel_order', 'close_ticket'])")
    assert check(_record("I cancelled it.", "close_ticket")).status == "pass"


def test_true_false_and_the_worded_problems() -> None:
    (check,), none = load(True)
    assert none == [] and check.describe == "claimed actions and capabilities backed by tools"
    assert load(False) == ([], [])
    _, problems = load({"cancel": ["cancel_ordr", "refund"], "x1": 3})
    assert [p.split(": ", 1)[1] for p in problems] == [
        "expect.claims_backed.cancel: unknown tool 'cancel_ordr' (did you mean 'cancel_order'?); "
        "the agent's tools are: cancel_order, close_ticket",
        "expect.claims_backed.cancel: unknown tool 'refund'; the agent's tools are: "
        "cancel_order, close_ticket",
        "expect.claims_backed.x1: expected an action verb, got 'x1'",
        "expect.claims_backed.x1: expected tool names, got an integer",
    ]
