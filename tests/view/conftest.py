"""Fixtures of the viewer tests: real runs' reports (eval and replay) and a real browser."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from view_helpers import start_browser, stop_browser

from _processes import register, unregister

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*argv: str) -> int:
    from toolproof.cli import main

    return main(list(argv))


@pytest.fixture(scope="session")
def eval_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The hostile suite run for real (scripted): its JSON and HTML reports."""
    from view_agent import SUITE

    out = tmp_path_factory.mktemp("eval")
    suite = out / "hostile.eval.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    json_path, html_path = out / "report.json", out / "report.html"
    code = run_cli(
        "run", str(suite), "--report", f"json:{json_path}", "--report", f"html:{html_path}"
    )
    assert code == 1  # two cases fail on purpose
    return {"json": json_path, "html": html_path, "data": json.loads(json_path.read_text())}


@pytest.fixture(scope="session")
def hr_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The HR example suite (scripted, 3 trials): JSON and HTML."""
    out = tmp_path_factory.mktemp("hr")
    json_path, html_path = out / "report.json", out / "report.html"
    suite = ROOT / "examples" / "hr_assistant" / "hr.eval.yaml"
    code = run_cli(
        "run", str(suite), "--model", "scripted", "--report", f"json:{json_path}",
        "--report", f"html:{html_path}",
    )  # fmt: skip
    assert code == 0
    return {"json": json_path, "html": html_path, "data": json.loads(json_path.read_text())}


@pytest.fixture(scope="session")
def replay_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A model-mode replay with a pass, a warn and a fail sample."""
    from view_replay import write_replay

    out = tmp_path_factory.mktemp("replay")
    json_path, html_path, report = write_replay(out)
    return {
        "json": json_path,
        "html": html_path,
        "store": out / "traces.db",
        "data": json.loads(json_path.read_text()),
        "report": report,
    }


@pytest.fixture(scope="session")
def runs_dir(
    tmp_path_factory: pytest.TempPathFactory,
    eval_reports: dict[str, Any],
    hr_report: dict[str, Any],
    replay_reports: dict[str, Any],
) -> Path:
    """A run-log folder as `toolproof run` keeps it: one folder per run (one without meta)."""
    root = tmp_path_factory.mktemp("project") / ".toolproof" / "runs"
    layout = [
        ("20261201T090000Z-run-aaaaaa", hr_report, {"kind": "run", "exit_code": 0}),
        ("20261201T091000Z-run-bbbbbb", eval_reports, {"kind": "run", "exit_code": 1}),
        ("20261201T092000Z-replay-cccccc", replay_reports, None),
    ]
    for name, source, meta in layout:
        folder = root / name
        folder.mkdir(parents=True)
        shutil.copy(source["json"], folder / "report.json")
        if meta is not None:
            meta = {
                **meta,
                "started": name[:16],
                "model": "scripted",
                "suites": ["<b>suite</b>"],
                "counts": {"cases": len(source["data"].get("cases", []))},
                "argv": ["toolproof", "run"],
            }
            (folder / "meta.json").write_text(json.dumps(meta))
    return root


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    driver = start_browser()
    # chromedriver and Chromium are selenium's children: the session's safety net quits them
    # if this finalizer never runs
    key = register(
        "chromedriver and chromium (selenium)",
        lambda: driver.service.process.poll() is None,
        lambda: stop_browser(driver),
    )
    try:
        yield driver
    finally:
        unregister(key)
        stop_browser(driver)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from view_helpers import ARTIFACTS, SAVED

    if SAVED:
        terminalreporter.write_line(f"viewer screenshots ({len(SAVED)}): {ARTIFACTS}")
