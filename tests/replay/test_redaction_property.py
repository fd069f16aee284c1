"""No planted secret reaches the store file, its WAL or an export, through every entry point.

Secrets of every class (e-mail addresses incl. non-ASCII and IDN, phone numbers in every
form, Luhn-valid card numbers, current API-key forms, values of hashed fields) are planted in
every field of a trace, in JSON nested 1-3 levels inside strings, then recorded through the
real ``Recorder`` into a real SQLite file, or imported with ``toolproof traces import``. The
raw bytes of the database, its ``-wal`` file and a ``toolproof traces export`` are searched
for every secret, plain, JSON-escaped and URL-encoded.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redaction_secrets import DOCUMENTED_RULES, SECRET, Planted, leaks, merge, plant_trace

from _work import growth
from toolproof import Trace
from toolproof.cli import main
from toolproof.replay import Recorder, Redactor, TraceStore


def store_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(path.parent.glob(path.name + "*")))


def export_jsonl(db: Path, capsys: pytest.CaptureFixture[str] | None = None) -> bytes:
    out = db.parent / "export.jsonl"
    assert main(["traces", "export", "--store", str(db), "-o", str(out)]) == 0
    if capsys is not None:
        capsys.readouterr()
    return out.read_bytes()


def record_all(db: Path, traces: list[Trace], redactor: Redactor) -> bytes:
    """Record through the real recorder; the file and WAL bytes while open and after close."""
    recorder = Recorder(db, redactor=redactor, max_queue=len(traces) + 1)
    for trace in traces:
        recorder.record(trace)
    assert recorder.flush(60) is True
    raw = store_bytes(db)  # the WAL is still there: the recorder keeps its connection
    assert (db.parent / (db.name + "-wal")).exists()
    assert recorder.close() is True
    assert recorder.stats.written == len(traces)
    return raw + store_bytes(db)


def check_stored(db: Path, traces: list[Trace], action: str) -> None:
    """The stored traces are valid, their JSON in strings still parses, pseudonyms line up."""
    with TraceStore(db) as store:
        for original in traces:
            stored = store.get(original.id)
            call = stored.steps[0].response.tool_calls[0]
            result = stored.steps[0].tool_results[0]
            # re-encoded JSON stays valid at every depth
            value = json.loads(result.content)
            while isinstance(value, dict) and any(k.startswith("payload") for k in value):
                key = next(k for k in value if k.startswith("payload"))
                value = json.loads(value[key])
            assert json.loads(call.raw_arguments or "") == call.arguments
            if action == "hash":
                user = call.arguments["user_id"]
                assert user.startswith("anon_")
                assert user in stored.input  # the same value, the same pseudonym
            elif action == "drop":
                assert "user_id" not in call.arguments


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rng=st.randoms(use_true_random=False),
    action=st.sampled_from(["mask", "drop", "hash"]),
    traces=st.integers(1, 3),
)
def test_no_planted_secret_reaches_the_store_wal_or_export(
    tmp_path_factory: pytest.TempPathFactory, rng: random.Random, action: str, traces: int
) -> None:
    made = [plant_trace(rng, index) for index in range(traces)]
    planted = merge([p for _, p in made])
    assert set(planted.by_class) == {"email", "phone", "card", "api_key", "hashed"}
    redactor = Redactor(
        fields={"user_id": action, "order_id": action},  # type: ignore[dict-item]
        patterns={"email": action, "phone": "mask", "card": "mask", "api_key": "mask"},  # type: ignore[dict-item]
        secret=SECRET,
    )
    db = tmp_path_factory.mktemp("prop") / "traces.db"
    raw = record_all(db, [t for t, _ in made], redactor)
    exported = export_jsonl(db)
    assert len(exported.splitlines()) == traces
    assert leaks(planted, raw, exported) == []
    check_stored(db, [t for t, _ in made], action)


def plant_many(count: int, seed: int = 2026) -> tuple[list[Trace], Planted]:
    rng = random.Random(seed)
    made = [plant_trace(rng, index) for index in range(count)]
    return [t for t, _ in made], merge([p for _, p in made])


def test_thousands_of_planted_secrets_none_reaches_the_file(tmp_path: Path) -> None:
    traces, planted = plant_many(60)
    assert planted.count >= 3_000
    assert all(len(planted.by_class[kind]) >= 300 for kind in planted.by_class)
    db = tmp_path / "traces.db"
    raw = record_all(db, traces, Redactor(**DOCUMENTED_RULES, secret=SECRET))
    assert leaks(planted, raw, export_jsonl(db)) == []
    check_stored(db, traces, "hash")


def test_traces_import_with_redaction_rules_leaks_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    traces, planted = plant_many(15, seed=7)
    source = tmp_path / "runs.jsonl"
    source.write_text("".join(t.to_json() + "\n" for t in traces), encoding="utf-8")
    rules = tmp_path / "redaction.yaml"
    rules.write_text(json.dumps(DOCUMENTED_RULES))
    monkeypatch.setenv("TOOLPROOF_REDACTION_SECRET", SECRET)
    db = tmp_path / "imported.db"
    code = main(["traces", "import", str(source), "--store", str(db), "--redact", str(rules)])
    assert code == 0
    assert capsys.readouterr().out == f"imported 15 of 15 traces into {db}\n"
    assert leaks(planted, store_bytes(db), export_jsonl(db, capsys)) == []
    check_stored(db, traces, "hash")


def test_traces_import_default_redaction_masks_every_pattern_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces, planted = plant_many(8, seed=11)
    source = tmp_path / "runs.jsonl"
    source.write_text("".join(t.to_json() + "\n" for t in traces), encoding="utf-8")
    db = tmp_path / "imported.db"
    assert main(["traces", "import", str(source), "--store", str(db)]) == 0
    capsys.readouterr()
    patterns_only = Planted({k: v for k, v in planted.by_class.items() if k != "hashed"})
    assert leaks(patterns_only, store_bytes(db), export_jsonl(db, capsys)) == []
    # without a field rule the ids are kept: the import did not over-redact
    assert leaks(Planted({"hashed": planted.by_class["hashed"]}), store_bytes(db))


def test_a_trace_field_added_later_is_redacted_by_default() -> None:
    trace, planted = plant_trace(random.Random(3))
    data = trace.to_dict()
    data["future_field"] = {"nested": [planted.by_class["email"][0]], "user_id": "Zfuture123"}
    data["steps"][0]["future_note"] = "call " + planted.by_class["phone"][0] + " now"
    out = Redactor(**DOCUMENTED_RULES, secret=SECRET).redact_data(data)
    text = json.dumps(out, ensure_ascii=False)
    assert planted.by_class["email"][0] not in text
    assert planted.by_class["phone"][0] not in text
    assert "Zfuture123" not in text
    # structural fields are kept as they are
    assert out["id"] == trace.id and out["steps"][0]["response"]["tool_calls"][0]["id"] == "call_1"
    assert out["steps"][0]["tool_results"][1]["error_type"] == "ValueError"


# -- every pattern runs in linear time ----------------------------------------------------

_MB = 1_000_000


def _adversarial(size: int = _MB) -> dict[str, str]:
    """Hostile texts of about ``size`` characters for the redaction patterns."""
    import base64
    import os

    rng = random.Random(5)
    return {
        "base64url": base64.urlsafe_b64encode(os.urandom(size)).decode()[:size],
        "at signs": "@" * size,
        "a@ repeated": "a@" * (size // 2),
        "dotted local part": "a." * (size // 2) + "@",
        "near-miss addresses": "a@b." * (size // 4),
        "url-encoded at": "%40" * (size // 3),
        "long domain": "a@" + "b." * (size // 2) + "1",
        "json-escaped": "\\u00e9" * (size // 6),
        "digits": "7" * size,
        "spaced digits": "1 " * (size // 2),
        "card-like groups": "4111 " * (size // 5),
        "phone-like groups": "415 555 2671 " * (size // 13),
        "sk- prefixes": "sk-" * (size // 3),
        "sk- near-misses": ("sk-" + "a" * 15 + " ") * (size // 19),
        "plus signs": "+1 " * (size // 3),
        "parentheses": "(415) " * (size // 6),
        "jwt-like": "eyJaaaaaaaa." * (size // 12),
        "bearer": "Bearer " * (size // 7),
        "key=value": "user_id=" * (size // 8),
        "dotted words": "a." * (size // 2),
        "dashed words": "a-" * (size // 2),
        "near-miss keys": "x_tokenx " * (size // 9),
        "wildcard key prefixes": "acct_." * (size // 6),
        "mixed": "".join(rng.choice("a@.1 -_+%\\n") for _ in range(size)),
    }


# Each input at two sizes: ten times the text may take at most 40 times the CPU time (quadratic
# patterns take 100 times; they took minutes on 1 MB). bench/_guarantee_redaction.py measures
# the worst time on 1 MB of each.
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(_adversarial(64)))
def test_adversarial_text_redacts_in_linear_time(name: str) -> None:
    redactor = Redactor(
        fields={"user_id": "hash", "*_token": "mask", "session?id": "mask", "acct_*": "mask"},
        patterns=DOCUMENTED_RULES["patterns"],
        secret=SECRET,
    )
    small, big = _adversarial(_MB // 20)[name], _adversarial(_MB // 2)[name]
    ratio = growth(redactor.redact_text, small, big, repeat=2)
    assert ratio < 40, (name, ratio)


@pytest.mark.timeout(120)
def test_a_large_encoded_tool_result_does_not_stall_the_recorder(tmp_path: Path) -> None:
    import base64
    import os

    trace, _ = plant_trace(random.Random(1))
    data: dict[str, Any] = trace.to_dict()
    data["steps"][0]["tool_results"][1]["content"] = (
        base64.urlsafe_b64encode(os.urandom(300_000)).decode() + "@"
    )
    big = Trace.from_dict(data)
    recorder = Recorder(tmp_path / "traces.db")
    recorder.record(big)
    assert recorder.flush(30) is True
    recorder.close()


def test_agent_runs_recorded_through_the_agent_leak_nothing(tmp_path: Path) -> None:
    from toolproof import Agent, Toolset, tool
    from toolproof.testing import ScriptedModel, call

    @tool
    def lookup(user_id: str, query: str) -> dict[str, Any]:
        """Look a customer up.

        Args:
            user_id: The customer.
            query: What to look for.
        """
        return {}

    rng = random.Random(17)
    planted = Planted()
    recorder = Recorder(
        tmp_path / "traces.db", redactor=Redactor(**DOCUMENTED_RULES, secret=SECRET)
    )
    for index in range(5):
        trace, p = plant_trace(rng, index)
        planted = merge([planted, p])
        source = trace.steps[0]
        args = source.response.tool_calls[0].arguments
        result = source.tool_results[0].content  # JSON nested in strings, 1-3 deep

        def respond(result: str = result, **kwargs: Any) -> Any:
            return {"payload": result, "echo": kwargs}

        agent = Agent(
            ScriptedModel([call("lookup", **args), trace.output or ""]),
            Toolset([lookup], mode="mock", mocks={"lookup": respond}),
            system_prompt=trace.system_prompt,
            recorder=recorder,
        )
        agent.run_sync(trace.input, metadata=trace.metadata, tags=trace.tags)
    assert recorder.flush(60) is True
    raw = store_bytes(tmp_path / "traces.db")
    recorder.close()
    raw += store_bytes(tmp_path / "traces.db")
    assert recorder.stats.written == 5
    # only the secrets the agent runs carried: input, answer, system prompt, arguments,
    # tool results, metadata and tags
    assert leaks(planted, raw, export_jsonl(tmp_path / "traces.db")) == []
