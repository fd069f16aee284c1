"""The run's summary figures, counted in one pass, agree with each case's own figures.

``EvalReport.summary()`` counts verdicts, trials and statistics in one pass over the cases
(large runs ask for it at the end); these tests compare it, on generated reports, with what
the report's properties (``count``, ``passes``, ``stats``, ``exit_code``) say one by one.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof._messages import Usage
from toolproof._stats_text import gate_dict
from toolproof.evals._checks import CheckResult
from toolproof.evals._results import CaseResult, EvalReport, TrialResult
from toolproof.evals._stats_report import StatsOptions, suite_statistics
from toolproof.evals._suite import Case, load_suite

HERE = Path(__file__).resolve().parent

STATUSES = st.sampled_from(["pass", "fail", "error", "simulator_fault"])
VERDICTS = st.sampled_from(["pass", "fail", "error", "skipped", "not_run"])
CHECK_STATUSES = st.sampled_from(["pass", "fail", "inconclusive", "skip"])


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Case, Case]:
    import sys

    sys.path.insert(0, str(HERE))
    folder = tmp_path_factory.mktemp("summary")
    path = folder / "s.eval.yaml"
    path.write_text(
        "suite: s\nagent: evalagents:build_agent\nmodel: scripted\ncases:\n"
        "  - {name: a, input: hi, script: [hello]}\n"
        "  - {name: b, input: hi, script: [hello], gate: advise}\n"
    )
    suite = load_suite(path)
    return suite.cases[0], suite.cases[1]


def _check(kind: str, status: str, claims: int | None) -> CheckResult:
    if claims is None:
        return CheckResult("c", status, "why", kind=kind)  # type: ignore[arg-type]
    # A grounding check's figures, which the summary's "quality" adds up per suite.
    metrics = {"claims": claims, "ungrounded": claims // 2}
    return CheckResult("retrieval_grounded", status, "why", metrics=metrics)  # type: ignore[arg-type]


def _trial(
    index: int, status: str, checks: list[tuple[str, str, int | None]], tokens: int
) -> TrialResult:
    results = [_check(*check) for check in checks]
    return TrialResult(
        index,
        status,  # type: ignore[arg-type]
        results,
        usage=Usage(input_tokens=tokens, output_tokens=tokens + 1, cached_tokens=tokens // 2),
        cost=None if tokens % 3 == 0 else tokens / 1000,
    )


case_data = st.tuples(
    st.booleans(),  # blocking
    VERDICTS,
    st.booleans(),  # scripted
    st.lists(
        st.tuples(
            STATUSES,
            st.lists(
                st.tuples(
                    st.sampled_from(["objective", "judged"]),
                    CHECK_STATUSES,
                    st.none() | st.integers(0, 9),
                )
            ),
            st.integers(0, 50),
        ),
        max_size=5,
    ),
)


@settings(
    deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.lists(case_data, max_size=12), interrupted=st.booleans())
def test_the_summary_agrees_with_the_cases_figures(
    cases: tuple[Case, Case], data: list[tuple[bool, str, bool, list]], interrupted: bool
) -> None:
    blocking, advisory = cases
    results = []
    for number, (block, verdict, scripted, trials) in enumerate(data):
        base = blocking if block else advisory
        case = dataclasses.replace(base, name=f"c{number}", suite=f"s{number % 3}")
        made = [_trial(i, s, checks, tokens) for i, (s, checks, tokens) in enumerate(trials)]
        results.append(CaseResult(case, verdict, "why", made, scripted=scripted))  # type: ignore[arg-type]
    options = StatsOptions(max_failure_rate=0.2)  # the eval gate too
    report = EvalReport(
        results, duration_s=1.23456, interrupted=interrupted, model_calls=7, statistics=options
    )
    summary = report.summary()
    figured = [c for c in results if not c.scripted and c.stats is not None]
    k = min((c.stats.n for c in figured if c.stats is not None), default=None)
    intervals = suite_statistics(
        [(c.passes + c.failures, c.passes) for c in figured],
        options,
        pass_hat=[c.stats.pass_hat[k] for c in figured if c.stats is not None] if k else (),
        k=k,
    )
    decision = report.gate()
    every = [t for c in results for t in c.trials]
    judged = {"pass": 0, "fail": 0, "inconclusive": 0, "skip": 0}
    for trial in every:
        for check in trial.checks:
            if check.kind == "judged":
                judged[check.status] += 1
    costs = [t.cost for t in every if t.cost is not None]
    assert summary == {
        "cases": len(results),
        "passed": report.count("pass"),
        "failed": report.count("fail"),
        "errors": report.count("error"),
        "skipped": report.count("skipped"),
        "not_run": report.count("not_run"),
        "blocking_failed": report.count("fail", blocking=True),
        "advisory_failed": report.count("fail", blocking=False),
        "trials": len(every),
        "trials_passed": sum(c.passes for c in results),
        "trials_failed": sum(c.failures for c in results),
        "trials_errored": sum(c.errors for c in results),
        "trials_simulator_fault": sum(c.simulator_faults for c in results),
        "scripted_cases": sum(1 for c in results if c.scripted),
        "stats": report.stats.to_dict(),
        "intervals": intervals,
        "gate": None if decision is None else gate_dict(decision),
        "usage": {
            "input_tokens": sum(t.usage.input_tokens for t in every),
            "output_tokens": sum(t.usage.output_tokens for t in every),
            "cached_tokens": sum(t.usage.cached_tokens for t in every),
        },
        "cost": sum(costs) if costs else None,
        "model_calls": 7,
        "cached_calls": 0,
        "judge_calls": 0,
        "judged_checks": judged,
        "quality": report.quality(),
        "attacks": [],  # (no suite here has attacks: see test_attacks.py)
        "costs": None,  # (computed by the run: evaluate sets report.costs)
        "duration_s": 1.235,
        "exit_code": report.exit_code,
    }
    assert list(summary) == list(EvalReport([]).summary())  # the report's key order
    grounded = any(c[2] is not None for _, _, _, trials in data for _, cs, _ in trials for c in cs)
    assert bool(summary["quality"]) == grounded
