"""Reliability figures: what was tried against each guarantee, and what got through.

Each ``bench/_guarantee_<area>.py`` module tries to break one promise (mocking, redaction,
bounded work, durability, the files toolproof writes, the servers it starts) and returns
rows ``(guarantee, what was tried, result)``. This script runs them all and prints one
table, the one ``docs/guarantees.md`` quotes.

Run: ``python bench/bench_guarantees.py`` from the repository root (about a minute), or
``python bench/bench_guarantees.py redaction`` for one area.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

AREAS = ("mocking", "redaction", "bounds", "durability", "files", "servers")


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    areas = argv or list(AREAS)
    unknown = sorted(set(areas) - set(AREAS))
    if unknown:
        print(f"unknown area(s) {', '.join(unknown)}; choose from {', '.join(AREAS)}")
        return 2
    print("| guarantee | tried | result |")
    print("|---|---|---|")
    for area in areas:
        module = importlib.import_module(f"_guarantee_{area}")
        started = time.perf_counter()
        rows = module.measure()
        for guarantee, tried, result in rows:
            print(f"| {guarantee} | {tried} | {result} |")
        print(f"<!-- {area}: {time.perf_counter() - started:.1f} s -->", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
