"""The recorded OpenAI-wire exchanges of ``../shared/conformance/openai-wire``.

``shared_path`` comes from ``tests/conftest.py``, loaded by file path because every test
directory's ``conftest`` module has the same name.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "_toolproof_tests_root_conftest", Path(__file__).resolve().parents[1] / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_root = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_root)

shared_path = _root.shared_path
WIRE_DIR: Path = _root.SHARED / "conformance" / "openai-wire"


def wire_files() -> list[str]:
    """The recording file names, or one placeholder that makes the test skip if absent."""
    if not WIRE_DIR.exists():
        return ["(openai-wire absent)"]
    return sorted(p.name for p in WIRE_DIR.glob("*.json"))
