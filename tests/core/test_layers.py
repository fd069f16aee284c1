"""The package's layers hold: no upward import, no import cycle, no module named by a string.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``); import-linter reads every
import of every module, including the ones inside functions and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import toolproof

pytest.importorskip("importlinter", reason="import-linter is in the dev extra")

SRC = Path(toolproof.__file__).resolve().parent.parent
ROOT = SRC.parent
PYPROJECT = ROOT / "pyproject.toml"
PACKAGE = SRC / "toolproof"

# Where a module may be loaded by name: the user's modules named in files and on the command
# line (``module:attr`` specs), never toolproof's own.
USER_MODULE_LOADERS = {"_loading.py", "evals/_resolve.py"}
# Calls whose string argument names a toolproof package without importing it.
NAMING_CALLS = {"getLogger", "files"}


def _lint(config: Path, src: Path) -> tuple[int, str]:
    """Run ``lint-imports`` on ``config`` with the package found in ``src``."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
            "--config",
            str(config),
            "--no-cache",
            "--no-logo",
        ],
        capture_output=True,
        text=True,
        cwd=config.parent,
        env={**os.environ, "PYTHONPATH": str(src), "COLUMNS": "200"},
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_the_import_contracts_are_kept() -> None:
    code, output = _lint(PYPROJECT, SRC)
    assert code == 0, output
    assert "Contracts: 3 kept, 0 broken." in output, output


def test_every_module_has_a_layer() -> None:
    import tomllib

    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["id"] == "layers"]
    placed = {
        name.strip() for layer in layers["layers"] for name in layer.replace(":", "|").split("|")
    }
    modules = {
        path.stem if path.is_file() else path.name
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__")
        or (path.is_dir() and (path / "__init__.py").exists())
    }
    assert modules - placed == set(), "give these modules a layer in pyproject.toml"
    assert placed - modules == set(), "these layers name modules that do not exist"


def test_the_contracts_catch_an_upward_import_and_a_cycle(tmp_path: Path) -> None:
    # A copy of the package where the data layer reaches up into testing (which imports it).
    copy = tmp_path / "src"
    shutil.copytree(PACKAGE, copy / "toolproof", ignore=shutil.ignore_patterns("__pycache__"))
    messages = copy / "toolproof" / "_messages.py"
    messages.write_text(
        messages.read_text(encoding="utf-8")
        + textwrap.dedent(
            """

            def _upward() -> object:
                from toolproof.testing import ANY

                return ANY
            """
        ),
        encoding="utf-8",
    )
    config = tmp_path / "pyproject.toml"
    config.write_text(PYPROJECT.read_text(encoding="utf-8"), encoding="utf-8")
    code, output = _lint(config, copy)
    assert code == 1, output
    assert "toolproof._messages is not allowed to import toolproof.testing" in output, output
    assert "No import cycles between sibling modules and packages BROKEN" in output, output


def _string_imports(source: str, relative: str) -> list[str]:
    """Calls that load a module by name, and strings that name a toolproof module."""
    tree = ast.parse(source)
    modules = {
        ".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        for p in PACKAGE.rglob("*.py")
    }
    found: list[str] = []
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in {"import_module", "__import__"} and relative not in USER_MODULE_LOADERS:
                found.append(f"{relative}:{node.lineno}: {name}(...)")
            if name in NAMING_CALLS:
                allowed.update(id(arg) for arg in node.args)
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            allowed.add(id(body[0].value))  # docstrings
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in allowed
            and node.value.split(":")[0] in modules - {"toolproof"}
        ):
            found.append(f"{relative}:{node.lineno}: {node.value!r}")
    return found


def test_no_toolproof_module_is_imported_by_a_string() -> None:
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        for hit in _string_imports(
            path.read_text(encoding="utf-8"), path.relative_to(PACKAGE).as_posix()
        )
    ]
    assert found == [], "import these with an import statement instead:\n" + "\n".join(found)


def test_the_string_import_check_sees_the_usual_forms() -> None:
    source = textwrap.dedent(
        '''
        import importlib
        _HOMES = {"X": "toolproof.evals._checks"}
        logger = logging.getLogger("toolproof.replay")
        def f():
            """Loads toolproof.evals."""
            return importlib.import_module("toolproof.evals")
        '''
    )
    assert _string_imports(source, "sample.py") == [
        "sample.py:7: import_module(...)",
        "sample.py:3: 'toolproof.evals._checks'",
        "sample.py:7: 'toolproof.evals'",
    ]
    # A loader of the user's modules may call import_module, never with toolproof's names.
    assert _string_imports(source, "_loading.py") == [
        "_loading.py:3: 'toolproof.evals._checks'",
        "_loading.py:7: 'toolproof.evals'",
    ]
