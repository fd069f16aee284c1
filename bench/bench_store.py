"""Trace store benchmark: SQLite and PostgreSQL side by side, in the same run.

For each engine: batched ingest (``add_many`` of 500), the recorder end to end (four writer
processes at once), reading every trace back (decoding included), and tools-mode replay with
grading. The traces are the ~4-tool-call runs of ``bench_replay.py``.

PostgreSQL: ``TOOLPROOF_BENCH_POSTGRES`` (a URL to an empty database or schema), else a
throwaway local server started like the tests' (needs PostgreSQL's binaries).

Run: ``python bench/bench_store.py`` (``--traces N``, default 10,000).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_replay import TOOLS, make_traces

from toolproof import Trace
from toolproof.replay import TraceStore, replay

WRITER = """
import sys
from toolproof import Trace
from toolproof.replay import Recorder, Redactor
url, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
recorder = Recorder(url, redactor=Redactor.none(), batch_size=500, max_queue=count + 1)
for n in range(count):
    recorder.record(Trace(id=f"{prefix}-{n}", input=f"q {n}", model="m", output="ok"))
assert recorder.close(600) and recorder.stats.written == count, recorder.stats
"""


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    given = os.environ.get("TOOLPROOF_BENCH_POSTGRES")
    if given:
        yield given
        return
    import psycopg

    from _postgres import local_server

    with local_server() as server:
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        yield f"{server}?options=-csearch_path%3D{schema}"


def measure(location: str, traces: list[Trace], writers: int) -> dict[str, float]:
    count = len(traces)
    with TraceStore(location) as store:
        begin = time.perf_counter()
        for start in range(0, count, 500):
            store.add_many(traces[start : start + 500])
        ingest = count / (time.perf_counter() - begin)
        begin = time.perf_counter()
        read = sum(1 for _ in store.query())
        reading = read / (time.perf_counter() - begin)
        assert read == count
    replay(location, tools=TOOLS, filter=None)  # warm-up
    begin = time.perf_counter()
    report = replay(location, tools=TOOLS)
    replaying = len(report.samples) / (time.perf_counter() - begin)
    assert report.counts["pass"] == count, report.summary()

    each = count // writers
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    begin = time.perf_counter()
    processes = [
        subprocess.Popen([sys.executable, "-c", WRITER, location, f"w{n}", str(each)], env=env)
        for n in range(writers)
    ]
    assert all(p.wait(600) == 0 for p in processes)
    recorders = writers * each / (time.perf_counter() - begin)
    with TraceStore(location) as store:
        assert store.count() == count + writers * each
    return {
        "ingest (add_many of 500)": ingest,
        f"recorders, {writers} processes at once": recorders,
        "read back + decode": reading,
        "replay + grading, tools mode": replaying,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--writers", type=int, default=4)
    args = parser.parse_args()
    traces = make_traces(args.traces)
    with tempfile.TemporaryDirectory() as folder, postgres() as url:
        sqlite = measure(str(Path(folder) / "bench.db"), traces, args.writers)
        pg = measure(url, traces, args.writers)
    print(f"trace store, {args.traces:,} traces of ~4 tool calls (traces/s, higher is better)\n")
    print("| | SQLite | PostgreSQL | PostgreSQL / SQLite |")
    print("|---|---|---|---|")
    for name, lite in sqlite.items():
        print(f"| {name} | {lite:,.0f} | {pg[name]:,.0f} | {pg[name] / lite:.2f}× |")


if __name__ == "__main__":
    main()
