"""Ids and run logs as users type and read them.

- ``--id`` takes any unique prefix of a trace id (``traces list`` prints 12 characters), in
  every command and in ``TraceFilter``; an ambiguous prefix is exit 2 listing candidates.
- A run killed by SIGKILL shows as ``died`` in ``runs list`` once its process is gone (the
  lock its command held is free), and as ``running`` while it runs.
- The OTel import gives the same traces from the command line and from Python (the ``otel``
  tag included), and an export with content keeps the tools' schemas, tags and metadata.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from toolproof import Agent, tool
from toolproof._runlog import RunLog, list_runs
from toolproof.cli import main
from toolproof.replay import TraceFilter, TraceStore
from toolproof.testing import ScriptedModel, call

ROOT = Path(__file__).resolve().parents[2]


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return "value of " + key


def _traces(count: int) -> list[Any]:
    out = []
    for number in range(count):
        model = ScriptedModel([call("lookup", key=str(number)), "done"])
        agent = Agent(model, [lookup], system_prompt="be brief")
        out.append(agent.run_sync(f"look up {number}", metadata={"n": number}, tags=["t"]).trace)
    return out


def run_cli(*argv: str) -> tuple[int, str, str]:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "t.db"
    with TraceStore(path) as opened:
        opened.add_many(_traces(6))
    return path


@pytest.mark.parametrize("width", [4, 8, 12, 20, 31])
def test_a_unique_prefix_selects_its_trace_everywhere(store: Path, width: int) -> None:
    with TraceStore(store) as opened:
        ids = [row.id for row in opened.rows()]
        prefixes = [i[:width] for i in ids]
        unique = [p for p in prefixes if prefixes.count(p) == 1]
        for prefix in unique:
            full = next(i for i in ids if i.startswith(prefix))
            assert [r.id for r in opened.rows(TraceFilter(ids=[prefix]))] == [full]
            assert opened.count(TraceFilter(ids=[prefix])) == 1
    for prefix in unique[:2]:
        full = next(i for i in ids if i.startswith(prefix))
        code, out, err = run_cli("traces", "list", "--store", str(store), "--id", prefix, "--json")
        assert code == 0, err
        assert [json.loads(line)["id"] for line in out.splitlines()] == [full]
        code, out, err = run_cli("traces", "export", "--store", str(store), "--id", prefix)
        assert code == 0, err
        assert [json.loads(line)["id"] for line in out.splitlines()] == [full]


def test_an_ambiguous_prefix_is_exit_2_listing_the_candidates(tmp_path: Path) -> None:
    traces = _traces(2)
    traces[0].id, traces[1].id = "abc" + "0" * 29, "abd" + "1" * 29
    path = tmp_path / "t.db"
    with TraceStore(path) as opened:
        opened.add_many(traces)
    for command in (["traces", "list"], ["traces", "export"], ["replay", "--schemas", "x"]):
        code, _, err = run_cli(*command, "--store", str(path), "--id", "ab")
        if command[0] == "replay":
            assert code == 2  # (the schema file is checked first; the filter after)
            continue
        assert code == 2, err
        assert "ambiguous" in err and traces[0].id in err and traces[1].id in err
        assert "Traceback" not in err


@pytest.mark.timeout(120)
def test_a_killed_run_shows_as_died_and_a_running_one_as_running(tmp_path: Path) -> None:
    suite = tmp_path / "slow.eval.yaml"
    (tmp_path / "slowtools.py").write_text(
        "import time\nfrom toolproof import Agent, tool\n\n"
        "@tool\ndef wait(seconds: float) -> str:\n"
        '    """Wait.\n\n    Args:\n        seconds: How long.\n    """\n'
        "    time.sleep(seconds)\n    return 'waited'\n\n"
        "def build_agent(model, tools=None, **options):\n"
        "    return Agent(model, [wait] if tools is None else tools)\n",
        encoding="utf-8",
    )
    suite.write_text(
        "suite: slow\nagent: slowtools:build_agent\nmodel: scripted\ntools: real\n"
        "cases:\n  - name: a\n    input: wait\n    script:\n"
        "      - call: {name: wait, arguments: {seconds: 60}}\n      - done\n",
        encoding="utf-8",
    )
    logs = tmp_path / "runs"
    process = subprocess.Popen(
        [sys.executable, "-m", "toolproof", "run", str(suite), "-q"],
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")]),
            "TOOLPROOF_LOG_DIR": str(logs),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        for _ in range(600):  # until its run log exists
            if list_runs(logs):
                break
            time.sleep(0.1)
        (running,) = list_runs(logs)
        assert running.status == "running"
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    (died,) = list_runs(logs)
    assert died.status == "died"
    code, out, err = run_cli("runs", "list", "--log-dir", str(logs))
    assert code == 0, err
    assert "died" in out


def test_a_run_log_of_this_process_is_running_until_it_finishes(tmp_path: Path) -> None:
    log = RunLog.start(tmp_path, "run", argv=[])
    assert [r.status for r in list_runs(tmp_path)] == ["running"]
    log.finish(status="finished", exit_code=0)
    assert [r.status for r in list_runs(tmp_path)] == ["finished"]


def test_the_otel_import_is_the_same_from_the_cli_and_from_python(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolproof.integrations.otel import export_trace, import_otlp_json, otlp_json

    originals = _traces(3)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for trace in originals:
        export_trace(trace, tracer_provider=provider, capture_content=True)
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(otlp_json(list(exporter.get_finished_spans()))))
    import_otlp_json(path, str(tmp_path / "python.db"))
    code, _, err = run_cli(
        "traces", "import", str(path), "--format", "otel", "--store", str(tmp_path / "cli.db")
    )
    assert code == 0, err
    with TraceStore(tmp_path / "python.db") as a, TraceStore(tmp_path / "cli.db") as b:
        from_python = {t.id: t.to_dict() for t in a.query()}
        from_cli = {t.id: t.to_dict() for t in b.query()}
    assert from_python == from_cli
    for original in originals:
        back = from_cli[original.id]
        assert "otel" in back["tags"] and "t" in back["tags"]
        assert back["tools"] == original.to_dict()["tools"]
        assert back["metadata"]["n"] == original.metadata["n"]
