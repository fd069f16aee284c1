"""How judge answers are read, and how well ``claims_backed`` finds unbacked claims.

1. The generated judge answers of ``tests/evals/judge_corpus.py`` (clean, negated,
   conditional, contrasted, questioned, two verdicts, JSON, Unicode tricks; each with its
   truth) read by toolproof's reader, beside the baseline in the same run: the reader
   toolproof used before (JSON, else the first verdict word in the first 40 characters).
   Printed as confusion matrices (truth by row, verdict read by column) and the time per
   answer.
2. The generated answers and trials of ``tests/evals/claims_corpus.py`` through
   ``claims_backed: true``: precision and recall, by family of statement.

    python bench/bench_judge.py        # a few seconds
"""

from __future__ import annotations

import collections
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "evals"))

from claims_corpus import samples  # noqa: E402
from judge_corpus import TRUTHS, corpus  # noqa: E402

from toolproof._yaml import Locator, Problems  # noqa: E402
from toolproof.evals._checks import compile_expect  # noqa: E402
from toolproof.evals._judge import parse_verdict  # noqa: E402

READ = ("PASS", "FAIL", "INCONCLUSIVE")


def first_word_reader(text: str) -> str:
    """The baseline: JSON if any, else the first verdict word in the first 40 characters."""
    raw = text.strip()
    start, end = raw.find("{"), raw.rfind("}")
    if start != -1 and end > start:
        try:
            data = json.loads(raw[start : end + 1])
        except ValueError:
            data = None
        if isinstance(data, dict):
            verdict = str(data.get("verdict", "")).strip().upper()
            if verdict in READ:
                return verdict
    match = re.search(r"\b(PASS|FAIL|INCONCLUSIVE)\b", raw.upper()[:40])
    return match.group(1) if match else "INCONCLUSIVE"


def matrix(name: str, read: Callable[[str], str], answers: list) -> None:
    started = time.perf_counter()
    counts = collections.Counter((a.truth, read(a.text)) for a in answers)
    took = (time.perf_counter() - started) / len(answers) * 1e6
    false_pass = sum(n for (truth, got), n in counts.items() if got == "PASS" and truth != "PASS")
    print(
        f"\n{name}: {len(answers)} answers, {took:.1f} µs each, {false_pass} read as PASS "
        "without saying PASS"
    )
    print(f"{'truth / read':>14}" + "".join(f"{r:>14}" for r in READ))
    for truth in TRUTHS:
        print(f"{truth:>14}" + "".join(f"{counts[(truth, r)]:>14}" for r in READ))


def claims() -> None:
    problems = Problems(Locator(Path("bench.eval.yaml")))
    [check] = compile_expect({"claims_backed": True}, tools=None, problems=problems, path=())
    rows: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    generated = list(samples())
    started = time.perf_counter()
    for sample in generated:
        flagged = check(sample.record).status == "fail"
        kind = ("t" if flagged == sample.unbacked else "f") + ("p" if flagged else "n")
        rows[sample.family][kind] += 1
        rows["all"][kind] += 1
    took = (time.perf_counter() - started) / len(generated) * 1e6
    print(f"\nclaims_backed: {len(generated)} answers with their trials, {took:.0f} µs each")
    print(f"{'family':>16} {'TP':>6} {'FP':>6} {'FN':>6} {'TN':>6} {'precision':>10} {'recall':>8}")
    for family, c in rows.items():
        precision = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else float("nan")
        recall = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else float("nan")
        print(
            f"{family:>16} {c['tp']:>6} {c['fp']:>6} {c['fn']:>6} {c['tn']:>6} "
            f"{precision:>10.3f} {recall:>8.3f}"
        )


def main() -> None:
    answers = corpus()
    matrix("baseline (first verdict word)", first_word_reader, answers)
    matrix("toolproof", lambda text: parse_verdict(text)[0], answers)
    claims()


if __name__ == "__main__":
    main()
