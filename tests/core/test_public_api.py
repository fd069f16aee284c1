"""The public API is small and locked: docs/api.md lists exactly what each package exports.

Adding or removing a public name means editing docs/api.md (with the reason a user needs it);
these tests fail on drift in either direction. Every public exception lives in
``toolproof.errors``; the docs, examples and README import only public names.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import types
from pathlib import Path

import pytest

import toolproof

SRC = Path(toolproof.__file__).resolve().parent.parent
ROOT = SRC.parent
API_PAGE = ROOT / "docs" / "api.md"

#: Helpers the CLI's subcommand modules share; the CLI's only Python API is ``main``.
CLI_HELPERS = {"build_parser", "report_console", "show_help"}

#: The public namespaces: every package, and the two public top-level modules.
NAMESPACES = sorted(
    {
        ".".join(path.parent.relative_to(SRC).parts)
        for path in (SRC / "toolproof").rglob("__init__.py")
        if not any(part.startswith("_") for part in path.parent.relative_to(SRC).parts)
    }
    | {"toolproof.errors", "toolproof.events"}
)


def documented() -> dict[str, list[str]]:
    """The names docs/api.md lists, per ``## `package` `` section."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in API_PAGE.read_text(encoding="utf-8").splitlines():
        heading = re.fullmatch(r"## `([\w.]+)`", line)
        if heading:
            current = sections.setdefault(heading.group(1), [])
        elif line.startswith("## "):
            current = None
        item = re.match(r"- `(\w+)` — \S", line)
        if item and current is not None:
            current.append(item.group(1))
    return sections


def test_the_page_has_one_section_per_public_namespace() -> None:
    assert sorted(documented()) == NAMESPACES


@pytest.mark.parametrize("name", NAMESPACES)
def test_all_matches_the_api_page(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(getattr(module, "__all__", []))
    listed = documented().get(name, [])
    assert len(set(listed)) == len(listed), f"{name}: a name is listed twice in docs/api.md"
    missing = sorted(set(exported) - set(listed))
    extra = sorted(set(listed) - set(exported))
    assert not missing, (
        f"{name}: exported but not in docs/api.md (add a line saying why): {missing}"
    )
    assert not extra, f"{name}: in docs/api.md but not exported: {extra}"


@pytest.mark.parametrize("name", NAMESPACES)
def test_the_namespace_holds_only_its_all(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(getattr(module, "__all__", []))
    for item in exported:
        assert getattr(module, item) is not None
    public = {
        key
        for key, value in vars(module).items()
        if not key.startswith(("_", "@"))
        and not isinstance(value, types.ModuleType)
        and key not in {"annotations", "TYPE_CHECKING", "logger"}
        # defined in this package (not merely imported for its annotations)
        and (
            getattr(value, "__module__", name) == name
            or getattr(value, "__module__", "").startswith(f"{name}._")
        )
    }
    if name == "toolproof.cli":
        public -= CLI_HELPERS
    assert public <= exported, f"{name}: public but not exported: {sorted(public - exported)}"


def _exceptions() -> list[tuple[str, str, type[BaseException]]]:
    found = []
    for name in NAMESPACES:
        module = importlib.import_module(name)
        for item in getattr(module, "__all__", []):
            value = getattr(module, item)
            if inspect.isclass(value) and issubclass(value, BaseException):
                found.append((name, item, value))
    return found


def test_every_public_exception_lives_in_errors() -> None:
    import toolproof.errors as errors

    exceptions = _exceptions()
    assert len(exceptions) >= len(errors.__all__)
    for name, item, value in exceptions:
        assert value.__module__ == "toolproof.errors", f"{name}.{item} is defined elsewhere"
        assert getattr(errors, item) is value, f"{name}.{item} is not exported by errors"


def _imports_of(source: str) -> list[tuple[str, str]]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("toolproof")
        for alias in node.names
    ]


def _user_sources() -> list[tuple[str, str]]:
    sources = []
    for path in sorted((ROOT / "examples").rglob("*.py")):
        sources.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for index, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
            sources.append((f"{path.relative_to(ROOT)} block {index + 1}", block))
    return sources


def test_docs_examples_and_readme_import_only_public_names() -> None:
    public_modules = set(NAMESPACES) | {
        "toolproof.models.fake",
        "toolproof.models.openai",
        "toolproof.models.textproto",
        "toolproof.testing.plugin",
        "toolproof.integrations.langchain",
        "toolproof.integrations.mcp",
        "toolproof.integrations.openai_agents",
        "toolproof.integrations.otel",
    }
    problems = []
    for label, source in _user_sources():
        for module, name in _imports_of(source):
            if module not in public_modules:
                problems.append(f"{label}: from {module} import {name} (not a public module)")
            elif module in NAMESPACES:
                exported = getattr(importlib.import_module(module), "__all__", [])
                if name not in exported and not name.startswith("_"):
                    problems.append(f"{label}: from {module} import {name} (not exported)")
                elif name.startswith("_"):
                    problems.append(f"{label}: from {module} import {name} (private)")
    assert problems == []


def test_the_import_check_sees_private_names() -> None:
    assert _imports_of("from toolproof._matching import compile_calls\nimport toolproof\n") == [
        ("toolproof._matching", "compile_calls")
    ]
