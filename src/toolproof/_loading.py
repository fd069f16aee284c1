"""Import a user's module (dotted name, file path, or ``module:attr``) and find its tools.

Used by the CLI (``run``, ``schema``, ``mocks check``, ``replay``, ``chat``). Every failure is
a one-line ``UserError`` (the CLI prints it and exits 2).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from toolproof._tools import Tool
from toolproof._toolset import Toolset
from toolproof.errors import UserError

__all__ = ["collect_tools", "load_model_spec", "load_target", "tools_in"]


def load_target(spec: str) -> tuple[Any, str]:
    """Import ``spec`` and return the object it names and a label for messages.

    ``spec`` is a dotted module (``examples.hr_assistant.tools``), a file path
    (``examples/hr_assistant/tools.py``), either followed by ``:attr`` (``pkg.mod:TOOLS``).

    Raises:
        UserError: The module cannot be imported or has no such attribute.
    """
    module_part, _, attr = spec.partition(":")
    if len(module_part) == 1 and attr[:1] in ("\\", "/"):  # a Windows drive letter
        module_part, _, attr = spec[2:].partition(":")
        module_part = spec[:2] + module_part
    if not module_part:
        raise UserError(
            f"{spec!r} names no module: use a dotted module, a .py file, or module:attr"
        )
    module = _import(module_part)
    if not attr:
        return module, module_part
    value: Any = module
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise UserError(f"{module_part} has no attribute {attr!r}") from None
    return value, spec


def _import(name: str) -> ModuleType:
    path = Path(name)
    if name.endswith(".py") or path.is_file():
        return _import_file(path)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise UserError(
                f"cannot import {name!r}: no module named {exc.name!r} (run from the project "
                "root, or pass a file path such as path/to/tools.py)"
            ) from None
        raise UserError(f"cannot import {name!r}: {_describe(exc)}") from None
    except Exception as exc:
        raise UserError(f"cannot import {name!r}: {_describe(exc)}") from None


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise UserError(f"cannot import {str(path)!r}: no such file")
    resolved = path.resolve()
    dotted = _dotted_name(resolved)
    if dotted is not None:
        try:
            return importlib.import_module(dotted)
        except Exception as exc:
            raise UserError(f"cannot import {str(path)!r}: {_describe(exc)}") from None
    name = f"_toolproof_user_{abs(hash(str(resolved)))}"
    module_spec = importlib.util.spec_from_file_location(name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise UserError(f"cannot import {str(path)!r}: not a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    # As `python path/to/file.py` would: the file's folder is importable for its siblings.
    if str(resolved.parent) not in sys.path:
        sys.path.insert(0, str(resolved.parent))
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise UserError(f"cannot import {str(path)!r}: {_describe(exc)}") from None
    return module


def _dotted_name(path: Path) -> str | None:
    """The dotted name of a file inside packages reachable from ``sys.path``, if any."""
    parts = [path.stem] if path.name != "__init__.py" else []
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if not parts:
        return None
    roots = {Path(p or ".").resolve() for p in sys.path}
    if folder in roots and len(parts) > 1:
        return ".".join(parts)
    return None


def _describe(exc: BaseException) -> str:
    """One line: the error with every line of its message, and where the user's code failed."""
    from toolproof._tracebacks import user_location

    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} ({exc.filename}, line {exc.lineno})"
    lines = [line.strip().removeprefix("- ") for line in str(exc).strip().splitlines()]
    lines = [line for line in lines if line]
    text = type(exc).__name__
    if lines:
        head, rest = lines[0], lines[1:]
        joined = head + ((" " if head.endswith(":") else "; ") + "; ".join(rest) if rest else "")
        text = f"{text}: {joined}"
    where = user_location(exc)
    return f"{text} ({where})" if where else text


def tools_in(value: Any) -> list[Tool[..., Any]]:
    """The tools held by a Tool, Toolset, Agent, module or iterable of those (deduplicated)."""
    found: dict[int, Tool[..., Any]] = {}
    _gather(value, found, depth=0)
    return list(found.values())


