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
"""

from __future__ import annotations

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
    "check",
    "load_document",
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
    loader = loader_class()(text)
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
