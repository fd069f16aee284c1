"""`toolproof run` at scale: 1,000 cases x 3 trials against a local OpenAI-compatible server.

Every trial is 2 model calls (a tool call, then the answer) + 1 tool call + 4 objective
checks, against a server in a separate process that answers each request after 50 ms
(``bench_http_server.py``). At concurrency 100 the ideal wall time is
1,000 x 3 / 100 x 2 x 50 ms = 3.0 s; the target is <= 1.5x ideal and <= 300 MB peak
memory, with the JSON report (every trial's checks and traces) streamed to disk.

The whole command runs as a subprocess (``python -m toolproof run ...``), so the figures
include the interpreter, loading and validating the 1,000-case suite, and writing the
report; its peak RSS comes from ``wait4`` in a small launcher process (Linux carries a
parent's peak RSS into a forked child, so the benchmark does not fork it directly). The
baseline, measured in the same run, is a bare hand-written aiohttp loop doing the same
6,000 exchanges at the same concurrency, timed two ways: inside this process (no start-up:
the baseline of the trials phase) and as a program of its own launched like the command
(Python's start, the imports and the exit included: the baseline of the whole command).
A second pair of runs with the response cache shows what an unchanged suite costs on a
re-run.

    python bench/bench_evals.py                 # about a minute; prints a table
    python bench/bench_evals.py --rounds 1 --cases 200
    python bench/bench_evals.py --callgrind     # instructions of both processes; ~3 min

The callgrind mode counts every instruction of the whole ``toolproof run`` process and of
a small program running the bare loop (its interpreter start and aiohttp import included),
at 40 and 120 cases x 3 trials against a server answering at once: the difference gives
the instructions per trial, the rest the start-up and ending; figures that other work on
the machine does not move.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from bench_evals_agent import multiply_numbers
from bench_http_server import start_server

HERE = Path(__file__).resolve().parent
DELAY = 0.05
CALLS_PER_TRIAL = 2


def write_suite(directory: Path, cases: int, trials: int) -> Path:
    lines = [
        "suite: bench",
        "agent: bench_evals_agent:build_agent",
        "tools: real",
        f"trials: {trials}",
        "retries: 0",
        "expect:",
        "  tools_called: [multiply_numbers]",
        "  args: {multiply_numbers: {a: 12, b: 8}}",
        "  final_contains: ['96']",
        "  max_steps: 3",
        "cases:",
    ]
    lines += [
        f"  - {{name: case_{i:04d}, input: 'What is 12 times 8? (#{i})'}}" for i in range(cases)
    ]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "bench.eval.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


# Linux keeps a process's peak RSS across fork and exec, so a child forked straight from this
# (large) benchmark process would report this process's memory as its own peak. A small
# launcher process forks the measured command instead and reports its wall time and rusage.
LAUNCHER = """
import json, os, subprocess, sys, time
started = time.perf_counter()
process = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(process.pid, 0)
print(json.dumps({"wall": time.perf_counter() - started, "code": os.waitstatus_to_exitcode(status),
                  "rss_kb": usage.ru_maxrss, "cpu": usage.ru_utime + usage.ru_stime}))
"""


def run_toolproof(
    suite: Path,
    model: str,
    concurrency: int,
    report: Path,
    *,
    cache: Path | None,
    bytecode: Path,
) -> dict[str, Any]:
    """Run the CLI in a fresh process; its wall time, peak RSS and CPU, and its report.

    Modules are read from a private bytecode cache (``bytecode``, filled by a warm-up run),
    as an installed package is, even where ``PYTHONDONTWRITEBYTECODE`` is set: otherwise
    every run would compile toolproof's modules, which a user's runs do not.
    """
    args = [sys.executable, "-m", "toolproof", "run", str(suite), "--model", model]
    # --no-log: the figures measure one report, and a bench leaves no run log behind.
    args += ["--concurrency", str(concurrency), "-q", "--report", f"json:{report}", "--no-log"]
    args += ["--no-cache"] if cache is None else ["--cache-dir", str(cache)]
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "TOOLPROOF_ALLOW_MODEL_REQUESTS": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    launched = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *args], env=env, capture_output=True, text=True
    )
    if launched.returncode != 0 or not launched.stdout.strip():
        raise SystemExit(f"the launcher failed:\n{launched.stderr}")
    measured = json.loads(launched.stdout.splitlines()[-1])
    if measured["code"] != 0:
        reasons = []
        if report.exists():
            cases = json.loads(report.read_text())["cases"]
            reasons = [c["reason"] for c in cases if c["verdict"] != "pass"][:3]
        raise SystemExit(f"toolproof run exited {measured['code']}: {reasons}\n{launched.stderr}")
    data = json.loads(report.read_text())
    summary = data["summary"]
    assert summary["trials_passed"] == summary["trials"], summary
    return {
        "wall": measured["wall"],
        "run": data["duration_s"],
        "rss_mb": measured["rss_kb"] / 1024,
        "cpu": measured["cpu"],
        "model_calls": summary["model_calls"],
        "cached_calls": summary["cached_calls"],
        "report_mb": report.stat().st_size / 1e6,
    }


def bare_start_up(bytecode: Path) -> float:
    """Wall time of starting Python and importing what the bare loop uses (not in its figure)."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(bytecode)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    program = [sys.executable, "-c", "import asyncio, json, aiohttp"]
    launched = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *program], env=env, capture_output=True, text=True
    )
    return float(json.loads(launched.stdout.splitlines()[-1])["wall"])


