"""Guarantee figures: nothing is written that cannot be read back, and no bad row or input
breaks a reader.

``measure()`` returns rows (guarantee, what was tried, result) for ``bench_guarantees.py``:
hostile traces built and round-tripped, unreadable rows planted in a real SQLite store and
read by every reader, arbitrary and mutated input fed to the trace decoder and to the
fixture-file loader with the time of the slowest input. Runs in well under a minute and
prints nothing.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import sqlite3
import string
import tempfile
import time
from pathlib import Path
from typing import Any

from toolproof import Message, ToolCall, ToolResult, Trace, Usage
from toolproof._trace import RequestSummary, Step
from toolproof.errors import ConfigError, TraceFormatError
from toolproof.replay import TraceStore
from toolproof.testing import ToolMock

TRACES = 2_000
GOOD_ROWS = 500
BAD_ROWS = 100
DECODER_INPUTS = 3_000
FIXTURE_FILES = 400


def _hostile_scalar(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            True,
            rng.randint(-(2**70), 2**70),
            10 ** rng.randint(4_300, 5_000),
            math.nan,
            math.inf,
            -math.inf,
            rng.random() * 1e300,
            "a\ud800b",
            "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 8))),
        ]
    )


def _hostile_value(rng: random.Random, depth: int = 0) -> Any:
    if depth > 4 or rng.random() < 0.4:
        return _hostile_scalar(rng)
    kind = rng.randrange(3)
    if kind == 0:
        return [_hostile_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == 1:
        return tuple(_hostile_value(rng, depth + 1) for _ in range(rng.randint(0, 3)))
    keys = [rng.choice([rng.randint(-5, 5), None, "k\udfff", f"key{depth}"]) for _ in range(3)]
    return {key: _hostile_value(rng, depth + 1) for key in keys}


def _hostile_trace(rng: random.Random, n: int) -> Trace:
    ident: Any = rng.choice([n, f"t{n}", f"t{n}\ud800"])
    call = ToolCall("lookup", {"a": _hostile_value(rng)}, ident)
    return Trace(
        id=ident,
        input="hi\udfff",
        model=rng.choice([123, "m", None]),
        metadata={"x": _hostile_value(rng), 7: _hostile_value(rng)},
        steps=[
            Step(
                1,
                RequestSummary(2),
                Message.assistant(None, [call]),
                usage=Usage(rng.randint(0, 10**6), rng.randint(0, 10**6)),
                model_name=rng.choice([123, None, "x"]),
                cost=rng.choice([None, math.inf, 0.5]),
                tool_results=[ToolResult(ident, "lookup", "ok", "c", _hostile_value(rng))],
            )
        ],
    )


def _round_trips(rng: random.Random) -> tuple[str, str, str]:
    mismatches = refused = 0
    for n in range(TRACES):
        try:
            trace = _hostile_trace(rng, n)
        except TraceFormatError:  # nesting deeper than the format allows: refused up front
            refused += 1
            continue
        text = trace.to_json()
        if Trace.from_json(text) != trace or Trace.from_dict(json.loads(text)) != trace:
            mismatches += 1
    return (
        "a built trace reads back equal (JSON text and plain data)",
        f"{TRACES:,} generated traces with huge integers, NaN/inf, lone surrogates, tuples, "
        "non-text keys, numeric ids and model names",
        f"{mismatches} mismatches ({refused} refused at construction with TraceFormatError)",
    )


def _bad_payloads(rng: random.Random) -> list[tuple[bytes, int]]:
    good = Trace(id="x", input="y").to_json().encode()
    kinds: list[tuple[bytes, int]] = [
        (b"garbage{", 1),
        (b'{"version": 9, "id": "x", "input": ""}', 1),
        (b'{"version": 1, "id": "x", "input": "", "usage": {"input_tokens": -1}}', 1),
        (b'{"version": 1, "id": "x", "input": "", "m": ' + b"[" * 500, 1),
        (good, 2),
        (bytes(rng.randrange(256) for _ in range(40)), 1),
    ]
    return [kinds[n % len(kinds)] for n in range(BAD_ROWS)]


def _corrupt_rows(rng: random.Random, folder: Path) -> tuple[str, str, str]:
    db = folder / "traces.db"
    with TraceStore(db) as store:
        store.add_many(Trace(id=f"good{n}", input=f"q{n}") for n in range(GOOD_ROWS))
    conn = sqlite3.connect(db)
    conn.executemany(
        "INSERT INTO traces (id, ts, payload, format_version) VALUES (?, ?, ?, ?)",
        [(f"bad{n}", float(n), p, v) for n, (p, v) in enumerate(_bad_payloads(rng))],
    )
    conn.commit()
    conn.close()
    logging.getLogger("toolproof.replay").disabled = True  # the warnings are counted instead
    crashes = 0
    counts: dict[str, tuple[int, int]] = {}
    try:
        with TraceStore(db) as store:
            readers = {
                "query": lambda: sum(1 for _ in store.query()),
                "payloads": lambda: sum(1 for _ in store.payloads()),
                "rows(check=True)": lambda: len(store.rows(check=True)),
            }
            for name, read in readers.items():
                store.skipped.clear()
                try:
                    counts[name] = (read(), len(store.skipped))
                except Exception:
                    crashes += 1
            for n in range(BAD_ROWS):
                try:
                    store.get(f"bad{n}")
                except TraceFormatError:
                    pass
                except Exception:
                    crashes += 1
    finally:
        logging.getLogger("toolproof.replay").disabled = False
    lost = sum(1 for read, skipped in counts.values() if (read, skipped) != (GOOD_ROWS, BAD_ROWS))
    return (
        "an unreadable stored row is skipped with a warning, never a crash; nothing else lost",
        f"{BAD_ROWS} rows (garbage, newer version, invalid fields, too deep, wrong version "
        f"column, random bytes) planted among {GOOD_ROWS} in a real SQLite store; read by "
        f"{len(counts)} readers and get() of each bad id",
        f"{crashes} crashes, {lost} readers lost or kept a row wrongly",
    )


def _decoder_inputs(rng: random.Random) -> list[bytes]:
    valid = _valid_trace_json()
    inputs: list[bytes] = []
    for n in range(DECODER_INPUTS):
        if n % 3 == 0:
            inputs.append(bytes(rng.randrange(256) for _ in range(rng.randint(0, 200))))
        elif n % 3 == 1:
            cut = rng.randrange(len(valid))
            inputs.append(valid[:cut] + bytes([rng.randrange(256)]) + valid[cut + 1 :])
        else:
            depth = rng.choice([10, 200, 5_000, 100_000])
            inputs.append(b'{"version": 1, "id": "x", "input": "", "metadata": ' + b"[" * depth)
    return inputs


def _valid_trace_json() -> bytes:
    call = ToolCall("lookup", {"user_id": 1}, "c1")
    return (
        Trace(
            id="t",
            input="who?",
            steps=[
                Step(
                    1,
                    RequestSummary(2),
                    Message.assistant(None, [call]),
                    usage=Usage(10, 5),
                    tool_results=[ToolResult("c1", "lookup", "ok", '{"a": 1}', {"a": 1})],
                )
            ],
            metadata={"case": 1},
        )
        .to_json()
        .encode()
    )


def _fuzz_decoder(rng: random.Random) -> tuple[str, str, str]:
    undocumented = 0
    slowest = 0.0
    for payload in _decoder_inputs(rng):
        started = time.perf_counter()
        try:
            Trace.from_json(payload)
        except TraceFormatError:
            pass
        except Exception:
            undocumented += 1
        slowest = max(slowest, time.perf_counter() - started)
    return (
        "the trace decoder raises only TraceFormatError, quickly",
        f"{DECODER_INPUTS:,} inputs: random bytes, valid traces with one byte changed, "
        "nesting up to 100,000 levels",
        f"{undocumented} other errors, max {slowest * 1000:.2f} ms per input",
    )


def _fixture_document(rng: random.Random) -> Any:
    values = [
        None,
        1,
        -1,
        "KeyError: x",
        "json.JSONDecodeError",
        "UnicodeDecodeError",
        "never_imported.Error",
        [1, "a"],
        {"a": [None]},
        True,
        "x",
    ]
    keys = ["tool", "arguments", "match", "returns", "raises", "times", "other"]
    fixtures = [
        {rng.choice(keys): rng.choice(values) for _ in range(rng.randint(0, 4))}
        for _ in range(rng.randint(0, 3))
    ]
    document: dict[str, Any] = {"fixtures": fixtures}
    for key in ("key_args", "mask", "strict", "assert_all_used", "version"):
        if rng.random() < 0.3:
            document[key] = rng.choice(values)
    return document if rng.random() < 0.9 else rng.choice(values)


def _fuzz_fixtures(rng: random.Random, folder: Path) -> tuple[str, str, str]:
    import sys

    import yaml

    warm = folder / "warm.yaml"
    warm.write_text("fixtures: [{tool: t, match: {a: {range: [1, 2]}}}]\n", encoding="utf-8")
    ToolMock.from_file(warm)  # the loader's own lazy imports happen once, here
    modules_before = set(sys.modules)
    undocumented = 0
    slowest = 0.0
    for n in range(FIXTURE_FILES):
        document = _fixture_document(rng)
        if n % 2:
            path = folder / f"f{n}.json"
            path.write_text(json.dumps(document), encoding="utf-8")
        else:
            path = folder / f"f{n}.yaml"
            path.write_text(yaml.safe_dump(document), encoding="utf-8")
        started = time.perf_counter()
        try:
            ToolMock.from_file(path)
        except ConfigError:
            pass
        except Exception:
            undocumented += 1
        slowest = max(slowest, time.perf_counter() - started)
    return (
        "loading a fixture file raises only ConfigError and imports nothing",
        f"{FIXTURE_FILES} generated YAML and JSON fixture files (bad shapes, bad settings, "
        "exceptions that need arguments, modules never imported)",
        f"{undocumented} other errors, {len(set(sys.modules) - modules_before)} modules "
        f"imported, max {slowest * 1000:.2f} ms per file",
    )


FORKS = 30


def _forks_while_recording(rng: random.Random, folder: Path) -> tuple[str, str, str]:
    """Fork at random moments of a busy recorder's work; every child must write its trace."""
    import signal
    from dataclasses import replace

    from toolproof.replay import Recorder

    base = _hostile_trace(rng, 0)
    wrote = 0
    slowest_fork = 0.0
    for attempt in range(FORKS):
        recorder = Recorder(folder / f"fork-{attempt}.db", batch_size=40, flush_interval=0.001)
        if attempt % 3:  # (every third forks at once, as the writer opens its store)
            recorder._started.wait(60)
            if recorder._checkpointer is not None:
                recorder._checkpointer.every = 50_000  # checkpoints every few batches
            for n in range(rng.randrange(50, 400)):
                recorder.record(replace(base, id=f"parent-{attempt}-{n}"))
            time.sleep(rng.random() * 0.02)
        began = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: record one trace, exit 0 once it is written
            code = 1
            try:
                recorder.record(replace(base, id=f"child-{attempt}"))
                code = 0 if recorder.flush(20) and recorder.stats.written == 1 else 1
            finally:
                os._exit(code)
        slowest_fork = max(slowest_fork, time.perf_counter() - began)
        deadline = time.monotonic() + 30
        status = None
        while status is None and time.monotonic() < deadline:
            done, raw = os.waitpid(pid, os.WNOHANG)
            status = raw if done else None
            time.sleep(0.005)
        if status is None:  # a hung child
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        elif os.waitstatus_to_exitcode(status) == 0:
            wrote += 1
        recorder.close(60)
    return (
        "a forked child of a recording process writes its traces",
        f"{FORKS} forks at random moments of a busy recorder's work (a third right after "
        "`Recorder()`, as its writer opens the store; the rest amid batches and checkpoints)",
        f"{wrote}/{FORKS} children wrote their trace; `os.fork()` took at most "
        f"{slowest_fork * 1000:.1f} ms, its wait for the recorder's threads to leave SQLite "
        "included",
    )


