"""Generated suites for the statistics tests, run by the real ``toolproof`` CLI in this process.

Cases pass at rates the tests choose (``statmodels.RateModel``); each suite is written with a
fresh copy of ``statmodels.py`` beside it, so every command starts from new models.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

from _cli import run_cli

HERE = Path(__file__).resolve().parent


def toolproof(*args: str, cwd: Path) -> Any:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "250"}
    env.pop("TOOLPROOF_LOG_DIR", None)
    return run_cli(*args, cwd=cwd, env=env)


def suite(
    folder: Path, rates: list[float], *, trials: Any = 5, extra: str = "", name: str = "rates"
) -> Path:
    """A suite of one case per rate, in ``folder`` with a fresh copy of the models."""
    shutil.copy(HERE / "statmodels.py", folder / "statmodels.py")
    lines = [
        f"suite: {name}",
        "agent: statmodels:build_agent",
        f"trials: {json.dumps(trials)}",
        "expect: {final_contains: PASS}",
        *([extra] if extra else []),
        "cases:",
    ]
    lines += [f"  - {{name: c{i}, input: 'rate {r} #{i}'}}" for i, r in enumerate(rates)]
    path = folder / f"{name}.eval.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def generated_rates(seed: int, cases: int) -> list[float]:
    rng = random.Random(seed)
    # most cases near always or never passing, some anywhere between (as real suites are)
    return [
        round(rng.choice([rng.uniform(0.9, 1.0), rng.uniform(0.0, 0.1), rng.random()]), 2)
        for _ in range(cases)
    ]
