"""``trials: {max: N, until: decided}`` stops a case's trials once its verdict is known.

Counted, not timed: the model counts the requests it answered, and the JSON report says how
many trials ran. With one trial at a time (``-j 1``) the trials a case runs are exactly those
:func:`toolproof._statistics.sequential_verdict` needs on the outcomes it saw; with waves
(``-j 8``) a few more may be in flight, never more than the maximum.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from _stat_suites import generated_rates, suite, toolproof

from toolproof._statistics import sequential_verdict

RULES = [
    ("all", lambda n: n),
    ("{rate: 0.5}", lambda n: math.ceil(0.5 * n)),
    ("{at_least: 8}", lambda n: 8),
    ("any", lambda n: 1),
]


def stop_after(outcomes: list[bool], most: int, needed: int, level: float) -> tuple[int, str]:
    """The trials one-at-a-time sequential stopping runs on these outcomes, and the verdict."""
    passes = 0
    for number, passed in enumerate(outcomes, 1):
        passes += passed
        verdict = sequential_verdict(
            passes, number, max_trials=most, min_passes=needed, level=level
        )
        if verdict != "continue":
            return number, verdict
    return len(outcomes), "pass" if passes >= needed else "fail"


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("rule", "needed"), RULES)
@pytest.mark.parametrize("seed", range(2))
def test_one_at_a_time_runs_exactly_the_trials_the_rule_needs(
    tmp_path: Path, rule: str, needed: object, seed: int
) -> None:
    most = 20
    rates = [1.0, 0.0, *generated_rates(seed, 6)]
    extra = f"pass_rule: {rule}"
    path = suite(tmp_path, rates, trials={"max": most, "until": "decided"}, extra=extra)
    result = toolproof(
        "run", str(path), "--model", "statmodels:same_a", "--no-cache", "--no-log", "-q",
        "-j", "1", "--report", "json:r.json", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    need = needed(most)  # type: ignore[operator]
    total = 0
    for case in data["cases"]:
        outcomes = [t["status"] == "pass" for t in case["trials"]]
        ran, verdict = stop_after(outcomes, most, need, 0.95)
        assert case["trials_run"] == len(outcomes) == ran, case["name"]
        assert case["verdict"] == verdict, case["name"]
        assert case["trials_planned"] == most and case["until"] == "decided"
        assert case["stopped"] == ("decided" if ran < most else None)
        if ran < most:
            assert f"stopped after {ran} of {most}" in case["reason"]
        total += ran
    # the model answered exactly the trials that ran (one request each): no hidden trial
    assert data["summary"]["model_calls"] == total
    assert total < most * len(rates)  # the always/never passing cases stop early at least
    stopped = [c for c in data["cases"] if c["stopped"] == "decided"]
    ran = sum(c["trials_run"] for c in stopped)
    line = f"until: decided: {ran} of at most {most * len(stopped)} trials ran in the "
    assert line in result.stdout


@pytest.mark.timeout(180)
@pytest.mark.parametrize("seed", range(3))
def test_in_waves_a_case_never_runs_more_than_its_maximum(tmp_path: Path, seed: int) -> None:
    most = 12
    rates = generated_rates(seed + 10, 10)
    path = suite(tmp_path, rates, trials={"max": most, "until": "decided"}, extra="pass_rule: all")
    result = toolproof(
        "run", str(path), "--model", "statmodels:same_a", "--no-cache", "--no-log", "-q",
        "-j", "8", "--report", "json:r.json", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    for case in data["cases"]:
        outcomes = [t["status"] == "pass" for t in case["trials"]]
        assert 1 <= len(outcomes) <= most
        # "all" passes only when every one of the maximum ran and passed
        assert case["verdict"] == ("pass" if len(outcomes) == most and all(outcomes) else "fail")
        assert [t["index"] for t in case["trials"]] == sorted(t["index"] for t in case["trials"])
    assert data["summary"]["model_calls"] == sum(c["trials_run"] for c in data["cases"])


def test_until_all_runs_every_trial(tmp_path: Path) -> None:
    path = suite(tmp_path, [0.0, 1.0], trials={"max": 6, "until": "all"})
    result = toolproof(
        "run", str(path), "--model", "statmodels:same_a", "--no-cache", "--no-log", "-q",
        "--report", "json:r.json", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    data = json.loads((tmp_path / "r.json").read_text())
    assert [c["trials_run"] for c in data["cases"]] == [6, 6]
    assert all(c["stopped"] is None for c in data["cases"])
