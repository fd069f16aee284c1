"""``toolproof traces promote``: recorded runs become eval cases that run offline.

Every test drives the real CLI over a real SQLite store; the agent is the HR assistant of
the examples, its model scripted (models are what tests may mock).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests._cli import run_cli
from tests.replay.redaction_secrets import DOCUMENTED_RULES, SECRET, leaks, merge, plant_trace

from toolproof import Trace
from toolproof.replay import Recorder, TraceStore
from toolproof.testing import ScriptedModel, call

ROOT = Path(__file__).resolve().parents[2]
AGENT = "examples.hr_assistant.agent:build_agent"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPROOF_")}
    env.update(extra)
    return env


def cli(tmp_path: Path, *args: str) -> Any:
    return run_cli(*args, cwd=tmp_path, env=_env(), paths=[ROOT])


def record(store: Path, script: list[Any], text: str, **options: Any) -> str:
    """Run the HR assistant with a scripted model and record the run; its trace id."""
    from examples.hr_assistant.agent import build_agent

    recorder = Recorder(str(store), **options)
    try:
        agent = build_agent(ScriptedModel(script), recorder=recorder)
        result = agent.run_sync(text)
    finally:
        recorder.close()
    return str(result.trace.id)


def promoted_files(tmp_path: Path, suite: Path) -> list[Path]:
    folder = suite.parent / (suite.name.removesuffix(".yaml") + ".fixtures")
    return [suite, *sorted(folder.glob("*.yaml"))]


# -- a promoted case passes on its recording and fails on the regression ------------------------


GOOD = [call("get_leave_balance", employee_id="E003"), "E003 has 12 days of annual leave left."]
#: The regressions a promoted case must catch, each as the model's answers.
REGRESSIONS = {
    "wrong id": [
        call("get_leave_balance", employee_id="E004"),
        "E003 has 12 days of annual leave left.",
    ],
    "invented number": [
        call("get_leave_balance", employee_id="E003"),
        "E003 has 7 days of annual leave left.",
    ],
    "no tool call": ["E003 has 12 days of annual leave left."],
    "dropped fact": [call("get_leave_balance", employee_id="E003"), "E003 has some leave left."],
}


def test_a_promoted_case_passes_on_its_recording_and_fails_on_each_regression(
    tmp_path: Path,
) -> None:
    store = tmp_path / "traces.db"
    good = record(store, GOOD, "How many days of leave does E003 have left?")
    suite = tmp_path / "regressions.eval.yaml"
    done = cli(
        tmp_path,
        "traces",
        "promote",
        good[:10],
        "--store",
        str(store),
        "-o",
        str(suite),
        "--agent",
        AGENT,
    )
    assert done.returncode == 0, done.stderr
    data = yaml.safe_load(suite.read_text())
    (case,) = data["cases"]
    assert case["input"] == "How many days of leave does E003 have left?"
    assert case["metadata"]["promoted_from"]["trace"] == good
    expect = case["expect"]
    assert expect["tools_called"] == {"get_leave_balance": 1}
    assert expect["args"] == {"get_leave_balance": {"employee_id": "E003"}}
    assert expect["final_contains"] == ["E003", "12"]
    assert expect["grounded"] is True
    fixtures = yaml.safe_load(Path(suite.parent / case["mocks"][0]).read_text())
    assert fixtures["fixtures"] == [
        {"tool": "get_leave_balance", "arguments": {"employee_id": "E003"}, "returns": 12}
    ]

    passed = cli(tmp_path, "run", str(suite), "--no-log", "-q")
    assert passed.returncode == 0, passed.stdout + passed.stderr

    for label, answers in REGRESSIONS.items():
        bad = record(store, answers, "How many days of leave does E003 have left?")
        other = tmp_path / f"bad-{label.replace(' ', '-')}.eval.yaml"
        made = cli(
            tmp_path,
            "traces",
            "promote",
            bad,
            "--store",
            str(store),
            "-o",
            str(other),
            "--agent",
            AGENT,
        )
        assert made.returncode == 0, made.stderr
        regressed = dict(data)
        regressed["cases"] = [
            {**case, "script": yaml.safe_load(other.read_text())["cases"][0].get("script")}
        ]
        suite_bad = tmp_path / f"regressed-{label.replace(' ', '-')}.eval.yaml"
        suite_bad.write_text(yaml.safe_dump(regressed))
        failed = cli(tmp_path, "run", str(suite_bad), "--no-log", "-q")
        assert failed.returncode == 1, (label, failed.stdout, failed.stderr)


def test_history_becomes_turns_and_each_recorded_result_a_fixture(tmp_path: Path) -> None:
    """A multi-turn run: earlier turns, parallel calls, a tool error, a repeated call."""
    trace = Trace.from_dict(
        {
            "id": "multi-turn-1",
            "version": 1,
            "input": "And what is 3 times 4?",
            "history": [
                {"role": "user", "content": "Leave of E001 and E999?"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "h1",
                            "name": "get_leave_balance",
                            "arguments": {"employee_id": "E001"},
                        },
                        {
                            "id": "h2",
                            "name": "get_leave_balance",
                            "arguments": {"employee_id": "E999"},
                        },
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "h1",
                    "name": "get_leave_balance",
                    "content": "5",
                    "status": "ok",
                },
                {
                    "role": "tool",
                    "tool_call_id": "h2",
                    "name": "get_leave_balance",
                    "content": "Error (KeyError): employee not found",
                    "status": "error",
                },
                {"role": "assistant", "content": "E001 has 5 days; E999 is unknown."},
            ],
            "steps": [
                {
                    "index": 1,
                    "request": {"message_count": 6},
                    "response": {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": "c1", "name": "multiply_numbers", "arguments": {"a": 3, "b": 4}}
                        ],
                    },
                    "tool_results": [
                        {
                            "call_id": "c1",
                            "name": "multiply_numbers",
                            "status": "ok",
                            "content": "12",
                            "value": 12,
                        }
                    ],
                },
                {
                    "index": 2,
                    "request": {"message_count": 8},
                    "response": {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": "c2", "name": "multiply_numbers", "arguments": {"a": 3, "b": 5}}
                        ],
                    },
                    "tool_results": [
                        {
                            "call_id": "c2",
                            "name": "multiply_numbers",
                            "status": "ok",
                            "content": "15",
                            "value": 15,
                        }
                    ],
                },
                {
                    "index": 3,
                    "request": {"message_count": 10},
                    "response": {"role": "assistant", "content": "3 times 4 is 12."},
                },
            ],
            "output": "3 times 4 is 12.",
        }
    )
    store = tmp_path / "traces.db"
    with TraceStore(str(store)) as opened:
        opened.add(trace)
    suite = tmp_path / "multi.eval.yaml"
    done = cli(
        tmp_path,
        "traces",
        "promote",
        "multi-turn-1",
        "--store",
        str(store),
        "-o",
        str(suite),
        "--agent",
        AGENT,
    )
    assert done.returncode == 0, done.stderr
    (case,) = yaml.safe_load(suite.read_text())["cases"]
    assert case["turns"] == ["Leave of E001 and E999?", "And what is 3 times 4?"]
    assert case["expect"]["tools_called"] == {"get_leave_balance": 2, "multiply_numbers": 2}
    # ids exactly; a number that differs between calls as the range recorded
    assert case["expect"]["args"]["get_leave_balance"] == [
        {"employee_id": "E001"},
        {"employee_id": "E999"},
    ]
    assert case["expect"]["args"]["multiply_numbers"] == {"a": 3, "b": {"range": [4, 5]}}
    assert "no_tool_errors" not in case["expect"]  # the recording had one
    assert case["script"][0] == [
        {"call": {"name": "get_leave_balance", "arguments": {"employee_id": "E001"}}},
        {"call": {"name": "get_leave_balance", "arguments": {"employee_id": "E999"}}},
    ]
    fixtures = yaml.safe_load((suite.parent / case["mocks"][0]).read_text())["fixtures"]
    assert {
        "tool": "get_leave_balance",
        "arguments": {"employee_id": "E999"},
        "raises": {"type": "ToolError", "message": "employee not found"},
    } in fixtures
    ran = cli(tmp_path, "run", str(suite), "--no-log", "-q")
    assert ran.returncode == 0, ran.stdout + ran.stderr


# -- redaction: nothing the redaction removes reaches a promoted file ---------------------------


@pytest.mark.parametrize("stored", ["as recorded", "redacted in the store"])
def test_a_promoted_suite_holds_none_of_the_planted_secrets(tmp_path: Path, stored: str) -> None:
    """Generated traces with secrets of every class in every field, promoted whole."""
    rng = random.Random(stored)
    made = [plant_trace(rng, index) for index in range(25)]
    planted = merge([p for _, p in made])
    export = tmp_path / "planted.jsonl"
    export.write_text("".join(trace.to_json() + "\n" for trace, _ in made))
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(DOCUMENTED_RULES))
    store = tmp_path / "traces.db"
    env = _env(TOOLPROOF_REDACTION_SECRET=SECRET)
    redaction = ["--no-redact"] if stored == "as recorded" else ["--redact", str(rules)]
    imported = run_cli(
        "traces", "import", str(export), "--store", str(store), *redaction, cwd=tmp_path, env=env
    )
    assert imported.returncode == 0, imported.stderr
    assert leaks(planted, store.read_bytes()) if stored == "as recorded" else True
    suite = tmp_path / "planted.eval.yaml"
    done = run_cli(
        "traces",
        "promote",
        "--store",
        str(store),
        "-o",
        str(suite),
        "--agent",
        AGENT,
        "--redact",
        str(rules),
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    files = promoted_files(tmp_path, suite)
    assert len(files) == 1 + 25
    blobs = [done.stdout.encode(), done.stderr.encode()]
    for file in files:
        blobs.append(file.read_bytes())
        parsed = yaml.safe_load(file.read_text())
        blobs.append(json.dumps(parsed).encode())
        blobs.append(json.dumps(parsed, ensure_ascii=False).encode())
    assert leaks(planted, *blobs) == []
    cases = yaml.safe_load(suite.read_text())["cases"]
    assert sorted(c["metadata"]["promoted_from"]["trace"] for c in cases) == sorted(
        t.id for t, _ in made
    )


# -- choosing what to promote -------------------------------------------------------------------


def _trace(index: int, *, kind: str, variant: int, signal: str | None) -> Trace:
    """A generated trace of one of several kinds (near-duplicates share a kind)."""
    tool = {"leave": "get_leave_balance", "weather": "get_weather", "math": "multiply_numbers"}[
        kind
    ]
    text = {
        "leave": f"how many leave days does E{variant:03d} have",
        "weather": f"what is the weather in city {variant}",
        "math": f"multiply {variant} by seven please",
    }[kind]
    args: dict[str, Any] = (
        {"employee_id": f"E{variant:03d}"}
        if kind == "leave"
        else {"city": f"c{variant}"}
        if kind == "weather"
        else {"a": variant, "b": 7}
    )
    calls = [args, args] if signal == "retries" else [args]
    steps: list[dict[str, Any]] = []
    for n, arguments in enumerate(calls):
        error = signal == "errors" and n == 0
        steps.append(
            {
                "index": n + 1,
                "request": {"message_count": 2 + 2 * n},
                "response": {
                    "role": "assistant",
                    "tool_calls": [{"id": f"c{n}", "name": tool, "arguments": arguments}],
                },
                "tool_results": [
                    {
                        "call_id": f"c{n}",
                        "name": tool,
                        "status": "error" if error else "ok",
                        "content": "Error (ToolError): down" if error else "1",
                        "error_type": "ToolError" if error else None,
                    }
                ],
            }
        )
    data: dict[str, Any] = {
        "id": f"t-{index:04d}",
        "version": 1,
        "input": text,
        "steps": steps,
        "output": None if signal == "failed" else "done",
        "stop_reason": "max_steps" if signal == "failed" else "final",
        "duration_ms": 9000.0 if signal == "latency" else 100.0,
        "cost": 0.5 if signal == "cost" else 0.001,
    }
    return Trace.from_dict(data)


SIGNAL_FLAGS = {
    "failed": ["--failed"],
    "errors": ["--errors"],
    "retries": ["--retries"],
    "cost": ["--min-cost", "0.1"],
    "latency": ["--min-latency", "5"],
}


def _store(tmp_path: Path, traces: list[Trace]) -> Path:
    store = tmp_path / "traces.db"
    with TraceStore(str(store)) as opened:
        opened.add_many(traces)
    return store


def promote(tmp_path: Path, store: Path, *args: str) -> Any:
    """``toolproof traces promote`` of the HR assistant's traces in ``store``."""
    return cli(tmp_path, "traces", "promote", "--store", str(store), "--agent", AGENT, *args)


