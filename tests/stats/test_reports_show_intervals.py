"""Every rate a run report prints comes with its interval, in every format, named and configurable.

Real ``toolproof run`` commands (the CLI's ``main`` in this process) on generated suites whose
cases pass at rates the tests choose (``statmodels.RateModel``: a model, not a scripted fake,
so the runs count in the statistics). Each report format is read back and its intervals are
compared with ``toolproof._statistics`` computed from the counts the JSON report holds.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _stat_suites import generated_rates, suite, toolproof

from toolproof._statistics import (
    binomial_interval,
    mean_interval,
    suite_rate_interval,
)
from toolproof._stats_text import show

SETTINGS = [
    # (command-line flags, suite setting, expected level, expected method)
    ((), "", 0.95, "wilson"),
    (("--confidence", "0.9", "--interval", "clopper-pearson"), "", 0.9, "clopper-pearson"),
    ((), "statistics: {confidence: 0.8, interval: clopper-pearson}", 0.8, "clopper-pearson"),
    # the command line wins over the suite
    (("--confidence", "0.99"), "statistics: {confidence: 0.8, interval: wilson}", 0.99, "wilson"),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("flags", "setting", "level", "method"), SETTINGS)
def test_every_format_shows_each_rate_with_its_interval(
    tmp_path: Path, seed: int, flags: tuple[str, ...], setting: str, level: float, method: str
) -> None:
    rates = generated_rates(seed, 8)
    path = suite(tmp_path, rates, trials=4 + seed, extra=setting)
    reports = ["json:r.json", "markdown:r.md", "junit:r.xml", "html:r.html"]
    args = ["run", str(path), "--model", "statmodels:same_a", "-q", "--no-cache", "--no-log"]
    for report in reports:
        args += ["--report", report]
    result = toolproof(*args, *flags, cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    cases = data["cases"]
    assert len(cases) == len(rates)
    # JSON: each case's interval is the one its counts give, at the chosen level and method
    expected_cases = {}
    for case in cases:
        n, c = case["passes"] + case["failures"], case["passes"]
        want = binomial_interval(c, n, level=level, method=method)  # type: ignore[arg-type]
        got = case["intervals"]["pass_rate"]
        assert (got["level"], got["method"]) == (level, method)
        assert got["low"] == pytest.approx(want.low) and got["high"] == pytest.approx(want.high)
        assert got["low"] <= got["estimate"] <= got["high"]
        hat = case["intervals"]["pass_hat_k"]
        assert hat["k"] == n
        assert hat["low"] == pytest.approx(want.low**n) and hat["high"] == pytest.approx(
            want.high**n
        )
        expected_cases[case["name"]] = show(want, 2)
    summary = data["summary"]
    suite_interval = suite_rate_interval(
        [(c["passes"] + c["failures"], c["passes"]) for c in cases], level=level
    )
    got = summary["intervals"]["pass_rate"]
    assert got["method"] == "cluster-wilson" and got["n"] == len(rates)
    assert (got["low"], got["high"]) == pytest.approx((suite_interval.low, suite_interval.high))
    k = min(c["passes"] + c["failures"] for c in cases)
    hat_values = [float(c["stats"]["pass_hat_k"][str(k)]) for c in cases]
    hat = mean_interval(hat_values, level=level)
    assert summary["intervals"]["pass_hat_k"]["k"] == k
    got_hat = summary["intervals"]["pass_hat_k"]
    assert (got_hat["low"], got_hat["high"]) == pytest.approx((hat.low, hat.high))
    assert summary["intervals"]["options"] == {
        "confidence": level,
        "interval": method,
        "max_failure_rate": None,
        "gate_mode": "advisory",
    }
    # Markdown: the run's interval, the method and level named, and each listed case's interval
    markdown = (tmp_path / "r.md").read_text()
    assert f"pass rate {show(suite_interval)}" in markdown
    name = {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson"}[method]
    assert f"intervals: {100 * level:g}% {name} intervals" in markdown
    for case in cases:
        if case["verdict"] != "pass" or case["stats"]["classification"] == "flaky":
            assert f"| {expected_cases[case['name']]} |" in markdown, case["name"]
        else:
            assert f"{expected_cases[case['name']]}" in markdown
    # JUnit: each test case has its interval as a property; the suite has the run's
    root = ET.parse(tmp_path / "r.xml").getroot()
    for item in root.iter("testcase"):
        props = {p.get("name"): p.get("value") for p in item.iter("property")}
        case = next(c for c in cases if c["name"] == item.get("name"))
        want = binomial_interval(
            case["passes"],
            case["passes"] + case["failures"],
            level=level,
            method=method,  # type: ignore[arg-type]
        )
        assert props["pass_rate"] == show(want)
        assert props["interval"] == f"{100 * level:g}% {method}"
    first = root.find("testsuite")
    assert first is not None
    suite_props = {p.get("name"): p.get("value") for p in first.iter("property")}
    assert suite_props["run_pass_rate"] == show(suite_interval)
    # HTML: the run's interval and each case's, with the method named
    page = (tmp_path / "r.html").read_text()
    assert f"{100 * level:g}% cluster-wilson interval" in page
    assert f"{100 * level:g}% {method} interval" in page
    # Console: the run's interval and the method line
    assert f"pass rate {show(suite_interval)}" in result.stdout
    assert f"{100 * level:g}% {name} intervals" in result.stdout
