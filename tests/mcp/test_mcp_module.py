"""The MCP integration stays optional and exports exactly its public names."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest
from mcp_helpers import child_env

pytest.importorskip("mcp")


def test_toolproof_and_its_cli_do_not_import_the_mcp_sdk() -> None:
    code = (
        "import sys, toolproof, toolproof.integrations, toolproof.cli\n"
        "from toolproof.cli import build_parser\n"
        "build_parser()\n"
        "print([m for m in ('mcp', 'mcp_types', 'uvicorn') if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=child_env()
    )
    assert done.stdout.strip() == "[]"


def test_the_mcp_module_exports_exactly_its_public_names() -> None:
    import toolproof.integrations.mcp as module

    public = {
        key
        for key, value in vars(module).items()
        if not key.startswith("_")
        and not isinstance(value, types.ModuleType)
        and getattr(value, "__module__", None) == module.__name__
        and (isinstance(value, type) or callable(value))
    }
    assert public == set(module.__all__)
