"""Eval runs keep their traces (``--record``), and report cost, latency and tokens.

Real CLI, real SQLite stores and run logs; the agent's model is scripted with a price per
token (its usage is the estimate of each request, the same on every run), and the judge is
a function model named after a priced model, so the agent's and the judge's costs are both
known and apart.
"""

from __future__ import annotations

import json
import math
import os
import random
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests._cli import run_cli
from tests.replay.redaction_secrets import api_key, card, email, phone

from toolproof.evals._costs import (
    CostGates,
    compare_costs,
    estimate_cost,
    parse_increase,
    spread,
)
from toolproof.replay import TraceStore

ROOT = Path(__file__).resolve().parents[2]

AGENT_MODULE = """
import os
from examples.hr_assistant.agent import build_agent
from toolproof.models import Price
from toolproof.testing import FunctionModel


def build(model, tools=None, **options):
    price = float(os.environ.get("TEST_PRICE", "1.0"))
    prices = {"scripted": Price(input=price, output=2 * price)}
    return build_agent(model, tools, prices=prices, **options)


JUDGE = FunctionModel(
    lambda messages, info: '{"verdict": "PASS", "reason": "it gives the balance"}',
    name="gpt-4o-mini",
)
"""


def suite_text(secrets: list[str]) -> str:
    """Two cases, one passing and one failing, with secrets in inputs, calls and answers."""
    first, second, third = secrets[:3]
    return yaml.safe_dump(
        {
            "suite": "costs",
            "agent": "costagent:build",
            "model": "scripted",
            "trials": 3,
            "cases": [
                {
                    "name": "leave",
                    "input": f"How much leave does E003 have? Reply to {first}",
                    "expect": {"tools_called": ["get_leave_balance"], "final_contains": ["12"]},
                    "judge": ["The answer gives the balance."],
                    "script": [
                        {
                            "call": {
                                "name": "get_leave_balance",
                                "arguments": {"employee_id": "E003"},
                            }
                        },
                        f"E003 has 12 days left; I wrote to {first}.",
                    ],
                },
                {
                    "name": "weather",
                    "input": f"Weather in {second}?",
                    "expect": {"final_contains": ["sunny"]},
                    "script": [
                        {"call": {"name": "get_weather", "arguments": {"city": second}}},
                        f"It is cloudy in {second}, call {third}.",
                    ],
                },
            ],
        },
        allow_unicode=True,
    )


def make_project(tmp_path: Path, draw: int = 0) -> tuple[Path, list[str]]:
    rng = random.Random(draw)
    secrets = [email(rng, draw), card(rng, draw), phone(rng, draw), api_key(rng, draw)]
    (tmp_path / "costagent.py").write_text(AGENT_MODULE)
    suite = tmp_path / "costs.eval.yaml"
    suite.write_text(suite_text(secrets), encoding="utf-8")
    return suite, secrets


def cli(tmp_path: Path, *args: str, price: float = 1.0) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPROOF_")}
    env["TEST_PRICE"] = str(price)
    env["TOOLPROOF_LOG_DIR"] = str(tmp_path / "runs")
    return run_cli(*args, cwd=tmp_path, env=env, paths=[ROOT])


# -- --record: every trial's traces, with the run, the case and the verdict ----------------------


