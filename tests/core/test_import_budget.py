"""What ``from toolproof import Agent, tool`` loads: counted, not timed.

Import time regresses by one module at a time (a convenience import at the top of a file).
This fixes the set of toolproof modules the first import loads and names the heavy
libraries it must leave for first use, so a new one fails here on any machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

#: The toolproof modules the import loads, no more.
LOADED = {
    "toolproof",
    "toolproof._agent",
    "toolproof._agent_run",
    "toolproof._run",
    "toolproof._thread_loop",
    "toolproof._memory",
    "toolproof._messages",
    "toolproof._pricing",
    "toolproof._tools",
    "toolproof._tokens",
    "toolproof._toolset",
    "toolproof._trace",
    "toolproof._version",
    "toolproof.errors",
    "toolproof.events",
    "toolproof.models",
    "toolproof.models._base",
}

#: Loaded on first use: a tool built, a hash taken, a model called, a file read, a run logged.
NOT_LOADED = (
    "toolproof._schema",
    "logging",
    "traceback",
    "textwrap",
    "pydantic",
    "pydantic_core",
    "asyncio",
    "aiohttp",
    "yaml",
    "jsonschema",
    "rich",
    "docstring_parser",
    "typing_extensions",
    "hashlib",
    "sqlite3",
)


def _modules_after_import() -> list[str]:
    code = (
        "import json, sys\n"
        "from toolproof import Agent, tool\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(SRC), "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_the_first_import_loads_a_fixed_set_of_toolproof_modules_and_no_heavy_library() -> None:
    loaded = _modules_after_import()
    ours = {name for name in loaded if name == "toolproof" or name.startswith("toolproof.")}
    assert ours == LOADED, f"new: {sorted(ours - LOADED)}, gone: {sorted(LOADED - ours)}"
    heavy = [name for name in NOT_LOADED if name in loaded]
    assert heavy == [], f"loaded at import, should load on first use: {heavy}"
