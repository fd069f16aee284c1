"""Memory of a big eval run and of its HTML report, by size (measured with tracemalloc).

A suite of N cases (each: one tool call, then an answer, one trial) is run scripted with
the JSON and HTML reports. Printed for each N:

- retained per case: what the returned report still holds once the run is over, per case;
- peak per case: the highest memory during the run (trials, reports), per case;
- HTML peak / output: the highest memory while the HTML report is written, over its size.

    python bench/bench_report_memory.py                 # 1,000 and 10,000 cases
    python bench/bench_report_memory.py --cases 500 2000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

AGENT = '''
from toolproof import Agent, tool


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return "value of " + key


def build_agent(model, tools=None):
    return Agent(model, [lookup] if tools is None else tools, system_prompt="Answer briefly.")
'''


def write_suite(folder: Path, cases: int) -> Path:
    (folder / "bench_agent.py").write_text(AGENT)
    lines = [
        "suite: memory",
        "agent: bench_agent:build_agent",
        "model: scripted",
        "tools: real",
        "trials: 1",
        "cases:",
    ]
    for n in range(cases):
        lines += [
            f"  - name: case_{n:05d}",
            f'    input: "What is the value of k{n}?"',
            f"    expect: {{tools_called: [lookup], final_contains: [k{n}]}}",
            "    script:",
            f"      - call: {{name: lookup, arguments: {{key: k{n}}}}}",
            f'      - "It is the value of k{n}."',
        ]
    suite = folder / "memory.eval.yaml"
    suite.write_text("\n".join(lines) + "\n")
    return suite


def measure(cases: int) -> dict[str, Any]:
    from toolproof.evals import _report
    from toolproof.evals._runner import evaluate_async
    from toolproof.evals._suite import load_suites

    html_peaks: list[int] = []
    writer = _report.write_eval_html

    def watched(*args: Any, **kwargs: Any) -> None:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        writer(*args, **kwargs)
        html_peaks.append(tracemalloc.get_traced_memory()[1] - base)

    _report.write_eval_html = watched  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            sys.path.insert(0, tmp)
            suites = load_suites([write_suite(folder, cases)])
            html, json_path = folder / "report.html", folder / "report.json"
            import asyncio

            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            started = time.perf_counter()
            found: list[Any] = []

            async def main() -> None:
                found.append(
                    await evaluate_async(
                        suites, cache=False, reports=[f"json:{json_path}", f"html:{html}"]
                    )
                )

            asyncio.run(main())
            seconds = time.perf_counter() - started
            current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            report = found[0]
            assert report.exit_code == 0, [c.reason for c in report.cases if c.verdict != "pass"]
            sys.path.remove(tmp)
            size = html.stat().st_size
            return {
                "cases": cases,
                "seconds": seconds,
                "retained_per_case": (current - before) / cases,
                "peak_per_case": (peak - before) / cases,
                "html_bytes": size,
                "html_ratio": html_peaks[0] / size,
            }
    finally:
        _report.write_eval_html = writer  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[1000, 10000])
    args = parser.parse_args()
    print("| cases | run (s) | retained / case | peak / case | HTML size | HTML peak / output |")
    print("|---:|---:|---:|---:|---:|---:|")
    for cases in args.cases:
        row = measure(cases)
        print(
            f"| {row['cases']:,} | {row['seconds']:.1f} | {row['retained_per_case'] / 1024:.1f} kB"
            f" | {row['peak_per_case'] / 1024:.1f} kB | {row['html_bytes'] / 1e6:.1f} MB"
            f" | {row['html_ratio']:.2f}x |"
        )


if __name__ == "__main__":
    main()
