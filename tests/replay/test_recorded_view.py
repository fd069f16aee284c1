"""Tools mode reads stored traces as data: the same outcomes as decoding whole traces.

Tools mode reads a stored payload with the trace codec's schema into plain data and builds
no ``Trace`` (``toolproof/replay/_recorded.py``); a payload it cannot vouch for goes to the
codec. These tests store generated and hostile payloads (wrong types anywhere, missing
fields, odd and huge strings, lone surrogates, NaN, deep nesting, huge integers, truncated
JSON, other versions) and replay the store twice, once as shipped and once with every row
decoded by the codec into a full ``Trace``: findings, verdicts, counts, skipped rows and
their warnings must be the same.
"""

from __future__ import annotations

import copy
import json
import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_helpers import query_users, run_trace, user_trace

import toolproof.replay._recorded as recorded_module
from toolproof.cli import main
from toolproof.replay import TraceStore, replay
from toolproof.testing import call

NOW = 1_800_000_000.0
RULES = {"tools": {"query_users": {"bounds": {"user_id": {"max": 500}}}}}


@cache
def _bases() -> tuple[dict[str, Any], ...]:
    """Recorded runs as stored data: one call, two calls with history, an error, no call."""
    two = run_trace(
        [
            [call("query_users", user_id=7), call("query_users", user_id=8, fields=["plan"])],
            "Users 7 and 8 are on pro.",
        ],
        input="Who are 7 and 8? é ✓",
        metadata={"case": "two", "n": [1, 2.5, None]},
    )
    failing = run_trace([call("query_users", user_id="not a number"), "No idea."], input="bad call")
    return tuple(
        json.loads(trace.to_json())
        for trace in (user_trace(123, tags=["t"]), two, failing, run_trace(["Hi!"], input="hi"))
    )


