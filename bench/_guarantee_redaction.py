"""Guarantee figures for redaction and the recorder (read by ``bench_guarantees.py``).

- secrets planted per class in every field of recorded traces, and how many of them were
  found afterwards in the store file, its WAL and a JSONL export (the same planting code as
  ``tests/replay/test_redaction_property.py``);
- one secret at a time in each data field of a trace recorded clean many times before (the
  recorder then writes clean traces as they are, from what its caches learnt): how many of
  them were found in the store;
- the worst time of the built-in patterns on 1 MB adversarial texts;
- the longest ``Recorder.record`` call while the background thread redacts slowly and the
  queue overflows.
"""

from __future__ import annotations

import base64
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_TESTS = Path(__file__).resolve().parents[1] / "tests" / "replay"
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

from redaction_secrets import (  # noqa: E402
    DATA_FIELDS,
    DOCUMENTED_RULES,
    GENERATORS,
    SECRET,
    Planted,
    clean_trace_data,
    leaks,
    merge,
    plant_trace,
    put,
)

from toolproof import Trace  # noqa: E402
from toolproof.cli import main  # noqa: E402
from toolproof.replay import Recorder, Redactor  # noqa: E402

_MB = 1_000_000


def _adversarial() -> dict[str, str]:
    rng = random.Random(5)
    return {
        "base64url": base64.urlsafe_b64encode(os.urandom(_MB)).decode()[:_MB],
        "'@' runs": "@" * _MB,
        "a@ repeated": "a@" * (_MB // 2),
        "near-miss addresses": "a@b." * (_MB // 4),
        "'%40' runs": "%40" * (_MB // 3),
        "digits": "7" * _MB,
        "card-like groups": "4111 " * (_MB // 5),
        "phone-like groups": "415 555 2671 " * (_MB // 13),
        "'sk-' prefixes": "sk-" * (_MB // 3),
        "'sk-' near-misses": ("sk-" + "a" * 15 + " ") * (_MB // 19),
        "mixed symbols": "".join(rng.choice("a@.1 -_+%\\n") for _ in range(_MB)),
    }


def _planted(folder: Path) -> list[tuple[str, str, str]]:
    rng = random.Random(2026)
    made = [plant_trace(rng, index) for index in range(60)]
    planted = merge([p for _, p in made])
    db = folder / "traces.db"
    recorder = Recorder(db, redactor=Redactor(**DOCUMENTED_RULES, secret=SECRET))
    for trace, _ in made:
        recorder.record(trace)
    complete = recorder.flush(120)
    raw = b"".join(p.read_bytes() for p in folder.glob("traces.db*"))
    recorder.close()
    raw += b"".join(p.read_bytes() for p in folder.glob("traces.db*"))
    export = folder / "export.jsonl"
    devnull = open(os.devnull, "w")  # noqa: SIM115 - the CLI's confirmation line
    stderr, sys.stderr = sys.stderr, devnull
    try:
        main(["traces", "export", "--store", str(db), "-o", str(export)])
    finally:
        sys.stderr = stderr
        devnull.close()
    found = leaks(planted, raw, export.read_bytes())
    counts = ", ".join(f"{len(v)} {k}" for k, v in sorted(planted.by_class.items()))
    return [
        (
            "no planted secret reaches the store, its WAL or an export",
            f"{planted.count} secrets in 60 recorded traces ({counts}; JSON in strings "
            "1-3 deep), documented rules, searched plain, JSON-escaped and URL-encoded",
            f"{len(found)} leaks" + ("" if complete else " (recorder did not finish)"),
        )
    ]


def _one_field(folder: Path) -> list[tuple[str, str, str]]:
    rng = random.Random(11)
    planted = Planted()
    traces = []
    for index in range(50):  # the same clean texts, trace after trace
        data = clean_trace_data()
        data["id"] = f"clean-{index:04d}"
        traces.append(Trace.from_dict(data))
    for round_ in range(4):
        for number, path in enumerate(DATA_FIELDS):
            kind = sorted(GENERATORS)[(number + round_) % len(GENERATORS)]
            secret = planted.add(kind, GENERATORS[kind](rng, number + round_))
            value: Any = f"see {secret} here"
            if path[-1] in ("settings", "metadata", "arguments", "value"):
                value = {"user_id": 7, "note": value}
            elif path[-1] in ("tags", "parse_errors"):
                value = ["ok", value]
            elif path[-1] == "raw_arguments":
                value = json.dumps({"user_id": 7, "note": value})
            data = clean_trace_data()
            data["id"] = f"one-{round_}-{number:02d}"
            put(data, path, value)
            traces.append(Trace.from_dict(data))
            data = clean_trace_data()
            data["id"] = f"clean-after-{round_}-{number:02d}"
            traces.append(Trace.from_dict(data))
    db = folder / "one.db"
    recorder = Recorder(db)  # the default rules: the clean trace holds no sensitive field
    for trace in traces:
        recorder.record(trace)
    complete = recorder.close(120)
    raw = b"".join(p.read_bytes() for p in folder.glob("one.db*"))
    found = leaks(planted, raw)
    return [
        (
            "a trace recorded clean many times over hides no secret in any one field",
            f"{planted.count} secrets, one per trace, in each of the {len(DATA_FIELDS)} data "
            f"fields of a trace otherwise recorded clean {len(traces) - planted.count} times; "
            "default rules",
            f"{len(found)} leaks" + ("" if complete else " (recorder did not finish)"),
        )
    ]


def _patterns() -> list[tuple[str, str, str]]:
    redactor = Redactor(
        fields={"user_id": "hash"}, patterns=DOCUMENTED_RULES["patterns"], secret=SECRET
    )
    inputs = _adversarial()
    worst = 0.0
    worst_name = ""
    for name, text in inputs.items():
        begin = time.perf_counter()
        redactor.redact_text(text)
        elapsed = time.perf_counter() - begin
        if elapsed > worst:
            worst, worst_name = elapsed, name
    return [
        (
            "every built-in pattern runs in linear time",
            f"{len(inputs)} adversarial 1 MB texts through all built-in patterns",
            f"max {worst:.2f} s per MB ({worst_name})",
        )
    ]


class _SlowRedactor(Redactor):
    def redact_data(self, data: dict[str, Any]) -> dict[str, Any]:
        end = time.perf_counter() + 0.02
        while time.perf_counter() < end:
            sum(range(1000))
        return super().redact_data(data)


def _record_latency(folder: Path) -> list[tuple[str, str, str]]:
    trace, _ = plant_trace(random.Random(9))
    recorder = Recorder(folder / "slow.db", redactor=_SlowRedactor(), max_queue=50, batch_size=1)
    worst = 0.0
    calls = 2_000
    for _ in range(calls):
        begin = time.perf_counter()
        recorder.record(trace)
        worst = max(worst, time.perf_counter() - begin)
        time.sleep(0.0005)
    stats = recorder.stats
    recorder.close(60)
    return [
        (
            "record() never stalls the agent",
            f"{calls} record() calls while redaction takes 20 ms a trace (CPU-bound) and the "
            f"queue of 50 overflows ({stats.dropped_full} dropped and counted)",
            f"max {worst * 1000:.1f} ms per call",
        )
    ]


def measure() -> list[tuple[str, str, str]]:
    """Rows of (guarantee, what was tried, result)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "a").mkdir()
        (folder / "b").mkdir()
        (folder / "c").mkdir()
        return [
            *_planted(folder / "a"),
            *_one_field(folder / "c"),
            *_patterns(),
            *_record_latency(folder / "b"),
        ]


if __name__ == "__main__":  # pragma: no cover - a manual run
    for row in measure():
        print(" | ".join(row))
