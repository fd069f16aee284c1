"""The retrieval checks of suites: metrics over what the tool returned, grounding, faithfulness."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import ragagents
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Toolset
from toolproof.errors import ConfigError
from toolproof.evals import SessionRecord, evaluate
from toolproof.evals._checks import compile_expect
from toolproof.evals._quality import quality_summary
from toolproof.evals._retrieval import parse_id_path, result_ids
from toolproof.evals._yaml import Locator, Problems
from toolproof.testing import ScriptedModel, call

TOOLS = {ragagents.search_docs.name: ragagents.search_docs}


def record_of(question: str) -> SessionRecord:
    agent = ragagents.build_agent(ragagents.model(), Toolset([ragagents.search_docs]))
    session = agent.session()
    session.run_sync(question)
    return SessionRecord(session.traces)


def run_check(expect: dict[str, Any], record: SessionRecord):
    problems = Problems(Locator(Path("t.yaml")))
    checks = compile_expect(expect, tools=TOOLS, problems=problems, path=("expect",))
    assert not problems, problems.formatted()
    (check,) = checks
    return check(record)


def problems_of(expect: dict[str, Any]) -> list[str]:
    problems = Problems(Locator(Path("t.yaml")))
    compile_expect(expect, tools=TOOLS, problems=problems, path=("expect",))
    return [p.split(": ", 1)[1] for p in problems.formatted()]


LEAVE = record_of("leave")


def test_metrics_of_what_the_tool_returned_and_a_reason_naming_it():
    spec = {"tool": "search_docs", "relevant": ["doc-3", "doc-7"], "k": 5}
    result = run_check({"retrieval": {**spec, "min_recall": 0.8}}, LEAVE)
    assert result.status == "fail"
    assert result.reason.startswith("recall@5 0.50 < 0.8")
    assert "search_docs returned doc-9, doc-3, doc-2" in result.reason
    assert "missing doc-7" in result.reason
    assert result.metrics is not None
    assert (result.metrics["recall"], result.metrics["mrr"]) == (0.5, 0.5)
    assert result.metrics["ids"] == ["doc-9", "doc-3", "doc-2"]
    measured = run_check({"retrieval": spec}, LEAVE)  # no minimum: it measures, and passes
    assert measured.status == "pass"
    assert "recall@5 0.50" in measured.reason


def test_graded_relevance_the_cutoff_and_mrr_bounds():
    graded = run_check(
        {"retrieval": {"tool": "search_docs", "relevant": {"doc-3": 2, "doc-2": 1}, "k": 2}}, LEAVE
    )
    assert graded.metrics is not None
    assert graded.metrics["recall"] == 0.5  # doc-2 is third: outside k=2
    assert 0 < graded.metrics["ndcg"] < 1
    low = run_check(
        {"retrieval": {"tool": "search_docs", "relevant": ["doc-3"], "min_mrr": 1}}, LEAVE
    )
    assert low.status == "fail"
    assert "mrr 0.50 < 1" in low.reason


def test_ids_by_path_default_rules_and_repeats():
    assert result_ids({"results": [{"id": "a"}, {"doc_id": "b"}, "c"]}) == ["a", "b", "c"]
    assert result_ids([{"document_id": 7}, {"other": 1}]) == ["7"]
    assert result_ids(
        {"hits": [{"_source": {"doc": "x"}}]}, parse_id_path("hits[*]._source.doc")
    ) == ["x"]
    assert result_ids([[1, 2], [3]], parse_id_path("[*][0]")) == ["1", "3"]
    assert result_ids({"a": 1}) == []
    travel = record_of("travel")
    result = run_check(
        {"retrieval": {"tool": "search_docs", "relevant": ["doc-5"], "k": 1}}, travel
    )
    assert result.metrics is not None
    assert (result.metrics["retrieved"], result.metrics["hits"]) == (1, 1)  # doc-5 counted once


def test_not_called_fails_and_nothing_relevant_is_skipped():
    agent = ragagents.build_agent(ScriptedModel(["no search"]), Toolset([ragagents.search_docs]))
    session = agent.session()
    session.run_sync("leave")
    record = SessionRecord(session.traces)
    result = run_check({"retrieval": {"tool": "search_docs", "relevant": ["doc-3"]}}, record)
    assert result.status == "fail"
    assert result.reason == "search_docs was not called; it should have retrieved doc-3"
    skipped = run_check({"retrieval": {"tool": "search_docs", "relevant": []}}, LEAVE)
    assert skipped.status == "skip"
    assert "unanswerable" in skipped.reason and "doc-9" in skipped.reason


def test_every_problem_of_a_retrieval_spec_is_reported():
    found = problems_of(
        {
            "retrieval": {
                "tool": "search_doc",
                "relevant": [True],
                "k": 0,
                "min_recal": 0.5,
                "min_mrr": 2,
                "id_path": "results[*",
                "calls": "some",
            }
        }
    )
    text = "\n".join(found)
    assert "unknown key 'min_recal' (did you mean 'min_recall'?)" in text
    assert "unknown tool 'search_doc' (did you mean 'search_docs'?)" in text
    assert "expected a positive integer, got 0" in text
    assert "expected 0 to 1, got 2" in text
    assert "malformed id_path 'results[*'" in text
    assert "expected all, first or last" in text
    assert "the relevant ids" in text
    assert problems_of({"retrieval": {"tool": "search_docs"}}) == [
        "expect.retrieval: retrieval needs 'relevant': the relevant ids"
    ]


@settings(max_examples=200)
@given(st.text(max_size=60))
def test_any_id_path_parses_or_says_where_it_is_malformed(text: str):
    steps: list[Any] | str
    try:
        steps = parse_id_path(text)
    except ValueError as exc:
        steps = str(exc)
    assert steps if isinstance(steps, list) else "id_path" in steps


@pytest.mark.timeout(60)
def test_hostile_tool_results_are_read_in_bounded_time():
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    wide = {"results": [{"id": f"d{i}"} for i in range(100_000)]}
    assert result_ids(deep) == []
    assert len(result_ids(wide)) == 100_000
    assert len(result_ids(wide, parse_id_path("results[*].id"))) == 100_000


def test_grounded_in_the_retrieved_chunks_numbers_ids_and_quotes():
    ok = run_check({"retrieval_grounded": "search_docs"}, LEAVE)
    assert ok.status == "pass", ok.reason
    invented = record_of("leave invent")
    bad = run_check({"retrieval_grounded": "search_docs"}, invented)
    assert bad.status == "fail"
    assert "states 'doc-4', '30', found in none of what search_docs returned (1 call)" in (
        bad.reason
    )
    assert bad.metrics == {"tool": "search_docs", "claims": 2, "ungrounded": 2}
    agent = ragagents.build_agent(
        ScriptedModel(
            [call("search_docs", query="leave"), 'The page says "annual leave is unlimited".']
        ),
        Toolset([ragagents.search_docs]),
    )
    session = agent.session()
    session.run_sync("leave")
    quoted = run_check({"retrieval_grounded": "search_docs"}, SessionRecord(session.traces))
    assert quoted.status == "fail"
    assert "the quotes 'annual leave is unlimited'" in quoted.reason


SUITE = """\
suite: rag
agent: ragagents:build_agent
tools: real
judge_when: always
cases:
  - name: faithful
    input: "leave"
    expect:
      retrieval: {tool: search_docs, relevant: [doc-3], k: 3, min_recall: 1}
      faithfulness: search_docs
  - name: invented
    input: "leave invent"
    expect:
      retrieval: {tool: search_docs, relevant: {doc-3: 2, doc-9: 1}, k: 3}
      faithfulness: {tool: search_docs, max_hallucination_rate: 0.5}
