"""toolproof.rag: its public names are exactly its __all__, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys
import types

import toolproof.rag


def test_all_lists_exactly_the_public_names():
    public = {
        key
        for key, value in vars(toolproof.rag).items()
        if not key.startswith("_")
        and not isinstance(value, types.ModuleType)
        and key not in {"annotations"}
    }
    assert public == set(toolproof.rag.__all__)
    assert len(toolproof.rag.__all__) <= 10


def test_import_is_light():
    code = (
        "import sys, toolproof.rag\n"
        "heavy = [m for m in ('pydantic', 'asyncio', 'yaml', 'rich', 'sqlite3', 'toolproof.evals')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
