"""Two runs compared case by case: the verdict, not raw counts, decides the exit code.

Real commands: ``toolproof run`` twice then ``toolproof runs compare``, and ``toolproof run
--model A --model B`` in one go, on generated suites of noisy cases. Two runs of the same
agent (different random streams) list cases whose verdict flipped, yet exit 0; a model that
is 50 points worse on every case exits 1. The viewer's comparison page says the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _stat_suites import generated_rates, suite, toolproof

from toolproof._statistics import compare_runs


def counts(report: dict) -> dict[str, tuple[int, int]]:  # type: ignore[type-arg]
    return {
        c["id"]: (c["passes"] + c["failures"], c["passes"])
        for c in report["cases"]
        if c["passes"] + c["failures"]
    }


RUN_IDS: dict[Path, list[str]] = {}


def two_runs(tmp_path: Path, rates: list[float], first: str, second: str) -> tuple[dict, dict]:  # type: ignore[type-arg]
    """Run the suite with each model; their reports (their run ids in ``RUN_IDS``, in order)."""
    path = suite(tmp_path, rates, trials=3, extra="pass_rule: {rate: 0.6}")
    reports, ids = [], RUN_IDS.setdefault(tmp_path, [])
    logs = tmp_path / "logs"
    for model in (first, second):
        before = set(logs.iterdir()) if logs.exists() else set()
        result = toolproof(
            "run", str(path), "--model", f"statmodels:{model}", "--no-cache", "-q",
            "--log-dir", "logs", cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode in (0, 1), result.stderr
        (made,) = set(logs.iterdir()) - before  # (two runs in one second sort by chance)
        ids.append(made.name)
        reports.append(json.loads((made / "report.json").read_text()))
    return reports[0], reports[1]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("seed", range(3))
def test_an_a_a_comparison_exits_0_though_verdicts_flip(tmp_path: Path, seed: int) -> None:
    rates = generated_rates(100 + seed, 60)
    old, new = two_runs(tmp_path, rates, "same_a", "same_b")
    result = toolproof(
        "runs", "compare", *RUN_IDS[tmp_path], "--log-dir", "logs", "--report", "json:c.json",
        "--report", "markdown:c.md", cwd=tmp_path,
    )  # fmt: skip
    data = json.loads((tmp_path / "c.json").read_text())
    # the old rule (any case that passed and now fails) would have failed the comparison
    assert data["counts"]["regressed"] > 0
    assert result.returncode == 0, result.stdout
    assert data["regressed"] is False
    want = compare_runs(counts(old), counts(new))
    got = data["comparison"]
    assert got["change"] == want.change == "no evidence"
    assert got["p_value"] == pytest.approx(want.p_value)
    assert got["effect"]["low"] <= got["effect"]["estimate"] <= got["effect"]["high"]
    assert got["effect"]["low"] < 0 < got["effect"]["high"]
    assert got["detectable_effect"] == pytest.approx(want.detectable_effect)
    assert all(c["change"] == "no evidence" for c in got["cases"])
    markdown = (tmp_path / "c.md").read_text()
    assert "no evidence of a change" in markdown.splitlines()[1]
    assert "these runs detect changes of" in markdown and "exit code 0" in markdown
    assert "no evidence of a change   (exit code 0)" in result.stdout


@pytest.mark.timeout(240)
@pytest.mark.parametrize("correction", ["bh", "holm"])
def test_a_worse_model_regresses_and_exits_1(tmp_path: Path, correction: str) -> None:
    rates = [0.9] * 30
    old, new = two_runs(tmp_path, rates, "same_a", "worse")
    result = toolproof(
        "runs", "compare", *RUN_IDS[tmp_path], "--log-dir", "logs", "--json",
        "--correction", correction, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    data = json.loads(result.stdout)["comparison"]
    want = compare_runs(counts(old), counts(new), correction=correction)  # type: ignore[arg-type]
    assert data["change"] == want.change == "regressed"
    assert data["correction"] == correction
    assert data["effect"]["high"] < 0  # the whole interval of the change is a drop
    listed = {c["case"] for c in data["cases"] if c["change"] == "regressed"}
    assert listed == {c.case for c in want.regressed}


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    ("second", "code", "change"), [("same_b", 0, "no evidence"), ("worse", 1, "regressed")]
)
def test_two_models_in_one_run(tmp_path: Path, second: str, code: int, change: str) -> None:
    rates = generated_rates(7, 40) if second == "same_b" else [0.9] * 30
    path = suite(tmp_path, rates, trials=3)
    result = toolproof(
        "run", str(path), "--model", "statmodels:same_a", "--model", f"statmodels:{second}",
        "-q", "--log-dir", "logs", "--report", "json:pair.json", "--report", "markdown:pair.md",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == code, result.stdout + result.stderr
    data = json.loads((tmp_path / "pair.json").read_text())
    assert data["format"] == "toolproof-models-compare"
    assert data["models"] == ["statmodels:same_a", f"statmodels:{second}"]
    assert data["comparison"]["change"] == change and data["exit_code"] == code
    # each model's run is logged, and comparing the two logs says the same
    assert len(data["runs"]) == 2
    logs = tmp_path / "logs"
    reports = [json.loads((logs / run / "report.json").read_text()) for run in data["runs"]]
    assert data["comparison"]["p_value"] == pytest.approx(
        compare_runs(counts(reports[0]), counts(reports[1])).p_value
    )
    for report in reports:  # every case ran all its trials on both models
        assert [c["trials_run"] for c in report["cases"]] == [3] * len(rates)
    assert f"B vs A: {change}" in result.stdout
    assert (tmp_path / "pair.md").read_text().startswith("<!-- toolproof-models-compare -->")
    compared = toolproof("runs", "compare", *data["runs"], "--log-dir", "logs", cwd=tmp_path)
    assert compared.returncode == code


def test_two_models_need_json_or_markdown_reports_and_distinct_names(tmp_path: Path) -> None:
    path = suite(tmp_path, [1.0])
    args = ["run", str(path), "--model", "statmodels:same_a"]
    other = ["--model", "statmodels:same_b"]
    junit = toolproof(*args, *other, "--report", "junit:x.xml", cwd=tmp_path)
    assert junit.returncode == 2 and "json or markdown" in junit.stderr
    same = toolproof(*args, "--model", "statmodels:same_a", cwd=tmp_path)
    assert same.returncode == 2 and "--no-cache" in same.stderr
    three = ["--model", "statmodels:same_b", "--model", "statmodels:worse"]
    assert toolproof(*args, *three, cwd=tmp_path).returncode == 2


@pytest.mark.parametrize(
    "option",
    [
        ["--user-model", "statmodels:same_a"],
        ["--executor", "ray"],
        ["-x"],
        ["-v"],
        ["--lf"],
        ["--max-attack-success", "0.1"],
        ["--record", "traces.db"],
        ["--baseline", "latest"],
        ["--max-latency-increase", "10%"],
        ["--max-cost-increase", "10%"],
    ],
    ids=lambda option: option[0],
)
def test_a_comparison_refuses_the_options_of_a_one_model_run(
    tmp_path: Path, option: list[str]
) -> None:
    """Each option a comparison of two models would ignore is refused by name, before any run."""
    path = suite(tmp_path, [1.0])
    args = ["run", str(path), "--model", "statmodels:same_a", "--model", "statmodels:same_b"]
    result = toolproof(*args, *option, "--log-dir", "logs", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "applies to a run of one model" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "logs").exists()  # refused before either run started


def test_a_comparison_loads_its_judge_like_a_one_model_run(tmp_path: Path) -> None:
    path = suite(tmp_path, [1.0])
    args = ["run", str(path), "--model", "statmodels:same_a", "--model", "statmodels:same_b"]
    scripted = toolproof(*args, "--judge-model", "scripted", cwd=tmp_path)
    assert scripted.returncode == 2 and "--judge-model" in scripted.stderr, scripted.stderr
    missing = toolproof(*args, "--judge-model", "nomodule_here:judge", cwd=tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr, missing.stderr


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("second", "change"), [("same_b", "no evidence"), ("worse", "regressed")])
def test_the_viewer_compare_page_shows_the_paired_verdict(
    tmp_path: Path, second: str, change: str
) -> None:
    import asyncio

    from aiohttp.test_utils import TestClient, TestServer

    from toolproof.view._server import Runs, make_app

    two_runs(tmp_path, [0.9] * 30, "same_a", second)
    a, b = RUN_IDS[tmp_path]

    async def fetch() -> tuple[int, str]:  # the viewer on 127.0.0.1, asked over HTTP
        app = make_app(Runs(root=tmp_path / "logs"), str(tmp_path / "traces.db"))
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            response = await client.get(f"/compare?a={a}&b={b}")
            return response.status, await response.text()

    status, page = asyncio.run(fetch())
    assert status == 200
    assert 'id="cmp-verdict"><h2><span class="badge' in page
    assert f"{change}</span> paired comparison" in page
    assert f"paired comparison of 30 cases: {change}" in page