"""


def write_suite(tmp_path: Path, text: str = SUITE) -> Path:
    path = tmp_path / "rag.eval.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_judged_faithfulness_counts_claims_and_is_cached(tmp_path: Path):
    suite = write_suite(tmp_path)
    options = {"model": ragagents.model(), "judge_model": ragagents.judge_function()}
    report = evaluate(suite, cache_dir=tmp_path / ".cache", **options)
    verdicts = {c.case.name: c.verdict for c in report.cases}
    assert verdicts == {"faithful": "pass", "invented": "fail"}
    invented = next(c for c in report.cases if c.case.name == "invented").trials[0]
    faith = next(c for c in invented.checks if c.check == "faithfulness")
    assert faith.kind == "judged"
    assert "faithfulness-v1" in faith.reason and "claims-judge" in faith.reason
    assert "not found: 'You get 30 days of leave'" in faith.reason
    assert faith.metrics is not None and faith.metrics["hallucination_rate"] == 1.0
    (quality,) = report.summary()["quality"]
    assert quality["faithfulness"]["claims"] == 2
    assert quality["faithfulness"]["hallucination_rate"] == 0.5
    assert quality["retrieval"][0]["queries"] == 2
    assert report.judge_calls == 2
    again = evaluate(suite, cache_dir=tmp_path / ".cache", **options)
    assert again.judge_calls == 0  # graded by content: the verdicts came from the cache
    assert [c.verdict for c in again.cases] == ["pass", "fail"]


def test_an_unreadable_judge_answer_is_inconclusive_and_no_judge_skips(tmp_path: Path):
    suite = write_suite(tmp_path)
    report = evaluate(
        suite,
        model=ragagents.model(),
        judge_model=ragagents.judge_function(raw="I think it is fine"),
        cache=False,
    )
    faith = next(c for c in report.cases[0].trials[0].checks if c.check == "faithfulness")
    assert faith.status == "inconclusive"
    assert "not a JSON object" in faith.reason
    assert report.cases[0].verdict == "fail"  # inconclusive counts as a failure by default
    skipped = evaluate(suite, model=ragagents.model(), cache=False)
    faith = next(c for c in skipped.cases[0].trials[0].checks if c.check == "faithfulness")
    assert faith.status == "skip" and "no judge model" in faith.reason
    assert skipped.cases[0].verdict == "pass"


def test_a_bad_faithfulness_spec_is_a_config_error_with_its_line(tmp_path: Path):
    text = SUITE.replace("max_hallucination_rate: 0.5", "max_hallucination_rate: 5, foo: 1")
    with pytest.raises(ConfigError) as caught:
        evaluate(write_suite(tmp_path, text), model=ragagents.model(), cache=False)
    problems = "\n".join(caught.value.problems or [])
    assert "rag.eval.yaml:15:" in problems
    assert "unknown key 'foo'" in problems


def test_quality_aggregates_macro_and_micro_over_trials(tmp_path: Path):
    text = SUITE.replace("judge_when: always", "judge_when: always\ntrials: 3")
    report = evaluate(write_suite(tmp_path, text), model=ragagents.model(), cache=False)
    (quality,) = quality_summary(report.cases)
    (retrieval,) = quality["retrieval"]
    assert retrieval["queries"] == 6
    # faithful: recall 1 (1 of 1); invented: recall 1 (2 of 2) at k=3 -> both 1.
    assert retrieval["macro"]["recall"] == 1.0
    assert retrieval["micro"]["recall"] == 1.0
    assert json.loads(json.dumps(quality)) == quality


def test_the_judge_reads_each_retrieved_passage_with_its_id():
    from toolproof.evals._retrieval import faithfulness_messages, passages

    content = json.dumps({"results": [{"id": "doc-3", "text": "25 days."}, {"text": "No id."}]})
    assert passages(content) == ["[doc-3] 25 days.", "No id."]
    assert passages('{"results": [{"id": 1}]}') == ['{"results": [{"id": 1}]}']  # no text
    assert passages("plain text") == ["plain text"]
    messages = faithfulness_messages("It is 25 days.", passages(content), "leave?")
    prompt = messages[1].content
    assert "[1] [doc-3] 25 days.\n\n[2] No id." in prompt
    assert prompt.index("QUESTION: leave?") < prompt.index("CONTEXT") < prompt.index("ANSWER:")


@pytest.mark.parametrize("level", [0.8, 0.95])
def test_each_retrieval_metric_mean_has_its_interval(tmp_path: Path, level: float):
    from toolproof._statistics import mean_interval
    from toolproof.evals._quality import quality_of
    from toolproof.rag._metrics import METRICS

    text = SUITE.replace("judge_when: always", "judge_when: always\ntrials: 3")
    report = evaluate(write_suite(tmp_path, text), model=ragagents.model(), cache=False)
    gathered: dict[str, dict[str, list[dict]]] = {}
    for case in report.cases:
        for trial in case.trials:
            for check in trial.checks:
                if check.check == "retrieval" and check.metrics is not None:
                    per = gathered.setdefault(case.case.suite, {})
                    per.setdefault("retrieval", []).append(check.metrics)
    (quality,) = quality_of(gathered, level=level)
    (retrieval,) = quality["retrieval"]
    for name in METRICS:
        values = [m[name] for m in gathered[quality["suite"]]["retrieval"] if m[name] is not None]
        if not values:
            assert name not in retrieval["intervals"]
            continue
        want = mean_interval(values, level=level)
        got = retrieval["intervals"][name]
        assert got["estimate"] == pytest.approx(retrieval["macro"][name])
        bounds = (got["low"], got["high"], got["level"])
        assert bounds == pytest.approx((want.low, want.high, level))
        assert 0 <= got["low"] <= got["estimate"] <= got["high"] <= 1


def test_the_quality_figures_have_the_runs_level_whichever_way_they_are_asked_for(
    tmp_path: Path,
):
    text = SUITE.replace(
        "judge_when: always", "judge_when: always\ntrials: 3\nstatistics: {confidence: 0.8}"
    )
    report = evaluate(write_suite(tmp_path, text), model=ragagents.model(), cache=False)
    assert report.statistics.level == 0.8
    quality = report.quality()
    assert quality == report.summary()["quality"]
    levels = {i["level"] for q in quality for r in q["retrieval"] for i in r["intervals"].values()}
    assert levels == {0.8}