_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**4200, max_value=10**4250)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from(["\ud800", "x\udfffy", "é", "\u0000", "NaN", "a" * 5000])
)
_values = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def _slots(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every position of the JSON tree (dict keys and list indices)."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*path, key)
            yield from _slots(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield (*path, index)
            yield from _slots(value, (*path, index))


_FREE = {"arguments", "value", "parameters", "metadata", "settings"}


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        data = data[key]
    return data


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": [value]}
    return value


@st.composite
def payloads(draw: st.DrawFn) -> tuple[bytes | str, int]:
    """One stored row: payload text and its format_version column."""
    data = copy.deepcopy(draw(st.sampled_from(_bases())))
    for _ in range(draw(st.integers(0, 3))):
        action = draw(
            st.sampled_from(["set", "set", "delete", "deep", "version", "number", "free"])
        )
        slots = list(_slots(data))
        if action == "number":  # a number field (token counts, ids, bounds) made odd
            slots = [slot for slot in slots if type(_at(data, slot)) in (int, float)]
        elif action == "free":  # inside free-form JSON: arguments, results, schemas, metadata
            slots = [slot for slot in slots if _FREE & set(map(str, slot[:-1]))]
            action = draw(st.sampled_from(["set", "deep"]))
        if not slots:
            continue
        *parent_path, last = draw(st.sampled_from(slots))
        parent = _at(data, tuple(parent_path))
        if action == "number":
            parent[last] = draw(st.sampled_from([-1, 2**63, 2**64, 10**4210, 3.0, 1e308, "7"]))
        elif action == "delete":
            del parent[last]
        elif action == "deep":
            parent[last] = _deep(draw(st.integers(55, 75)))
        elif action == "version":
            data["version"] = draw(st.sampled_from([0, 2, "1", 1.0, True, None, 99]))
        else:
            parent[last] = draw(_values)
    text = json.dumps(data, ensure_ascii=draw(st.booleans()), allow_nan=True)
    if draw(st.integers(0, 9)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    version = draw(st.sampled_from([1, 1, 1, 1, 2, 0]))
    try:
        payload: bytes | str = text.encode()
    except UnicodeEncodeError:  # a raw lone surrogate: only escaped text reaches a store
        payload = json.dumps(data, ensure_ascii=True, allow_nan=True).encode()
    return payload, version


@contextmanager
def _full_traces() -> Iterator[None]:
    """Every stored row decoded by the codec into a whole Trace (the reference path)."""
    with mock.patch.object(recorded_module, "read_recorded", return_value=None):
        yield


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _outcome(path: Path, *, full: bool, tools: Any = (query_users,)) -> dict[str, Any]:
    handler = _Warnings()
    logger = logging.getLogger("toolproof.replay")
    logger.addHandler(handler)
    try:
        with TraceStore(path, create=False) as store:
            if full:
                with _full_traces():
                    report = replay(store, tools=list(tools), rules=RULES, now=NOW)
            else:
                report = replay(store, tools=list(tools), rules=RULES, now=NOW)
            skipped = list(store.skipped)
    finally:
        logger.removeHandler(handler)
    samples = []
    for sample in report.samples:
        entry = sample.to_dict()
        del entry["duration_ms"]
        samples.append(entry)
    return {
        "samples": samples,
        "counts": report.counts,
        "summary": report.summary(),
        "skipped": skipped,
        "warnings": handler.messages,
    }


def _store(folder: Path, rows: list[tuple[bytes | str, int]]) -> Path:
    path = folder / "traces.db"
    with TraceStore(path) as store:
        store._conn.executemany(
            "INSERT INTO traces (id, ts, payload, format_version) VALUES (?, ?, ?, ?)",
            [(f"row-{n:02d}", NOW - 60 * n, payload, v) for n, (payload, v) in enumerate(rows)],
        )
    return path


@pytest.mark.timeout(300)
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(payloads(), min_size=1, max_size=4))
def test_reading_stored_rows_as_data_gives_the_outcomes_of_whole_traces(
    rows: list[tuple[bytes | str, int]],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = _store(Path(folder), rows)
        fast = _outcome(path, full=False)
        assert fast == _outcome(path, full=True)


_DEEP = json.dumps(_deep(70))
_BIG = str(10**4220)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"user_id": 7}', '"user_id": NaN}'),  # the codec writes it back as "NaN"
        ('"user_id": 7}', '"user_id": 7, "x": Infinity}'),
        ('"user_id": 7}', f'"user_id": 7, "x": {_DEEP}}}'),  # the codec refuses the depth
        ('"user_id": 7}', f'"user_id": {_BIG}}}'),  # the codec keeps it as text
        ('"active": true}', '"active": NaN}'),
        ('"active": true}', f'"active": {_DEEP}}}'),
        ('"active": true}', f'"active": {_BIG}}}'),
        ('"metadata": {', '"metadata": {"z": NaN, '),
        ('"metadata": {', f'"metadata": {{"z": {_DEEP}, '),
        ('"settings": {}', '"settings": {"t": -Infinity}'),
        ('"settings": {}', f'"settings": {{"t": {_DEEP}}}'),
        ('"type": "integer"', '"type": "integer", "maximum": NaN'),
        ('"type": "integer"', f'"type": "integer", "x": {_DEEP}'),
        ('"requests": 1', '"requests": -1'),
        ('"requests": 1', f'"requests": {2**63}'),
        ('"details": {}', '"details": {"k": -5}'),
        ('"details": {}', '"details": {"k": 3.0}'),
        ('"input": "Who', '"input": "\\ud800 Who'),  # an escaped backslash: plain text
        ('"input": "Who', '"input": 12.5, "x": "'),  # a number in a text field
        ('"model": "scripted"', '"model": 7'),
    ],
    ids=lambda value: value.split(":")[0].strip('"{ ')[:20] if value.count('"') else "",
)
def test_values_the_codec_changes_or_refuses_give_the_outcomes_of_whole_traces(
    tmp_path: Path, old: str, new: str
) -> None:
    text = json.dumps(_bases()[1])
    assert old in text
    rows: list[tuple[bytes | str, int]] = [(text.replace(old, new, 1).encode(), 1)]
    path = _store(tmp_path, rows)
    fast = _outcome(path, full=False)
    assert fast == _outcome(path, full=True)
    assert len(fast["samples"]) + len(fast["skipped"]) == 1


