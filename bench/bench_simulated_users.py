"""How well the simulator-fault detector finds a simulated user's mistakes.

The labelled conversations of ``tests/data/simulated_users/`` (faithful users, and users
that reveal what they must keep until asked, invent facts, contradict themselves, or leave
before the task could finish) through ``simulator_faults``: precision and recall for "any
fault" against faithful conversations and for each kind, then the misses and false alarms.
``main`` was written with the rules; ``held_out`` after they were fixed, and never used to
tune them: its figures are the honest ones.

    python bench/bench_simulated_users.py        # under a second
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "evals"))

from simulated_users_corpus import SETS, load, scores  # noqa: E402


def main() -> None:
    for name in SETS:
        report(name)


def report(name: str) -> None:
    labelled = load(name)
    results, wrong = scores(name)
    print(f"\n== {name}: {len(labelled)} labelled conversations")
    print(f"{'':14} {'precision':>9} {'recall':>7}  (flagged / actual)")
    for score in results:
        print(
            f"{score.name:14} {score.precision:9.2f} {score.recall:7.2f}  "
            f"({score.true_positives} of {score.flagged} flagged, {score.actual} actual)"
        )
    for title, lines in wrong.items():
        print(f"\n{title} ({len(lines)}):")
        for line in lines:
            print(f"  {line}")


if __name__ == "__main__":
    main()
