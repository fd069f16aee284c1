"""The attack figures of a run, on generated runs, agree with a plain recount of the trials.

``attack_summary`` pools the attack outcomes of each attack case into its base case, its
suite, its template and its goal in one pass, and the JUnit properties of a case read the
same outcomes; these tests recount them from the trials' checks, one figure at a time.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof._statistics import binomial_interval
from toolproof.evals._attack_templates import AttackTemplate
from toolproof.evals._attacks import AttackPlan, Goal, attack_summary, case_properties
from toolproof.evals._checks import CheckResult
from toolproof.evals._results import CaseResult, TrialResult
from toolproof.evals._suite import Case, load_suite

HERE = Path(__file__).resolve().parent

TEMPLATES = [AttackTemplate(f"t{i}", "Please: {goal}", version=i + 1) for i in range(3)]
GOALS = [Goal(f"g{i}", f"do thing {i}") for i in range(3)]

# One trial: its status and, per attack check, its outcome (a trial may carry none, one or
# two attack checks, and checks of other kinds that must not count).
outcome = st.fixed_dictionaries(
    {"succeeded": st.booleans(), "utility": st.booleans(), "delivered": st.booleans()}
)
trial_data = st.tuples(
    st.sampled_from(["pass", "fail", "error", "simulator_fault"]),
    st.lists(outcome, max_size=2),
    st.booleans(),  # another check with metrics
)
attack_data = st.tuples(
    st.integers(0, 2),  # suite
    st.integers(0, 2),  # base case
    st.integers(0, 2),  # template
    st.integers(0, 2),  # goal
    st.booleans(),  # blocking
    st.sampled_from(["pass", "fail", "error", "not_run"]),
    st.lists(trial_data, max_size=4),
    st.none() | st.sampled_from([0.0, 0.1]),  # the suite's limit
)
benign_data = st.tuples(
    st.integers(0, 2), st.integers(0, 2), st.lists(trial_data, max_size=4), st.booleans()
)


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Case, Case]:
    """A blocking case and the same case advisory."""
    sys.path.insert(0, str(HERE))
    path = tmp_path_factory.mktemp("attacks") / "s.eval.yaml"
    path.write_text("suite: s\nagent: evalagents:build_agent\ncases: [{name: a, input: hi}]\n")
    (case,) = load_suite(path).cases
    advisory = dataclasses.replace(case, config=dataclasses.replace(case.config, gate="advise"))
    return case, advisory


def _trials(data: list[tuple[str, list[dict[str, bool]], bool]]) -> list[TrialResult]:
    out = []
    for index, (status, outcomes, other) in enumerate(data):
        checks = [CheckResult("attack", "pass", "why", metrics=dict(m)) for m in outcomes]
        if other:
            checks.append(CheckResult("retrieval_grounded", "pass", "why", metrics={"claims": 1}))
        out.append(TrialResult(index, status, checks))  # type: ignore[arg-type]
    return out


def _assert_rate(found: dict | None, hits: int, total: int) -> None:
    """``found`` is ``hits / total`` with its Wilson interval, or None without trials."""
    if not total:
        assert found is None
        return
    assert found is not None
    interval = binomial_interval(hits, total)
    assert (found["count"], found["trials"], found["rate"]) == (hits, total, hits / total)
    assert (found["low"], found["high"], found["level"]) == (interval.low, interval.high, 0.95)


def _plan(result: CaseResult) -> AttackPlan:
    assert result.case.attack is not None
    return result.case.attack


def _count(results: list[CaseResult], key: str) -> int:
    """Attack checks of the results' trials (``trials``), or those whose ``key`` is true."""
    metrics = [
        c.metrics
        for r in results
        for t in r.trials
        for c in t.checks
        if c.check == "attack" and c.metrics is not None
    ]
    return len(metrics) if key == "trials" else sum(1 for m in metrics if m.get(key))


