"""Work budgets of the store, the recorder and replay: counted, not timed.

A speed regression on these paths is nearly always extra work per trace: one more decode,
one more encode, one more validation. Counting those calls catches it on any machine,
however busy. The budgets are exact: a change that needs more work per trace changes the
budget here, on purpose and in review.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from replay_helpers import query_users, user_trace

import toolproof._trace as trace_module
import toolproof.replay._recorded as recorded_module
import toolproof.replay._tool_sets as tool_sets_module
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
            # (the store writes a trace without its tools, and each tools array once)
            part = " without tools" if "exclude" in kwargs else ""
            part = " of tools" if "include" in kwargs else part
            self._counts[name + part] += 1
            return method(*args, **kwargs)

        return counted


@pytest.fixture
def codec(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts of the trace codec's calls (``validate_json``, ``dump_json``...)."""
    counts: Counter[str] = Counter()
    monkeypatch.setattr(tool_sets_module, "_ENCODED", {})  # no tools array encoded yet
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
    # each trace encoded once without its tools; the tools array, the same in every
    # trace, once
    assert codec == Counter({"dump_json without tools": TRACES, "dump_json of tools": 1}), codec


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
    # redacted as trace objects (no plain form), built by the trace classes: one encode
    # (without the tools array, encoded once for all), which the codec guarantees reads
    # back (no decode before writing)
    assert codec == Counter({"dump_json without tools": TRACES, "dump_json of tools": 1}), codec


