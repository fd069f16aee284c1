"""The README's code runs as written, and its commands match CI."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_python_blocks_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})


def test_ci_runs_the_readme_test_command() -> None:
    quickstart = re.search(r"## Quickstart.*?```bash\n(.*?)```", README, flags=re.S)
    assert quickstart is not None
    lines = quickstart.group(1).strip().splitlines()
    assert len(lines) == 2  # one command that runs the main job, one that runs the tests
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == lines[1]
