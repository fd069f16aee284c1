"""Replay grading on one process vs a local Ray cluster, in the same run.

A SQLite store of ``--traces`` recorded runs (~4 tool calls each, default 200,000) is replayed
in tools mode with grading twice: in this process (the default executor), then with
``executor="ray"`` on a local cluster of ``--cpus`` workers (default: this machine's CPUs).
Both reports must agree sample for sample; the speed-up is printed.

Run: ``python bench/bench_ray.py`` (``--traces N``, ``--cpus N``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_replay import TOOLS, make_traces

from toolproof._executor import RayExecutor
from toolproof.replay import TraceStore, replay

RULES = {"tools": {"list_incidents": {"max_limit": 20}}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=200_000)
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    import ray

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "traces.db"
        begin = time.perf_counter()
        with TraceStore(path) as store:
            traces = make_traces(args.traces)
            for start in range(0, len(traces), 2000):
                store.add_many(traces[start : start + 2000])
            del traces
        built = time.perf_counter() - begin

        begin = time.perf_counter()
        local = replay(path, tools=TOOLS, rules=RULES)
        one = time.perf_counter() - begin

        begin = time.perf_counter()
        ray.init(
            num_cpus=args.cpus,
            include_dashboard=False,
            object_store_memory=300 * 1024 * 1024,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}},
        )
        startup = time.perf_counter() - begin
        executor = RayExecutor()
        replay(path, tools=TOOLS, rules=RULES, executor=executor, filter=None)  # warm workers
        begin = time.perf_counter()
        remote = replay(path, tools=TOOLS, rules=RULES, executor=executor)
        many = time.perf_counter() - begin
        ray.shutdown()

    assert len(local.samples) == len(remote.samples) == args.traces
    assert [(s.trace_id, s.grade) for s in local.samples] == [
        (s.trace_id, s.grade) for s in remote.samples
    ]
    assert local.counts["pass"] == args.traces, local.summary()
    print(f"replay + grading, tools mode: {args.traces:,} stored traces of ~4 tool calls")
    print(f"(store built in {built:.0f} s; Ray started in {startup:.1f} s, not counted)\n")
    print("| executor | time | traces/s |")
    print("|---|---|---|")
    print(f"| one process (local) | {one:.1f} s | {args.traces / one:,.0f} |")
    print(f"| Ray, {args.cpus} local workers | {many:.1f} s | {args.traces / many:,.0f} |")
    print(f"\nspeed-up: {one / many:.2f}×")


if __name__ == "__main__":
    main()
