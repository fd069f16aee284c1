"""YAML with line numbers: every value of a document knows where it was written.

PyYAML's node API (``compose``) keeps a mark on every node; :func:`load_yaml` constructs the
plain data as ``yaml.safe_load`` would and returns, next to it, a :class:`Locator` that maps
a path such as ``("cases", 0, "expect", "args")`` to its line. Duplicate keys, which
``safe_load`` silently collapses, are reported as problems.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolproof.errors import ConfigError

__all__ = ["DocPath", "Locator", "Problems", "describe_type", "format_path", "load_yaml"]

#: A path into a document: mapping keys and sequence indexes.
DocPath = tuple[Any, ...]


@dataclass(slots=True)
class Locator:
    """Where each part of a YAML document was written.

    Attributes:
        file: The file the document came from.
        lines: 1-based line per path. For a mapping entry, the line of its key (where the
            eye looks for it); for a sequence item, the line where the item starts.
    """

    file: Path
    lines: dict[DocPath, int] = field(default_factory=dict)

    def line(self, path: DocPath) -> int:
        """The line of ``path``, or of its nearest located parent (1 for the document)."""
        probe = tuple(path)
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            probe = probe[:-1]
        return self.lines.get((), 1)

    def where(self, path: DocPath) -> str:
        """``file:line`` of ``path``."""
        return f"{self.file}:{self.line(path)}"


def format_path(path: Sequence[Any]) -> str:
    """A readable path such as ``cases[1].expect.args``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass(slots=True)
class Problems:
    """Problems found while checking a document, each with its file and line."""

    locator: Locator
    items: list[tuple[str, int, str]] = field(default_factory=list)

    def add(self, path: DocPath, message: str, *, line: int | None = None) -> None:
        """Record a problem at ``path``: ``message`` says what is wrong and what is allowed."""
        where = format_path(path)
        text = f"{where}: {message}" if where else message
        item = (str(self.locator.file), line or self.locator.line(path), text)
        if item not in self.items:  # shared entries (suite defaults) are reported once
            self.items.append(item)

    def extend(self, other: Problems) -> None:
        """Add every problem of ``other``."""
        self.items.extend(other.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def formatted(self) -> list[str]:
        """Every problem as ``file:line: message``, in file and line order."""
        ordered = sorted(self.items, key=lambda item: (item[0], item[1]))
        return [f"{file}:{line}: {message}" for file, line, message in ordered]


def load_yaml(text: str, file: Path) -> tuple[Any, Locator, list[str]]:
    """Parse one YAML document, remembering the line of every value.

    Args:
        text: The document.
        file: Its file, for messages.

    Returns:
        The data (as ``yaml.safe_load`` builds it), its locator, and problems found in the
        structure itself (duplicate keys), formatted as ``file:line: message``.

    Raises:
        ConfigError: The text is not valid YAML, holds several documents, or is beyond the
            limits of ``toolproof._yaml`` (aliases, depth, size).
    """
    import yaml

    from toolproof._yaml import load_document

    locator = Locator(file)
    try:
        # libyaml's parser (when installed) keeps the marks too, and is about ten times faster.
        data, node = load_document(text, file)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        reason = exc.problem or exc.context or "invalid YAML"
        message = f"{file}:{line}: invalid YAML: {reason}"
        raise ConfigError(message, [message]) from None
    except yaml.YAMLError as exc:
        message = f"{file}:1: invalid YAML: {exc}"
        raise ConfigError(message, [message]) from None
    problems: list[str] = []
    if node is not None:
        locator.lines[()] = node.start_mark.line + 1
        _walk(node, (), locator, problems)
    return data, locator, problems


def _walk(node: Any, path: DocPath, locator: Locator, problems: list[str]) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key: Any = key_node.value
            if key_node.tag == "tag:yaml.org,2002:int":
                with contextlib.suppress(ValueError):
                    key = int(key)
            line = key_node.start_mark.line + 1
            if key in seen:
                where = format_path((*path, key))
                problems.append(
                    f"{locator.file}:{line}: {where}: duplicate key {key!r} (first written at "
                    f"line {seen[key]}); YAML keeps only the last one, so remove one of them"
                )
            seen[key] = line
            child: DocPath = (*path, key)
            locator.lines[child] = line
            _walk(value_node, child, locator, problems)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            locator.lines[child] = item.start_mark.line + 1
            _walk(item, child, locator, problems)


def describe_type(value: Any) -> str:
    """How a problem message names the type of a YAML value ("a string", "a mapping"...)."""
    if value is None:
        return "null"
    return {
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        list: "a list",
        dict: "a mapping",
    }.get(type(value), type(value).__name__)
