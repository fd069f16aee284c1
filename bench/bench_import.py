"""Import time: ``from toolproof import Agent, tool`` in a fresh interpreter beside ``pass``.

Three figures, each beside its baseline from the same run:

* wall time of the whole process, bare (``python -c pass``) and toolproof alternated
  round by round, median and spread (min / max) over the rounds;
* CPU time (user + system) of the same processes, which a busy machine moves less;
* instructions executed under ``valgrind --tool=callgrind`` (when valgrind is installed):
  a count that barely moves on a busy machine, so a regression of a few percent shows.

Both interpreters read compiled bytecode from a private cache folder
(``PYTHONPYCACHEPREFIX``), filled by warm-up runs: that is what a user gets from an
installed package, even where ``PYTHONDONTWRITEBYTECODE`` is set or the source tree has
no ``__pycache__``. ``--no-pyc`` adds the other case: toolproof's sources copied to a
folder without bytecode and compiled at every start (``PYTHONDONTWRITEBYTECODE=1``, the
standard library read from its own cache), what a source checkout gives on a machine that
sets that variable. ``--cli`` adds the command line's start-up: ``python -m toolproof
--version`` and ``python -m toolproof run --help``. Target: toolproof's total <= 60 ms.

Run: ``python bench/bench_import.py`` (``--rounds N``, ``--no-callgrind``, ``--no-pyc``,
``--cli``, ``--before OTHER/src`` for a before/after pair in the same rounds). The same
wall figures from outside the process, with public tools:
``hyperfine -N -w 3 'python -c pass' "python -c 'from toolproof import Agent, tool'"``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
BARE = ("-c", "pass")
TOOLPROOF = ("-c", "from toolproof import Agent, tool")
VERSION = ("-m", "toolproof", "--version")
RUN_HELP = ("-m", "toolproof", "run", "--help")


def _env(cache: str, src: Path = SRC) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = cache
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH", "")]))
    return env


def _no_pyc_env(folder: str) -> dict[str, str]:
    """toolproof compiled from source at every start; the standard library from its cache."""
    copy = Path(folder) / "src"
    shutil.copytree(SRC / "toolproof", copy / "toolproof", ignore=shutil.ignore_patterns("*.pyc"))
    env = dict(os.environ)
    env.pop("PYTHONPYCACHEPREFIX", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(copy), env.get("PYTHONPATH", "")]))
    return env


def _once(args: tuple[str, ...], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one ``python ARGS`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    begin = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - begin
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def measure(
    rounds: int, commands: list[tuple[tuple[str, ...], dict[str, str]]]
) -> list[tuple[list[float], list[float]]]:
    """Alternated runs (bare, toolproof, bare, ...) after warm-ups that fill the cache.

    Returns each command's wall and CPU times, round by round.
    """
    for _ in range(3):
        for args, env in commands:
            _once(args, env)
    times: list[tuple[list[float], list[float]]] = [([], []) for _ in commands]
    for _ in range(rounds):
        for (args, env), (walls, cpus) in zip(commands, times, strict=True):
            wall, cpu = _once(args, env)
            walls.append(wall)
            cpus.append(cpu)
    return times


def instructions(args: tuple[str, ...], env: dict[str, str], folder: str) -> int | None:
    """Instructions executed by ``python ARGS`` under callgrind (``None`` without it)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    out = Path(folder) / "callgrind.out"
    done = subprocess.run(
        [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    return int(found.group(1)) if found else None


def _ms(values: list[float]) -> str:
    return (
        f"{statistics.median(values) * 1e3:6.1f} ms "
        f"(min {min(values) * 1e3:.1f}, max {max(values) * 1e3:.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--no-callgrind", action="store_true")
    parser.add_argument("--no-pyc", action="store_true", help="add toolproof compiled at start")
    parser.add_argument("--cli", action="store_true", help="add the command line's start-up")
    parser.add_argument(
        "--before", type=Path, help="also time the 'src' folder of another checkout, alternated"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as other:
        env = _env(cache)
        rows = [
            ("python -c pass", BARE, env),
            ("from toolproof import Agent, tool", TOOLPROOF, env),
        ]
        if args.before:
            rows.append((f"same, {args.before}", TOOLPROOF, _env(other, args.before.resolve())))
        if args.no_pyc:
            rows.append(("same, compiled at start (no pyc)", TOOLPROOF, _no_pyc_env(cache)))
        if args.cli:
            rows.append(("python -m toolproof --version", VERSION, env))
            rows.append(("python -m toolproof run --help", RUN_HELP, env))
        times = measure(args.rounds, [(command, row_env) for _, command, row_env in rows])
        (bare_wall, bare_cpu) = times[0]
        print(f"import bench: {args.rounds} alternated rounds, {sys.executable}")
        print(f"  {'':36s} {'wall, median (min, max)':31s} {'CPU, median (min, max)'}")
        for n, ((label, _, _), (walls, cpus)) in enumerate(zip(rows, times, strict=True)):
            print(f"  {label:36s} {_ms(walls):31s} {_ms(cpus)}")
            if n > 0:
                added_wall = [b - a for a, b in zip(bare_wall, walls, strict=True)]
                added_cpu = [b - a for a, b in zip(bare_cpu, cpus, strict=True)]
                print(f"  {'  added (pair by pair)':36s} {_ms(added_wall):31s} {_ms(added_cpu)}")
        print("  target: from toolproof import Agent, tool <= 60 ms total")
        if not args.no_callgrind:
            counted = [
                (label, instructions(command, row_env, cache)) for label, command, row_env in rows
            ]
            base = counted[0][1]
            if base is None:
                print("  callgrind: valgrind is not installed; skipped")
                return
            print(f"  callgrind instructions, {counted[0][0]:33s} {base:>14,}")
            for label, full in counted[1:]:
                if full is not None:
                    print(
                        f"  callgrind instructions, {label:33s} {full:>14,}  "
                        f"(+{full - base:,}, {full / base:.2f}x bare)"
                    )


if __name__ == "__main__":
    main()