def _gather(value: Any, found: dict[int, Tool[..., Any]], depth: int) -> None:
    from toolproof._agent import Runnable

    if isinstance(value, Tool):
        found.setdefault(id(value), value)
    elif isinstance(value, Toolset):
        for t in value:
            found.setdefault(id(t), t)
    elif isinstance(value, Runnable):
        _gather(value.toolset, found, depth)
    elif isinstance(value, ModuleType) and depth == 0:
        for item in list(vars(value).values()):
            _gather(item, found, depth + 1)
    elif isinstance(value, (list, tuple)) and depth <= 1:
        for item in value:
            _gather(item, found, depth + 1)


def collect_tools(specs: Iterable[str]) -> tuple[list[Tool[..., Any]], list[Any]]:
    """Import each spec; return the tools found (sorted by name) and the imported objects.

    Raises:
        UserError: A spec cannot be imported, holds no tools, or two different tools share a
            name.
    """
    tools: dict[str, Tool[..., Any]] = {}
    objects = []
    for spec in specs:
        value, label = load_target(spec)
        objects.append(value)
        found = tools_in(value)
        if not found and not isinstance(value, ModuleType):
            raise UserError(f"{label} is not a tool, a toolset, an agent or a list of tools")
        for t in found:
            other = tools.get(t.name)
            if other is not None and other is not t:
                raise UserError(f"two different tools are named {t.name!r} in {label}")
            tools[t.name] = t
    return [tools[name] for name in sorted(tools)], objects


def load_model_spec(spec: str, *, option: str = "--model", keywords: Iterable[str] = ()) -> Any:
    """What a ``--model`` option names: a keyword, a model string, a store, or ``MODULE:ATTR``.

    ``replay:STORE`` answers from the recorded traces of a trace store (a file or a
    ``postgresql://`` URL), as ``toolproof serve --mode replay`` does.

    ``MODULE:ATTR`` (a dotted module, or a ``.py`` file, with an attribute) names a
    :class:`~toolproof.models.Model` or a function returning one, and the model is returned.
    A keyword (such as ``scripted`` or ``recorded``) is returned lower-cased; a model string
    (``provider:model``) is checked (provider, options, API key) and returned as written.
    ``toolproof run`` and ``toolproof replay`` take the same specs through this function.

    Raises:
        UserError: Unknown provider, a missing key, or an import path that does not name a
            model (one line; :class:`~toolproof.errors.MissingAPIKey` for a key).
    """
    from toolproof.models import Model, model_from_string
    from toolproof.models._registry import PROVIDERS

    text = spec.strip()
    if text.lower() in {k.lower() for k in keywords}:
        return text.lower()
    if text.lower().startswith("replay:"):
        # Answers from recorded traces (what `toolproof serve --mode replay` serves): an
        # external agent's suite runs against its recordings, never a live model.
        from toolproof.server._replay import recorded_model_from_store

        location = text.partition(":")[2].strip()
        if not location:
            raise UserError(f"{option} {spec}: name the trace store, e.g. replay:traces.db")
        return recorded_model_from_store(location)
    module, sep, _ = text.partition(":")
    looks_imported = sep and module not in PROVIDERS and _importable(module)
    if looks_imported:
        target, label = load_target(text)
        if isinstance(target, Model):
            return target
        if callable(target) and not isinstance(target, type):
            try:
                made = target()
            except Exception as exc:
                raise UserError(f"{option} {spec}: {label}() raised {_describe(exc)}") from exc
            if isinstance(made, Model):
                return made
        if isinstance(target, type) and issubclass(target, Model):
            try:
                return target()
            except Exception as exc:
                raise UserError(f"{option} {spec}: {label}() raised {_describe(exc)}") from exc
        raise UserError(
            f"{option} {spec}: {label} is {type(target).__name__}, not a Model (nor a function "
            "returning one)"
        )
    try:
        model_from_string(text)  # checks the provider, the options and the key
    except UserError as exc:
        hint = ", or MODULE:ATTR naming a Model" if not sep or module not in PROVIDERS else ""
        if type(exc) is UserError:
            raise UserError(f"{option} {spec}: {exc}{hint}") from None
        raise
    return text


def _importable(module: str) -> bool:
    """Whether ``module`` is a .py file, a path, or a module that can be found."""
    if module.endswith(".py") or "/" in module or "\\" in module:
        return True
    if not module or not all(part.isidentifier() for part in module.split(".")):
        return False
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