#: The recorder the multiprocessing workers below record with (inherited by the fork).
_SHARED: list[Any] = []
_PER_TASK = 50


def _record_task(task: int) -> int:
    from dataclasses import replace

    recorder = _SHARED[0]
    base = _SHARED[1]
    for n in range(_PER_TASK):
        recorder.record(replace(base, id=f"task-{task}-{n:02d}"))
    return task


def _record_with_own_recorder(path: str) -> None:
    from toolproof.replay import Recorder

    _SHARED[0] = Recorder(path, flush_interval=0.2)  # made in the child
    _record_task(99)


def _multiprocessing_children(rng: random.Random, folder: Path) -> tuple[str, str, str]:
    """Traces recorded in multiprocessing children, which end with os._exit."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from toolproof.replay import Recorder

    fork = multiprocessing.get_context("fork")
    recorder = Recorder(folder / "mp.db", flush_interval=0.2)
    _SHARED[:] = [recorder, _hostile_trace(rng, 1)]
    tasks = 0
    try:
        workers = [fork.Process(target=_record_task, args=(n,)) for n in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
        pool = fork.Pool(2)
        pool.map(_record_task, range(10, 14))
        pool.close()
        pool.join()
        with ProcessPoolExecutor(2, mp_context=fork) as executor:
            list(executor.map(_record_task, range(20, 23)))
        tasks = 3 + 4 + 3
        own = fork.Process(target=_record_with_own_recorder, args=(str(folder / "own.db"),))
        own.start()
        own.join(120)
    finally:
        _SHARED.clear()
        recorder.close(60)
    stored = 0
    for name in ("mp.db", "own.db"):
        conn = sqlite3.connect(folder / name)
        try:
            stored += conn.execute("SELECT COUNT(*) FROM traces").fetchone()[0]
        except sqlite3.Error:
            pass
        finally:
            conn.close()
    expected = (tasks + 1) * _PER_TASK
    return (
        "a multiprocessing child writes every trace it recorded before it exits",
        f"{_PER_TASK} traces in each of 3 `Process` children, 4 tasks of a `Pool` closed and "
        "joined, 3 of a `ProcessPoolExecutor` and a child with a recorder of its own (fork "
        "start method: children end with `os._exit`, without `atexit`)",
        f"{stored}/{expected} stored",
    )


def measure() -> list[tuple[str, str, str]]:
    """The durability guarantees, each tried against generated hostile input."""
    rng = random.Random(20261201)
    with tempfile.TemporaryDirectory() as folder:
        return [
            _round_trips(rng),
            _corrupt_rows(rng, Path(folder)),
            _fuzz_decoder(rng),
            _fuzz_fixtures(rng, Path(folder)),
            *(
                [
                    _forks_while_recording(rng, Path(folder)),
                    _multiprocessing_children(rng, Path(folder)),
                ]
                if hasattr(os, "fork")
                else []
            ),
        ]


if __name__ == "__main__":  # pragma: no cover
    for row in measure():
        print(" | ".join(row))
