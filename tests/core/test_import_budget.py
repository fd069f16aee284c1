"""What ``from toolproof import Agent, tool`` loads: counted, not timed.

Import time regresses by one module at a time (a convenience import at the top of a file).
This fixes the set of toolproof modules the first import loads and names the heavy
libraries it must leave for first use, so a new one fails here on any machine. The same
for ``import toolproof`` alone and for the command line's start-up (``--version``,
``run --help``), which load neither the agent's loop nor the libraries only it needs.

The budget protects what toolproof itself chooses to import. A module that a standard
library module toolproof needs loads for itself (which changes between Python versions) is
measured as part of a baseline (``_heavy``), so it never fails the budget.
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
    "toolproof._run_clock",
    "toolproof._thread_loop",
    "toolproof._memory",
    "toolproof._messages",
    "toolproof._pricing",
    "toolproof._tools",
    "toolproof._tokens",
    "toolproof._toolset",
    "toolproof._trace",
    "toolproof._trace_build",
    "toolproof._version",
    "toolproof.errors",
    "toolproof.models",
    "toolproof.models._base",
}

#: Loaded on first use: a tool built, a hash taken, a model called, a file read, a run logged.
NOT_LOADED = (
    "toolproof._schema",
    "toolproof.events",
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


#: What ``import toolproof`` alone loads (the version and the errors; the agent's parts
#: load on first use), and what the command line loads before it parses its arguments.
LOADED_BARE = {"toolproof", "toolproof._version", "toolproof.errors"}
LOADED_CLI = LOADED_BARE | {
    "toolproof._text",
    "toolproof._tracebacks",
    "toolproof.cli",
    "toolproof.cli._chat",
    "toolproof.cli._formats",
    "toolproof.cli._mcp",
    "toolproof.cli._mocks",
    "toolproof.cli._options",
    "toolproof.cli._planning",
    "toolproof.cli._promote",
    "toolproof.cli._replay",
    "toolproof.cli._run",
    "toolproof.cli._runs",
    "toolproof.cli._schema",
    "toolproof.cli._serve",
    "toolproof.cli._traces",
    "toolproof.cli._view",
}

#: Not loaded by ``import toolproof`` nor by the command line's start-up (``--version``,
#: ``run --help``): the loop and the standard library modules only it needs.
NOT_LOADED_BARE = (
    *NOT_LOADED,
    "toolproof._agent",
    "dataclasses",
    "inspect",
    "json",
    "contextvars",
    "datetime",
    "ipaddress",
)


def _modules_after(statement: str) -> list[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(SRC), "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    loaded.remove("json")  # the probe's own import (and what it loads)
    return [name for name in loaded if not name.startswith("json.") and name != "_json"]


def _heavy(loaded: list[str], names: tuple[str, ...], baseline: str = "pass") -> list[str]:
    """The ``names`` loaded, leaving out what ``baseline`` loads (a ``.pth`` file...)."""
    bare = set(_modules_after(baseline))
    return [name for name in names if name in loaded and name not in bare]


def _modules_after_import() -> list[str]:
    return _modules_after("from toolproof import Agent, tool")


def _ours(loaded: list[str]) -> set[str]:
    return {name for name in loaded if name == "toolproof" or name.startswith("toolproof.")}


def test_the_first_import_loads_a_fixed_set_of_toolproof_modules_and_no_heavy_library() -> None:
    loaded = _modules_after_import()
    ours = _ours(loaded)
    assert ours == LOADED, f"new: {sorted(ours - LOADED)}, gone: {sorted(LOADED - ours)}"
    heavy = [name for name in NOT_LOADED if name in loaded]
    assert heavy == [], f"loaded at import, should load on first use: {heavy}"


def test_import_toolproof_alone_loads_the_version_and_the_errors() -> None:
    loaded = _modules_after("import toolproof")
    ours = _ours(loaded)
    assert ours == LOADED_BARE, f"new: {sorted(ours - LOADED_BARE)}"
    heavy = _heavy(loaded, NOT_LOADED_BARE)
    assert heavy == [], f"loaded by 'import toolproof', should load on first use: {heavy}"


def test_the_command_line_builds_its_parser_without_loading_the_loop() -> None:
    # What `toolproof --version` and `toolproof run --help` load before they print.
    statement = (
        "import contextlib, io\n"
        "from toolproof.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--version'])\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['run', '--help'])"
    )
    loaded = _modules_after(statement)
    ours = _ours(loaded)
    assert ours == LOADED_CLI, (
        f"new: {sorted(ours - LOADED_CLI)}, gone: {sorted(LOADED_CLI - ours)}"
    )
    # What the budget protects is toolproof's own choice of what to load, not what the
    # standard library loads for itself on one Python version or another: the command line
    # needs argparse (whose help formatter loads textwrap) and pathlib (which loads
    # urllib.parse, and with it ipaddress, on current versions), so what they load is the
    # baseline.
    baseline = "import argparse, pathlib; argparse.ArgumentParser().format_help()"
    heavy = _heavy(loaded, NOT_LOADED_BARE, baseline=baseline)
    assert heavy == [], f"loaded at the command line's start-up: {heavy}"


#: What pytest's loading of toolproof's plugin costs every test session on a machine where
#: toolproof is installed: the plugin and the package it lives in, no test double yet.
LOADED_PLUGIN = LOADED_BARE | {
    "toolproof.testing",
    "toolproof.testing._live",
    "toolproof.testing.plugin",
}


def test_the_pytest_plugin_loads_without_the_test_doubles() -> None:
    loaded = _modules_after("import toolproof.testing.plugin")
    ours = _ours(loaded)
    assert ours == LOADED_PLUGIN, f"new: {sorted(ours - LOADED_PLUGIN)}"
    heavy = _heavy(loaded, NOT_LOADED_BARE, baseline="import pytest")
    assert heavy == [], f"loaded with the pytest plugin, should load on first use: {heavy}"