@pytest.fixture
def views(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts of the reads of stored payloads as data (tools mode, ``_recorded.py``)."""
    counts: Counter[str] = Counter()
    real = recorded_module._validator()
    monkeypatch.setattr(recorded_module, "_validator", lambda: _CountingAdapter(real, counts))
    return counts


def test_replay_tools_mode_reads_each_stored_trace_once_and_builds_no_trace(
    tmp_path: Path, codec: Counter[str], views: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with TraceStore(tmp_path / "t.db") as store:
        store.add_many(_traces())
    codec.clear()
    built: Counter[str] = Counter()
    real_init = Trace.__post_init__

    def counted_init(self: Trace) -> None:
        built["Trace"] += 1
        real_init(self)

    monkeypatch.setattr(Trace, "__post_init__", counted_init)
    tool_sets: Counter[str] = Counter()
    real_tools = recorded_module._tools_validator()
    monkeypatch.setattr(
        recorded_module, "_tools_validator", lambda: _CountingAdapter(real_tools, tool_sets)
    )
    report = replay(tmp_path / "t.db", tools=[query_users])
    assert report.counts["pass"] == TRACES, report.summary()
    # each payload parsed and checked once, by the codec's schema read as data (without
    # its tools: the tools array they share is parsed and checked once for the replay); no
    # Trace object is built when nothing needs one, and nothing is encoded
    assert views == Counter(validate_json=TRACES), views
    assert tool_sets == Counter(validate_json=1), tool_sets
    assert codec == Counter(), codec
    assert built == Counter(), built


def test_replay_tools_mode_decodes_with_the_codec_what_the_view_cannot_vouch_for(
    tmp_path: Path, codec: Counter[str], views: Counter[str]
) -> None:
    # a NaN in a tool result is changed by the codec (written back as "NaN"): decoded
    odd = [replace(trace, id=f"odd-{n}") for n, trace in enumerate(_traces(3))]
    with TraceStore(tmp_path / "t.db") as store:
        store.add_many(_traces())
        store._conn.executemany(
            "INSERT INTO traces (id, ts, payload, format_version) VALUES (?, 0, ?, 1)",
            [(t.id, t.to_json().replace('"active":true}', '"active":NaN}').encode()) for t in odd],
        )
    codec.clear()
    report = replay(tmp_path / "t.db", tools=[query_users])
    assert len(report.samples) == TRACES + 3, report.summary()
    assert views == Counter(validate_json=TRACES + 3), views
    assert codec == Counter(validate_json=3), codec


def test_replay_tools_mode_validates_each_recorded_call_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a Python tool's argument check may run the user's code: it is asked once per recorded
    # call, never more (25 traces of one call each: 25 checks, whatever the arguments)
    traces = _traces()  # (the runs that make them validate their own calls)
    distinct = [replace(user_trace(100 + n % 5), id=f"d-{n}") for n in range(TRACES)]
    counts: Counter[str] = Counter()
    real_validate = type(query_users).validate

    def validate(self: Any, arguments: dict[str, Any]) -> Any:
        counts[self.name] += 1
        return real_validate(self, arguments)

    monkeypatch.setattr(type(query_users), "validate", validate)
    for recorded in (traces, distinct):
        counts.clear()
        report = replay(recorded, tools=[query_users])
        assert report.counts["pass"] == TRACES
        assert counts == Counter(query_users=TRACES), counts


def test_replay_tools_mode_compiles_each_schema_once_not_once_per_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jsonschema import Draft202012Validator

    import toolproof.replay._tools_mode as tools_mode

    with TraceStore(tmp_path / "t.db") as store:
        store.add_many(_traces())
    counts: Counter[str] = Counter()
    real_check = Draft202012Validator.check_schema.__func__  # type: ignore[attr-defined]
    real_from_schema = tools_mode._from_schema

    def check_schema(cls: Any, schema: Any, *args: Any, **kwargs: Any) -> Any:
        counts["check_schema"] += 1
        return real_check(cls, schema, *args, **kwargs)

    def from_schema(*args: Any) -> Any:
        counts["compiled"] += 1
        return real_from_schema(*args)

    monkeypatch.setattr(Draft202012Validator, "check_schema", classmethod(check_schema))
    monkeypatch.setattr(tools_mode, "_from_schema", from_schema)
    schemas = {"query_users": query_users.parameters, "unused_tool": {"type": "object"}}
    report = replay(tmp_path / "t.db", tools=schemas)
    assert report.counts["pass"] == TRACES, report.summary()
    # each of today's tools is checked and compiled once, whatever the number of traces
    assert counts == Counter(check_schema=2, compiled=2), counts


def test_replay_tools_mode_checks_schema_only_arguments_once_not_once_per_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # jsonschema builds a validator object for every subschema it descends into, on every
    # check: the verdict on the same arguments is kept, so a store of 25 traces calling
    # with the same arguments costs what one trace costs
    from jsonschema import Draft202012Validator

    counts: Counter[str] = Counter()
    real_iter_errors = Draft202012Validator.iter_errors
    real_evolve = Draft202012Validator.evolve

    def iter_errors(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["iter_errors"] += 1
        return real_iter_errors(self, *args, **kwargs)

    def evolve(self: Any, **changes: Any) -> Any:
        counts["validators built"] += 1
        return real_evolve(self, **changes)

    monkeypatch.setattr(Draft202012Validator, "iter_errors", iter_errors)
    monkeypatch.setattr(Draft202012Validator, "evolve", evolve)
    schemas = {"query_users": query_users.parameters}
    found = []
    for count in (1, TRACES):
        with TraceStore(tmp_path / f"{count}.db") as store:
            store.add_many(_traces(count))
        counts.clear()
        report = replay(tmp_path / f"{count}.db", tools=schemas)
        assert report.counts["pass"] == count, report.summary()
        found.append(Counter(counts))
    one, many = found
    # one check of today's schema (against the meta-schema), one of the recorded arguments
    assert one["iter_errors"] == 2, one
    assert many == one, (one, many)


def test_replay_never_formats_its_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # asyncio.run (Python 3.11) formats its main task with its result when it restores the
    # SIGINT handler: a report returned as that result was formatted, every sample, twice
    from toolproof.replay._grading import SampleResult

    with TraceStore(tmp_path / "t.db") as store:
        store.add_many(_traces())
    formatted: Counter[str] = Counter()
    real_repr = SampleResult.__repr__

    def counted_repr(self: SampleResult) -> str:
        formatted["SampleResult"] += 1
        return real_repr(self)

    monkeypatch.setattr(SampleResult, "__repr__", counted_repr)
    report = replay(tmp_path / "t.db", tools=[query_users])
    assert report.counts["pass"] == TRACES, report.summary()
    assert formatted == Counter(), formatted


def test_replay_tools_mode_checks_each_recorded_return_value_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolproof.replay._tools_mode import TodayTool

    with TraceStore(tmp_path / "t.db") as store:
        store.add_many(_traces())
    counts: Counter[str] = Counter()
    real = TodayTool.return_problem

    def return_problem(self: Any, value: Any) -> Any:
        counts[self.name] += 1
        return real(self, value)

    monkeypatch.setattr(TodayTool, "return_problem", return_problem)
    report = replay(tmp_path / "t.db", tools=[query_users])
    assert report.counts["pass"] == TRACES, report.summary()
    assert counts == Counter(query_users=TRACES), counts


def test_replay_tools_mode_parses_no_tools_array_per_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the tools array the traces share is stored once: the text the view parses for each
    # trace holds none of it, and the array itself is parsed once for the replay
    with TraceStore(tmp_path / "t.db") as store:
        store.add_many(_traces())
    parsed: list[bytes] = []
    real = recorded_module._validator()
    real_tools = recorded_module._tools_validator()

    class _Seen:
        def __init__(self, validator: Any) -> None:
            self.validator = validator

        def validate_json(self, text: bytes) -> Any:
            parsed.append(bytes(text))
            return self.validator.validate_json(text)

    monkeypatch.setattr(recorded_module, "_validator", lambda: _Seen(real))
    monkeypatch.setattr(recorded_module, "_tools_validator", lambda: _Seen(real_tools))
    report = replay(tmp_path / "t.db", tools=[query_users])
    assert report.counts["pass"] == TRACES, report.summary()
    schema = json.dumps(query_users.parameters, separators=(",", ":")).encode()
    assert len(parsed) == TRACES + 1
    assert sum(schema in text for text in parsed) == 1, [len(text) for text in parsed]
