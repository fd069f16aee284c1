"""The values of ``retrieval``, ``retrieval_grounded`` and ``faithfulness``, read by their specs.

Generated good values (every option, each in every form it may be written in) compile one
check, fit the published JSON Schema and run on a real trace. Generated bad values (a good
value with one option broken, an unknown or a missing key, a value of the wrong shape) never
compile a check and never raise: each gives problems with the line of the value and the path
of the broken option; and the published schema refuses them too, unless only the agent's
tools can tell (a tool name it does not have). The messages are pinned word for word, and a
suite file reports each problem of a value written over several lines at its own line.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import ragagents
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof import Toolset
from toolproof._yaml import Locator, Problems
from toolproof.errors import ConfigError
from toolproof.evals import SessionRecord, load_suite
from toolproof.evals._checks import compile_expect, registered
from toolproof.evals._retrieval import ID_PATH, parse_id_path
from toolproof.rag._metrics import METRICS

TOOLS = {ragagents.search_docs.name: ragagents.search_docs}
CHECKS = ("retrieval", "retrieval_grounded", "faithfulness")


def _record() -> SessionRecord:
    agent = ragagents.build_agent(ragagents.model(), Toolset([ragagents.search_docs]))
    session = agent.session()
    session.run_sync("leave")
    return SessionRecord(session.traces)


RECORD = _record()


def load(key: str, value: Any, tools: Any = TOOLS) -> tuple[list[Any], list[str]]:
    """The checks ``value`` compiles to under ``expect.<key>`` (line 7), and the problems."""
    problems = Problems(Locator(Path("rag.eval.yaml"), {("expect",): 7}))
    checks = compile_expect({key: value}, tools=tools, problems=problems, path=("expect",))
    return checks, problems.formatted()


@functools.cache
def published(key: str) -> jsonschema.Draft202012Validator:
    schema = registered()[key].schema
    assert schema is not None
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def fits_schema(key: str, value: Any) -> bool:
    return published(key).is_valid(value)


def is_json(value: Any) -> bool:
    """Whether ``value`` is a JSON value (YAML also has NaN and infinity; JSON does not)."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


# -- good values --------------------------------------------------------------------------------

TOOL = st.just("search_docs")
ID = st.text("abcdefghij-_0123456789", min_size=1, max_size=6) | st.integers(-5, 99)
NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,5}", fullmatch=True)
STEP = NAME.map(lambda key: ("key", key)) | st.sampled_from(["[*]", "[0]", "[-1]", "[12]"]).map(
    lambda index: ("index", index)
)


def _joined(steps: list[tuple[str, str]]) -> str:
    text = ""
    for kind, step in steps:
        text += ("." if text and kind == "key" else "") + step
    return text


ID_PATHS = st.lists(STEP, min_size=1, max_size=4).map(_joined)
FRACTION = st.floats(0, 1) | st.sampled_from([0, 1])
CALLS = st.sampled_from(["all", "first", "last"])
RELEVANT = (
    ID
    | st.lists(ID, max_size=4)
    | st.dictionaries(
        st.text("abcdefghij-0123456789", min_size=1, max_size=6),
        st.integers(0, 3) | st.floats(0, 3),
        max_size=4,
    )
)
MINIMUMS = {f"min_{metric}": FRACTION for metric in METRICS}
GOOD = {
    "retrieval": st.fixed_dictionaries(
        {"tool": TOOL, "relevant": RELEVANT},
        optional={
            "k": st.none() | st.integers(1, 50),
            "id_path": ID_PATHS,
            "calls": CALLS,
            **MINIMUMS,
        },
    ),
    "retrieval_grounded": TOOL
    | st.fixed_dictionaries(
        {"tool": TOOL},
        optional={
            "quotes": st.booleans(),
            "check_small_numbers": st.booleans(),
            "include_input": st.booleans(),
            "calls": CALLS,
        },
    ),
    "faithfulness": TOOL
    | st.fixed_dictionaries(
        {"tool": TOOL}, optional={"max_hallucination_rate": FRACTION, "calls": CALLS}
    ),
}


