"""``toolproof traces`` and ``toolproof replay`` on a real store file, and the report formats."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from replay_helpers import run_trace, user_trace

from _shared import shared_path
from toolproof.cli import main
from toolproof.replay import TraceStore, count_schema_rejections, replay


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def store(db_path: Path) -> Path:
    with TraceStore(db_path) as traces:
        traces.add_many(
            [
                user_trace(1, tags=["prod"]),
                user_trace(2, tags=["prod"]),
                run_trace(["Hello there!"], input="hi", tags=["staging"]),
            ]
        )
    return db_path


def test_list_filters_and_json(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "traces", "list", "--store", str(store))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "STARTED", "MODEL", "STATUS", "TOOLS", "TAGS", "INPUT"]
    assert len(lines) == 4
    code, out, _ = run(capsys, "traces", "list", "--store", str(store), "--tag", "prod", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["input"] for r in rows) == ["Who is user 1?", "Who is user 2?"]
    assert all(r["tools"] == {"query_users": 1} for r in rows)
    code, out, _ = run(
        capsys, "traces", "list", "--store", str(store), "--tool", "query_users", "--limit", "1"
    )
    assert out.splitlines()[-1] == "(1 of 2 shown; use --limit)"
    code, out, _ = run(capsys, "traces", "list", "--store", str(store), "--status", "error")
    assert out == "no traces match\n"


def test_show_export_import_round_trip(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with TraceStore(store) as traces:
        first = next(iter(traces.query()))
    code, out, _ = run(capsys, "traces", "show", first.id[:8], "--store", str(store))
    assert code == 0
    assert out.startswith(f"trace {first.id}  model=scripted")
    assert f"[user] {first.input}" in out
    code, out, _ = run(capsys, "traces", "show", first.id, "--store", str(store), "--json")
    assert json.loads(out) == first.to_dict()

    export = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "traces", "export", "--store", str(store), "-o", str(export))
    assert code == 0
    assert err == f"exported 3 traces to {export}\n"
    other = tmp_path / "other.db"
    code, out, _ = run(capsys, "traces", "import", str(export), "--store", str(other))
    assert out == f"imported 3 of 3 traces into {other}\n"
    code, out, _ = run(capsys, "traces", "import", str(export), "--store", str(other))
    assert out == f"imported 0 of 3 traces into {other} (3 already present, kept)\n"
    with TraceStore(store) as a, TraceStore(other) as b:
        assert sorted(a.query(), key=lambda t: t.id) == sorted(b.query(), key=lambda t: t.id)


def test_import_tau_bench_with_hashed_user_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tau = shared_path("datasets", "tau-bench-airline-gpt4o")
    rules = tmp_path / "redaction.yaml"
    # Field rules catch ids passed to tools; a user who only typed their id (and was
    # transferred before any lookup) is caught by a pattern for the id format.
    rules.write_text(
        "fields: {user_id: hash, payment_id: hash}\n"
        "patterns: {email: hash}\n"
        "custom: [{name: user_id, regex: '\\b[a-z]+_[a-z]+_\\d{4}\\b', action: hash}]\n"
    )
    monkeypatch.setenv("TOOLPROOF_REDACTION_SECRET", "s3cret")
    db = tmp_path / "tau.db"
    code, out, _ = run(
        capsys,
        "traces", "import", str(tau / "gpt-4o-airline.json"),
        "--tools", str(tau / "tools.json"), "--model", "openai:gpt-4o",
        "--store", str(db), "--redact", str(rules),
    )  # fmt: skip
    assert code == 0
    assert out == f"imported 1341 of 1341 traces into {db}\n"
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("tau.db*"))
    runs = json.loads((tau / "gpt-4o-airline.json").read_text())
    user_ids = {run["info"]["task"]["user_id"] for run in runs}
    assert len(user_ids) > 20
    leaked = sorted(u for u in user_ids if u.encode() in raw)
    assert leaked == []
    # ...and the pseudonyms still line up: tools mode with today's schemas passes
    code, out, _ = run(capsys, "replay", "--store", str(db), "--schemas", str(tau / "tools.json"))
    assert code == 0
    assert "1341 samples: 1341 pass" in out


def test_prune(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "traces", "prune", "--store", str(store), "--older-than", "1d")
    assert (code, out) == (0, "deleted 0 traces older than 1d\n")


def test_errors_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.db"
    code, _, err = run(capsys, "traces", "list", "--store", str(missing))
    assert code == 2
    assert err == (
        f"toolproof: error: no trace store at {missing}: record runs with "
        "Agent(recorder=Recorder(...)) or import them with `toolproof traces import FILE`\n"
    )
    assert not missing.exists()
    db = tmp_path / "t.db"
    TraceStore(db).close()
    code, _, err = run(capsys, "replay", "--store", str(db), "--mode", "model")
    assert (code, err) == (
        2,
        "toolproof: error: --mode model needs --agent MODULE:FACTORY (today's agent)\n",
    )
    code, _, err = run(
        capsys, "replay", "--store", str(db), "--schemas", "x.json", "--report", "pdf:out.pdf"
    )
    assert code == 2
    assert err.startswith("toolproof: error: --report 'pdf:out.pdf': unknown format 'pdf'")
    code, _, err = run(capsys, "traces", "list", "--store", str(db), "--since", "yesterday")
    assert code == 2
    assert "'yesterday' is neither an age" in err


def test_replay_reports(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "replay.yaml"
    rules.write_text("tools:\n  query_users:\n    bounds: {user_id: {max: 1}}\n")
    json_path, junit_path, md_path = tmp_path / "r.json", tmp_path / "r.xml", tmp_path / "r.md"
    code, out, _ = run(
        capsys,
        "replay", "--store", str(store), "--tools", "replay_helpers:query_users",
        "--rules", str(rules), "--gate", "40%",
        "--report", f"json:{json_path}", "--report", f"junit:{junit_path}",
        "--report", f"markdown:{md_path}",
    )  # fmt: skip
    # 1 of 3 fails: 33% [6%, 79%] contains 40%: undecided, which the advisory gate lets by.
    assert code == 0
    assert (
        "3 samples: 2 pass, 0 warn, 1 fail; failure rate 33.3%; "
        "gate 40.0%: UNDECIDED (advisory: not blocking)"
    ) in out
    assert "gate (advisory) undecided: failure rate 33.3% [6.1%, 79.2%] (95%)" in out
    data = json.loads(json_path.read_text())
    assert data["counts"] == {"pass": 2, "warn": 0, "fail": 1, "error": 0}
    (failed,) = [r for r in data["results"] if r["grade"] == "fail"]
    assert failed["findings"][0]["check"] == "bounds"
    root = ET.parse(junit_path).getroot()
    assert root.get("tests") == "3"
    assert root.get("failures") == "1"
    markdown = md_path.read_text()
    assert markdown.startswith(
        "<!-- toolproof-replay -->\n## toolproof replay (tools): gate ⚠️ undecided (advisory"
    )
    assert "| 3 | 2 | 0 | 1 | 0 | 0 | 33.3% | 6.1%–79.2% (95% wilson) | 33.3% | 40.0% |" in markdown
    assert "### Failures" in markdown

    code, out, err = run(
        capsys, "replay", "--store", str(store), "--tools", "replay_helpers:query_users",
        "--rules", str(rules), "--report", "json:-",
    )  # fmt: skip
    assert code == 1
    assert json.loads(out)["gate"]["passed"] is False
    assert "gate 0: FAILED" in err


def test_count_schema_rejections_directly(store: Path) -> None:
    schemas = {
        "query_users": {
            "type": "object",
            "properties": {"user_id": {"type": "integer", "maximum": 1}},
            "required": ["user_id"],
        },
        "brand_new": {"type": "object"},
    }
    results = count_schema_rejections(store, schemas, examples=5)
    assert [(r.tool, r.checked, r.rejected) for r in results] == [
        ("brand_new", 0, 0),
        ("query_users", 2, 1),
    ]
    (example,) = results[1].examples
    assert example.endswith(
        ': query_users({"user_id": "***"}): *** is greater than the maximum of 1 (at user_id)'
    )
    (gone,) = count_schema_rejections(store, {})
    assert (gone.tool, gone.checked, gone.rejected) == ("query_users", 2, 2)
    assert all(e.endswith("): tool no longer exists") for e in gone.examples)


def test_count_schema_rejections_skips_unparsed_calls_and_unreadable_rows(
    store: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from dataclasses import replace

    broken = user_trace(3)
    step = broken.steps[0]
    (call,) = step.response.tool_calls
    bad_call = replace(call, arguments={}, raw_arguments='{"user_id": 3', arguments_error="cut off")
    response = replace(step.response, tool_calls=[bad_call])
    broken = replace(
        broken, id="unparsed", steps=[replace(step, response=response), *broken.steps[1:]]
    )
    with TraceStore(store) as traces:
        traces.add(broken)
        traces.add(replace(user_trace(4), id="garbage"))
        traces._exec("UPDATE traces SET payload = ? WHERE id = 'garbage'", (b"{not json",))
    schemas = {"query_users": {"type": "object", "required": ["user_id"]}}
    (entry,) = count_schema_rejections(store, schemas)
    # the two sound calls only: the cut-off one was refused when recorded, the row is unreadable
    assert (entry.tool, entry.checked, entry.rejected) == ("query_users", 2, 0)
    assert any("garbage" in record.getMessage() for record in caplog.records)


def test_replay_function_accepts_a_store_path(store: Path) -> None:
    from replay_helpers import query_users

    report = replay(str(store), tools=[query_users], filter=None)
    assert len(report.samples) == 3
    assert report.source == str(store)


def test_schema_diff_store_with_snapshot_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``schema diff OLD NEW --store``: snapshots from `schema snapshot`, a real store."""
    from examples.ops_agent.demo import record
    from examples.ops_agent.models import new_model, old_model

    db = tmp_path / "traces.db"
    record(db, old_model, tags=["prod"], count=12)
    record(db, new_model, tags=["canary"], count=12)
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    assert run(capsys, "schema", "snapshot", "examples.ops_agent.tools", "-o", str(old))[0] == 0
    assert run(capsys, "schema", "snapshot", "examples.ops_agent.tools_v2", "-o", str(new))[0] == 0

    code, out, _ = run(capsys, "schema", "diff", str(old), str(new), "--store", str(db))
    assert code == 1
    assert "BREAKING   query_users: extra fields now forbidden" in out
    assert "2 of 24 would be rejected by the new schemas" in out
    # no change and nothing rejected: exit 0
    code, out, _ = run(capsys, "schema", "diff", str(old), str(old), "--store", str(db))
    assert "0 of 24 would be rejected" in out
    assert code == 0
    # a store that lacks the file is one clear line
    code, _, err = run(capsys, "schema", "diff", str(old), str(new), "--store", str(tmp_path / "x"))
    assert code == 2
    assert err.startswith("toolproof: error: --store")