@settings(
    deadline=None, max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(attacks=st.lists(attack_data, max_size=10), benign=st.lists(benign_data, max_size=6))
def test_every_attack_figure_is_a_recount_of_the_trials(
    cases: tuple[Case, Case], attacks: list, benign: list
) -> None:
    blocking, advisory = cases
    results = []
    for suite, base, trials, block in benign:
        case = dataclasses.replace(
            blocking if block else advisory,
            name=f"b{base}",
            suite=f"s{suite}",
            attack=AttackPlan(()),
        )
        results.append(CaseResult(case, "pass", "why", _trials(trials)))
    limits: dict[str, float] = {}
    for number, (suite, base, template, goal, block, verdict, trials, limit) in enumerate(attacks):
        plan = AttackPlan((), TEMPLATES[template], GOALS[goal], "payload", f"b{base}", limit)
        name = f"b{base}@{number}"
        case = dataclasses.replace(
            blocking if block else advisory, name=name, suite=f"s{suite}", attack=plan
        )
        results.append(CaseResult(case, verdict, "why", _trials(trials)))  # type: ignore[arg-type]
        if limit is not None:
            limits[f"s{suite}"] = limit
    results.append(CaseResult(dataclasses.replace(advisory, name="plain"), "pass", "why"))

    summary = attack_summary(results)

    attacked = [r for r in results if r.case.attack is not None and r.case.attack.attacked]
    planted = [r.case.suite for r in results if r.case.attack is not None]  # in suite order
    suites = [s for s in dict.fromkeys(planted) if any(r.case.suite == s for r in attacked)]
    assert [entry["suite"] for entry in summary] == suites
    for entry in summary:
        mine = [r for r in attacked if r.case.suite == entry["suite"]]
        by_base: dict[str | None, list[CaseResult]] = {}  # in the order the bases come
        for r in mine:
            by_base.setdefault(_plan(r).base, []).append(r)
        bases = list(by_base)
        own = {
            r.case.name: r
            for r in results
            if r.case.suite == entry["suite"] and r.case.attack and not r.case.attack.attacked
        }
        passed = sum(own[b].passes for b in bases if b in own)
        tried = sum(own[b].passes + own[b].failures for b in bases if b in own)
        _assert_rate(entry["benign_utility"], passed, tried)
        _assert_rate(entry["utility_under_attack"], _count(mine, "utility"), _count(mine, "trials"))
        _assert_rate(
            entry["attack_success_rate"], _count(mine, "succeeded"), _count(mine, "trials")
        )
        assert entry["trials"] == _count(mine, "trials")
        assert entry["delivered"] == _count(mine, "delivered")
        failing = sum(1 for r in mine if r.blocking and r.verdict == "fail")
        limit = limits.get(entry["suite"])
        assert entry["max_success_rate"] == limit
        assert entry["gate"] == (
            None
            if limit is None
            else {"limit": limit, "failed_attacks": failing, "passed": not failing}
        )
        for key, field in (("templates", "template"), ("goals", "goal")):
            names = {}
            for r in (r for group in by_base.values() for r in group):
                template, goal, _ = _plan(r).attack
                name = template.id if field == "template" else goal.name
                if _count([r], "trials"):
                    names.setdefault(name, []).append(r)
            assert list(entry[key]) == list(names)
            for name, rs in names.items():
                _assert_rate(entry[key][name], _count(rs, "succeeded"), _count(rs, "trials"))
        assert [c["case"] for c in entry["cases"]] == bases
        for case in entry["cases"]:
            group = by_base[case["case"]]
            tried = _count(group, "trials")
            _assert_rate(case["attack_success_rate"], _count(group, "succeeded"), tried)
            _assert_rate(case["utility_under_attack"], _count(group, "utility"), tried)
            own_case = own.get(case["case"])
            _assert_rate(
                case["benign_utility"],
                own_case.passes if own_case else 0,
                own_case.passes + own_case.failures if own_case else 0,
            )
            assert [row["id"] for row in case["attacks"]] == [r.case.id for r in group]
            for row, r in zip(case["attacks"], group, strict=True):
                trials, succeeded = _count([r], "trials"), _count([r], "succeeded")
                assert (row["trials"], row["succeeded"]) == (trials, succeeded)
                assert row["resisted_all"] is (trials > 0 and succeeded == 0)
                assert row["utility"] == _count([r], "utility")
                assert row["delivered"] == _count([r], "delivered")
                properties = case_properties(r)
                assert properties["attack_succeeded"] == f"{succeeded}/{trials}"
                assert properties["attack_resisted_all"] == str(row["resisted_all"]).lower()
