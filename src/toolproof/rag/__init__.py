"""Retrieval quality: ranking metrics over the documents a retrieval tool returned.

The functions take a ranking (document ids, best first, as the tool returned them) and the
documents labelled relevant (a set of ids, or a mapping of id to grade), and return the
value trec_eval computes for the same ranking. :func:`score_ranking` computes every metric
at once and :func:`summarize` averages many queries (macro, and micro recall / precision).
Suites use them through ``expect: {retrieval: ...}`` (see docs/rag.md); the conventions
where libraries differ are in :mod:`toolproof.rag._metrics`.

Example:
    ```python
    from toolproof.rag import score_ranking, summarize

    scores = score_ranking(["doc-3", "doc-9", "doc-7"], {"doc-3": 2, "doc-7": 1}, k=5)
    scores.recall, scores.mrr, scores.ndcg  # (1.0, 1.0, 0.95...)
    ```
"""

from __future__ import annotations

from toolproof.rag._metrics import (
    RankingScores,
    RetrievalSummary,
    average_precision,
    hit_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    score_ranking,
    summarize,
)

__all__ = [
    "RankingScores",
    "RetrievalSummary",
    "average_precision",
    "hit_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "score_ranking",
    "summarize",
]
