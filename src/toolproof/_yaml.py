"""The one YAML loader of every file toolproof reads, bounded against hostile documents.

Suites, fixture files, redaction rules and replay rules are all read here. Before PyYAML
builds anything, one pass over the document's events refuses, with a :class:`ConfigError`
that names the file and line:

- aliases that expand the document by more than :data:`MAX_ALIAS_NODES` values (a
  "billion laughs" file of a few hundred bytes would otherwise expand to a billion values),
  and aliases that refer to a value containing them (a recursive document);
- nesting deeper than :data:`MAX_DEPTH` levels (libyaml slows down quadratically and then
  crashes the interpreter on deep nesting; PyYAML's composer would hit ``RecursionError``);
- documents longer than :data:`MAX_CHARS` characters;
- integers written with more than :data:`MAX_INT_CHARS` characters (converting them costs
  time quadratic in their length).

Syntax errors stay ``yaml.YAMLError`` (``MarkedYAMLError`` with a line), so each reader
keeps its own wording for them. PyYAML is imported on first use.

:func:`load_yaml` also returns a :class:`Locator` that maps a path such as
``("cases", 0, "expect", "args")`` to the line where it was written (duplicate keys, which
``safe_load`` silently collapses, are reported as problems); :class:`Problems` collects
``file:line: message`` problems against it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from toolproof._text import clip
from toolproof.errors import ConfigError

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_CHARS",
    "MAX_DEPTH",
    "MAX_INT_CHARS",
    "DocPath",
    "Locator",
    "Problems",
    "check",
    "describe_type",
    "format_path",
    "load_document",
    "load_yaml",
    "loader_class",
    "safe_load",
]

#: Values that aliases may add to a document, all aliases together (an alias adds every value
#: of the node it refers to, nested aliases included).
MAX_ALIAS_NODES = 100_000
#: Levels of nested mappings and sequences.
MAX_DEPTH = 100
#: Characters of one document (32 MiB).
MAX_CHARS = 32 * 1024 * 1024
#: Characters of one integer scalar.
MAX_INT_CHARS = 1_000

_loader: type[Any] | None = None


def loader_class() -> type[Any]:
    """PyYAML's safe loader (libyaml's when installed), with integer sizes bounded.

    Use it only on text that :func:`check` accepted.
    """
    global _loader
    if _loader is None:
        import yaml

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class BoundedSafeLoader(base):  # type: ignore[misc, valid-type]
            """The safe loader, refusing integers too long to convert quickly."""

            def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
                # PyYAML's constructors raise bare ValueError, AttributeError... on values that
                # do not fit their explicit tag (`!!timestamp x`): name the value and line.
                try:
                    return super().construct_object(node, deep)
                except _UNREADABLE as exc:
                    raise _Refused(node.start_mark.line + 1, _unreadable(node, exc)) from None

        BoundedSafeLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
        _loader = BoundedSafeLoader
    return _loader


class _Refused(Exception):
    """A value beyond the limits, found while constructing (the file is not known there)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


_UNREADABLE = (ValueError, TypeError, AttributeError, OverflowError, KeyError, IndexError)


def _unreadable(node: yaml.Node, exc: BaseException) -> str:
    tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
    value = node.value if isinstance(node.value, str) else None
    what = f"the {tag} value {clip(value, 40)!r}" if value is not None else f"this {tag} value"
    return f"{what} cannot be read ({type(exc).__name__}); fix the value or remove the tag"


def _construct_int(loader: Any, node: yaml.ScalarNode) -> Any:
    import yaml

    value = loader.construct_scalar(node)
    if len(value) > MAX_INT_CHARS:
        raise _Refused(
            node.start_mark.line + 1,
            f"an integer longer than {MAX_INT_CHARS:,} characters; quote it to keep it as text",
        )
    return yaml.SafeLoader.construct_yaml_int(loader, node)


