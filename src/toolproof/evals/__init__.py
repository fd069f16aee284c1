"""Workflow evals: YAML suites, objective and judged checks, trials with pass^k, reports."""
