"""Where the tests find other projects' material: ``tests/data/`` (see its README.md).

Importable from every test module as ``from _shared import shared_path`` (``tests/`` is on
pytest's ``pythonpath``). The material ships with the repository, so a fresh clone runs every
test that uses it; a missing file is a broken checkout and fails the test that needs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The vendored material: ``conformance/`` (checker verdicts, recorded wire exchanges) and
#: ``datasets/`` (recorded agent runs), each with its origin and licence in ``README.md``.
DATA = ROOT / "tests" / "data"
#: The former name of :data:`DATA`, kept for the modules that import it.
SHARED = DATA


def shared_path(*parts: str) -> Path:
    """A path under ``tests/data``; the calling test fails, naming the path, if it is absent."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.fail(
            f"{path} is missing: it ships with the repository (tests/data/README.md lists it); "
            "restore it with `git checkout -- tests/data`",
            pytrace=False,
        )
    return path
