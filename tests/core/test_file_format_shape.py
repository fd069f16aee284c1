"""The modules that read the files users write stay small enough to read.

No function of theirs is over 80 lines or 20 branches (counted as ruff's PLR0912 counts
them: each ``if``/``elif``/``else``, loop, ``try`` clause and ``match`` case), so a new key
or check goes into a model or a small function, not into one long validator.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "toolproof"
FILES = sorted(
    {
        *(SRC / "evals").glob("_suite*.py"),
        SRC / "evals" / "_cases.py",
        SRC / "evals" / "_dataset.py",
        SRC / "evals" / "_checks.py",
        *(SRC / "evals" / "_builtins").glob("*.py"),
        SRC / "_filemodel.py",
        SRC / "_fixture_files.py",
        SRC / "_yaml.py",
        SRC / "replay" / "_rules.py",
        SRC / "replay" / "_rules_model.py",
        SRC / "replay" / "_redact.py",
        SRC / "replay" / "_redact_rules.py",
        SRC / "cli" / "_schema.py",
        SRC / "cli" / "_formats.py",
    }
)
MAX_LINES = 80
MAX_BRANCHES = 20


def test_no_function_is_over_80_lines() -> None:
    long = []
    for path in FILES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_LINES:
                    long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}: {lines}")
    assert long == []


@pytest.mark.timeout(120)
def test_no_function_has_over_20_branches() -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.fail("ruff is a development dependency: pip install -e '.[dev]'")
    done = subprocess.run(
        [
            ruff,
            "check",
            "--no-cache",
            "--isolated",
            "--select",
            "PLR0912",
            "--config",
            f"lint.pylint.max-branches={MAX_BRANCHES}",
            "--output-format",
            "concise",
            *map(str, FILES),
        ],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
