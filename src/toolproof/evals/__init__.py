"""Workflow evals: YAML suites, objective and judged checks, trials with pass^k, reports."""

from typing import TYPE_CHECKING, Any

from toolproof._matching import (
    CallSpec,
    Matcher,
    Verdict,
    bfcl_expected_calls,
    compile_arguments,
    compile_order,
    compile_value_matcher,
    match_arguments,
    match_bfcl,
    match_order,
    match_trajectory,
)
from toolproof.evals._attack_templates import AttackTemplate, register_attack_template
from toolproof.evals._checks import CheckContext, CheckResult, CheckStatus, SessionRecord, check
from toolproof.evals._options import EvalOptions
from toolproof.evals._results import CaseResult, EvalReport, TrialResult
from toolproof.evals._runner import evaluate, evaluate_async
from toolproof.evals._stats import (
    case_stats,
    classify,
    pass_at_k,
    pass_hat_k,
    suite_stats,
)
from toolproof.evals._suite import Case, Suite, load_suite, load_suites

if TYPE_CHECKING:
    from toolproof._runlog import list_runs, load_run

__all__ = [
    "AttackTemplate",
    "CallSpec",
    "Case",
    "CaseResult",
    "CheckContext",
    "CheckResult",
    "CheckStatus",
    "EvalOptions",
    "EvalReport",
    "Matcher",
    "SessionRecord",
    "Suite",
    "TrialResult",
    "Verdict",
    "bfcl_expected_calls",
    "case_stats",
    "check",
    "classify",
    "compile_arguments",
    "compile_order",
    "compile_value_matcher",
    "evaluate",
    "evaluate_async",
    "list_runs",
    "load_run",
    "load_suite",
    "load_suites",
    "match_arguments",
    "match_bfcl",
    "match_order",
    "match_trajectory",
    "pass_at_k",
    "pass_hat_k",
    "register_attack_template",
    "suite_stats",
]


def __getattr__(name: str) -> Any:
    # The run logs' readers load on first use: `toolproof run --no-log` never needs them.
    if name in ("list_runs", "load_run"):
        from toolproof import _runlog

        return getattr(_runlog, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
