"""Trial statistics: pass@k, pass^k and stable/flaky classes, per case and per suite.

With ``n`` independent trials of a case of which ``c`` passed:

- ``pass@k`` (Chen et al. 2021, the unbiased estimator): the chance that *at least one* of
  ``k`` trials drawn from the ``n`` passes, ``1 - C(n-c, k) / C(n, k)``. It rewards an agent
  that sometimes gets it right: the question of a researcher.
- ``pass^k`` (τ-bench, Yao et al. 2024): the chance that *all* ``k`` drawn trials pass,
  ``C(c, k) / C(n, k)``. It punishes inconsistency: the question of whoever ships the agent.
- the class: ``stable_pass`` (every trial passed), ``stable_fail`` (none did) or ``flaky``.

Both estimators are computed with exact integer binomials, so ``pass_hat_k(4, 2, 2)`` is the
float nearest to 1/6, and a suite's figure is the mean of its cases' figures, as τ-bench
reports it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CaseStats",
    "Classification",
    "SuiteStats",
    "case_stats",
    "classify",
    "pass_at_k",
    "pass_hat_k",
    "suite_stats",
]

Classification = Literal["stable_pass", "stable_fail", "flaky"]


def _check(n: int, c: int, k: int | None = None) -> None:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{name} must be an integer, got {value!r}")
    if n < 1:
        raise ValueError(f"n (the number of trials) must be at least 1, got {n}")
    if not 0 <= c <= n:
        raise ValueError(f"c (the number of passing trials) must be between 0 and n={n}, got {c}")
    if k is not None and not 1 <= k <= n:
        raise ValueError(
            f"k must be between 1 and the number of trials n={n}, got k={k}: "
            f"estimating pass@{k} or pass^{k} needs at least {k} trials (run with trials >= {k})"
        )


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k: at least one of ``k`` trials passes.

    ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, "Evaluating Large Language Models Trained
    on Code").

    Example:
        ```python
        pass_at_k(4, 1, 2)  # 0.5: half of the pairs of trials contain the one pass
        ```

    Args:
        n: Number of trials run (at least 1).
        c: Number of those that passed (``0 <= c <= n``).
        k: Trials drawn (``1 <= k <= n``).

    Returns:
        The estimate, between 0 and 1.

    Raises:
        ValueError: ``n``, ``c`` or ``k`` is out of range (the message says which).
    """
    _check(n, c, k)
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total  # exact integers, one rounding


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The estimate of pass^k: all of ``k`` trials pass.

    ``C(c, k) / C(n, k)``, as τ-bench defines it (Yao et al. 2024).

    Example:
        ```python
        pass_hat_k(4, 2, 2)  # 0.1666...: one pair of trials in six passes twice
        ```

    Args:
        n: Number of trials run (at least 1).
        c: Number of those that passed (``0 <= c <= n``).
        k: Trials drawn (``1 <= k <= n``).

    Returns:
        The estimate, between 0 and 1.

    Raises:
        ValueError: ``n``, ``c`` or ``k`` is out of range (the message says which).
    """
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def classify(n: int, c: int) -> Classification:
    """Whether a case passes every trial, none, or some (a flaky case).

    Args:
        n: Number of trials run (at least 1).
        c: Number of those that passed.

    Returns:
        ``"stable_pass"``, ``"stable_fail"`` or ``"flaky"``.

    Raises:
        ValueError: ``n`` or ``c`` is out of range.
    """
    _check(n, c)
    if c == n:
        return "stable_pass"
    if c == 0:
        return "stable_fail"
    return "flaky"


@dataclass(frozen=True, slots=True)
class CaseStats:
    """The statistics of one case's trials.

    Attributes:
        n: Trials run.
        c: Trials passed.
        pass_rate: ``c / n``.
        pass_at: ``{k: pass@k}`` for ``k`` from 1 to ``n``.
        pass_hat: ``{k: pass^k}`` for ``k`` from 1 to ``n``.
        classification: ``stable_pass``, ``stable_fail`` or ``flaky``.
    """

    n: int
    c: int
    pass_rate: float
    pass_at: dict[int, float]
    pass_hat: dict[int, float]
    classification: Classification

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``k`` keys as strings, as JSON requires)."""
        return {
            "n": self.n,
            "c": self.c,
            "pass_rate": self.pass_rate,
            "pass_at_k": {str(k): v for k, v in self.pass_at.items()},
            "pass_hat_k": {str(k): v for k, v in self.pass_hat.items()},
            "classification": self.classification,
        }


