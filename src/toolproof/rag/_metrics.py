"""Ranking metrics of retrieval: one ranked list against the documents labelled relevant.

The values equal trec_eval's (the reference the tests compare with, through pytrec_eval) on
the same ranking; where information-retrieval libraries differ, toolproof chose:

- **Relevance.** ``relevant`` is a set of ids (each of grade 1) or a mapping of id to grade.
  A grade of 1 or more is relevant; 0 or less is judged not relevant. Grades matter only to
  nDCG (linear gain: a grade-2 document gains 2, as in trec_eval's ``ndcg_cut``).
- **Order.** The ranking is the order the retriever returned. trec_eval re-sorts a run by
  score and breaks ties by document id (descending); toolproof never re-sorts, so feed it the
  order your users saw.
- **Duplicates.** A document returned twice counts once, at its first rank; the repeat is
  dropped before the cut at ``k`` (a trec_eval run is a mapping, so it cannot repeat either).
- **Cut-off.** ``k=None`` reads the whole list. Precision@k divides by ``k`` even when fewer
  than ``k`` documents came back (trec_eval's ``P_k``); a ``k`` larger than the list is fine.
- **Nothing relevant.** When no document is relevant (an unanswerable question), every metric
  is ``None``: undefined, and left out of averages. trec_eval reports 0 there.
- **Average precision** divides by the number of relevant documents, retrieved or not
  (trec_eval's ``map``; with ``k``, its ``map_cut_k``).
- **Aggregates.** Macro means average the defined per-query values; micro recall divides all
  relevant documents retrieved (within ``k``) by all relevant documents, micro precision by
  all the ``k`` slots.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

Relevance = Mapping[str, float] | Iterable[str]

#: The metrics of :class:`RankingScores`, in report order.
METRICS = ("recall", "precision", "hit", "mrr", "ndcg", "map")


def _grades(relevant: Relevance) -> dict[str, float]:
    if isinstance(relevant, Mapping):
        return {str(doc): float(grade) for doc, grade in relevant.items()}
    if isinstance(relevant, str):
        raise TypeError("relevant must be a set of ids or a mapping of id to grade, not a string")
    return {str(doc): 1.0 for doc in relevant}


def _top(ranking: Sequence[Any], k: int | None) -> list[str]:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    seen: dict[str, None] = {}
    for doc in ranking:
        key = str(doc)
        if key not in seen:
            seen[key] = None
            if k is not None and len(seen) == k:
                break
    return list(seen)


def _relevant_ids(grades: Mapping[str, float]) -> set[str]:
    return {doc for doc, grade in grades.items() if grade >= 1}


def recall_at_k(ranking: Sequence[Any], relevant: Relevance, k: int | None = None) -> float | None:
    """The share of the relevant documents found in the first ``k`` of ``ranking``.

    Args:
        ranking: Document ids, best first.
        relevant: The relevant ids, or a mapping of id to grade (1 or more is relevant).
        k: The cut-off (``None``: the whole list).

    Returns:
        A value in [0, 1], or ``None`` when nothing is relevant.
    """
    wanted = _relevant_ids(_grades(relevant))
    if not wanted:
        return None
    return sum(1 for doc in _top(ranking, k) if doc in wanted) / len(wanted)


def precision_at_k(
    ranking: Sequence[Any], relevant: Relevance, k: int | None = None
) -> float | None:
    """The share of the first ``k`` slots that hold a relevant document.

    Divides by ``k`` even when fewer documents came back (by the list's length when ``k`` is
    ``None``; 0 for an empty list). ``None`` when nothing is relevant.
    """
    wanted = _relevant_ids(_grades(relevant))
    if not wanted:
        return None
    top = _top(ranking, k)
    slots = k if k is not None else len(top)
    return sum(1 for doc in top if doc in wanted) / slots if slots else 0.0


def hit_at_k(ranking: Sequence[Any], relevant: Relevance, k: int | None = None) -> float | None:
    """1.0 when a relevant document is among the first ``k``, else 0.0 (``None``: none is)."""
    wanted = _relevant_ids(_grades(relevant))
    if not wanted:
        return None
    return 1.0 if any(doc in wanted for doc in _top(ranking, k)) else 0.0


def reciprocal_rank(
    ranking: Sequence[Any], relevant: Relevance, k: int | None = None
) -> float | None:
    """``1 / rank`` of the first relevant document within ``k`` (0.0 if none; ``None``: none is).

    The mean over queries is the MRR.
    """
    wanted = _relevant_ids(_grades(relevant))
    if not wanted:
        return None
    for rank, doc in enumerate(_top(ranking, k), 1):
        if doc in wanted:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranking: Sequence[Any], relevant: Relevance, k: int | None = None) -> float | None:
    """Normalized discounted cumulative gain of the first ``k`` (linear gain, log2 discount).

    ``DCG = sum(grade / log2(rank + 1))`` over the first ``k`` documents, divided by the DCG
    of the ideal order of every labelled document. ``None`` when nothing is relevant.
    """
    grades = _grades(relevant)
    if not _relevant_ids(grades):
        return None
    top = _top(ranking, k)
    dcg = sum(
        grades[doc] / math.log2(rank + 1)
        for rank, doc in enumerate(top, 1)
        if grades.get(doc, 0) > 0
    )
    ideal_grades = sorted((g for g in grades.values() if g > 0), reverse=True)
    if k is not None:
        ideal_grades = ideal_grades[:k]
    ideal = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal_grades, 1))
    return dcg / ideal if ideal else 0.0


def average_precision(
    ranking: Sequence[Any], relevant: Relevance, k: int | None = None
) -> float | None:
    """Average precision: the mean of precision at the rank of each relevant document.

    Relevant documents not retrieved within ``k`` count as 0; the mean over queries is the
    MAP. ``None`` when nothing is relevant.
    """
    wanted = _relevant_ids(_grades(relevant))
    if not wanted:
        return None
    found = 0
    total = 0.0
    for rank, doc in enumerate(_top(ranking, k), 1):
        if doc in wanted:
            found += 1
            total += found / rank
    return total / len(wanted)


@dataclass(frozen=True, slots=True)
class RankingScores:
    """Every metric of one ranking at one cut-off.

    Attributes:
        k: The cut-off (``None``: the whole list).
        retrieved: Distinct documents within the cut-off.
        relevant: Relevant documents labelled (grade 1 or more).
        hits: Relevant documents within the cut-off.
        recall: Recall@k, or ``None`` when nothing is relevant (so for every metric).
        precision: Precision@k.
        hit: Hit@k (1.0 or 0.0).
        mrr: Reciprocal rank of the first relevant document within ``k``.
        ndcg: nDCG@k.
        map: Average precision within ``k``.
    """

    k: int | None
    retrieved: int
    relevant: int
    hits: int
    recall: float | None
    precision: float | None
    hit: float | None
    mrr: float | None
    ndcg: float | None
    map: float | None

    @property
    def defined(self) -> bool:
        """Whether the metrics are defined (something is relevant)."""
        return self.relevant > 0

    def to_dict(self) -> dict[str, Any]:
        """Plain data (what reports store): every field, by its name."""
        return asdict(self)


def score_ranking(
    ranking: Sequence[Any], relevant: Relevance, k: int | None = None
) -> RankingScores:
    """Every metric of ``ranking`` at cut-off ``k`` at once.

    Args:
        ranking: Document ids, best first (repeats count once, at their first rank).
        relevant: The relevant ids, or a mapping of id to grade.
        k: The cut-off (``None``: the whole list).

    Example:
        ```python
        scores = score_ranking(["doc-3", "doc-9", "doc-7"], {"doc-3": 2, "doc-7": 1}, k=5)
        assert scores.recall == 1.0 and scores.mrr == 1.0
        ```
    """
    grades = _grades(relevant)
    wanted = _relevant_ids(grades)
    top = _top(ranking, k)
    if not wanted:
        return RankingScores(k, len(top), 0, 0, None, None, None, None, None, None)
    # One pass computes what the single-metric functions above compute (tests hold them equal).
    hits = 0
    first = 0
    total_precision = 0.0
    dcg = 0.0
    for rank, doc in enumerate(top, 1):
        grade = grades.get(doc, 0.0)
        if grade > 0:
            dcg += grade / math.log2(rank + 1)
        if doc in wanted:
            hits += 1
            first = first or rank
            total_precision += hits / rank
    ideal_grades = sorted((g for g in grades.values() if g > 0), reverse=True)
    if k is not None:
        ideal_grades = ideal_grades[:k]
    ideal = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal_grades, 1))
    slots = k if k is not None else len(top)
    return RankingScores(
        k=k,
        retrieved=len(top),
        relevant=len(wanted),
        hits=hits,
        recall=hits / len(wanted),
        precision=hits / slots if slots else 0.0,
        hit=1.0 if hits else 0.0,
        mrr=1.0 / first if first else 0.0,
        ndcg=dcg / ideal if ideal else 0.0,
        map=total_precision / len(wanted),
    )


@dataclass(frozen=True, slots=True)
class RetrievalSummary:
    """Metrics over many queries.

    Attributes:
        queries: Queries summarized.
        undefined: Queries with nothing relevant (left out of every mean).
        macro: The mean of each metric over the defined queries (``None`` when none is).
        micro_recall: All relevant documents retrieved / all relevant documents.
        micro_precision: All relevant documents retrieved / all the ``k`` slots.
    """

    queries: int
    undefined: int
    macro: dict[str, float | None] = field(default_factory=dict)
    micro_recall: float | None = None
    micro_precision: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (what reports store)."""
        return {
            "queries": self.queries,
            "undefined": self.undefined,
            "macro": dict(self.macro),
            "micro": {"recall": self.micro_recall, "precision": self.micro_precision},
        }


def summarize(scores: Iterable[RankingScores]) -> RetrievalSummary:
    """Macro and micro figures over the rankings of many queries.

    Example:
        ```python
        summary = summarize(score_ranking(r, rel, k=5) for r, rel in queries)
        print(summary.macro["mrr"], summary.micro_recall)
        ```
    """
    items = list(scores)
    defined = [s for s in items if s.defined]
    macro: dict[str, float | None] = {}
    for name in METRICS:
        values = [v for v in (getattr(s, name) for s in defined) if v is not None]
        macro[name] = math.fsum(values) / len(values) if values else None
    relevant = sum(s.relevant for s in defined)
    slots = sum(s.k if s.k is not None else s.retrieved for s in defined)
    hits = sum(s.hits for s in defined)
    return RetrievalSummary(
        queries=len(items),
        undefined=len(items) - len(defined),
        macro=macro,
        micro_recall=hits / relevant if relevant else None,
        micro_precision=hits / slots if slots else (0.0 if defined else None),
    )