def _chosen(suite: Path) -> set[str]:
    """The ids of the traces a promoted suite's cases came from."""
    cases = yaml.safe_load(suite.read_text())["cases"]
    return {c["metadata"]["promoted_from"]["trace"] for c in cases}


@pytest.mark.parametrize("signal", sorted(SIGNAL_FLAGS))
def test_each_signal_promotes_exactly_the_traces_that_show_it(tmp_path: Path, signal: str) -> None:
    rng = random.Random(signal)
    traces, expected = [], set()
    for index in range(60):
        shows = rng.choice([None, None, *SIGNAL_FLAGS])
        trace = _trace(
            index,
            kind=rng.choice(["leave", "weather", "math"]),
            variant=rng.randrange(1, 9),
            signal=shows,
        )
        traces.append(trace)
        if shows == signal:
            expected.add(trace.id)
    assert expected
    suite = tmp_path / "chosen.eval.yaml"
    done = promote(tmp_path, _store(tmp_path, traces), "-o", str(suite), *SIGNAL_FLAGS[signal])
    assert done.returncode == 0, done.stderr
    assert _chosen(suite) == expected


def test_distinct_keeps_one_trace_per_kind_of_failure(tmp_path: Path) -> None:
    """Clusters of near-duplicates (same calls and words, other ids and numbers)."""
    rng = random.Random(7)
    traces: list[Trace] = []
    kinds = {("leave", "errors"), ("weather", "errors"), ("math", "failed"), ("leave", "failed")}
    for index in range(80):
        kind, signal = sorted(kinds)[index % len(kinds)]
        traces.append(_trace(index, kind=kind, variant=rng.randrange(1, 99), signal=signal))
    store = _store(tmp_path, traces)
    for asked, kept in ((20, len(kinds)), (2, 2)):
        suite = tmp_path / f"distinct{asked}.eval.yaml"
        flags = ("--since", "7d", "--failed", "--errors", "--distinct", str(asked))
        done = promote(tmp_path, store, "-o", str(suite), *flags)
        assert done.returncode == 0, done.stderr
        chosen = _chosen(suite)
        assert len(chosen) == kept
        by_id = {t.id: t for t in traces}
        signatures = {(by_id[i].input.split()[0], by_id[i].stop_reason) for i in chosen}
        assert len(signatures) == kept  # no two of the same kind