TOOLS_WIRE = [multiply_numbers.definition.to_openai()]


def run_bare_program(url: str, trials: int, concurrency: int, bytecode: Path) -> dict[str, Any]:
    """The bare loop as a program of its own, timed like the command: launch to exit.

    The like-for-like baseline of the whole command: both start Python, import what they
    use (asyncio and aiohttp here), do the exchanges and exit; neither figure is taken from
    inside the process.
    """
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(bytecode)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    program = [sys.executable, "-c", BARE_CHILD, url, str(trials), str(concurrency)]
    program.append(json.dumps(TOOLS_WIRE))
    launched = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *program], env=env, capture_output=True, text=True
    )
    if launched.returncode != 0 or not launched.stdout.strip():
        raise SystemExit(f"the bare program failed:\n{launched.stderr}")
    measured: dict[str, Any] = json.loads(launched.stdout.splitlines()[-1])
    if measured["code"] != 0:
        raise SystemExit(f"the bare program exited {measured['code']}:\n{launched.stderr}")
    return measured


async def bare(url: str, trials: int, concurrency: int) -> tuple[float, float]:
    """A hand-written agent loop on aiohttp: the same exchanges, no checks, no traces.

    Each trial sends what toolproof sends (the system and user messages, the tool's schema;
    then the assistant's call and the tool's result), parses every response body as JSON,
    runs the tool with the model's arguments and checks the answer holds "96". It does not
    validate arguments, build traces, run the four checks or write a report, and its time
    excludes starting Python and importing aiohttp.
    """

    async def one(session: aiohttp.ClientSession, number: int) -> None:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": f"What is 12 times 8? (#{number})"},
        ]
        for _ in range(3):
            body = {"model": "bench-model", "messages": messages, "tools": TOOLS_WIRE}
            async with session.post(url, json=body) as response:
                data = await response.json()
            message = data["choices"][0]["message"]
            messages.append(message)
            if not message.get("tool_calls"):
                assert "96" in message["content"]
                return
            for tc in message["tool_calls"]:
                result = multiply_numbers(**json.loads(tc["function"]["arguments"]))
                messages.append({"role": "tool", "tool_call_id": tc["id"], "content": str(result)})

    pending = iter(range(trials))

    async def worker(session: aiohttp.ClientSession) -> None:
        for number in pending:
            await one(session, number)

    connector = aiohttp.TCPConnector(limit=256)
    async with aiohttp.ClientSession(connector=connector) as session:
        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        return time.perf_counter() - started, time.process_time() - cpu


# The bare loop as its own small program for the callgrind mode: the interpreter, asyncio,
# json and aiohttp's client, nothing of toolproof or of this benchmark.
BARE_CHILD = """
import asyncio, json, sys
import aiohttp
url, trials, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tools = json.loads(sys.argv[4])
async def one(session, number):
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": f"What is 12 times 8? (#{number})"}]
    for _ in range(3):
        body = {"model": "bench-model", "messages": messages, "tools": tools}
        async with session.post(url, json=body) as response:
            data = await response.json()
        message = data["choices"][0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            assert "96" in message["content"]
            return
        for tc in message["tool_calls"]:
            args = json.loads(tc["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": tc["id"],
                             "content": str(args["a"] * args["b"])})
async def main():
    pending = iter(range(trials))
    async def worker(session):
        for number in pending:
            await one(session, number)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256)) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
asyncio.run(main())
"""


