"""The HTML report of a big run: generation time, file size, and load time in a real browser.

A synthetic eval report of 4,000 cases x 3 trials (each trial with its full trace, cloned from
a real scripted run of the HR example) is written as JSON, then rendered as HTML; the HTML is
opened from file:// in headless Chromium (Debian's chromium + chromium-driver, driven with
selenium). The baseline is the JSON report itself: its size, and the time to write it.

    python bench/bench_html.py            # prints a table; about 1 min
    python bench/bench_html.py --cases 500
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "view"))


def template() -> dict[str, Any]:
    """A real report: the HR suite run scripted with 3 trials."""
    suite = ROOT / "examples" / "hr_assistant" / "hr.eval.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "hr.json"
        subprocess.run(
            [sys.executable, "-m", "toolproof", "run", str(suite),
             "--model", "scripted", "--report", f"json:{out}"],
            check=True, capture_output=True, cwd=ROOT,
            env={**__import__("os").environ, "PYTHONPATH": str(ROOT / "src")},
        )  # fmt: skip
        data: dict[str, Any] = json.loads(out.read_text())
        return data


def synthetic(base: dict[str, Any], cases: int) -> dict[str, Any]:
    """``cases`` cases cloned from the real ones; every 10th fails a trial, every 37th errors."""
    data = copy.deepcopy(base)
    real = base["cases"]
    out = []
    for n in range(cases):
        case = copy.deepcopy(real[n % len(real)])
        case["name"] = f"{case['name']}_{n:05d}"
        case["id"] = f"{case['suite']}::{case['name']}"
        case["tags"] = [f"group{n % 12}"]
        for trial in case["trials"]:
            if n % 10 == 0 and trial["index"] == 1:
                trial["status"] = "fail"
                trial["checks"][0]["status"] = "fail"
                trial["checks"][0]["reason"] = "synthetic failure"
            if n % 37 == 0 and trial["index"] == 2:
                trial["status"] = "error"
                trial["error"] = {"type": "ModelHTTPError", "message": "synthetic 503"}
        passed = sum(1 for t in case["trials"] if t["status"] == "pass")
        case["verdict"] = "pass" if passed == len(case["trials"]) else "fail"
        case["stats"]["classification"] = (
            "stable_pass" if passed == len(case["trials"]) else "flaky" if passed else "stable_fail"
        )
        out.append(case)
    data["cases"] = out
    trials = [t for c in out for t in c["trials"]]
    data["summary"].update(
        cases=cases,
        passed=sum(1 for c in out if c["verdict"] == "pass"),
        failed=sum(1 for c in out if c["verdict"] == "fail"),
        trials=len(trials),
        trials_passed=sum(1 for t in trials if t["status"] == "pass"),
    )
    return data


def browser_load(path: Path, rounds: int) -> dict[str, float]:
    from view_helpers import chromium_paths, start_browser, stop_browser

    if chromium_paths() is None:
        return {}
    driver = start_browser()
    figures: dict[str, list[float]] = {"load": [], "ready": [], "open": []}
    try:
        driver.set_page_load_timeout(300)
        for _ in range(rounds):
            driver.get("about:blank")
            driver.get(path.as_uri())  # returns after the load event
            timing = driver.execute_script(
                "const n = performance.getEntriesByType('navigation')[0];"
                "return [n.loadEventEnd, window.toolproofReadyMs,"
                " document.querySelectorAll('.rows > details.case').length]"
            )
            figures["load"].append(float(timing[0]))
            figures["ready"].append(float(timing[1]))
            started = time.perf_counter()
            driver.execute_script(
                "const c = document.querySelector('#case-0'); c.open = true;"
                "c.querySelector('details.trial').open = true;"
            )
            driver.execute_script(
                "return new Promise(r => { const t = () => document.querySelector('#case-0 .trace')"
                " ? r(1) : setTimeout(t, 5); t(); })"
            )
            figures["open"].append((time.perf_counter() - started) * 1000)
    finally:
        stop_browser(driver)
    return {k: statistics.median(v) for k, v in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from toolproof.view import render_report

    data = synthetic(template(), args.cases)
    with tempfile.TemporaryDirectory() as tmp:
        json_path, html_path = Path(tmp) / "report.json", Path(tmp) / "report.html"
        started = time.perf_counter()
        json_path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        json_s = time.perf_counter() - started
        started = time.perf_counter()
        html_path.write_text(render_report(data), encoding="utf-8")
        html_s = time.perf_counter() - started
        json_mb, html_mb = json_path.stat().st_size / 1e6, html_path.stat().st_size / 1e6
        load = browser_load(html_path, args.rounds)
    trials = sum(len(c["trials"]) for c in data["cases"])
    print(f"HTML report of {args.cases:,} cases x 3 trials ({trials:,} traces)\n")
    print("| figure | value | baseline / target |")
    print("|---|---|---|")
    print(f"| render + write HTML | {html_s:.2f} s | JSON dump + write {json_s:.2f} s |")
    print(
        f"| file size | {html_mb:.1f} MB | JSON {json_mb:.1f} MB "
        f"(x{html_mb / json_mb:.2f}; target <= x3) |"
    )
    if load:
        print(f"| browser: load event | {load['load']:.0f} ms | target: a few seconds |")
        print(f"| browser: rows ready (script ran) | {load['ready']:.0f} ms | |")
        print(f"| browser: open a trial (parse data, render trace) | {load['open']:.0f} ms | |")
    else:
        print("| browser | skipped | chromium and chromedriver are not installed |")


if __name__ == "__main__":
    main()
