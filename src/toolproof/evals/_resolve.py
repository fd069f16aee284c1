"""Resolving what a suite names by import path: agents, factories, modules, objects.

A suite names its agent (``agent: package.module:build_agent``), mock factories and other
objects by import path. One ``Resolver`` serves one load of suites: it imports each path
once, finds a package that is not on ``sys.path`` in the nearest parent directory of the
suite file, and probes an agent factory once with a scripted model to learn its tools. Every
failure is one ``UserError`` naming the path and what to write instead.
"""

from __future__ import annotations

import difflib
import importlib
import re
import sys
from pathlib import Path
from typing import Any

from toolproof.errors import UserError
from toolproof.evals._cases import AgentSpec

__all__ = ["Resolver"]


class Resolver:
    """Resolves and caches import paths and agents across the files of one load."""

    def __init__(self) -> None:
        self.agents: dict[tuple[str, str], AgentSpec | str] = {}
        self.imports: dict[tuple[str, Path], Any] = {}

    def import_object(self, spec: str, near: Path) -> Any:
        key = (spec, near)
        if key not in self.imports:
            self.imports[key] = _import(spec, near)
        return self.imports[key]

    def load_module(self, name: str, near: Path) -> Any:
        """Import a module by name (found near the suite file, like factories)."""
        key = (f"module:{name}", near)
        if key not in self.imports:
            if not re.fullmatch(r"[\w.]+", name):
                raise UserError(f"{name!r} is not a module name; write 'package.module'")
            self.imports[key] = _import_module(name, name, near)
        return self.imports[key]

    def agent(self, spec: str, options: dict[str, Any], near: Path) -> AgentSpec | str:
        """The agent spec, or a problem message."""
        import json

        text = json.dumps(options, sort_keys=True, default=repr) if options else ""
        key = (spec, text + str(near))
        if key not in self.agents:
            self.agents[key] = self._agent(spec, options, near)
        return self.agents[key]

    def _agent(self, spec: str, options: dict[str, Any], near: Path) -> AgentSpec | str:
        from toolproof._agent import Runnable
        from toolproof.models.fake import ScriptedModel

        try:
            target = self.import_object(spec, near)
        except UserError as exc:
            return str(exc)
        if isinstance(target, Runnable):
            return AgentSpec(spec, target, {}, target.toolset)
        if not callable(target):
            return f"{spec} is {type(target).__name__}, not an agent factory or an Agent"
        probe = ScriptedModel([], name="toolproof-probe")
        try:
            agent = target(probe, None, **options)
        except Exception as exc:
            return (
                f"agent factory {spec} failed when called as {spec.split(':')[-1]}(model, None"
                f"{', **agent_options' if options else ''}): {type(exc).__name__}: {exc} "
                "(a factory "
                "takes (model, tools, **options) and builds its default tools when tools is None)"
            )
        if not isinstance(agent, Runnable):
            return f"agent factory {spec} returned {type(agent).__name__}, not an Agent"
        return AgentSpec(spec, target, dict(options), agent.toolset)


def _import(spec: str, near: Path) -> Any:
    """Import ``module:attribute`` (or ``module.attribute``).

    The module is imported from ``sys.path`` (the CLI puts the current directory first); if
    its top-level package is not found there, the nearest parent directory of ``near`` that
    holds it is added, so a suite runs from any working directory.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep:
        module_name, _, attribute = spec.rpartition(".")
    if not module_name or not attribute or not re.fullmatch(r"[\w.]+", module_name):
        raise UserError(f"{spec!r} is not an import path; write 'package.module:name'")
    module = _import_module(module_name, spec, near)
    try:
        return getattr(module, attribute)
    except AttributeError:
        names = [n for n in dir(module) if not n.startswith("_")]
        close = difflib.get_close_matches(attribute, names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UserError(f"module {module_name!r} has no attribute {attribute!r}{hint}") from None


def _import_module(module_name: str, spec: str, near: Path) -> Any:
    top = module_name.split(".")[0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        root = _find_root(top, near)
        if exc.name not in (top, module_name) or root is None:
            raise UserError(f"cannot import {module_name!r} for {spec}: {exc}") from None
        sys.path.insert(0, str(root))
        try:
            module = importlib.import_module(module_name)
        except Exception as inner:
            raise UserError(
                f"cannot import {module_name!r} for {spec}: {type(inner).__name__}: {inner}"
            ) from None
    except Exception as exc:
        raise UserError(
            f"cannot import {module_name!r} for {spec}: {type(exc).__name__}: {exc}"
        ) from None
    return module


def _find_root(top: str, near: Path) -> Path | None:
    for parent in near.resolve().parents:
        if (parent / top / "__init__.py").is_file() or (parent / f"{top}.py").is_file():
            return parent
    return None
