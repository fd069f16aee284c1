"""The eval gate decides with its uncertainty; bad statistics settings get one clear message.

Real ``toolproof run`` commands on generated suites: the blocking cases' failure rate gets a
clustered interval, and the gate passes (its high bound below the limit), fails (its low bound
above) or is undecided (the limit inside), which blocks only in release mode (exit 6).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _stat_suites import suite, toolproof

from toolproof._statistics import gate, suite_rate_interval

GATES = [
    # (rates of the cases, limit, mode, expected verdict, expected exit code)
    ([1.0] * 30, 0.3, "advisory", "pass", 0),
    ([1.0] * 30, 0.3, "release", "pass", 0),
    ([0.0] * 20, 0.3, "advisory", "fail", 1),
    ([0.0] * 20, 0.3, "release", "fail", 1),
    ([1.0, 0.0, 1.0, 1.0, 0.5], 0.3, "advisory", "undecided", 0),
    ([1.0, 0.0, 1.0, 1.0, 0.5], 0.3, "release", "undecided", 6),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("rates", "limit", "mode", "verdict", "code"), GATES)
@pytest.mark.parametrize("where", ["flags", "suite"])
def test_the_eval_gate_reads_the_interval(
    tmp_path: Path, rates: list[float], limit: float, mode: str, verdict: str, code: int, where: str
) -> None:
    setting = f"statistics: {{max_failure_rate: {limit}, gate_mode: {mode}}}"
    path = suite(tmp_path, rates, trials=4, extra=setting if where == "suite" else "")
    flags = ["--max-failure-rate", str(limit), "--gate-mode", mode] if where == "flags" else []
    result = toolproof(
        "run", str(path), "--model", "statmodels:same_a", "--no-cache", "--no-log", "-q",
        "--report", "json:r.json", "--report", "markdown:r.md", *flags,
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == code, result.stdout + result.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    counts = [(c["passes"] + c["failures"], c["failures"]) for c in data["cases"]]
    want = gate(suite_rate_interval(counts), limit, mode=mode)  # type: ignore[arg-type]
    decision = data["summary"]["gate"]
    assert decision["verdict"] == want.verdict == verdict
    assert decision["mode"] == mode and decision["limit"] == limit
    assert decision["bound"] == {"pass": "high", "fail": "low", "undecided": None}[verdict]
    assert data["exit_code"] == code
    words = {"pass": "passed", "fail": "failed", "undecided": "undecided"}[verdict]
    assert f"gate ({mode}) {words}" in result.stdout
    assert f"gate ({mode}) {words}" in (tmp_path / "r.md").read_text()
    if verdict == "undecided":
        assert decision["needed"] is not None and decision["needed"] > len(rates)
        assert f"about {decision['needed']} cases would decide" in result.stdout
    else:
        assert decision["needed"] is None


def test_without_a_limit_the_blocking_cases_decide(tmp_path: Path) -> None:
    # (one failing case in 30 fails the run, as before: the gate is opt-in)
    path = suite(tmp_path, [1.0] * 29 + [0.0], trials=2)
    result = toolproof(
        "run", str(path), "--model", "statmodels:same_a", "--no-cache", "--no-log", "-q",
        "--report", "json:r.json", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["gate"] is None
    # the same run under a 10% limit passes: 1 case in 30 is clearly below 10%? no: undecided,
    # and the advisory gate lets it by
    result = toolproof(
        "run", str(path), "--model", "statmodels:same_a", "--no-cache", "--no-log", "-q",
        "--max-failure-rate", "0.1", "--report", "json:r.json", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["gate"]["verdict"] in (
        "pass",
        "undecided",
    )


BAD_FLAGS = [
    (["--confidence", "1.5"], "--confidence"),
    (["--confidence", "0"], "--confidence"),
    (["--confidence", "ninety"], "--confidence"),
    (["--interval", "wald"], "--interval"),
    (["--max-failure-rate", "-0.1"], "--max-failure-rate"),
    (["--max-failure-rate", "2"], "--max-failure-rate"),
    (["--gate-mode", "strict"], "--gate-mode"),
]


@pytest.mark.parametrize(("flags", "named"), BAD_FLAGS)
def test_bad_flags_exit_2_naming_the_flag(tmp_path: Path, flags: list[str], named: str) -> None:
    path = suite(tmp_path, [1.0])
    result = toolproof("run", str(path), "--model", "statmodels:same_a", *flags, cwd=tmp_path)
    assert result.returncode == 2
    assert named in result.stderr and "Traceback" not in result.stderr


BAD_SETTINGS = [
    ("statistics: {confidence: 1.5}", "confidence"),
    ("statistics: {confidence: '0.9'}", "confidence"),
    ("statistics: {confidence: true}", "confidence"),
    ("statistics: {interval: wald}", "interval"),
    ("statistics: {max_failure_rate: 1.1}", "max_failure_rate"),
    ("statistics: {gate_mode: strict}", "gate_mode"),
    ("statistics: {confidnce: 0.9}", "confidnce"),
    ("statistics: 0.95", "statistics"),
]


@pytest.mark.parametrize(("setting", "named"), BAD_SETTINGS)
def test_bad_suite_settings_exit_2_with_the_line(tmp_path: Path, setting: str, named: str) -> None:
    path = suite(tmp_path, [1.0], extra=setting)
    result = toolproof("run", str(path), "--model", "statmodels:same_a", cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert named in result.stderr and "rates.eval.yaml:5" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


BAD_TRIALS = [{"max": 0}, {"max": "5"}, {"max": 5, "until": "soon"}, {"until": "decided"}, 0, True]


@pytest.mark.parametrize("trials", BAD_TRIALS)
def test_bad_trials_exit_2(tmp_path: Path, trials: object) -> None:
    path = suite(tmp_path, [1.0], trials=trials)
    result = toolproof("run", str(path), "--model", "statmodels:same_a", cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert "trials" in result.stderr and "rates.eval.yaml:3" in result.stderr, result.stderr


def test_suites_that_disagree_need_the_flag(tmp_path: Path) -> None:
    one = suite(tmp_path, [1.0], extra="statistics: {confidence: 0.9}", name="one")
    two = suite(tmp_path, [1.0], extra="statistics: {confidence: 0.8}", name="two")
    result = toolproof("run", str(one), str(two), "--model", "statmodels:same_a", cwd=tmp_path)
    assert result.returncode == 2
    assert "statistics.confidence" in result.stderr and "--confidence" in result.stderr
    chosen = toolproof(
        "run", str(one), str(two), "--model", "statmodels:same_a", "--confidence", "0.9",
        "--no-log", "--no-cache", "-q", "--report", "json:r.json", cwd=tmp_path,
    )  # fmt: skip
    assert chosen.returncode == 0, chosen.stderr
    options = json.loads((tmp_path / "r.json").read_text())["summary"]["intervals"]["options"]
    assert options["confidence"] == 0.9