@pytest.mark.parametrize("key", CHECKS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_good_value_compiles_fits_the_schema_and_runs(key: str, data: st.DataObject) -> None:
    value = data.draw(GOOD[key])
    checks, problems = load(key, value)
    assert problems == []
    (check,) = checks
    assert check.name == key
    assert fits_schema(key, value), value
    assert "search_docs" in check.describe
    if key == "faithfulness":
        rate = value.get("max_hallucination_rate", 0) if isinstance(value, dict) else 0
        assert check.grade is not None
        assert check.describe.endswith(f"(hallucination rate <= {rate:g})")
        return
    result = check(RECORD)
    assert result.status in ("pass", "fail", "skip")
    assert result.metrics is not None and result.metrics["tool"] == "search_docs"
    if key == "retrieval":
        bounds = [f">= {value[m]:g}" for m in MINIMUMS if m in value]
        assert all(bound in check.describe for bound in bounds)
        assert check.describe.endswith("(measured)") == (not bounds)


# -- bad values ---------------------------------------------------------------------------------

NOT_TEXT = st.none() | st.booleans() | st.integers() | st.lists(st.integers(), max_size=2)
NOT_FRACTION = (
    st.floats(1, exclude_min=True)
    | st.floats(max_value=0, exclude_max=True)
    | st.just(math.nan)
    | st.none()
    | st.booleans()
    | st.text(max_size=3)
)
NOT_FLAG = st.none() | st.integers() | st.text(max_size=3) | st.floats()
NOT_CALLS = st.text(max_size=6).filter(lambda t: t not in ("all", "first", "last")) | NOT_TEXT
NOT_COUNT = (
    st.integers(max_value=0)
    | st.booleans()
    | st.text(max_size=3)
    | st.floats().filter(lambda f: not f.is_integer())  # JSON Schema takes 2.0 as an integer
)
NOT_ID = st.booleans() | st.none() | st.floats().filter(lambda f: not f.is_integer())
NOT_RELEVANT = (
    st.none()
    | st.booleans()
    | st.floats().filter(lambda f: not f.is_integer())
    | st.lists(ID, max_size=2).flatmap(
        lambda ids: NOT_ID.map(lambda bad: [*ids, bad])  # one bad id among good ones
    )
    | st.dictionaries(
        st.text(min_size=1, max_size=3),
        st.booleans() | st.text(max_size=2) | st.none() | st.just(math.inf),
        min_size=1,
        max_size=2,
    )
)
MALFORMED_PATH = st.text("ab_.[]*-1 ", max_size=8).filter(lambda t: not re.search(ID_PATH, t))
NOT_ID_PATH = MALFORMED_PATH | NOT_TEXT.filter(lambda v: v is not None) | st.none()
UNKNOWN_TOOL = st.sampled_from(["search_doc", "Search_docs", "lookup", "search_docs "])
NOT_TOOL = NOT_TEXT | st.just("")
BAD_OPTION = {
    "tool": NOT_TOOL,
    "relevant": NOT_RELEVANT,
    "k": NOT_COUNT,
    "id_path": NOT_ID_PATH,
    "calls": NOT_CALLS,
    "quotes": NOT_FLAG,
    "check_small_numbers": NOT_FLAG,
    "include_input": NOT_FLAG,
    "max_hallucination_rate": NOT_FRACTION,
    **{f"min_{metric}": NOT_FRACTION for metric in METRICS},
}
OPTIONS = {
    "retrieval": ["tool", "relevant", "k", "id_path", "calls", *MINIMUMS],
    "retrieval_grounded": ["tool", "quotes", "check_small_numbers", "include_input", "calls"],
    "faithfulness": ["tool", "max_hallucination_rate", "calls"],
}
REQUIRED = {
    "retrieval": ["tool", "relevant"],
    "retrieval_grounded": ["tool"],
    "faithfulness": ["tool"],
}


@st.composite
def bad_values(draw: Any, key: str) -> tuple[Any, str, bool]:
    """(a broken value of ``key``, the path of its problem, whether only the tools can tell)."""
    good = draw(GOOD[key])
    options = dict(good) if isinstance(good, dict) else {"tool": good}
    how = draw(st.sampled_from(["option", "unknown tool", "unknown key", "missing", "shape"]))
    if how == "option":
        option = draw(st.sampled_from(OPTIONS[key]))
        options[option] = draw(BAD_OPTION[option])
        return options, f"expect.{key}.{option}", False
    if how == "unknown tool":
        tool = draw(UNKNOWN_TOOL)
        if draw(st.booleans()) and key != "retrieval":
            return tool, f"expect.{key}", True  # the tool's name alone
        return {**options, "tool": tool}, f"expect.{key}.tool", True
    if how == "unknown key":
        name = draw(NAME.filter(lambda n: n not in OPTIONS[key]))
        return (
            {**options, name: draw(st.integers() | st.text(max_size=3))},
            f"expect.{key}.{name}",
            False,
        )
    if how == "missing":
        required = draw(st.sampled_from(REQUIRED[key]))
        options.pop(required)
        return options, f"expect.{key}" + (".tool" if required == "tool" else ""), False
    shape = st.booleans() | st.integers() | st.floats() | st.lists(st.text(max_size=3), max_size=2)
    if key == "retrieval":
        shape = shape | st.text(max_size=8) | st.none()
    else:
        shape = shape | st.just("") | st.none()
    return draw(shape), f"expect.{key}", False


@pytest.mark.parametrize("key", CHECKS)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_bad_value_is_a_problem_at_its_line_and_path_and_the_schema_refuses_it(
    key: str, data: st.DataObject
) -> None:
    value, path, needs_tools = data.draw(bad_values(key))
    checks, problems = load(key, value)
    assert checks == [], (value, problems)
    assert problems, value
    for problem in problems:
        assert problem.startswith(f"rag.eval.yaml:7: expect.{key}"), problem
    assert any(p.startswith(f"rag.eval.yaml:7: {path}: ") for p in problems), (path, problems)
    if needs_tools:  # without the agent's tools the name cannot be checked
        unchecked, none = load(key, value, tools=None)
        assert len(unchecked) == 1 and none == []
        assert fits_schema(key, value)
    elif is_json(value):
        assert not fits_schema(key, value), (value, problems)


@settings(max_examples=1500, deadline=None)
@given(text=st.text("ab_.[]*-0123456789 \n\t\x1c\u00e9\u0661", max_size=12))
def test_the_schema_pattern_of_id_path_is_what_the_parser_reads(text: str) -> None:
    try:
        parse_id_path(text)
        parsed = True
    except ValueError:
        parsed = False
    assert parsed == bool(re.search(ID_PATH, text)), text
    assert fits_schema("retrieval", {"tool": "t", "relevant": [], "id_path": text}) == parsed


# -- the messages -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expect", "found"),
    [
        (
            {"retrieval": "search_docs"},
            [
                "expect.retrieval: expected {tool, relevant: [ids] or {id: grade}, k, id_path, "
                "min_recall, min_mrr...}"
            ],
        ),
        (
            {"retrieval": {"tool": "search_docs"}},
            ["expect.retrieval: retrieval needs 'relevant': the relevant ids"],
        ),
        (
            {"retrieval": {"relevant": ["a"]}},
            ["expect.retrieval.tool: expected the retrieval tool's name, got null"],
        ),
        (
            {
                "retrieval": {
                    "tool": "",
                    "relevant": {"a": "high"},
                    "k": 0,
                    "id_path": 3,
                    "calls": "some",
                    "min_ndcg": 1.5,
                    "min_recal": 1,
                }
            },
            [
                "expect.retrieval.min_recal: unknown key 'min_recal' (did you mean 'min_recall'?); "
                "allowed: tool, relevant, k, id_path, calls, min_recall, min_precision, min_hit, "
                "min_mrr, min_ndcg, min_map",
                "expect.retrieval.tool: expected the retrieval tool's name, got a string",
                "expect.retrieval.relevant: expected the relevant ids: a list, or a mapping of id "
                "to grade (1 or more), got a mapping",
                "expect.retrieval.k: expected a positive integer, got 0",
                "expect.retrieval.id_path: expected a path string, got an integer",
                "expect.retrieval.calls: expected all, first or last, got 'some'",
                "expect.retrieval.min_ndcg: expected 0 to 1, got 1.5",
            ],
        ),
        (
            {"retrieval": {"tool": "search_doc", "relevant": [], "id_path": "hits[*"}},
            [
                "expect.retrieval.tool: unknown tool 'search_doc' (did you mean 'search_docs'?); "
                "the agent's tools are: search_docs",
                "expect.retrieval.id_path: malformed id_path 'hits[*' at character 5: write keys "
                "joined by dots, [*] for every item of a list and [N] for one item (results[*].id)",
            ],
        ),
        (
            {"retrieval_grounded": True},
            ["expect.retrieval_grounded: expected the retrieval tool's name, got a boolean"],
        ),
        (
            {"retrieval_grounded": "search_doc"},
            [
                "expect.retrieval_grounded: unknown tool 'search_doc' (did you mean "
                "'search_docs'?); the agent's tools are: search_docs"
            ],
        ),
        (
            {"retrieval_grounded": {"tool": "search_docs", "quote": True, "include_input": 1}},
            [
                "expect.retrieval_grounded.quote: unknown key 'quote' (did you mean 'quotes'?); "
                "allowed: tool, quotes, check_small_numbers, include_input, calls",
                "expect.retrieval_grounded.include_input: expected true or false, got 1",
            ],
        ),
        (
            {"faithfulness": ""},
            ["expect.faithfulness: expected the retrieval tool's name, got a string"],
        ),
        (
            {"faithfulness": {"max_hallucination_rate": -0.1, "calls": None}},
            [
                "expect.faithfulness.tool: expected the retrieval tool's name, got null",
                "expect.faithfulness.max_hallucination_rate: expected 0 to 1, got -0.1",
                "expect.faithfulness.calls: expected all, first or last, got None",
            ],
        ),
    ],
)
def test_each_problem_is_worded_at_its_path(expect: dict[str, Any], found: list[str]) -> None:
    problems = Problems(Locator(Path("t.yaml")))
    assert compile_expect(expect, tools=TOOLS, problems=problems, path=("expect",)) == []
    assert [p.split(": ", 1)[1] for p in problems.formatted()] == found