def test_new_tools_promotes_runs_that_call_a_tool_the_suite_never_names(tmp_path: Path) -> None:
    traces = [
        _trace(i, kind=k, variant=i, signal=None)
        for i, k in enumerate(["leave", "weather", "math", "weather"])
    ]
    suite = tmp_path / "new.eval.yaml"
    hr_suite = ROOT / "examples/hr_assistant/hr.eval.yaml"
    done = promote(
        tmp_path, _store(tmp_path, traces), "-o", str(suite), "--new-tools", str(hr_suite)
    )
    assert done.returncode == 0, done.stderr
    hr = hr_suite.read_text()
    assert _chosen(suite) == {t.id for t in traces if t.tool_names[0] not in hr}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "x.yaml"], "FILE.eval.yaml"),
        (["-o", "x.eval.yaml", "--distinct", "0"], "--distinct"),
        (["-o", "x.eval.yaml", "--failed"], "no trace matches"),
        (["-o", "x.eval.yaml", "--new-tools", "missing/"], "no suite file"),
        (["-o", "x.eval.yaml", "--min-cost", "-1"], "--min-cost"),
        (["-o", "x.eval.yaml", "--min-latency", "nan"], "--min-latency"),
        (["-o", "x.eval.yaml", "--since", "soon"], "'soon' is neither an age"),
    ],
)
def test_bad_promote_options_are_one_line_errors(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = promote(
        tmp_path, _store(tmp_path, [_trace(1, kind="leave", variant=1, signal=None)]), *args
    )
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_existing_file_is_not_overwritten_without_force(tmp_path: Path) -> None:
    store = _store(tmp_path, [_trace(1, kind="leave", variant=1, signal=None)])
    suite = tmp_path / "kept.eval.yaml"
    suite.write_text("mine\n")
    refused = promote(tmp_path, store, "-o", str(suite))
    assert refused.returncode == 2 and suite.read_text() == "mine\n"
    assert promote(tmp_path, store, "-o", str(suite), "--force").returncode == 0
    assert "promoted_from" in suite.read_text()


# -- every promoted recording passes on its own recording ----------------------------------------

_CALLS = [
    lambda rng: call("get_leave_balance", employee_id=rng.choice(["E001", "E002", "E003", "E999"])),
    lambda rng: call("multiply_numbers", a=rng.randrange(-50, 500), b=rng.choice([3, 2.5, 0.1])),
    lambda rng: call("get_weather", city=rng.choice(["北京", "上海", "Atlantis"])),
    lambda rng: call("get_salary", employee_id="E001"),  # a tool the agent does not have
]


def _answers(rng: random.Random) -> list[Any]:
    """One turn of the scripted model: 0-3 steps of 1-2 calls each, then an answer."""
    steps: list[Any] = []
    for _ in range(rng.randrange(0, 4)):
        calls = [rng.choice(_CALLS)(rng) for _ in range(rng.randrange(1, 3))]
        steps.append(calls[0] if len(calls) == 1 else calls)
    steps.append(rng.choice(["Done.", "E003 has 12 days.", "The total is 7,021.", "It is 晴."]))
    return steps


@pytest.mark.timeout(300)
def test_every_generated_recording_passes_as_a_promoted_case(tmp_path: Path) -> None:
    """Generated runs: parallel calls, tool errors, unknown tools, repeats, several turns."""
    from examples.hr_assistant.agent import build_agent

    rng = random.Random(2026)
    store = tmp_path / "traces.db"
    recorder = Recorder(str(store))
    try:
        for _ in range(30):
            turns = rng.randrange(1, 3)
            script = [item for _ in range(turns) for item in _answers(rng)]
            session = build_agent(ScriptedModel(script), recorder=recorder).session()
            for turn in range(turns):
                session.run_sync(f"question {turn}: leave, sums and weather; mail a@b{turn}.io")
    finally:
        recorder.close()
    with TraceStore(str(store)) as opened:
        recorded = list(opened.query())
    assert len(recorded) >= 40
    assert any(r.status == "error" for t in recorded for r in t.tool_results)
    assert any(len(s.response.tool_calls) > 1 for t in recorded for s in t.steps)
    assert any(t.history for t in recorded)
    suite = tmp_path / "generated.eval.yaml"
    done = promote(tmp_path, store, "-o", str(suite))
    assert done.returncode == 0, done.stderr
    ran = cli(tmp_path, "run", str(suite), "--no-log", "--report", "json:r.json")
    assert (tmp_path / "r.json").exists(), ran.stdout + ran.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    failing = [(c["name"], c["reason"]) for c in report["cases"] if c["verdict"] != "pass"]
    assert failing == [], failing
    assert ran.returncode == 0
    assert report["summary"]["cases"] == len(recorded)
    assert "a@b0.io" not in suite.read_text()


@pytest.mark.parametrize("count", [1, 5, 40])
def test_distinct_computes_at_most_count_distances_per_trace(
    count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bounded work on a large pool: counted, not timed."""
    from toolproof.replay import _promote

    rng = random.Random(count)
    traces = [
        _trace(i, kind=rng.choice(["leave", "weather", "math"]), variant=rng.randrange(1, 99),
               signal=rng.choice([None, "errors", "failed", "retries"]))
        for i in range(2000)
    ]  # fmt: skip
    calls = 0
    real = _promote._distance

    def counted(a: frozenset[str], b: frozenset[str]) -> float:
        nonlocal calls
        calls += 1
        return real(a, b)

    monkeypatch.setattr(_promote, "_distance", counted)
    kept = _promote.distinct(traces, count)
    assert 1 <= len(kept) <= count
    assert calls <= len(kept) * len(traces)
    features = [_promote._features(t) for t in kept]
    for i, a in enumerate(features):  # no two kept traces are near-duplicates
        for b in features[i + 1 :]:
            assert real(a, b) >= 0.2
