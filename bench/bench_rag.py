"""Retrieval metrics over 100,000 ranked lists: toolproof.rag beside trec_eval (pytrec_eval).

Both compute Recall@10, Precision@10, nDCG@10, MAP@10 and MRR for the same generated queries
(lists of 20 documents, 1 to 6 graded relevant ones) in the same process; each round times
both, and the table shows the median and the spread (min to max) over the rounds, and the
ratio. The values are compared too: a mismatch stops the bench.

toolproof.rag is pure Python (it scores what a suite's retrieval tool returned, a few
thousand rankings per run); trec_eval is C. pytrec_eval's time includes building its
evaluator from the qrels, which it needs once per set of queries.

    python bench/bench_rag.py               # 100,000 lists x 3 rounds; about 1 min
    python bench/bench_rag.py --lists 20000 --rounds 5
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

K = 10


def generate(lists: int, seed: int = 7) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    runs: dict[str, list[str]] = {}
    for q in range(lists):
        pool = [f"d{n}" for n in rng.sample(range(200), 26)]
        relevant = pool[: rng.randint(1, 6)]
        qrels[f"q{q}"] = {doc: rng.randint(1, 3) for doc in relevant}
        ranking = pool[:]
        rng.shuffle(ranking)
        runs[f"q{q}"] = ranking[:20]
    return qrels, runs


def ours(qrels: dict[str, dict[str, int]], runs: dict[str, list[str]]) -> dict[str, float]:
    from toolproof.rag import reciprocal_rank, score_ranking, summarize

    scores = [score_ranking(runs[q], qrels[q], K) for q in qrels]
    summary = summarize(scores)
    mrr = math.fsum(reciprocal_rank(runs[q], qrels[q]) or 0.0 for q in qrels) / len(qrels)
    return {
        "recall": summary.macro["recall"] or 0.0,
        "precision": summary.macro["precision"] or 0.0,
        "ndcg": summary.macro["ndcg"] or 0.0,
        "map": summary.macro["map"] or 0.0,
        "mrr": mrr,
    }


def reference(qrels: dict[str, dict[str, int]], runs: dict[str, list[str]]) -> dict[str, float]:
    import pytrec_eval

    measures = {f"recall_{K}", f"P_{K}", f"ndcg_cut_{K}", f"map_cut_{K}", "recip_rank"}
    # A run is a mapping of document to score: the list's order as descending scores.
    scored = {q: {doc: float(len(r) - i) for i, doc in enumerate(r)} for q, r in runs.items()}
    results = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(scored)
    n = len(results)

    def mean(name: str) -> float:
        return math.fsum(r[name] for r in results.values()) / n

    return {
        "recall": mean(f"recall_{K}"),
        "precision": mean(f"P_{K}"),
        "ndcg": mean(f"ndcg_cut_{K}"),
        "map": mean(f"map_cut_{K}"),
        "mrr": mean("recip_rank"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lists", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    qrels, runs = generate(args.lists)
    times: dict[str, list[float]] = {"toolproof.rag": [], "pytrec_eval": []}
    for _ in range(args.rounds):
        for name, function in (("toolproof.rag", ours), ("pytrec_eval", reference)):
            started = time.perf_counter()
            values = function(qrels, runs)
            times[name].append(time.perf_counter() - started)
            if name == "toolproof.rag":
                mine = values
            else:
                for metric, value in values.items():
                    if not math.isclose(mine[metric], value, abs_tol=1e-9):
                        raise SystemExit(f"{metric}: toolproof {mine[metric]} != {value}")
    print(f"{args.lists:,} ranked lists of 20, k={K}, {args.rounds} rounds; values equal")
    print(f"{'':14} {'median s':>9} {'min-max s':>14} {'lists/s':>10}")
    for name, series in times.items():
        median = statistics.median(series)
        spread = f"{min(series):.2f}-{max(series):.2f}"
        print(f"{name:14} {median:9.2f} {spread:>14} {args.lists / median:10,.0f}")
    ratio = statistics.median(times["toolproof.rag"]) / statistics.median(times["pytrec_eval"])
    print(f"ratio toolproof.rag / pytrec_eval: {ratio:.2f}")


if __name__ == "__main__":
    main()
