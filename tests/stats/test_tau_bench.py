"""Real recordings: τ-bench's 200 gpt-4o airline runs (50 tasks × 4 trials), against themselves."""

from __future__ import annotations

import collections
import itertools
import json
from pathlib import Path

import pytest

from _shared import shared_path
from toolproof._statistics import (
    binomial_interval,
    compare_runs,
    intra_case_correlation,
    suite_rate_interval,
)


@pytest.fixture(scope="module")
def trials() -> dict[str, list[bool]]:
    runs = json.loads(
        shared_path("datasets", "tau-bench-airline-gpt4o", "gpt-4o-airline.json").read_text()
    )
    outcomes: dict[str, list[bool]] = collections.defaultdict(list)
    for run in sorted(runs, key=lambda run: run["trial"]):
        outcomes[str(run["task_id"])].append(run["reward"] == 1)  # τ-bench's success rule
    return dict(outcomes)


def test_four_trials_of_a_task_leave_wide_intervals(trials: dict[str, list[bool]]) -> None:
    intervals = {task: binomial_interval(sum(t), len(t)) for task, t in trials.items()}
    assert len(intervals) == 50
    assert all(ci.low <= ci.estimate <= ci.high for ci in intervals.values())
    assert min(ci.high - ci.low for ci in intervals.values()) > 0.45  # even 4 of 4: 0.51–1
    assert round(binomial_interval(4, 4).low, 2) == 0.51


def test_the_suite_interval_counts_tasks_not_trials(trials: dict[str, list[bool]]) -> None:
    cases = [(len(t), sum(t)) for t in trials.values()]
    clustered = suite_rate_interval(cases)
    naive = binomial_interval(84, 200)
    assert clustered.estimate == naive.estimate == 0.42
    assert clustered.high - clustered.low > 1.4 * (naive.high - naive.low)
    assert 50 < clustered.effective_n < 200  # the 200 trials are worth about 85 samples
    assert intra_case_correlation(cases) == pytest.approx(0.40, abs=0.01)


def test_two_halves_of_the_same_runs_show_no_evidence(trials: dict[str, list[bool]]) -> None:
    """An A/A test on real data: every split of the 4 trials into two runs of 2, or 1 vs 1."""
    for first in itertools.combinations(range(4), 2):
        second = [i for i in range(4) if i not in first]
        a = {task: (2, sum(t[i] for i in first)) for task, t in trials.items()}
        b = {task: (2, sum(t[i] for i in second)) for task, t in trials.items()}
        result = compare_runs(a, b)
        assert result.change == "no evidence" and result.p_value > 0.5
        assert result.regressed == () and result.improved == ()
        assert result.effect.low < 0 < result.effect.high
    for i, j in itertools.combinations(range(4), 2):
        single = compare_runs(
            {task: (1, int(t[i])) for task, t in trials.items()},
            {task: (1, int(t[j])) for task, t in trials.items()},
        )
        assert single.test == "mcnemar-exact" and single.change == "no evidence"
        # One trial of 50 tasks cannot see a change below about 20 points.
        assert single.detectable_effect > 0.18


def test_runs_compare_on_the_recordings_exits_0(
    trials: dict[str, list[bool]], tmp_path: Path
) -> None:
    """The recordings as two eval run logs (trials 0-1 and 2-3): the command says no evidence.

    Between the halves, tasks flip from pass to fail; comparing by flips would exit 1.
    """
    import os

    from _cli import run_cli

    logs = tmp_path / "logs"
    for number, (stamp, picked) in enumerate(
        [("20261201T080000Z", (0, 1)), ("20261201T090000Z", (2, 3))]
    ):
        folder = logs / f"{stamp}-run-00000{number}"
        folder.mkdir(parents=True)
        cases = []
        for task, outcomes in trials.items():
            passes = sum(outcomes[i] for i in picked)
            verdict = "pass" if passes == 2 else "fail"  # pass_rule: all
            cases.append({"id": f"tau::{task}", "verdict": verdict, "passes": passes,
                          "failures": 2 - passes, "errors": 0, "trials": []})  # fmt: skip
        started = f"2026-12-01T0{8 + number}:00:00Z"
        meta = {"format": "toolproof-run-meta", "version": 1, "kind": "run",
                "status": "finished", "started": started, "exit_code": 1}  # fmt: skip
        (folder / "meta.json").write_text(json.dumps(meta))
        (folder / "report.json").write_text(json.dumps({"cases": cases}))
    env = {**os.environ, "NO_COLOR": "1"}
    result = run_cli("runs", "compare", "--log-dir", str(logs), "--json", cwd=tmp_path, env=env)
    data = json.loads(result.stdout)
    assert data["counts"]["regressed"] > 0  # verdicts flipped between the halves...
    assert result.returncode == 0  # ...and that is no evidence of a change
    assert data["comparison"]["change"] == "no evidence" and data["comparison"]["paired"] == 50
    assert data["comparison"]["test"] == "stratified-exact"
