"""The public namespaces: what is exported is exactly what is public, and import stays light."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

PACKAGES = [
    "toolproof",
    "toolproof.models",
    "toolproof.testing",
    "toolproof.evals",
    "toolproof.replay",
    "toolproof.errors",
    "toolproof.events",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__), "duplicates in __all__"
    for item in exported:
        assert getattr(module, item) is not None
    public = {
        key
        for key, value in vars(module).items()
        if not key.startswith("_")
        and not isinstance(value, types.ModuleType)
        and key not in {"annotations", "TYPE_CHECKING"}
        # defined here or in one of this package's private modules (not merely imported)
        and (
            getattr(value, "__module__", name) == name
            or getattr(value, "__module__", "").startswith(f"{name}._")
        )
    }
    assert public <= exported | {"logger"}, f"public but not exported: {public - exported}"


def test_the_top_level_stays_small() -> None:
    import toolproof

    assert len(toolproof.__all__) <= 22


def test_import_toolproof_does_not_import_heavy_dependencies() -> None:
    code = (
        "import sys, toolproof, toolproof.models, toolproof.errors\n"
        "heavy = [m for m in ('pydantic', 'asyncio', 'aiohttp', 'yaml', 'rich', 'jsonschema', "
        "'sqlite3', 'docstring_parser') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
