"""Workflow evals: YAML suites, objective and judged checks, trials with pass^k, reports."""

from toolproof._matching import (
    ArgumentsMatcher,
    CallSpec,
    Matcher,
    OrderMatcher,
    Verdict,
    bfcl_expected_calls,
    compile_arguments,
    compile_calls,
    compile_order,
    compile_value_matcher,
    match_arguments,
    match_bfcl,
    match_order,
    match_trajectory,
)
from toolproof.evals._checks import CheckResult, SessionRecord
from toolproof.evals._judge import JUDGE_PROMPT_VERSION
from toolproof.evals._report import REPORT_VERSION
from toolproof.evals._results import CaseResult, EvalReport, TrialResult
from toolproof.evals._runner import evaluate, evaluate_async
from toolproof.evals._stats import (
    CaseStats,
    SuiteStats,
    case_stats,
    classify,
    pass_at_k,
    pass_hat_k,
    suite_stats,
)
from toolproof.evals._suite import Case, PassRule, Suite, load_suite, load_suites

__all__ = [
    "JUDGE_PROMPT_VERSION",
    "REPORT_VERSION",
    "ArgumentsMatcher",
    "CallSpec",
    "Case",
    "CaseResult",
    "CaseStats",
    "CheckResult",
    "EvalReport",
    "Matcher",
    "OrderMatcher",
    "PassRule",
    "SessionRecord",
    "Suite",
    "SuiteStats",
    "TrialResult",
    "Verdict",
    "bfcl_expected_calls",
    "case_stats",
    "classify",
    "compile_arguments",
    "compile_calls",
    "compile_order",
    "compile_value_matcher",
    "evaluate",
    "evaluate_async",
    "load_suite",
    "load_suites",
    "match_arguments",
    "match_bfcl",
    "match_order",
    "match_trajectory",
    "pass_at_k",
    "pass_hat_k",
    "suite_stats",
]