def check(text: str, source: str | Path) -> None:
    """Refuse a document whose aliases, depth or size are beyond the limits.

    Runs in time linear in the document (it stops at the first excess).

    Args:
        text: The YAML text.
        source: The file, for messages.

    Raises:
        ConfigError: A limit is exceeded; the message is ``file:line: what to change``.
        yaml.YAMLError: The text is not valid YAML.
    """
    import yaml

    if len(text) > MAX_CHARS:
        _refuse(
            source,
            1,
            f"the file has {len(text):,} characters, more than the {MAX_CHARS // 2**20} MiB a "
            "YAML file may have; split it into smaller files",
        )
    try:
        _check_events(loader_class(), text, source, yaml)
    except yaml.YAMLError:
        # libyaml has limits of its own (0.2.5 stops at ~1,000 nesting levels with a message
        # and no line of ours): walk again with PyYAML's pure-Python parser, which has none,
        # so a document beyond toolproof's limits always gets toolproof's message.
        if hasattr(yaml, "CSafeLoader"):
            with contextlib.suppress(yaml.YAMLError):
                _check_events(yaml.SafeLoader, text, source, yaml)
        raise


def _check_events(loader_type: type[Any], text: str, source: str | Path, yaml: Any) -> None:
    loader = loader_type(text)
    try:
        _walk_events(loader, source, yaml)
    finally:
        loader.dispose()


def _walk_events(loader: Any, source: str | Path, yaml: Any) -> None:
    sizes: dict[str, int] = {}  # values under each anchor, aliases expanded
    stack: list[list[Any]] = []  # open collections: [values so far, anchor]
    added = 0
    while loader.check_event():
        event = loader.get_event()
        if isinstance(event, yaml.CollectionStartEvent):
            stack.append([1, event.anchor])
            if len(stack) > MAX_DEPTH:
                _refuse(
                    source,
                    event.start_mark.line + 1,
                    f"the document nests more than {MAX_DEPTH} levels deep; flatten it",
                )
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            size, anchor = stack.pop()
        elif isinstance(event, yaml.ScalarEvent):
            size, anchor = 1, event.anchor
        elif isinstance(event, yaml.AliasEvent):
            anchor = None
            if any(frame[1] == event.anchor for frame in stack):
                _refuse(
                    source,
                    event.start_mark.line + 1,
                    f"the alias *{event.anchor} refers to a value that contains it; recursive "
                    "aliases are not supported",
                )
            size = sizes.get(event.anchor, 0)  # an unknown anchor is the composer's error
            added += size
            if added > MAX_ALIAS_NODES:
                _refuse(
                    source,
                    event.start_mark.line + 1,
                    f"the aliases expand the document by more than {MAX_ALIAS_NODES:,} values "
                    "(nested aliases multiply); write the repeated parts out or nest fewer "
                    "aliases",
                )
        else:
            continue
        if anchor is not None:
            sizes[anchor] = size
        if stack:
            stack[-1][0] += size


def _refuse(source: str | Path, line: int, message: str) -> NoReturn:
    text = f"{source}:{line}: {message}"
    raise ConfigError(text, [text])


def load_document(text: str, source: str | Path) -> tuple[Any, yaml.Node | None]:
    """One document's data (as ``yaml.safe_load`` builds it) and its node tree (with marks).

    Raises:
        ConfigError: A limit is exceeded (the message names the file and line).
        yaml.YAMLError: The text is not valid YAML, or holds several documents.
    """
    check(text, source)
    loader = loader_class()(text)
    node: yaml.Node | None = None
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except _Refused as exc:
        _refuse(source, exc.line, exc.message)
    except _UNREADABLE as exc:  # raised by a collection's constructor after its first pass
        line = node.start_mark.line + 1 if node is not None else 1
        _refuse(
            source, line, f"a value cannot be read ({type(exc).__name__}: {clip(str(exc), 80)})"
        )
    finally:
        loader.dispose()
    return data, node


def safe_load(text: str, source: str | Path) -> Any:
    """``yaml.safe_load`` of one document, within the limits.

    Raises:
        ConfigError: A limit is exceeded (the message names the file and line).
        yaml.YAMLError: The text is not valid YAML, or holds several documents.
    """
    return load_document(text, source)[0]


def load_file(path: Path, what: str) -> Any:
    """:func:`safe_load` of the file at ``path``, a file of ``what`` (``"replay rules"``).

    Raises:
        ConfigError: The file cannot be read, is not valid YAML or exceeds a limit.
    """
    import yaml

    try:
        return safe_load(path.read_text(encoding="utf-8"), path)
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML ({exc})") from exc


# -- positions: every value of a document knows its line ---------------------------------------

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
