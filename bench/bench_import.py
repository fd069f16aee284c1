"""Import time: ``from toolproof import Agent, tool`` in a fresh interpreter beside ``pass``.

Two figures, each beside its baseline from the same run:

* wall time of the whole process, bare (``python -c pass``) and toolproof alternated
  round by round, median and spread (min / max) over the rounds;
* instructions executed under ``valgrind --tool=callgrind`` (when valgrind is installed):
  a count that barely moves on a busy machine, so a regression of a few percent shows.

Both interpreters read compiled bytecode from a private cache folder
(``PYTHONPYCACHEPREFIX``), filled by warm-up runs: that is what a user gets from an
installed package, even where ``PYTHONDONTWRITEBYTECODE`` is set or the source tree has
no ``__pycache__``. Target: toolproof's total <= 60 ms where ``python -c pass`` takes
14-20 ms.

Run: ``python bench/bench_import.py`` (``--rounds N``, ``--no-callgrind``).
The same wall figures from outside the process: ``farm-bench -n 20 --vs 'python -c pass'
-- python -c 'from toolproof import Agent, tool'`` (with the same environment).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BARE = "pass"
TOOLPROOF = "from toolproof import Agent, tool"


def _env(cache: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = cache
    src = Path(__file__).resolve().parent.parent / "src"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH", "")]))
    return env


def _once(code: str, env: dict[str, str]) -> float:
    begin = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - begin


def wall(rounds: int, env: dict[str, str]) -> dict[str, list[float]]:
    """Alternated runs (bare, toolproof, bare, ...) after warm-ups that fill the cache."""
    for _ in range(3):
        _once(BARE, env)
        _once(TOOLPROOF, env)
    times: dict[str, list[float]] = {BARE: [], TOOLPROOF: []}
    for _ in range(rounds):
        for code in (BARE, TOOLPROOF):
            times[code].append(_once(code, env))
    return times


def instructions(code: str, env: dict[str, str], folder: str) -> int | None:
    """Instructions executed by ``python -c code`` under callgrind (``None`` without it)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    out = Path(folder) / "callgrind.out"
    done = subprocess.run(
        [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c", code],
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = _env(cache)
        times = wall(args.rounds, env)
        bare, ours = times[BARE], times[TOOLPROOF]
        added = [b - a for a, b in zip(bare, ours, strict=True)]
        print(f"import bench: {args.rounds} alternated rounds, {sys.executable}")
        print(f"  python -c pass                       {_ms(bare)}")
        print(f"  from toolproof import Agent, tool    {_ms(ours)}   target <= 60 ms total")
        print(f"  added by toolproof (pair by pair)    {_ms(added)}")
        if not args.no_callgrind:
            base = instructions(BARE, env, cache)
            full = instructions(TOOLPROOF, env, cache)
            if base is None or full is None:
                print("  callgrind: valgrind is not installed; skipped")
            else:
                print(f"  callgrind instructions, bare         {base:>14,}")
                print(
                    f"  callgrind instructions, toolproof    {full:>14,}  "
                    f"(+{full - base:,}, {full / base:.2f}x bare)"
                )


if __name__ == "__main__":
    main()
