"""The recorder's walk of trace objects against the walk of plain data, and against leaks.

The recorder redacts a trace's objects (``_redact_trace``) and writes ``Trace.to_json`` of
the result without decoding it. These tests plant generated secrets in every field of
generated traces (texts, tool arguments nested at depth, JSON inside strings, tool
results, metadata, settings, error texts, tags and dict keys), record them through a real
``Recorder`` into a real SQLite file, and check that:

- no planted secret is in the database file or its WAL (plain, JSON-escaped, URL-encoded);
- every stored row reads back with ``Trace.from_json``;
- every stored payload is byte for byte what the walk of plain data writes
  (``Redactor.redact_data(trace.to_dict())``, the oracle), so the rules did not change.

Tool and message names, ids and the other structural fields are kept as they are by the
redaction rules (see the guide): secrets are planted there only for the comparison with
the oracle, not for the leak search.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_core import to_json
from redaction_secrets import GENERATORS, Planted, encodings, leaks, merge
from replay_helpers import user_trace

from toolproof import Trace
from toolproof.replay import Recorder, Redactor
from toolproof.replay._redact_trace import redact_trace_object

_BEFORE = [" ", ": ", " (", "\n", "=", " <", "\t", "\\n"]
_AFTER = [" ", ", ", ").", "\n", ";", "> ", " "]
_WORDS = ["note", "ok", "Résumé", "用户", "see ->", "a.b", "50%", "x=1", "", "{", "]"]


class _Plants:
    """Draws texts, keys and JSON data with secrets in them, remembering each secret."""

    def __init__(self, draw: Any) -> None:
        self.draw = draw
        self.planted = Planted()

    def secret(self, *, searched: bool = True) -> str:
        kind = self.draw(st.sampled_from(sorted(GENERATORS)))
        seed = self.draw(st.integers(0, 10**6))
        variant = self.draw(st.integers(0, 62))
        value = GENERATORS[kind](random.Random(seed), variant)
        return self.planted.add(kind, value) if searched else value

    def word(self) -> str:
        return self.draw(st.sampled_from(_WORDS) | st.text(max_size=8))

    def text(self) -> str:
        parts = [self.word()]
        for _ in range(self.draw(st.integers(1, 2))):
            before = self.draw(st.sampled_from(_BEFORE))
            after = self.draw(st.sampled_from(_AFTER))
            parts.append(before + self.secret() + after + self.word())
        return "".join(parts)

    def key(self) -> str:
        choice = self.draw(st.integers(0, 3))
        if choice == 0:  # a secret as a key
            return self.secret()
        if choice == 1:  # a credential field (masked by default)
            return self.draw(st.sampled_from(["password", "api_key", "Token", "Authorization"]))
        return self.draw(st.sampled_from(["query", "note", "user", "items", "a b"]))

    def value(self, depth: int) -> Any:
        choice = self.draw(st.integers(0, 5 if depth < 3 else 1))
        if choice == 0:
            return self.text()
        if choice == 1:
            return self.draw(st.sampled_from([0, 7, -3, 2.5, True, None, 415_555_2671]))
        if choice == 2:
            return [self.value(depth + 1) for _ in range(self.draw(st.integers(0, 2)))]
        if choice == 3:  # JSON inside a string
            return json.dumps(self.data(depth + 1), ensure_ascii=self.draw(st.booleans()))
        return self.data(depth + 1)

    def data(self, depth: int = 0) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for _ in range(self.draw(st.integers(1, 3))):
            key = self.key()
            value = self.value(depth)
            if key.lower() in ("password", "api_key", "token", "authorization") and isinstance(
                value, str
            ):
                value = self.planted.add("field", "Zv" + str(self.draw(st.integers(10**6))))
            out[key] = value
        return out


@st.composite
def planted_traces(draw: Any) -> tuple[Trace, Planted]:
    p = _Plants(draw)
    # a name is structural, kept as it is: compared with the oracle, not searched for
    name = p.secret(searched=False) if draw(st.booleans()) else "lookup"
    args = p.data()
    value = p.data()
    mirrored = draw(st.booleans())
    data: dict[str, Any] = {
        "id": f"walk-{draw(st.integers(0, 10**9))}",
        "version": 1,
        "input": p.text(),
        "system_prompt": p.text() if draw(st.booleans()) else None,
        "history": [
            {"role": "user", "content": p.text()},
            {
                "role": "assistant",
                "content": p.text(),
                "reasoning": p.text(),
                "tool_calls": [{"id": "h1", "name": name, "arguments": p.data()}],
            },
            {"role": "tool", "tool_call_id": "h1", "name": name, "content": p.text()},
        ],
        "model": "scripted",
        "settings": {"extra": p.data()},
        "steps": [
            {
                "index": 1,
                "request": {"message_count": 2},
                "response": {
                    "role": "assistant",
                    "content": p.text() if draw(st.booleans()) else None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "name": name,
                            "arguments": args,
                            "raw_arguments": json.dumps(args) if mirrored else p.text(),
                            "arguments_error": p.text(),
                        }
                    ],
                },
                "tool_results": [
                    {
                        "call_id": "c1",
                        "name": name,
                        "status": "ok",
                        "content": json.dumps(value) if mirrored else p.text(),
                        "value": value if draw(st.booleans()) else p.value(1),
                    }
                ],
                "parse_errors": [p.text()],
            }
        ],
        "output": p.text(),
        "stop_reason": "error",
        "stop_detail": p.text(),
        "error": {"type": "RuntimeError", "message": p.text(), "tool_name": name},
        "metadata": p.data(),
        "tags": [p.text(), "prod"],
    }
    return Trace.from_dict(data), p.planted


def _oracle(redactor: Redactor, trace: Trace) -> bytes:
    """What the walk of plain data writes for ``trace`` (the rules as they were)."""
    return to_json(redactor.redact_data(trace.to_dict()))


def _stored(db: Path) -> dict[str, bytes]:
    from toolproof.replay import TraceStore

    # (each row's trace JSON, its tool set joined back: see toolproof/replay/_tool_sets.py)
    with TraceStore(db, create=False) as store:
        return {trace_id: bytes(payload) for trace_id, _, payload, _ in store._raw()}


def _record(db: Path, traces: list[Trace], redactor: Redactor) -> bytes:
    recorder = Recorder(db, redactor=redactor, max_queue=len(traces) + 1)
    for trace in traces:
        recorder.record(trace)
    assert recorder.flush(60) is True
    raw = b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")))
    assert recorder.close() is True, recorder.stats
    return raw + b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")))


_RULES = [
    ("default", lambda: Redactor()),
    (
        "documented",
        lambda: Redactor(
            fields={"user": "hash", "note": "drop"},
            patterns={"email": "hash", "phone": "mask", "card": "mask", "api_key": "mask"},
            secret="walk-secret",
        ),
    ),
]


@pytest.mark.parametrize("rules", [name for name, _ in _RULES])
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(planted_traces(), min_size=1, max_size=3))
def test_recorded_traces_hold_no_planted_secret_read_back_and_match_the_plain_walk(
    tmp_path_factory: pytest.TempPathFactory, rules: str, made: list[tuple[Trace, Planted]]
) -> None:
    redactor = dict(_RULES)[rules]()
    traces = list({trace.id: trace for trace, _ in made}.values())
    planted = merge([p for _, p in made])
    db = tmp_path_factory.mktemp("walk") / "traces.db"
    raw = _record(db, traces, redactor)
    stored = _stored(db)
    assert sorted(stored) == sorted(trace.id for trace in traces)
    for trace in traces:  # names are kept as they are: out of the search
        for form in encodings("name", trace.steps[0].response.tool_calls[0].name):
            raw = raw.replace(form, b"")
    found = leaks(planted, raw)
    assert found == [], found
    for trace in traces:
        payload = stored[trace.id]
        assert Trace.from_json(payload).id == trace.id  # reads back
        assert payload == _oracle(dict(_RULES)[rules](), trace)


def test_a_sensitive_field_value_is_removed_from_free_text_and_not_from_the_next_trace(
    tmp_path: Path,
) -> None:
    value = "Zq7hunter2secret"
    with_field = Trace.from_dict(
        {
            "id": "a",
            "version": 1,
            "input": f"my password is {value}",
            "metadata": {"password": value, "note": f"see {value}"},
        }
    )
    # the same texts, no sensitive field: the value is not known to be sensitive there
    without = Trace.from_dict(
        {"id": "b", "version": 1, "input": f"my password is {value}", "metadata": {"n": 1}}
    )
    redactor = Redactor()
    first = redact_trace_object(redactor, with_field)
    second = redact_trace_object(redactor, without)
    assert value not in first.to_json()
    assert first.to_json().encode() == _oracle(Redactor(), with_field)
    assert second.to_json().encode() == _oracle(Redactor(), without)
    # and the other way round, with what the first pass learnt cached
    assert redact_trace_object(redactor, with_field).to_json() == first.to_json()


def test_a_trace_with_nothing_to_redact_is_written_as_it_is(tmp_path: Path) -> None:
    trace = user_trace(5)
    assert redact_trace_object(Redactor(), trace) is trace  # nothing copied
    _record(tmp_path / "t.db", [trace], Redactor())
    assert _stored(tmp_path / "t.db")[trace.id] == trace.to_json().encode()


def test_objects_changed_after_construction_take_the_plain_walk(tmp_path: Path) -> None:
    trace = Trace.from_dict(
        {"id": "odd", "version": 1, "input": "mail bob@example.com", "metadata": {}}
    )
    trace.history = ("not", "a list")  # type: ignore[assignment]  # set after construction
    recorder = Recorder(tmp_path / "t.db", redactor=Redactor())
    recorder.record(trace)
    recorder.close()
    # the plain walk refuses it as before: counted, nothing written
    assert recorder.stats.dropped_failed == 1 and recorder.stats.written == 0


class _CountingPattern:
    """A compiled pattern that counts its scans of each text (from its start)."""

    def __init__(self, pattern: Any, counts: Counter[tuple[str, str]], name: str) -> None:
        self._pattern = pattern
        self._counts = counts
        self._name = name

    def search(self, text: str, pos: int = 0) -> Any:
        if pos == 0:
            self._counts[self._name, text] += 1
        return self._pattern.search(text, pos)

    def finditer(self, text: str) -> Any:
        self._counts[self._name, text] += 1
        return self._pattern.finditer(text)


def _counting(redactor: Redactor) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    redactor._compiled = tuple(
        (rule, _CountingPattern(regex, counts, rule.name), hint)  # type: ignore[misc]
        for rule, regex, hint in redactor._compiled
    )
    if redactor._key_value is not None:
        redactor._key_value = _CountingPattern(  # type: ignore[assignment]
            redactor._key_value, counts, "key=value"
        )
    return counts


def test_each_text_is_scanned_once_per_pattern_however_many_traces_repeat_it() -> None:
    from dataclasses import replace

    base = user_trace(4155552671, tags=["budget"])  # (a user id that is a phone number)
    traces = [replace(base, id=f"scan-{n:03d}") for n in range(25)]
    redactor = Redactor()
    counts = _counting(redactor)
    first = redact_trace_object(redactor, traces[0])
    assert "User *** is" in first.to_json()  # (the id as a word: a phone number)
    once = Counter(counts)
    assert once and max(once.values()) == 1, once  # each text once per pattern
    for trace in traces[1:]:
        again = redact_trace_object(redactor, trace).to_json()
        assert again == first.to_json().replace(first.id, trace.id)
    assert counts == once, counts - once  # the other 24 traces scanned nothing again


@pytest.mark.parametrize("redactor", ["default", "none", "subclass"])
def test_the_recorder_encodes_each_trace_once_and_decodes_only_for_a_redact_data_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redactor: str
) -> None:
    from test_work_budgets import _CountingAdapter

    import toolproof._trace as trace_module

    class Custom(Redactor):
        def redact_data(self, data: dict[str, Any]) -> dict[str, Any]:
            return super().redact_data(data)

    chosen = {"default": Redactor(), "none": Redactor.none(), "subclass": Custom()}[redactor]
    counts: Counter[str] = Counter()
    real = trace_module._adapter()
    monkeypatch.setattr(trace_module, "_adapter", lambda: _CountingAdapter(real, counts))
    import toolproof.replay._tool_sets as tool_sets

    monkeypatch.setattr(tool_sets, "_ENCODED", {})  # no tools array encoded yet
    from dataclasses import replace

    base = user_trace(7)
    with Recorder(tmp_path / "r.db", redactor=chosen, batch_size=10) as recorder:
        for n in range(20):
            recorder.record(replace(base, id=f"enc-{n}"))
    assert recorder.stats.written == 20
    if redactor == "subclass":  # its own redact_data, on the plain form, checked by a decode
        assert counts == Counter(dump_python=20, validate_json=20), counts
    else:
        # each trace without its tools, and the tools array they share once
        assert counts == Counter({"dump_json without tools": 20, "dump_json of tools": 1}), counts


def test_a_data_field_holding_an_object_takes_the_plain_walk(tmp_path: Path) -> None:
    from dataclasses import dataclass

    @dataclass
    class Note:
        text: str

    trace = Trace.from_dict({"id": "obj", "version": 1, "input": "hi", "metadata": {}})
    trace.output = Note("mail bob@example.com")  # type: ignore[assignment]
    with pytest.raises(Exception, match="holds Note"):
        redact_trace_object(Redactor(), trace)
    recorder = Recorder(tmp_path / "t.db", redactor=Redactor())
    recorder.record(trace)
    recorder.close()
    assert recorder.stats.dropped_failed == 1  # the codec refuses it, as before


def test_the_recorders_store_is_checkpointed_by_its_own_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextlib import closing
    from dataclasses import replace

    import toolproof.replay._checkpoint as checkpoint

    original = checkpoint.Checkpointer.__init__

    def small(self: Any, path: Path, *, every: int = 20_000) -> None:
        original(self, path, every=every)

    monkeypatch.setattr(checkpoint.Checkpointer, "__init__", small)
    db = tmp_path / "traces.db"
    recorder = Recorder(db, batch_size=20)
    base = user_trace(3)
    for n in range(200):
        recorder.record(replace(base, id=f"ckpt-{n:03d}"))
    assert recorder.flush(60) is True
    checkpointer = recorder._checkpointer
    assert checkpointer is not None
    with closing(sqlite3.connect(db)) as conn:  # readable while the recorder writes
        assert conn.execute("SELECT COUNT(*) FROM traces").fetchone() == (200,)
    assert recorder.close() is True
    assert checkpointer.checkpoints > 0  # the thread ran them
    assert not checkpointer._thread.is_alive()
    assert not (tmp_path / "traces.db-wal").exists()  # closing checkpointed the rest
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT COUNT(*) FROM traces").fetchone() == (200,)
