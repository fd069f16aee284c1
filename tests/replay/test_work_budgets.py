"""Work budgets of the store, the recorder and replay: counted, not timed.

A speed regression on these paths is nearly always extra work per trace: one more decode,
one more encode, one more validation. Counting those calls catches it on any machine,
however busy. The budgets are exact: a change that needs more work per trace changes the
budget here, on purpose and in review.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from replay_helpers import query_users, user_trace

import toolproof._trace as trace_module
from toolproof import Trace
from toolproof.replay import Recorder, Redactor, TraceStore, replay

TRACES = 25


class _CountingAdapter:
    """The trace codec, counting what each trace costs (decodes, encodes)."""

    def __init__(self, adapter: Any, counts: Counter[str]) -> None:
        self._adapter = adapter
        self._counts = counts

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._adapter, name)
        if not callable(method):
            return method

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._counts[name] += 1
            return method(*args, **kwargs)

        return counted


@pytest.fixture
def codec(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts of the trace codec's calls (``validate_json``, ``dump_json``...)."""
    counts: Counter[str] = Counter()
    real = trace_module._adapter()
    monkeypatch.setattr(trace_module, "_adapter", lambda: _CountingAdapter(real, counts))
    return counts


def _traces(count: int = TRACES) -> list[Trace]:
    base = user_trace(123, tags=["budget"])
    return [replace(base, id=f"budget-{n:04d}") for n in range(count)]


def test_store_ingest_encodes_each_trace_once_and_never_decodes(
    tmp_path: Path, codec: Counter[str]
) -> None:
    traces = _traces()
    with TraceStore(tmp_path / "t.db") as store:
        codec.clear()
        assert store.add_many(traces) == TRACES
    assert codec == Counter(dump_json=TRACES), codec


def test_store_read_decodes_each_row_once(tmp_path: Path, codec: Counter[str]) -> None:
    with TraceStore(tmp_path / "t.db") as store:
        store.add_many(_traces())
        codec.clear()
        assert len(list(store.query())) == TRACES
    assert codec == Counter(validate_json=TRACES), codec


def test_recorder_encodes_each_redacted_trace_once_and_never_decodes(
    tmp_path: Path, codec: Counter[str]
) -> None:
    traces = _traces()
    codec.clear()
    with Recorder(tmp_path / "r.db", redactor=Redactor(), batch_size=10) as recorder:
        for trace in traces:
            recorder.record(trace)
    assert recorder.stats.written == TRACES
    # redacted as trace objects (no plain form), built by the trace classes: one encode,
    # which the codec guarantees reads back (no decode before writing)
    assert codec == Counter(dump_json=TRACES), codec


def test_replay_tools_mode_decodes_each_stored_trace_once_and_encodes_none(
    tmp_path: Path, codec: Counter[str]
) -> None:
    with TraceStore(tmp_path / "t.db") as store:
        store.add_many(_traces())
    codec.clear()
    report = replay(tmp_path / "t.db", tools=[query_users])
    assert report.counts["pass"] == TRACES, report.summary()
    assert codec == Counter(validate_json=TRACES), codec


def test_replay_tools_mode_validates_each_recorded_call_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = _traces()  # (the runs that make them validate their own calls)
    counts: Counter[str] = Counter()
    real_validate = type(query_users).validate

    def validate(self: Any, arguments: dict[str, Any]) -> Any:
        counts[self.name] += 1
        return real_validate(self, arguments)

    monkeypatch.setattr(type(query_users), "validate", validate)
    report = replay(traces, tools=[query_users])
    assert report.counts["pass"] == TRACES
    assert counts == Counter(query_users=TRACES), counts