def test_hostile_rows_are_skipped_with_the_codec_message(tmp_path: Path) -> None:
    good = json.dumps(_bases()[0])
    rows: list[tuple[bytes | str, int]] = [
        (good.encode(), 1),
        (good[:-9].encode(), 1),  # truncated
        (good.replace('"version": 1', '"version": 2').encode(), 2),  # newer format
        (good.encode(), 2),  # column and payload disagree
        (good.replace('"requests": 1', '"requests": -1').encode(), 1),  # hook refuses
        (good.replace('"user_id": 123', '"user_id": "\\ud800"').encode(), 1),  # lone surrogate
        (good.replace('"steps": [', '"steps": [7, ').encode(), 1),  # wrong type
    ]
    path = _store(tmp_path, rows)
    fast = _outcome(path, full=False)
    assert fast == _outcome(path, full=True)
    assert fast["counts"]["pass"] == 1, fast
    assert fast["skipped"] == [f"row-{n:02d}" for n in range(1, 7)]
    assert all(message.startswith("stored trace row-") for message in fast["warnings"])
    assert any("lone surrogate" in m or "hex escape" in m for m in fast["warnings"]), fast


def test_the_view_reads_the_values_the_codec_gives() -> None:
    from toolproof import Trace

    for base in _bases():
        text = json.dumps(base)
        view = recorded_module.read_recorded(text.encode(), 1)
        assert view is not None
        trace = Trace.from_json(text)
        assert (view.id, view.input, view.model, view.output) == (
            trace.id,
            trace.input,
            trace.model,
            trace.output,
        )
        assert [(t.name, t.schema_hash) for t in view.tools] == [
            (t.name, t.schema_hash) for t in trace.tools
        ]
        fields = ("name", "arguments", "id", "raw_arguments", "arguments_error")
        got = [
            (
                tuple(getattr(c, f) for f in fields),
                None if r is None else (r.call_id, r.name, r.ok, r.content, r.value, r.error_type),
            )
            for c, r in view.calls_and_results()
        ]
        want = [
            (
                tuple(getattr(c, f) for f in fields),
                None if r is None else (r.call_id, r.name, r.ok, r.content, r.value, r.error_type),
            )
            for c, r in trace.calls_and_results()
        ]
        assert got == want
        assert view.full() == trace
    # numbers in text fields are read as text, as the codec reads them
    odd = dict(_bases()[0], model=123)
    view = recorded_module.read_recorded(json.dumps(odd), 1)
    assert view is not None
    assert view.model == "123"


def test_the_cli_replays_hostile_rows_as_the_full_traces_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    good = json.dumps(_bases()[1])
    rows: list[tuple[bytes | str, int]] = [
        (good.encode(), 1),
        (good.replace('"user_id": 8', '"user_id": 800').encode(), 1),  # out of bounds
        (good.replace('"user_id": 7', '"user_id": "seven"').encode(), 1),  # schema
        (good[:100].encode(), 1),
        (good.replace('"active": true', '"active": NaN').encode(), 1),  # the codec changes it
    ]
    path = _store(tmp_path, rows)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(RULES))
    argv = [
        "replay", "--store", str(path), "--tools", "replay_helpers:query_users",
        "--rules", str(rules), "--report", "json:-",
    ]  # fmt: skip

    def run() -> tuple[int, dict[str, Any], str, list[str]]:
        caplog.clear()
        code = main(argv)
        captured = capsys.readouterr()
        data = json.loads(captured.out)
        for result in data["results"]:
            del result["duration_ms"]
            del result["age_days"]
        data.pop("duration_s", None)
        data.pop("started_at", None)
        err = [line for line in captured.err.splitlines() if not line.startswith("run log:")]
        return code, data, "\n".join(err), [r.getMessage() for r in caplog.records]

    fast = run()
    with _full_traces():
        full = run()
    assert fast == full
    code, data, err, warnings = fast
    assert code == 1
    assert data["counts"] == {"pass": 2, "warn": 0, "fail": 2, "error": 0}, data["counts"]
    assert "2 pass, 0 warn, 2 fail" in err
    (skipped,) = [w for w in warnings if "row-03" in w]
    assert skipped.startswith("stored trace row-03 cannot be decoded: not a toolproof trace")