SUITE = """\
suite: rag
agent: ragagents:build_agent
cases:
  - name: c
    input: leave
    expect:
      retrieval:
        tool: search_doc
        relevant: [doc-3, true]
        k: 0
        id_path: "results[*"
      retrieval_grounded:
        tool: search_docs
        quotes: "yes"
      faithfulness: {tool: search_docs, max_hallucination_rate: 2}
"""


LINES = {
    "cases[0].expect.retrieval.tool 8",
    "cases[0].expect.retrieval.relevant 9",
    "cases[0].expect.retrieval.k 10",
    "cases[0].expect.retrieval.id_path 11",
    "cases[0].expect.retrieval_grounded.quotes 14",
    "cases[0].expect.faithfulness.max_hallucination_rate 15",
}


def lines_of(problems: list[str]) -> set[str]:
    """``path line`` of each ``file:line: path: message``."""
    found = (re.match(r"^.*rag\.eval\.yaml:(\d+): ([^:]+): ", p) for p in problems)
    return {f"{m.group(2)} {m.group(1)}" for m in found if m}


def test_a_suite_file_reports_each_problem_at_the_line_of_its_option(tmp_path: Path) -> None:
    path = tmp_path / "rag.eval.yaml"
    path.write_text(SUITE, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    assert lines_of(caught.value.problems or []) == LINES


def test_the_cli_exits_2_with_every_problem_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "rag.eval.yaml"
    path.write_text(SUITE, encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    here = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here), str(root / "src")])}
    done = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", str(path), "--model", "ragagents:model"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert lines_of(done.stderr.splitlines()) == LINES