def case_stats(n: int, c: int) -> CaseStats:
    """All statistics of one case: pass rate, pass@k and pass^k for every ``k <= n``, class.

    Args:
        n: Trials run (at least 1).
        c: Trials passed.

    Returns:
        The case's statistics.

    Raises:
        ValueError: ``n`` or ``c`` is out of range.
    """
    _check(n, c)
    ks = range(1, n + 1)
    return CaseStats(
        n=n,
        c=c,
        pass_rate=c / n,
        pass_at={k: pass_at_k(n, c, k) for k in ks},
        pass_hat={k: pass_hat_k(n, c, k) for k in ks},
        classification=classify(n, c),
    )


@dataclass(frozen=True, slots=True)
class SuiteStats:
    """Statistics of a suite: the mean of its cases' figures.

    Attributes:
        cases: Number of cases.
        trials: Trials run in all.
        passed: Trials passed in all.
        pass_rate: Mean of the cases' pass rates.
        pass_at: ``{k: mean pass@k}`` for ``k`` up to the smallest ``n`` of any case (so
            every case contributes to every figure).
        pass_hat: ``{k: mean pass^k}``, same ``k`` range.
        stable_pass: Cases that passed every trial.
        stable_fail: Cases that failed every trial.
        flaky: Cases that passed some trials.
    """

    cases: int
    trials: int
    passed: int
    pass_rate: float
    pass_at: dict[int, float] = field(default_factory=dict)
    pass_hat: dict[int, float] = field(default_factory=dict)
    stable_pass: int = 0
    stable_fail: int = 0
    flaky: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``k`` keys as strings)."""
        return {
            "cases": self.cases,
            "trials": self.trials,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "pass_at_k": {str(k): v for k, v in self.pass_at.items()},
            "pass_hat_k": {str(k): v for k, v in self.pass_hat.items()},
            "stable_pass": self.stable_pass,
            "stable_fail": self.stable_fail,
            "flaky": self.flaky,
        }


def suite_stats(cases: Iterable[CaseStats | tuple[int, int]]) -> SuiteStats:
    """Aggregate per-case outcomes into suite figures (means over cases, as τ-bench does).

    Example:
        ```python
        suite_stats([(4, 4), (4, 2), (4, 0)]).pass_hat[2]  # (1 + 1/6 + 0) / 3
        ```

    Args:
        cases: Each case's :class:`CaseStats`, or its ``(n, c)`` pair.

    Returns:
        The suite's statistics; with no cases, zero counts and empty ``pass_at``/``pass_hat``.

    Raises:
        ValueError: A case's ``n`` or ``c`` is out of range.
    """
    stats = [item if isinstance(item, CaseStats) else case_stats(*item) for item in cases]
    if not stats:
        return SuiteStats(cases=0, trials=0, passed=0, pass_rate=0.0)
    count = len(stats)
    ks = range(1, min(s.n for s in stats) + 1)
    classes = [s.classification for s in stats]
    return SuiteStats(
        cases=count,
        trials=sum(s.n for s in stats),
        passed=sum(s.c for s in stats),
        pass_rate=math.fsum(s.pass_rate for s in stats) / count,
        pass_at={k: math.fsum(s.pass_at[k] for s in stats) / count for k in ks},
        pass_hat={k: math.fsum(s.pass_hat[k] for s in stats) / count for k in ks},
        stable_pass=classes.count("stable_pass"),
        stable_fail=classes.count("stable_fail"),
        flaky=classes.count("flaky"),
    )
