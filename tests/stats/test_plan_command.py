"""``toolproof plan``: how many cases and trials a comparison needs, from flags or a past run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _stat_suites import generated_rates, suite, toolproof

from toolproof._statistics import cases_needed, detectable_effect, intra_case_correlation

DESIGNS = [
    # (drop, power, rate, icc, trials)
    (0.10, 0.8, 0.5, 0.0, [1, 3, 5]),
    (0.05, 0.9, 0.42, 0.4, [2]),
    (0.20, 0.8, 0.8, 0.7, [1, 10]),
]


@pytest.mark.parametrize(("drop", "power", "rate", "icc", "trials"), DESIGNS)
def test_cases_needed_for_a_drop(
    tmp_path: Path, drop: float, power: float, rate: float, icc: float, trials: list[int]
) -> None:
    flags = [f"--trials={k}" for k in trials]
    args = ["plan", "--drop", str(drop), "--power", str(power), "--rate", str(rate)]
    result = toolproof(*args, "--icc", str(icc), *flags, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert [row["trials"] for row in plan["rows"]] == trials
    for row in plan["rows"]:
        want = cases_needed(drop, row["trials"], rate=rate, icc=icc, power=power)
        assert row["cases_needed"] == want
    text = toolproof(*args, "--icc", str(icc), *flags, cwd=tmp_path).stdout
    first = plan["rows"][0]
    assert f"{first['cases_needed']} cases to detect a drop of {100 * drop:g} points" in text


@pytest.mark.timeout(120)
def test_plan_from_a_past_run(tmp_path: Path) -> None:
    path = suite(tmp_path, generated_rates(3, 20), trials=4)
    run = toolproof(
        "run", str(path), "--model", "statmodels:same_a", "--no-cache", "-q",
        "--log-dir", "logs", "--report", "json:r.json", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode in (0, 1)
    report = json.loads((tmp_path / "r.json").read_text())
    counts = [(c["passes"] + c["failures"], c["passes"]) for c in report["cases"]]
    result = toolproof(
        "plan", "--drop", "0.1", "--from", "latest", "--log-dir", "logs", "--json", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    rate = sum(p / t for t, p in counts) / len(counts)
    icc = min(intra_case_correlation(counts), 0.99)
    assert plan["rate"] == pytest.approx(rate) and plan["icc"] == pytest.approx(icc)
    assert plan["cases"] == 20 and [r["trials"] for r in plan["rows"]] == [4]
    (row,) = plan["rows"]
    assert row["cases_needed"] == cases_needed(0.1, 4, rate=rate, icc=icc)
    drop = detectable_effect(20, 4, rate=rate, icc=icc)
    assert row["detectable_drop"] == pytest.approx(drop)
    # the run's report says the same about a rerun of it
    line = report["summary"]["intervals"]["detectable_drop"]
    assert line["drop"] == pytest.approx(drop) and line["cases"] == 20


BAD = [
    ([], "--drop"),
    (["--drop", "0.6", "--rate", "0.5"], "larger than the pass rate"),
    (["--drop", "2"], "--drop"),
    (["--drop", "0.1", "--power", "1"], "--power"),
    (["--drop", "0.1", "--rate", "1"], "pass rate"),
    (["--drop", "0.1", "--confidence", "95"], "--confidence"),
    (["--drop", "0.1", "--from", "nope", "--log-dir", "logs"], "nope"),
]


@pytest.mark.parametrize(("args", "named"), BAD)
def test_bad_plans_exit_2_naming_what_to_fix(tmp_path: Path, args: list[str], named: str) -> None:
    result = toolproof("plan", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert named in result.stderr and "Traceback" not in result.stderr
