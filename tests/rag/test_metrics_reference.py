"""The ranking metrics equal trec_eval's (through pytrec_eval) on generated rankings.

Rankings are generated with hypothesis: ties in score (trec_eval re-sorts by score and breaks
ties by document id, descending: the test feeds toolproof that same order), graded labels,
documents judged not relevant, lists shorter than ``k``, rankings that repeat a document, and
queries where nothing is relevant (toolproof: ``None``; trec_eval: 0).
"""

from __future__ import annotations

import math

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.rag import (
    average_precision,
    hit_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    score_ranking,
    summarize,
)

DOCS = [f"d{i}" for i in range(12)]
KS = (1, 3, 5, 20)


def trec_order(run: dict[str, float]) -> list[str]:
    """The order trec_eval ranks a run in: score descending, then document id descending."""
    return sorted(run, key=lambda doc: (run[doc], doc), reverse=True)


def reference(qrels: dict[str, int], run: dict[str, float], k: int) -> dict[str, float]:
    measures = {f"recall_{k}", f"P_{k}", f"success_{k}", f"ndcg_cut_{k}", f"map_cut_{k}"}
    measures |= {"recip_rank", "map"}
    evaluator = pytrec_eval.RelevanceEvaluator({"q": qrels}, measures)
    return evaluator.evaluate({"q": run})["q"]


runs = st.dictionaries(
    st.sampled_from(DOCS), st.integers(0, 4).map(float), min_size=0, max_size=len(DOCS)
)
qrels_st = st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), min_size=1, max_size=8)


@settings(max_examples=150)
@given(run=runs, qrels=qrels_st, k=st.sampled_from(KS))
def test_every_metric_equals_trec_eval(run: dict[str, float], qrels: dict[str, int], k: int):
    ranking = trec_order(run)
    relevant = dict(qrels)
    if not any(g >= 1 for g in qrels.values()):
        assert score_ranking(ranking, relevant, k).recall is None
        return
    if not run:
        run = {"unlabelled-doc": 1.0}  # trec_eval needs a retrieved document per query
        ranking = ["unlabelled-doc"]
    ref = reference(qrels, run, k)
    assert recall_at_k(ranking, relevant, k) == pytest.approx(ref[f"recall_{k}"])
    assert precision_at_k(ranking, relevant, k) == pytest.approx(ref[f"P_{k}"])
    assert hit_at_k(ranking, relevant, k) == pytest.approx(ref[f"success_{k}"])
    assert ndcg_at_k(ranking, relevant, k) == pytest.approx(ref[f"ndcg_cut_{k}"])
    assert average_precision(ranking, relevant, k) == pytest.approx(ref[f"map_cut_{k}"])
    assert average_precision(ranking, relevant) == pytest.approx(ref["map"])
    assert reciprocal_rank(ranking, relevant) == pytest.approx(ref["recip_rank"])
    scores = score_ranking(ranking, relevant, k)
    assert scores.recall == pytest.approx(ref[f"recall_{k}"])
    assert scores.precision == pytest.approx(ref[f"P_{k}"])
    assert scores.hit == pytest.approx(ref[f"success_{k}"])
    assert scores.mrr == pytest.approx(reciprocal_rank(ranking, relevant, k))
    assert scores.ndcg == pytest.approx(ref[f"ndcg_cut_{k}"])
    assert scores.map == pytest.approx(ref[f"map_cut_{k}"])
    whole = score_ranking(ranking, relevant)
    assert whole.map == pytest.approx(ref["map"])
    assert whole.mrr == pytest.approx(ref["recip_rank"])


@settings(max_examples=80)
@given(
    ranking=st.lists(st.sampled_from(DOCS), max_size=20),
    qrels=qrels_st,
    k=st.sampled_from(KS),
)
def test_a_repeated_document_counts_once_at_its_first_rank(
    ranking: list[str], qrels: dict[str, int], k: int
):
    deduplicated = list(dict.fromkeys(ranking))
    assert score_ranking(ranking, qrels, k) == score_ranking(deduplicated, qrels, k)


@settings(max_examples=60)
@given(queries=st.lists(st.tuples(runs, qrels_st), min_size=1, max_size=12), k=st.sampled_from(KS))
def test_macro_means_equal_trec_eval_means_and_micro_recall_pools(
    queries: list[tuple[dict[str, float], dict[str, int]]], k: int
):
    qrels = {f"q{i}": q for i, (_, q) in enumerate(queries)}
    run = {f"q{i}": (r or {"unlabelled-doc": 1.0}) for i, (r, _) in enumerate(queries)}
    defined = [q for q in qrels if any(g >= 1 for g in qrels[q].values())]
    scores = [score_ranking(trec_order(run[q]), qrels[q], k) for q in qrels]
    summary = summarize(scores)
    assert summary.queries == len(queries)
    assert summary.undefined == len(queries) - len(defined)
    if not defined:
        assert summary.macro["recall"] is None and summary.micro_recall is None
        return
    evaluator = pytrec_eval.RelevanceEvaluator(
        {q: qrels[q] for q in defined}, {f"recall_{k}", "recip_rank", f"ndcg_cut_{k}"}
    )
    ref = evaluator.evaluate({q: run[q] for q in defined})
    for ours, theirs in (("recall", f"recall_{k}"), ("ndcg", f"ndcg_cut_{k}")):
        mean = math.fsum(ref[q][theirs] for q in defined) / len(defined)
        assert summary.macro[ours] == pytest.approx(mean)
    relevant = sum(sum(1 for g in qrels[q].values() if g >= 1) for q in defined)
    found = sum(s.hits for s in scores)
    assert summary.micro_recall == pytest.approx(found / relevant)
    assert summary.micro_precision == pytest.approx(found / (k * len(defined)))


def test_edge_cases_by_hand():
    # k larger than the list; nothing retrieved; nothing relevant; grades in nDCG.
    assert recall_at_k(["a"], {"a", "b"}, k=10) == 0.5
    assert precision_at_k(["a"], {"a"}, k=10) == 0.1
    assert precision_at_k([], {"a"}) == 0.0
    assert reciprocal_rank([], {"a"}) == 0.0
    assert reciprocal_rank(["x", "a"], {"a"}, k=1) == 0.0
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, k=2) < ndcg_at_k(["a", "b"], {"a": 2, "b": 1})
    assert ndcg_at_k(["a", "b"], {"a": 2, "b": 1}) == pytest.approx(1.0)
    nothing = score_ranking(["a", "b"], {"a": 0}, k=5)
    assert (nothing.recall, nothing.mrr, nothing.defined) == (None, None, False)
    assert nothing.retrieved == 2
    assert summarize([]).macro["recall"] is None
    with pytest.raises(ValueError, match="positive integer"):
        recall_at_k(["a"], {"a"}, k=0)
    with pytest.raises(TypeError, match="not a string"):
        recall_at_k(["a"], "a")
