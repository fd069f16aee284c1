"""Loading a suite whose cases come from a dataset: 5,000, 20,000 and 100,000 rows.

Each size is a JSONL file of rows ``{id, question, answer}`` behind a suite template with
one objective check per case. The baseline, measured in the same run on the same file, is
parsing alone: reading the file and ``json.loads`` of each line. The figure to watch is the
time per row, which stays flat when loading is linear (the target: 100,000 rows in at most
10 s); the ratio to the baseline says what the rest of loading costs (templating,
validating and compiling each row's case).

    python bench/bench_datasets.py                 # about a minute
    python bench/bench_datasets.py --sizes 5000 20000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "evals"))  # evalagents: the agent the suite names

SUITE = """\
suite: rows
agent: evalagents:build_agent
datasets:
  - file: rows.jsonl
    template:
      input: "{question}"
      expect: {final_contains: "{answer}"}
"""


def write(folder: Path, rows: int) -> Path:
    with (folder / "rows.jsonl").open("w", encoding="utf-8") as out:
        for i in range(rows):
            out.write(json.dumps({"id": f"r{i}", "question": f"q {i}", "answer": str(i)}) + "\n")
    (folder / "rows.eval.yaml").write_text(SUITE, encoding="utf-8")
    return folder / "rows.eval.yaml"


def parse_only(file: Path) -> float:
    """Seconds to read the file and parse each line (the baseline)."""
    started = time.perf_counter()
    rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]
    assert rows
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 20_000, 100_000])
    args = parser.parse_args()
    from toolproof.evals import load_suite

    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm"
        warm.mkdir()
        load_suite(write(warm, 10))  # imports and the suite models, outside the figures
        print(
            f"{'rows':>8} {'parse (s)':>10} {'load (s)':>9} {'CPU (s)':>8} {'x parse':>8} "
            f"{'µs/row':>8}"
        )
        for size in args.sizes:
            folder = Path(tmp) / str(size)
            folder.mkdir()
            path = write(folder, size)
            baseline = parse_only(folder / "rows.jsonl")
            started, cpu = time.perf_counter(), time.process_time()
            suite = load_suite(path)
            took, cpu = time.perf_counter() - started, time.process_time() - cpu
            assert len(suite.cases) == size
            print(
                f"{size:>8,} {baseline:>10.3f} {took:>9.2f} {cpu:>8.2f} {took / baseline:>8.0f} "
                f"{took / size * 1e6:>8.0f}"
            )


if __name__ == "__main__":
    main()