@pytest.mark.parametrize("draw", range(4))
def test_run_record_keeps_each_trial_trace_redacted_with_run_case_and_verdict(
    tmp_path: Path, draw: int
) -> None:
    suite, secrets = make_project(tmp_path, draw)
    store = tmp_path / "evals.db"
    done = cli(
        tmp_path,
        "run",
        str(suite),
        "--record",
        str(store),
        "--judge-model",
        "costagent:JUDGE",
        "--report",
        "json:report.json",
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the weather case fails
    run_id = json.loads((tmp_path / "report.json").read_text())  # the report of the run
    (log,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    with TraceStore(str(store)) as opened:
        traces = list(opened.query())
    assert len(traces) == 6
    by_case: dict[str, list[str]] = {}
    for trace in traces:
        info = trace.metadata["eval"]
        assert info["run"] == log.name
        assert "eval" in trace.tags
        by_case.setdefault(info["case_id"], []).append(info["status"])
        assert info["trial"] in (0, 1, 2)
    assert by_case == {"costs::leave": ["pass"] * 3, "costs::weather": ["fail"] * 3}
    blob = store.read_bytes()
    for secret in secrets[:3]:
        assert secret.encode() not in blob
        assert json.dumps(secret)[1:-1].encode() not in blob
    assert run_id["format"] == "toolproof-eval-report"

    # promotion works on eval runs as on production runs: three failed trials, one case
    promoted = tmp_path / "failed.eval.yaml"
    made = cli(
        tmp_path,
        "traces",
        "promote",
        "--store",
        str(store),
        "--failed",
        "--distinct",
        "10",
        "-o",
        str(promoted),
        "--agent",
        "costagent:build",
    )
    assert made.returncode == 0, made.stderr
    (case,) = yaml.safe_load(promoted.read_text())["cases"]
    assert case["metadata"]["recorded"]["eval"]["case_id"] == "costs::weather"
    for secret in secrets[:3]:
        assert secret not in promoted.read_text()


def test_evaluate_record_from_python(tmp_path: Path) -> None:
    import sys

    from toolproof.evals import evaluate

    suite, _ = make_project(tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        report = evaluate(suite, record=tmp_path / "py.db", run_id="run-42", cache=False)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("costagent", None)
    with TraceStore(str(tmp_path / "py.db")) as opened:
        runs = {t.metadata["eval"]["run"] for t in opened.query()}
        assert len(opened) == sum(len(c.trials) for c in report.cases) == 6
    assert runs == {"run-42"}


def test_traces_import_reads_an_eval_report(tmp_path: Path) -> None:
    suite, secrets = make_project(tmp_path)
    ran = cli(tmp_path, "run", str(suite), "--report", "json:report.json", "--no-log")
    assert ran.returncode == 1
    store = tmp_path / "imported.db"
    done = cli(tmp_path, "traces", "import", "report.json", "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert "imported 6 of 6 traces" in done.stdout
    with TraceStore(str(store)) as opened:
        statuses = sorted(t.metadata["eval"]["status"] for t in opened.query())
    assert statuses == ["fail"] * 3 + ["pass"] * 3
    assert all(s.encode() not in store.read_bytes() for s in secrets[:3])


# -- cost, latency and tokens in every report format ---------------------------------------------


def test_cost_latency_and_tokens_per_case_and_suite_in_every_format(tmp_path: Path) -> None:
    suite, _ = make_project(tmp_path)
    done = cli(
        tmp_path,
        "run",
        str(suite),
        "--judge-model",
        "costagent:JUDGE",
        "--no-log",
        "--no-cache",
        "--report",
        "json:r.json",
        "--report",
        "markdown:r.md",
        "--report",
        "junit:r.xml",
        "--report",
        "html:r.html",
    )
    assert done.returncode == 1, done.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    (figures,) = data["summary"]["costs"]["suites"]
    trials = [t for c in data["cases"] for t in c["trials"]]
    costs = sorted(t["cost"] for t in trials)
    assert all(c > 0 for c in costs)
    assert figures["agent"]["cost"]["max"] == pytest.approx(costs[-1])
    assert figures["agent"]["cost"]["p50"] in [pytest.approx(c) for c in costs]
    judged = [t["judge"] for t in trials if t["judge"]["usage"]["requests"]]
    assert len(judged) == 3  # the passing case's trials (the failing one is not judged)
    assert all(j["cost"] > 0 for j in judged)
    assert figures["judge"]["cost_total"] == pytest.approx(sum(j["cost"] for j in judged))
    assert figures["agent"]["cost_total"] == pytest.approx(sum(costs))
    assert figures["cost_per_case"] == pytest.approx(
        (sum(costs) + sum(j["cost"] for j in judged)) / 2
    )
    for key in ("latency_s", "tokens"):
        found = figures["agent"][key]
        assert found["p50"] <= found["p95"] <= found["max"]
    for case in data["cases"]:
        assert case["costs"]["agent"]["tokens"]["max"] > 0
        assert (case["costs"]["judge"] is not None) == (case["name"] == "leave")
    markdown = (tmp_path / "r.md").read_text()
    assert "### Cost and latency" in markdown and "per case" in markdown
    xml = ET.parse(tmp_path / "r.xml").getroot()
    names = {p.get("name") for p in xml.iter("property")}
    assert {"agent.cost.p95", "agent.latency_s.max", "judge.cost.p50"} <= names
    html = (tmp_path / "r.html").read_text()
    assert 'id="costs"' in html and "Cost and latency" in html
    assert "per case" in done.stdout and "p50/p95/max" in done.stdout


# -- baseline, gates and the estimate ------------------------------------------------------------


def test_cost_gate_against_a_baseline_and_the_estimate_with_its_error(tmp_path: Path) -> None:
    suite, _ = make_project(tmp_path)
    first = cli(tmp_path, "run", str(suite), "--report", "json:first.json")
    assert first.returncode == 1
    baseline_cost = json.loads((tmp_path / "first.json").read_text())["summary"]["cost"]

    pricier = cli(
        tmp_path,
        "run",
        str(suite),
        "--baseline",
        "latest",
        "--max-cost-increase",
        "10%",
        "--report",
        "json:second.json",
        "--report",
        "html:second.html",
        "--report",
        "markdown:second.md",
        "--report",
        "junit:second.xml",
        "--case",
        "leave",
        price=1.5,
    )
    assert pricier.returncode == 1, pricier.stdout + pricier.stderr
    failed = "cost per case up 50% against the baseline (more than the 10% allowed)"
    assert failed in pricier.stdout
    assert failed in (tmp_path / "second.html").read_text()
    assert failed in (tmp_path / "second.md").read_text()
    assert "estimated $" in (tmp_path / "second.md").read_text()
    xml = ET.parse(tmp_path / "second.xml").getroot()
    (gated,) = [c for c in xml.iter("testcase") if c.get("name") == "cost_per_case"]
    failure = gated.find("failure")
    assert failure is not None and failed in (failure.get("message") or "")
    (leave_suite,) = [s for s in xml.iter("testsuite") if s.get("name") == "costs"]
    assert {p.get("name") for p in leave_suite.iter("property")} >= {"cost_per_case"}
    second = json.loads((tmp_path / "second.json").read_text())
    assert second["exit_code"] == 1
    (gate,) = second["summary"]["costs"]["comparison"]["gates"]
    assert gate["passed"] is False and gate["change"] == pytest.approx(0.5, abs=1e-4)
    estimate = second["summary"]["costs"]["estimate"]
    leave_cost = sum(
        t["cost"]
        for c in json.loads((tmp_path / "first.json").read_text())["cases"]
        if c["name"] == "leave"
        for t in c["trials"]
    )
    assert estimate["cost"] == pytest.approx(leave_cost)
    assert estimate["error"] == pytest.approx(1 / 1.5 - 1, abs=1e-4)
    assert f"about ${leave_cost:.4g}" in pricier.stdout
    assert baseline_cost > leave_cost

    same = cli(
        tmp_path,
        "run",
        str(suite),
        "--baseline",
        "latest~1",
        "--max-cost-increase",
        "10%",
        "--case",
        "leave",
        "--report",
        "json:third.json",
    )
    assert same.returncode == 0, same.stdout + same.stderr
    third = json.loads((tmp_path / "third.json").read_text())
    assert third["summary"]["costs"]["comparison"]["gates"][0]["passed"] is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-cost-increase", "10%"], "--baseline RUN"),
        (["--baseline", "nope", "--max-cost-increase", "10%"], "no run 'nope'"),
        (["--baseline", "latest", "--max-latency-increase", "fast"], "a percentage"),
        (["--baseline", "latest", "--max-latency-increase=-5%"], "0% or more"),
    ],
)
def test_bad_cost_options_are_one_line_errors_before_anything_runs(
    tmp_path: Path, args: list[str], message: str
) -> None:
    suite, _ = make_project(tmp_path)
    assert cli(tmp_path, "run", str(suite), "--case", "leave").returncode == 0
    done = cli(tmp_path, "run", str(suite), *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert len([p for p in (tmp_path / "runs").iterdir() if p.is_dir()]) == 1


# -- the comparison itself, over generated runs --------------------------------------------------


def _run(
    rng: random.Random,
    cases: int,
    scale_latency: float,
    scale_cost: float,
    base: list[tuple[list[float], list[float]]] | None = None,
) -> tuple[list[dict[str, Any]], list[tuple[list[float], list[float]]]]:
    drawn = base or [
        ([rng.uniform(0.1, 5) for _ in range(3)], [rng.uniform(0.001, 0.1) for _ in range(3)])
        for _ in range(cases)
    ]
    entries = [
        {
            "suite": "s",
            "name": f"c{i}",
            "trials": [
                {
                    "status": "pass",
                    "agent_ms": lat * 1000 * scale_latency,
                    "cost": cost * scale_cost,
                    "judge": {"usage": {"requests": 0}},
                }
                for lat, cost in zip(latencies, costs, strict=True)
            ],
        }
        for i, (latencies, costs) in enumerate(drawn)
    ]
    return entries, drawn


@pytest.mark.parametrize("draw", range(40))
def test_gates_fail_exactly_when_the_growth_passes_the_limit(draw: int) -> None:
    rng = random.Random(draw)
    latency_factor, cost_factor = rng.uniform(0.5, 2.0), rng.uniform(0.5, 2.0)
    limits = CostGates(p95_latency=rng.uniform(0, 0.6), cost_per_case=rng.uniform(0, 0.6))
    baseline, drawn = _run(rng, rng.randrange(2, 12), 1.0, 1.0)
    current, _ = _run(rng, 0, latency_factor, cost_factor, drawn)
    extra = {"suite": "s", "name": "new", "trials": [{"status": "pass", "cost": 99.0}]}
    result = compare_costs([*current, extra], baseline, limits)
    assert result["cases"] == len(baseline)  # the new case is not compared
    latency, cost = result["gates"]
    assert latency["change"] == pytest.approx(latency_factor - 1, abs=1e-5)
    assert cost["change"] == pytest.approx(cost_factor - 1, abs=1e-5)
    assert latency["passed"] == (latency_factor - 1 <= limits.p95_latency + 1e-5) or math.isclose(
        latency_factor - 1, limits.p95_latency, abs_tol=1e-5
    )
    assert cost["passed"] == (cost_factor - 1 <= limits.cost_per_case + 1e-5) or math.isclose(
        cost_factor - 1, limits.cost_per_case, abs_tol=1e-5
    )
    interval = result["cost_per_case"]["per_case_change"]
    assert interval["low"] <= cost_factor - 1 + 1e-6
    assert interval["high"] is None or interval["high"] >= cost_factor - 1 - 1e-6


def test_a_gate_without_anything_to_compare_fails_with_the_reason() -> None:
    current = [{"suite": "s", "name": "a", "trials": [{"status": "pass", "cost": 1.0}]}]
    result = compare_costs(current, [], CostGates(cost_per_case=0.1))
    (gate,) = result["gates"]
    assert gate["passed"] is False and "no case of the baseline" in gate["message"]


@pytest.mark.parametrize("draw", range(20))
def test_spread_and_estimate_over_generated_values(draw: int) -> None:
    rng = random.Random(draw)
    values = [rng.uniform(0, 100) for _ in range(rng.randrange(1, 60))]
    found = spread(values)
    assert found is not None
    ordered = sorted(values)
    assert found["max"] == pytest.approx(ordered[-1])
    assert found["p50"] in [pytest.approx(v) for v in values]
    share = sum(1 for v in values if v <= found["p95"] + 1e-9) / len(values)
    assert share >= 0.95
    assert sum(1 for v in values if v < found["p95"] - 1e-9) / len(values) < 0.95
    baseline, drawn = _run(rng, rng.randrange(1, 8), 1.0, 1.0)
    planned = [(f"s::c{i}", 2) for i in range(len(drawn))] + [("s::unknown", 4)]
    per_trial = [sum(costs) / len(costs) for _, costs in drawn]
    expected = 2 * sum(per_trial) + 4 * (sum(per_trial) / len(per_trial))
    assert estimate_cost(planned, baseline) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(("text", "value"), [("20%", 0.2), ("0.1", 0.1), (" 5% ", 0.05)])
def test_increase_percentages(text: str, value: float) -> None:
    assert parse_increase(text, "--x") == pytest.approx(value)


def test_runs_compare_reports_cost_and_latency_and_gates_them(tmp_path: Path) -> None:
    suite, _ = make_project(tmp_path)
    assert cli(tmp_path, "run", str(suite), "--case", "leave").returncode == 0
    assert cli(tmp_path, "run", str(suite), "--case", "leave", price=2.0).returncode == 0
    shown = cli(tmp_path, "runs", "compare", "--json")
    assert shown.returncode == 0, shown.stderr
    costs = json.loads(shown.stdout)["costs"]
    assert costs["cases"] == 1
    assert costs["cost_per_case"]["change"] == pytest.approx(1.0, abs=1e-4)
    assert costs["gates"] == []
    gated = cli(tmp_path, "runs", "compare", "--max-cost-increase", "10%")
    assert gated.returncode == 1
    assert "FAIL cost per case up 100% against the baseline" in gated.stdout
    loose = cli(tmp_path, "runs", "compare", "--max-cost-increase", "150%")
    assert loose.returncode == 0, loose.stdout


def test_the_trace_page_offers_the_promote_command_escaped() -> None:
    from toolproof._html import render_trace_page

    page = render_trace_page({"id": "a b<script>x</script>'", "input": "hi"})
    assert "toolproof traces promote" in page
    assert "<script>x</script>" not in page
    assert "a b&lt;script&gt;x&lt;/script&gt;" in page  # quoted for the shell, then escaped


def test_suite_cost_gates_compare_with_the_last_run_of_the_suite(tmp_path: Path) -> None:
    suite, _ = make_project(tmp_path)
    data = yaml.safe_load(suite.read_text())
    data["cost_gates"] = {"cost_per_case": "10%", "p95_latency": "100000%"}
    suite.write_text(yaml.safe_dump(data, allow_unicode=True))
    first = cli(tmp_path, "run", str(suite), "--case", "leave")
    assert first.returncode == 0, first.stdout + first.stderr  # nothing to compare with yet
    same = cli(tmp_path, "run", str(suite), "--case", "leave")
    assert same.returncode == 0, same.stdout
    assert "PASS cost per case up 0%" in same.stdout
    pricier = cli(tmp_path, "run", str(suite), "--case", "leave", price=1.2)
    assert pricier.returncode == 1, pricier.stdout
    assert "FAIL cost per case up 20% against the baseline" in pricier.stdout
    # a flag stricter than the suite wins; a looser one does not loosen it
    loose = cli(tmp_path, "run", str(suite), "--case", "leave", "--baseline", "latest~2",
                "--max-cost-increase", "50%", price=1.2)  # fmt: skip
    assert loose.returncode == 1, loose.stdout


@pytest.mark.parametrize(
    "value",
    [{"cost": "10%"}, {"cost_per_case": "ten"}, {"p95_latency": -1}, "10%", {}],
)
def test_bad_suite_cost_gates_name_the_file_and_line(tmp_path: Path, value: Any) -> None:
    suite, _ = make_project(tmp_path)
    data = yaml.safe_load(suite.read_text())
    data["cost_gates"] = value
    suite.write_text(yaml.safe_dump(data, allow_unicode=True))
    done = cli(tmp_path, "run", str(suite))
    assert done.returncode == 2, done.stdout
    assert "costs.eval.yaml:" in done.stderr and "cost_gates" in done.stderr
    assert "Traceback" not in done.stderr


RECORD_CHILD = r"""
import json, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
sys.path[:0] = [sys.argv[3], sys.argv[4]]
from toolproof.evals import evaluate
from toolproof.replay import TraceStore

store = sys.argv[1]
with TraceStore(store) as opened:  # the file exists; it may grow a little, then no more
    pass
import os
resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(store) + int(sys.argv[5]), -1))
report = evaluate(sys.argv[2], record=store, cache=False, concurrency=2)
resource.setrlimit(resource.RLIMIT_FSIZE, (-1, -1))
with TraceStore(store) as opened:
    stored = [t.metadata["eval"]["case_id"] for t in opened.query()]
print(json.dumps({"exit": report.exit_code, "unwritten": report.unwritten, "stored": stored,
                  "trials": sum(len(c.trials) for c in report.cases)}))
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("room", [0, 20_000, 150_000])
def test_a_record_store_that_stops_growing_does_not_stop_the_run(tmp_path: Path, room: int) -> None:
    """The disk refuses the store partway: the run finishes, says so, keeps what it wrote."""
    import subprocess
    import sys

    suite = tmp_path / "big.eval.yaml"
    suite.write_text(
        yaml.safe_dump(
            {
                "suite": "big",
                "agent": "examples.hr_assistant.agent:build_agent",
                "model": "scripted",
                "trials": 10,
                "cases": [
                    {"name": f"c{i}", "input": f"question {i} " + "y" * 3000,
                     "script": ["x" * 4000]}
                    for i in range(6)
                ],
            }
        )
    )  # fmt: skip
    store = tmp_path / "evals.db"
    done = subprocess.run(
        [sys.executable, "-c", RECORD_CHILD, str(store), str(suite), str(ROOT),
         str(tmp_path), str(room)],
        capture_output=True, text=True, timeout=240, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["exit"] == 0 and found["trials"] == 60
    assert len(found["stored"]) < 60
    (message,) = found["unwritten"]
    assert "not recorded" in message


SLOW_MODULE = '''
import os, time
from toolproof import Agent, tool


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    time.sleep(float(os.environ.get("TEST_SLEEP", "0")))
    return "found " + key


def build(model, tools=None, **options):
    return Agent(model, [lookup] if tools is None else tools, **options)
'''


@pytest.mark.timeout(120)
def test_a_latency_gate_fails_a_run_whose_p95_grew_past_it(tmp_path: Path) -> None:
    """The tool sleeps 0 s in the baseline and 0.4 s a call after: far past any noise."""
    (tmp_path / "slowagent.py").write_text(SLOW_MODULE)
    suite = tmp_path / "slow.eval.yaml"
    suite.write_text(
        "suite: slow\nagent: slowagent:build\nmodel: scripted\ntools: real\ntrials: 2\n"
        "cases:\n  - name: a\n    input: look up k\n    script:\n"
        "      - call: {name: lookup, arguments: {key: k}}\n      - found k\n"
    )

    def run(sleep: str, *args: str) -> Any:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPROOF_")}
        env.update(TEST_SLEEP=sleep, TOOLPROOF_LOG_DIR=str(tmp_path / "runs"))
        return run_cli("run", str(suite), *args, cwd=tmp_path, env=env, paths=[ROOT])

    assert run("0").returncode == 0
    slower = run("0.4", "--baseline", "latest", "--max-latency-increase", "300%")
    assert slower.returncode == 1, slower.stdout
    assert "FAIL p95 latency up" in slower.stdout and "more than the 300% allowed" in slower.stdout