def _callgrind_total(command: list[str], env: dict[str, str]) -> int:
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "callgrind.out")
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        done = subprocess.run([*valgrind, *command], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{command[:4]} failed under valgrind:\n{done.stderr[-2000:]}")
        with open(out) as dump:
            found = re.search(r"^(?:summary|totals): (\d+)", dump.read(), re.MULTILINE)
        assert found, "callgrind wrote no summary"
        return int(found.group(1))


def callgrind(sizes: tuple[int, int], trials: int, concurrency: int) -> None:
    """Whole-process instructions at two suite sizes: per trial, and start-up and ending."""
    server, port = start_server(0.0)
    base_url = f"http://127.0.0.1:{port}/v1"
    model = f"openai-compatible:bench-model?base_url={base_url}"
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    totals: dict[str, list[int]] = {"bare": [], "toolproof": []}
    try:
        with tempfile.TemporaryDirectory(prefix="toolproof-bench-") as temp:
            directory = Path(temp)
            env = {**os.environ, "PYTHONPATH": path, "TOOLPROOF_ALLOW_MODEL_REQUESTS": "1"}
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(directory / "bytecode")
            for cases in sizes:
                suite = write_suite(directory / str(cases), cases, trials)
                command = [sys.executable, "-m", "toolproof", "run", str(suite), "--model", model]
                command += ["--concurrency", str(concurrency), "-q", "--no-log", "--no-cache"]
                command += ["--report", f"json:{directory / 'report.json'}"]
                subprocess.run(command, env=env, capture_output=True, check=True)  # bytecode
                bare_command = [sys.executable, "-c", BARE_CHILD, base_url + "/chat/completions"]
                bare_command += [str(cases * trials), str(concurrency), json.dumps(TOOLS_WIRE)]
                subprocess.run(bare_command, env=env, capture_output=True, check=True)
                totals["bare"].append(_callgrind_total(bare_command, env))
                totals["toolproof"].append(_callgrind_total(command, env))
    finally:
        server.terminate()
        server.wait(10)
    small, large = (cases * trials for cases in sizes)
    print(
        f"instructions of the whole process (valgrind --tool=callgrind), {sizes[0]} and "
        f"{sizes[1]} cases x {trials} trials, concurrency {concurrency}, a server answering "
        "at once; per trial from the difference, start-up and ending from the rest:"
    )
    per: dict[str, float] = {}
    for name, (a, b) in totals.items():
        per[name] = (b - a) / (large - small)
        fixed = a - per[name] * small
        print(
            f"  {name:10} {per[name]:12,.0f} per trial   {fixed / 1e6:8.1f} M start-up and "
            f"ending   ({a / 1e6:.1f} M and {b / 1e6:.1f} M in all)"
        )
    print(
        f"  toolproof / bare: {per['toolproof'] / per['bare']:.2f}x per trial, "
        f"{totals['toolproof'][1] / totals['bare'][1]:.2f}x for the whole {sizes[1]}-case run"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each contender")
    parser.add_argument("--callgrind", action="store_true", help="instruction counts instead")
    args = parser.parse_args()
    if args.callgrind:
        callgrind((40, 120), args.trials, args.concurrency)
        return 0
    ideal = args.cases * args.trials / args.concurrency * CALLS_PER_TRIAL * DELAY
    server, port = start_server(DELAY)
    base_url = f"http://127.0.0.1:{port}/v1"
    model = f"openai-compatible:bench-model?base_url={base_url}"
    rows: dict[str, list[dict[str, Any]]] = {"bare": [], "toolproof": []}
    cached: list[dict[str, Any]] = []
    starts: list[float] = []
    programs: list[dict[str, Any]] = []  # the bare loop as a whole program, launch to exit
    try:
        with tempfile.TemporaryDirectory(prefix="toolproof-bench-") as temp:
            directory = Path(temp)
            suite = write_suite(directory, args.cases, args.trials)
            bytecode = directory / "bytecode"
            warm = write_suite(directory / "warm", 20, 1)  # fills the bytecode cache
            run_toolproof(warm, model, 10, directory / "warm.json", cache=None, bytecode=bytecode)
            for round_ in range(args.rounds):  # interleaved, so drift affects both alike
                wall, cpu = asyncio.run(
                    bare(base_url + "/chat/completions", args.cases * args.trials, args.concurrency)
                )
                rows["bare"].append({"wall": wall, "run": wall, "cpu": cpu})
                starts.append(bare_start_up(bytecode))
                programs.append(
                    run_bare_program(
                        base_url + "/chat/completions",
                        args.cases * args.trials,
                        args.concurrency,
                        bytecode,
                    )
                )
                report = directory / f"report-{round_}.json"
                rows["toolproof"].append(
                    run_toolproof(
                        suite, model, args.concurrency, report, cache=None, bytecode=bytecode
                    )
                )
            cache = directory / "cache"
            for name in ("fill", "again"):
                cached.append(
                    run_toolproof(
                        suite,
                        model,
                        args.concurrency,
                        directory / f"{name}.json",
                        cache=cache,
                        bytecode=bytecode,
                    )
                )
    finally:
        server.terminate()
        server.wait(10)

    trials = args.cases * args.trials
    print(
        f"{args.cases} cases x {args.trials} trials = {trials} trials x {CALLS_PER_TRIAL} model "
        f"calls + 1 tool call + 4 checks, concurrency {args.concurrency}, server delay "
        f"{DELAY * 1000:.0f} ms; ideal {ideal:.2f} s; median of {args.rounds} rounds"
    )
    bare_rows, tp = rows["bare"], rows["toolproof"]

    def spread(values: list[float], scale: float = 1.0) -> str:
        mid = statistics.median(values) * scale
        return f"{mid:8.2f} ({min(values) * scale:.2f}-{max(values) * scale:.2f})"

    bare_walls = [r["wall"] for r in bare_rows]
    commands = [r["wall"] for r in tp]
    runs = [r["run"] for r in tp]
    bare_wall, command = statistics.median(bare_walls), statistics.median(commands)
    rss = max(r["rss_mb"] for r in tp)
    per_trial = 1000 / trials
    print(f"{'':34} {'wall s, median (min-max)':>26} {'x ideal':>8} {'CPU ms/trial':>22}")
    print(
        f"{'bare aiohttp loop (baseline)':34} {spread(bare_walls):>26} {bare_wall / ideal:8.2f} "
        f"{spread([r['cpu'] for r in bare_rows], per_trial):>22}"
    )
    program_walls = [r["wall"] for r in programs]
    print(
        f"{'bare loop program, launch to exit':34} {spread(program_walls):>26} "
        f"{statistics.median(program_walls) / ideal:8.2f} "
        f"{spread([r['cpu'] for r in programs], per_trial):>22}"
    )
    print(
        f"{'toolproof run: the whole command':34} {spread(commands):>26} {command / ideal:8.2f} "
        f"{spread([r['cpu'] for r in tp], per_trial):>22}"
    )
    print(
        f"{'toolproof run: trials phase':34} {spread(runs):>26} "
        f"{statistics.median(runs) / ideal:8.2f}"
    )
    ratios = [t["wall"] / b["wall"] for t, b in zip(tp, bare_rows, strict=True)]
    print(
        f"toolproof / baseline, round by round: {spread(ratios)} (whole command), "
        f"{spread([t['run'] / b['wall'] for t, b in zip(tp, bare_rows, strict=True)])} "
        f"(trials phase); peak RSS {rss:.0f} MB; JSON report {tp[0]['report_mb']:.0f} MB"
    )
    whole = [t["wall"] / b["wall"] for t, b in zip(tp, programs, strict=True)]
    print(
        f"like for like, launch to exit: toolproof run / the bare loop program, round by "
        f"round: {spread(whole).strip()}"
    )
    outside = [t["wall"] - t["run"] for t in tp]
    print(
        f"toolproof run outside the trials phase (start-up, loading, report, exit): "
        f"{spread(outside).strip()} s; what the bare loop's figure leaves out (starting "
        f"Python and importing aiohttp): {spread(starts).strip()} s"
    )
    again = cached[-1]
    print(
        f"re-run with the response cache: {again['wall']:.2f} s, {again['model_calls']} model "
        f"calls, {again['cached_calls']} cached; peak RSS {again['rss_mb']:.0f} MB"
    )
    met = command <= 1.5 * ideal and rss <= 300
    print(f"target <= 1.5x ideal and <= 300 MB: {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
