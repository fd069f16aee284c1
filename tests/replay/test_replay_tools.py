"""Tools mode: recorded model outputs through today's tools, schemas and rules."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from replay_helpers import run_trace
from typing_extensions import TypedDict

from toolproof import Toolset, Trace, UserError, tool
from toolproof.errors import ConfigError
from toolproof.replay import Aging, ReplayRules, TraceStore, replay
from toolproof.testing import call


@tool(extra="ignore")
def search_docs(query: str, top_k: int = 5) -> list[dict[str, Any]]:
    """Search the documentation.

    Args:
        query: What to search for.
        top_k: How many results.
    """
    return [{"title": f"about {query}", "score": 0.9}]


def search_trace(top_k: int = 5, **extra: Any) -> Trace:
    return run_trace(
        [call("search_docs", query="refunds", top_k=top_k, **extra), "See 'about refunds'."],
        input="How do refunds work?",
        tools=[search_docs],
    )


def only(report: Any) -> Any:
    (sample,) = report.samples
    return sample


def test_unchanged_tools_pass() -> None:
    report = replay([search_trace()], tools=[search_docs])
    sample = only(report)
    assert sample.grade == "pass"
    assert sample.findings == []
    assert sample.notes == []
    assert report.exit_code == 0


def test_a_tool_made_strict_rejects_recorded_extra_arguments() -> None:
    @tool(name="search_docs")
    def strict(query: str, top_k: int = 5) -> list[dict[str, Any]]:
        """Search the documentation.

        Args:
            query: What to search for.
            top_k: How many results.
        """
        return []

    report = replay([search_trace(options={"format": "json"})], tools=[strict])
    sample = only(report)
    assert sample.grade == "fail"
    (finding,) = sample.findings
    assert finding.check == "schema"
    assert finding.message == (
        "today's schema rejects the call: Invalid arguments for tool 'search_docs': unexpected "
        "argument 'options'. This tool accepts: query, top_k."
    )
    assert finding.recorded == (
        'search_docs({"options": {"format": "json"}, "query": "refunds", "top_k": 5})'
    )
    assert sample.notes == ["search_docs: schema changed since recording"]
    assert report.exit_code == 1


def test_a_new_required_parameter_and_a_renamed_tool() -> None:
    @tool(name="search_docs")
    def needs_lang(query: str, lang: str, top_k: int = 5) -> list[dict[str, Any]]:
        """Search the documentation.

        Args:
            query: What to search for.
            lang: Language.
            top_k: How many results.
        """
        return []

    (finding,) = only(replay([search_trace()], tools=[needs_lang])).findings
    assert "missing required argument 'lang'" in finding.message

    @tool
    def search_documents(query: str, top_k: int = 5) -> list[dict[str, Any]]:
        """Search the documentation.

        Args:
            query: What to search for.
            top_k: How many results.
        """
        return []

    (finding,) = only(replay([search_trace()], tools=[search_documents])).findings
    assert finding.check == "tool_missing"
    assert finding.message == "tool 'search_docs' no longer exists; renamed to 'search_documents'?"


def test_a_changed_return_type_is_caught() -> None:
    class Hit(TypedDict):
        heading: str
        score: float

    @tool(name="search_docs")
    def typed(query: str, top_k: int = 5) -> list[Hit]:
        """Search the documentation.

        Args:
            query: What to search for.
            top_k: How many results.
        """
        return []

    (finding,) = only(replay([search_trace()], tools=[typed])).findings
    assert finding.check == "return_shape"
    assert finding.message == (
        "the recorded response no longer fits search_docs's return type (0.heading: Field required)"
    )
    assert finding.recorded == [{"title": "about refunds", "score": 0.9}]


def test_run_mocks_compares_the_structure_of_todays_mock() -> None:
    @tool(name="search_docs")
    def renamed_field(query: str, top_k: int = 5) -> list[dict[str, Any]]:
        """Search the documentation.

        Args:
            query: What to search for.
            top_k: How many results.
        """
        return []

    @renamed_field.mock
    def _(query: str, top_k: int = 5) -> list[dict[str, Any]]:
        return [{"heading": query, "score": 1.0, "url": "/x"}]

    (finding,) = only(replay([search_trace()], tools=[renamed_field], run_mocks=True)).findings
    assert finding.check == "return_shape"
    assert finding.grade == "fail"
    assert finding.message == "search_docs returns another structure today: missing $[].title"

    @tool(name="search_docs")
    def more_fields(query: str, top_k: int = 5) -> list[dict[str, Any]]:
        """Search the documentation.

        Args:
            query: What to search for.
            top_k: How many results.
        """
        return []

    toolset = Toolset(
        [more_fields],
        mode="mock",
        mocks={"search_docs": lambda query, top_k=5: [{"title": query, "score": 1, "url": "/"}]},
    )
    (finding,) = only(replay([search_trace()], tools=toolset, run_mocks=True)).findings
    assert finding.grade == "warn"
    assert finding.message == "search_docs returns new fields today: $[].url"


def test_rules_bounds_and_required_args_apply_to_recorded_calls() -> None:
    rules = ReplayRules.from_dict(
        {"tools": {"search_docs": {"required_args": ["query", "top_k"], "max_top_k": 20}}}
    )
    report = replay(
        [search_trace(top_k=50), search_trace(top_k=10)], tools=[search_docs], rules=rules
    )
    by_grade = {s.grade: s for s in report.samples}
    assert set(by_grade) == {"fail", "pass"}
    (finding,) = by_grade["fail"].findings
    assert finding.check == "bounds"
    assert finding.message.startswith("search_docs: argument 'top_k' is out of bounds (")
    assert finding.recorded == 50

    missing = run_trace(
        [call("search_docs", query="refunds"), "ok"], tools=[search_docs], input="refunds?"
    )
    (finding,) = only(replay([missing], tools=[search_docs], rules=rules)).findings
    assert finding.message == "search_docs: required argument 'top_k' is missing"


def test_schemas_without_python_tools() -> None:
    schemas = {
        "search_docs": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "top_k": {"type": "integer", "maximum": 10},
            },
            "required": ["query"],
            "additionalProperties": False,
        }
    }
    report = replay([search_trace(top_k=5), search_trace(top_k=50)], tools=schemas)
    grades = sorted(s.grade for s in report.samples)
    assert grades == ["fail", "pass"]
    failed = report.failures[0]
    assert failed.findings[0].message == (
        "today's schema rejects the call: Invalid arguments for tool 'search_docs': "
        "50 is greater than the maximum of 10 (at top_k)"
    )


def test_the_gate_reads_the_interval_of_the_rate_counted_from_the_store(db_path: Path) -> None:
    traces = [search_trace(top_k=k) for k in range(1, 21)]  # top_k 1..20
    with TraceStore(db_path) as store:
        store.add_many(traces)
    rules = {"tools": {"search_docs": {"max_top_k": 18}}}
    report = replay(db_path, tools=[search_docs], rules=rules, gate=0.05)
    assert len(report.samples) == 20
    assert report.fail_rate == pytest.approx(0.10)
    # 2 of 20 (10%, 95% interval 2.8%-30.1%) against 5%: too few samples to tell. The
    # advisory gate (the default) lets it by; the release gate holds it (exit 6).
    decision = report.decision()
    assert decision is not None and decision.verdict == "undecided"
    assert decision.needed is not None and decision.needed > 20
    assert report.gate_passed and report.exit_code == 0
    report.gate_mode = "release"
    assert not report.gate_passed and report.exit_code == 6
    # 10 of 20 fail: the whole interval is above 5%, whatever the mode
    rules = {"tools": {"search_docs": {"max_top_k": 10}}}
    report = replay(db_path, tools=[search_docs], rules=rules, gate=0.05)
    assert report.fail_rate == pytest.approx(0.5)
    assert report.decision().bound == "low"  # type: ignore[union-attr]
    assert not report.gate_passed and report.exit_code == 1
    # without a gate any failure fails
    assert replay(db_path, tools=[search_docs], rules=rules).exit_code == 1
    assert replay(db_path, tools=[search_docs]).exit_code == 0


def test_aging_weights_and_expiry(db_path: Path) -> None:
    now = 1_750_000_000.0
    day = 86400.0

    def at(days_ago: float, top_k: int) -> Trace:
        from datetime import datetime, timezone

        when = datetime.fromtimestamp(now - days_ago * day, timezone.utc)
        return replace(search_trace(top_k=top_k), started_at=when.isoformat())

    traces = [at(0, 5), at(30, 50), at(60, 5), at(120, 50)]  # top_k 50 fails
    with TraceStore(db_path) as store:
        store.add_many(traces)
    rules = {"tools": {"search_docs": {"max_top_k": 20}}}
    report = replay(
        db_path, tools=[search_docs], rules=rules, aging=Aging.parse("30d", "90d"), now=now
    )
    assert report.expired == 1
    assert len(report.samples) == 3
    weights = sorted(round(s.weight, 4) for s in report.samples)
    assert weights == [0.25, 0.5, 1.0]
    assert report.fail_rate == pytest.approx(1 / 3)
    assert report.weighted_fail_rate == pytest.approx(0.5 / 1.75)
    assert report.gate_rate == report.weighted_fail_rate
    data = report.to_dict()
    assert data["aging"] == {"half_life": "30d", "max_age": "90d"}
    assert data["expired"] == 1


def test_misuse_is_reported() -> None:
    with pytest.raises(UserError) as info:
        replay([search_trace()])
    assert str(info.value) == (
        "tools mode needs today's tools: pass tools=... (or --tools), or an agent "
        "(--agent module:factory) whose tools are used"
    )
    with pytest.raises(UserError, match="model mode needs today's agent"):
        replay([search_trace()], mode="model")
    with pytest.raises(UserError, match="replay mode must be 'tools' or 'model'"):
        replay([search_trace()], mode="live", tools=[search_docs])  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as config:
        ReplayRules.from_dict({"tools": {"search_docs": {"max_top_k": "twenty"}}})
    assert str(config.value) == "rules.tools.search_docs.max_top_k: expected a number, got 'twenty'"
    with pytest.raises(ConfigError, match="unknown key 'required'"):
        ReplayRules.from_dict({"tools": {"x": {"required": ["a"]}}})
    with pytest.raises(ConfigError, match="rules: unknown key"):
        ReplayRules.from_dict({"tool": {}})


def test_rules_from_yaml_with_globs(tmp_path: Path) -> None:
    path = tmp_path / "replay.yaml"
    path.write_text(
        "tools:\n"
        '  "*": {forbid_extra_args: true, ignore: [request_id]}\n'
        "  search_docs: {required_args: [query], max_top_k: 20, compare: [query]}\n"
        "order: fail\n"
        "gate: 0.05\n"
        "aging: {half_life: 14d}\n"
    )
    rules = ReplayRules.from_file(path)
    rule = rules.rule_for("search_docs")
    assert rule.required_args == ("query",)
    assert rule.extra_args == "fail"  # from "*"
    assert rule.ignore == ("request_id",)
    assert rule.compare == ("query",)
    assert rule.bounds["top_k"](25) is not None
    assert rule.bounds["top_k"](20) is None
    assert rules.rule_for("other").extra_args == "fail"
    assert rules.order == "fail"
    assert rules.gate == 0.05
    assert rules.aging.half_life == 14 * 86400


def _as_mapping(parameters: dict[str, Any]) -> dict[str, Any]:
    return {"search_docs": parameters}


@pytest.mark.parametrize("stored", [False, True])
def test_a_bare_schema_is_compared_on_its_parameters_alone(tmp_path: Path, stored: bool) -> None:
    """Today's tools given as name -> parameters: a change only of what was given shows.

    From a trace object and from a store (read as data): every schema the same as recorded,
    or changed in any one part, gets the note exactly when its parameters changed.
    """
    trace = search_trace()
    source: Any = [trace]
    if stored:
        with TraceStore(tmp_path / "t.db") as store:
            store.add(trace)
        source = str(tmp_path / "t.db")
    same = search_docs.parameters
    changed = [
        {**same, "required": ["query", "top_k"]},
        {**same, "properties": {**same["properties"], "lang": {"type": "string"}}},
        {**same, "additionalProperties": False},
        {},
    ]
    sample = only(replay(source, tools=_as_mapping(dict(same))))
    assert sample.notes == []
    for parameters in changed:
        sample = only(replay(source, tools=_as_mapping(parameters)))
        assert sample.notes == ["search_docs: schema changed since recording"], parameters
