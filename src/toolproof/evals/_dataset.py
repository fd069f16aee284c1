"""Dataset-driven cases: each row of a JSONL or CSV file becomes a case through a template.

A suite's top-level ``datasets:`` lists files with a case template::

    datasets:
      - file: questions.jsonl          # or .csv (relative to the suite file)
        template:
          name: "q-{id}"
          input: "{question}"
          tags: "{tags}"
          expect:
            retrieval: {tool: search_knowledge_base, relevant: "{relevant_ids}", k: 5}
            final_contains: "{reference}"

Templating: ``{column}`` in a string is replaced by the row's value; a string that is only
``{column}`` takes the value as it is (a list stays a list), so ``relevant: "{relevant_ids}"``
gets the row's list. ``{{`` and ``}}`` write braces. Without ``name`` in the template a case is
named after the row's ``id`` column (else ``<file stem>-<row number>``).

JSONL: one JSON object per line (blank lines skipped). CSV: a header row names the columns;
a cell that starts with ``[`` or ``{`` is read as JSON (``["doc-3", "doc-7"]``), any other
cell is text. Files are bounded (:data:`MAX_BYTES`, :data:`MAX_ROWS`, :data:`MAX_CELL`);
every problem names the file and the row (and the column or key).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolproof import _yaml as _yaml_bounds
from toolproof.evals._suite_model import DATASET_KEYS, DatasetEntry
from toolproof.evals._yaml import DocPath, Locator, Problems
from toolproof.evals._yaml import describe_type as _type

if TYPE_CHECKING:
    from toolproof.evals._cases import Case

__all__ = ["DATASET_KEYS", "MAX_BYTES", "MAX_ROWS", "dataset_cases", "expand", "read_rows"]

#: The largest dataset file read (bytes).
MAX_BYTES = 64 * 1024 * 1024
#: The most rows of one dataset.
MAX_ROWS = 100_000
#: The longest line of a JSONL file, or cell of a CSV file (characters).
MAX_CELL = 1024 * 1024
#: The longest integer in a row (digits), as in every YAML file toolproof reads.
MAX_INT_CHARS = _yaml_bounds.MAX_INT_CHARS
#: Problems reported per dataset before the rest are counted.
MAX_PROBLEMS = 20

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][\w-]*)\}|[{}]")


class DatasetError(ValueError):
    """A dataset file cannot be read; the message names the file and the row."""


def read_rows(file: Path) -> list[tuple[int, dict[str, Any]]]:
    """The rows of a JSONL or CSV file with their line numbers.

    Raises:
        DatasetError: The file is missing, not a regular file, too large, not UTF-8, or a
            row is malformed or holds a value that cannot be kept (an integer over
            :data:`MAX_INT_CHARS` digits, a lone surrogate).
    """
    suffix = file.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        raise DatasetError(f"{file}: a dataset is a .jsonl or .csv file")
    data = _read_bytes(file)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{file}: not UTF-8 text (byte {exc.start})") from None
    rows = _jsonl(file, text) if suffix == ".jsonl" else _csv(file, text)
    if not rows:
        raise DatasetError(f"{file}: the dataset has no rows")
    return rows


def _read_bytes(file: Path) -> bytes:
    """The file's bytes, at most :data:`MAX_BYTES`; only a regular file is opened for reading.

    The file is opened without waiting (a named pipe with no writer would block) and checked
    on the open descriptor, so it cannot be swapped between the check and the read; the
    read stops past the limit whatever size the file claims.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(file, flags)
    except OSError as exc:
        raise DatasetError(f"{file}: cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
            raise DatasetError(f"{file}: {kind}; a dataset is a regular .jsonl or .csv file")
        if info.st_size > MAX_BYTES:
            raise _over_limit(file, f"{info.st_size} bytes")
        with open(descriptor, "rb", closefd=False) as stream:
            data = stream.read(MAX_BYTES + 1)
    except OSError as exc:
        raise DatasetError(f"{file}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(descriptor)
    if len(data) > MAX_BYTES:
        raise _over_limit(file, "the file")
    return data


def _over_limit(file: Path, size: str) -> DatasetError:
    return DatasetError(
        f"{file}: {size} is over the limit of {MAX_BYTES} bytes for a dataset; "
        "split it into several files"
    )


_KINDS = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def _too_many(file: Path) -> DatasetError:
    return DatasetError(f"{file}: more than {MAX_ROWS} rows; split it into several files")


def _jsonl(file: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if len(line) > MAX_CELL:
            raise DatasetError(f"{file}:{number}: the line is over {MAX_CELL} characters")
        try:
            value = _json(line, f"{file}:{number}: ")
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"{file}:{number}: invalid JSON at column {exc.colno}: {exc.msg}"
            ) from None
        if not isinstance(value, dict):
            raise DatasetError(f"{file}:{number}: a row is a JSON object, got {_type(value)}")
        rows.append((number, value))
        if len(rows) > MAX_ROWS:
            raise _too_many(file)
    return rows


def _csv(file: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[tuple[int, dict[str, Any]]] = []
    header: list[str] | None = None
    old = csv.field_size_limit(MAX_CELL)
    try:
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise DatasetError(f"{file}:{reader.line_num}: malformed CSV: {exc}") from None
            number = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if header is None:
                header = [c.strip() for c in cells]
                blank = [i + 1 for i, c in enumerate(header) if not c]
                if blank:
                    raise DatasetError(f"{file}:{number}: header column {blank[0]} has no name")
                if len(set(header)) != len(header):
                    twice = sorted({c for c in header if header.count(c) > 1})
                    raise DatasetError(f"{file}:{number}: header repeats {', '.join(twice)}")
                continue
            if len(cells) != len(header):
                raise DatasetError(
                    f"{file}:{number}: {len(cells)} cells, the header has {len(header)} columns"
                )
            row: dict[str, Any] = {}
            for column, cell in zip(header, cells, strict=True):
                row[column] = _cell(file, number, column, cell)
            rows.append((number, row))
            if len(rows) > MAX_ROWS:
                raise _too_many(file)
    finally:
        csv.field_size_limit(old)
    return rows


def _cell(file: Path, number: int, column: str, cell: str) -> Any:
    stripped = cell.strip()
    if stripped[:1] not in ("[", "{"):
        return cell
    try:
        return _json(stripped, f"{file}:{number}: column {column!r}: ")
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{file}:{number}: column {column!r}: a cell starting with {stripped[0]!r} is read "
            f"as JSON, and this one is invalid ({exc.msg}); quote it differently or fix it"
        ) from None


def _json(text: str, where: str) -> Any:
    """One JSON value of a row, refusing what no report could keep (``where`` starts messages).

    Raises:
        json.JSONDecodeError: Invalid JSON (each caller words it).
        DatasetError: Nesting too deep, an integer over :data:`MAX_INT_CHARS` digits, or a
            lone surrogate (an unpaired UTF-16 escape), which no report can write.
    """
    try:
        value = json.loads(text, parse_int=_int)
    except RecursionError:
        raise DatasetError(f"{where}JSON nested too deep") from None
    except _LongInteger as exc:
        raise DatasetError(
            f"{where}an integer of {exc.args[0]} digits; at most {MAX_INT_CHARS} are read "
            "(quote it to keep it as text)"
        ) from None
    if "\\u" in text:  # only an escape can put a lone surrogate in text decoded from UTF-8
        found = _lone_surrogate(value)
        if found is not None:
            raise DatasetError(
                f"{where}{found} holds a lone surrogate (an unpaired UTF-16 escape such as "
                "\\ud800), which no report can write; fix the text"
            )
    return value


class _LongInteger(ValueError):
    """An integer longer than :data:`MAX_INT_CHARS` in a row (its length in ``args``)."""


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_CHARS:
        raise _LongInteger(len(text.lstrip("-")))
    return int(text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(value: Any) -> str | None:
    """Where a value holds a lone surrogate (``'id'``, ``'tags[2]'``, ``a key``), or ``None``."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return repr(where) if where else "the value"
        elif isinstance(item, dict):
            for key, inner in item.items():
                if _SURROGATE.search(key):
                    return f"a key of {where!r}" if where else "a key"
                stack.append((f"{where}.{key}" if where else key, inner))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", inner) for i, inner in enumerate(item))
    return None


def expand(template: Any, row: Mapping[str, Any], where: str = "template") -> Any:
    """Fill a template's ``{column}`` placeholders from ``row``.

    Raises:
        KeyError: A placeholder names a column the row does not have (the message says which
            and where in the template).
    """
    if isinstance(template, str):
        whole = re.fullmatch(r"\{([A-Za-z_][\w-]*)\}", template)
        if whole is not None:
            return _value(row, whole.group(1), where)

        def fill(m: re.Match[str]) -> str:
            token = m.group(0)
            if token in ("{{", "}}"):
                return token[0]
            if m.group(1) is None:
                return token
            value = _value(row, m.group(1), where)
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

        return _PLACEHOLDER.sub(fill, template)
    if isinstance(template, list):
        return [expand(item, row, f"{where}[{i}]") for i, item in enumerate(template)]
    if isinstance(template, Mapping):
        return {key: expand(value, row, f"{where}.{key}") for key, value in template.items()}
    return template


def _value(row: Mapping[str, Any], column: str, where: str) -> Any:
    if column not in row:
        known = ", ".join(sorted(map(str, row))) or "(none)"
        raise KeyError(f"{where}: no column {column!r} in the row (columns: {known})")
    return row[column]


def dataset_cases(builder: Any, specs: list[DatasetEntry], suite: Any) -> list[Case]:
    """The cases of a suite's ``datasets:`` (problems go to ``builder.problems``).

    Args:
        builder: The suite's builder (``toolproof.evals._suite.Builder``).
        specs: The entries of ``datasets:``, validated.
        suite: What every case of the suite starts from (``builder.case`` takes it).
    """
    cases: list[Case] = []
    for position, spec in enumerate(specs):
        cases.extend(_one(builder, spec, ("datasets", position), suite))
    return cases


def _one(builder: Any, spec: DatasetEntry, path: DocPath, suite: Any) -> list[Case]:
    file = Path(spec.file)
    if not file.is_absolute():
        file = builder.file.parent / file
    try:
        rows = read_rows(file)
    except DatasetError as exc:
        builder.add((*path, "file"), str(exc))
        return []
    cases: list[Case] = []
    repeated: dict[str, int] = {}

    def report(where: str, message: str) -> None:
        repeated[message] = repeated.get(message, 0) + 1
        if repeated[message] == 1 and len(repeated) <= MAX_PROBLEMS:
            builder.add((*path, "template"), f"{where}: {message}")

    for index, (line, row) in enumerate(rows):
        where = f"{file}:{line}: row {index + 1}"
        try:
            mapping = expand(dict(spec.template), row)
        except KeyError as exc:
            report(where, str(exc.args[0]))
            continue
        if "name" not in mapping:
            default = row.get("id")
            mapping["name"] = str(default) if default is not None else f"{file.stem}-{index + 1}"
        sub = type(builder)(
            builder.file, Locator(builder.file), Problems(builder.locator), builder.resolver
        )
        sub.suite_checks = builder.suite_checks
        sub.inherited = builder.inherited  # the suite's settings, checked once for all rows
        case = sub.case(mapping, index, suite)
        builder.inherited = builder.inherited or sub.inherited
        for _, _, text in sub.problems.items:
            report(where, text.removeprefix(f"cases[{index}]").removeprefix(".").removeprefix(": "))
        if case is not None and not sub.problems:
            case.line = builder.locator.line(path)
            case.description = case.description or f"{file.name} row {index + 1} (line {line})"
            cases.append(case)
    more = sum(repeated.values()) - min(len(repeated), MAX_PROBLEMS)
    if more > 0:
        builder.add((*path, "template"), f"{file}: and {more} more problems in its rows")
    return cases
