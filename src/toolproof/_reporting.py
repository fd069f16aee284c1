"""Format-independent report primitives shared by ``toolproof run`` and ``toolproof replay``.

Each command builds its own report content; this module only knows the formats:

- ``--report FORMAT:PATH`` parsing (:func:`parse_report_specs`), with ``-`` meaning stdout;
- JUnit XML (:class:`JUnitSuite`, :class:`JUnitCase`, :func:`write_junit`) as CI systems
  (GitHub, GitLab, Jenkins) read it;
- Markdown for pull-request comments and ``$GITHUB_STEP_SUMMARY`` (:func:`md_table`,
  :func:`md_escape`, :func:`md_details`, :func:`md_truncate`);
- :func:`open_output`, the one way toolproof writes a file the user names: atomically for
  a regular file, in place for a device or a FIFO, ``-`` for stdout;
- transcripts of agent runs (:func:`transcript_lines`, :func:`transcript_text`,
  :func:`transcript_rich`): what the model said, which tools it called with which arguments
  and call ids, what they returned, and why the run stopped, built from traces in their JSON
  form and clipped so a report stays small. Every string in a trace is untrusted (model
  output, tool results): the console form escapes rich markup, the XML library escapes JUnit
  text, and Markdown puts it HTML-escaped in ``<pre>``.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from toolproof._text import clip, cut
from toolproof.errors import ConfigError, UserError

if TYPE_CHECKING:
    from rich.text import Text

__all__ = [
    "GITHUB_COMMENT_LIMIT",
    "REPORT_FORMATS",
    "JUnitCase",
    "JUnitSuite",
    "ReportSpec",
    "check_output",
    "junit_xml",
    "md_code",
    "md_details",
    "md_escape",
    "md_pre",
    "md_table",
    "md_truncate",
    "open_output",
    "parse_report_specs",
    "printable",
    "transcript_lines",
    "transcript_rich",
    "transcript_text",
    "utf8",
    "write_junit",
]

#: The report formats ``toolproof run`` writes.
REPORT_FORMATS: tuple[str, ...] = ("json", "junit", "markdown", "html")

#: Other spellings accepted for a format.
_ALIASES = {"md": "markdown", "xml": "junit", "junit-xml": "junit", "htm": "html"}

#: GitHub rejects issue and pull-request comments longer than this (characters).
GITHUB_COMMENT_LIMIT = 65536


@dataclass(frozen=True, slots=True)
class ReportSpec:
    """One ``--report FORMAT:PATH`` request.

    Attributes:
        format: The canonical format name (``"json"``, ``"junit"``, ``"markdown"``).
        path: Where to write it; ``"-"`` is standard output.
    """

    format: str
    path: str = "-"

    @property
    def to_stdout(self) -> bool:
        """Whether the report goes to standard output."""
        return self.path == "-"


def parse_report_specs(
    specs: Sequence[str], *, formats: Sequence[str] = REPORT_FORMATS
) -> list[ReportSpec]:
    """Parse ``--report`` values such as ``"junit:out.xml"`` or ``"markdown:-"``.

    ``FORMAT`` alone writes to standard output. Only the first ``:`` separates the format
    from the path, so Windows paths (``junit:C:/out.xml``) work.

    Args:
        specs: The values given on the command line.
        formats: The formats the command supports.

    Returns:
        One spec per value, in order.

    Raises:
        ConfigError: A value names an unknown format, or two reports go to standard output;
            ``problems`` lists every bad value.
    """
    out: list[ReportSpec] = []
    problems: list[str] = []
    valid = ", ".join(formats)
    for raw in specs:
        name, sep, path = raw.partition(":")
        name = _ALIASES.get(name.strip().lower(), name.strip().lower())
        if name not in formats:
            problems.append(
                f"--report {raw!r}: unknown format {name!r}; use FORMAT:PATH with FORMAT one of "
                f"{valid} (PATH '-' or omitted means stdout)"
            )
            continue
        path = path.strip() if sep else "-"
        out.append(ReportSpec(name, path or "-"))
    if sum(1 for spec in out if spec.to_stdout) > 1:
        problems.append("--report: only one report can go to stdout ('-'); give the others a path")
    if problems:
        message = problems[0] if len(problems) == 1 else "invalid --report values"
        raise ConfigError(message, problems)
    return out


def check_output(path: str | os.PathLike[str]) -> tuple[Path, int | None]:
    """Where :func:`open_output` would write ``path``, checked before anything runs.

    Returns the file to replace and its mode for a regular file (or a new one: mode
    ``None``; its folder is created), and ``(path, -1)`` for a device, a FIFO or a socket,
    which are written in place.

    Raises:
        UserError: ``path`` is a folder, a read-only file, or its folder cannot be created.
    """
    try:
        status = os.stat(path)
    except FileNotFoundError:
        status = None
    except OSError as exc:
        raise _unwritable(path, exc) from None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise UserError(f"cannot write {path}: it is a folder; give a file name")
    if status is not None and not stat.S_ISREG(status.st_mode):
        return Path(path), -1
    target = Path(os.path.realpath(path))  # a link's target is replaced, the link kept
    if status is not None and not os.access(target, os.W_OK):
        raise UserError(f"cannot write {path}: the file is read-only")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    if not os.access(target.parent, os.W_OK):
        raise UserError(f"cannot write {path}: the folder {target.parent} is not writable")
    return target, None if status is None else stat.S_IMODE(status.st_mode)


@contextlib.contextmanager
def open_output(path: str | os.PathLike[str], *, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """Open a file toolproof writes for the user (a report, an export, a run log, a schema).

    ``"-"`` is standard output. A regular file (or a new one) is written to a temporary
    sibling and renamed into place when the block ends without an error, so readers never
    see half a file; it keeps the mode of the file it replaces (a new one gets ``0666``
    less the umask), and a symbolic link is followed, never replaced. Anything else (a
    character device such as ``/dev/null``, a FIFO, a socket) is written in place, never
    replaced by a regular file. Parent folders are created.

    Raises:
        UserError: ``path`` is a folder, a read-only file, or cannot be written; also when
            writing fails inside the block (a full disk, a file-size limit). The message
            names the path and the reason.
    """
    if str(path) == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    target, mode = check_output(path)
    if mode == -1:
        try:
            handle = open(  # noqa: SIM115
                target, "w", encoding=encoding, errors="backslashreplace", newline="\n"
            )
        except OSError as exc:
            raise _unwritable(path, exc) from None
        try:
            with handle:
                yield handle
        except OSError as exc:
            raise _unwritable(path, exc) from None
        return
    temp = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    try:
        with os.fdopen(
            fd, "w", encoding=encoding, errors="backslashreplace", newline="\n"
        ) as handle:
            yield handle
        if mode is not None:
            os.chmod(temp, mode)  # (the umask may have taken bits the old file had)
        os.replace(temp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(exc, OSError):
            raise _unwritable(path, exc) from None
        raise


def utf8(text: str) -> bytes:
    r"""``text`` as UTF-8, a lone surrogate written as its JSON escape (``\ud800``).

    Text in reports comes from datasets, models and tools; a lone surrogate cannot be
    UTF-8, and inside a JSON string its escape reads back as the same text.
    """
    return text.encode("utf-8", "backslashreplace")


def _unwritable(path: str | os.PathLike[str], exc: OSError) -> UserError:
    return UserError(f"cannot write {path}: {exc.strerror or exc}")


# -- JUnit XML --------------------------------------------------------------------------------


@dataclass(slots=True)
class JUnitCase:
    """One ``<testcase>``.

    Attributes:
        name: The test's name.
        classname: The group CI systems show it under (suite or file).
        time_s: Duration in seconds.
        failure: Set when the test failed: the failure text (first line is the message).
        error: Set when the test could not produce a verdict (infrastructure errors).
        skipped: Set when the test was skipped: the reason.
        system_out: Extra output shown with the test (details, traces summaries).
        properties: ``<property name value>`` entries (figures such as an interval).
    """

    name: str
    classname: str
    time_s: float = 0.0
    failure: str | None = None
    error: str | None = None
    skipped: str | None = None
    system_out: str | None = None
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class JUnitSuite:
    """One ``<testsuite>`` of :class:`JUnitCase`."""

    name: str
    cases: list[JUnitCase] = field(default_factory=list)
    timestamp: str | None = None
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def time_s(self) -> float:
        """The sum of the cases' durations."""
        return sum(case.time_s for case in self.cases)


def junit_xml(suites: Sequence[JUnitSuite]) -> str:
    """Render suites as a JUnit XML document (the de-facto schema Jenkins and GitHub read)."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    for suite in suites:
        counts = {
            "tests": len(suite.cases),
            "failures": sum(1 for c in suite.cases if c.failure is not None),
            "errors": sum(1 for c in suite.cases if c.error is not None),
            "skipped": sum(1 for c in suite.cases if c.skipped is not None),
        }
        for key, value in counts.items():
            totals[key] += value
        total_time += suite.time_s
        attrs = {"name": _xml_text(suite.name), **{k: str(v) for k, v in counts.items()}}
        attrs["time"] = f"{suite.time_s:.3f}"
        if suite.timestamp:
            attrs["timestamp"] = _xml_text(suite.timestamp)
        element = ET.SubElement(root, "testsuite", attrs)
        _junit_properties(element, suite.properties)
        for case in suite.cases:
            item = ET.SubElement(
                element,
                "testcase",
                {
                    "name": _xml_text(case.name),
                    "classname": _xml_text(case.classname),
                    "time": f"{case.time_s:.3f}",
                },
            )
            _junit_properties(item, case.properties)
            for tag, text in (
                ("failure", case.failure),
                ("error", case.error),
                ("skipped", case.skipped),
            ):
                if text is not None:
                    child = ET.SubElement(item, tag, {"message": _xml_text(_first_line(text))})
                    if tag != "skipped":
                        child.text = _xml_text(text)
            if case.system_out:
                ET.SubElement(item, "system-out").text = _xml_text(case.system_out)
    root.set("tests", str(totals["tests"]))
    root.set("failures", str(totals["failures"]))
    root.set("errors", str(totals["errors"]))
    root.set("skipped", str(totals["skipped"]))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    body: str = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


def _junit_properties(element: Any, properties: Mapping[str, str]) -> None:
    import xml.etree.ElementTree as ET

    if properties:
        holder = ET.SubElement(element, "properties")
        for name, value in properties.items():
            ET.SubElement(holder, "property", {"name": _xml_text(name), "value": _xml_text(value)})


def write_junit(path: str | os.PathLike[str], suites: Sequence[JUnitSuite]) -> None:
    """Write suites as JUnit XML to ``path`` (``"-"`` for stdout)."""
    with open_output(path) as out:
        out.write(junit_xml(suites))


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return cut(line, limit)


def _xml_text(text: str) -> str:
    # XML 1.0 cannot carry most control characters, even escaped: drop them. Lone
    # surrogates cannot be written as UTF-8 at all: drop them too.
    return "".join(
        ch
        for ch in text
        if ch in "\t\n\r"
        or (ord(ch) >= 0x20 and ord(ch) not in (0xFFFE, 0xFFFF) and not 0xD800 <= ord(ch) < 0xE000)
    )


# -- Markdown ---------------------------------------------------------------------------------

_MD_SPECIAL = str.maketrans(
    {
        "\\": "\\\\",
        "|": "\\|",
        "`": "\\`",
        "*": "\\*",
        "_": "\\_",
        "~": "\\~",
        "[": "\\[",
        "]": "\\]",
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
    }
)


def md_escape(text: str, *, limit: int | None = None) -> str:
    """Escape text for a Markdown table cell or a line of prose.

    Newlines become spaces (a cell is one line), Markdown and HTML specials are escaped
    (the text renders as written: no formatting, link, entity or HTML of its own), and the
    text is cut to ``limit`` characters with an ellipsis when it is longer.
    """
    flat = " ".join(str(text).split())
    return (flat if limit is None else cut(flat, limit)).translate(_MD_SPECIAL)


def md_code(text: str) -> str:
    """Inline code, safe in a table cell: the text shows as written.

    A fence longer than any run of backticks in the text is used. A text with ``|`` is
    escaped as plain text instead: renderers disagree on a backslash before a pipe inside
    code in a table, and a pipe there would end the cell.
    """
    flat = " ".join(str(text).split())
    if not flat or "|" in flat:
        return md_escape(flat)
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {flat} {fence}" if longest else f"{fence}{flat}{fence}"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table. Cells are used as given: escape them first."""
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join(" --- " for _ in headers) + "|",
    ]
    for row in rows:
        cells = list(row) + [""] * (len(headers) - len(row))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def md_details(summary: str, body: str) -> str:
    """A collapsible ``<details>`` block (GitHub renders the Markdown inside it).

    ``summary`` is plain text (HTML-escaped here: it sits inside raw HTML); ``body`` is
    Markdown, used as given.
    """
    import html

    title = html.escape(" ".join(str(summary).split()), quote=False)
    return f"<details><summary>{title}</summary>\n\n{body}\n\n</details>"


def md_truncate(text: str, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """Cut a Markdown document to ``limit`` characters at a line boundary, saying so."""
    if len(text) <= limit:
        return text
    note = "\n\n… report truncated to fit a GitHub comment; see the full report artifact.\n"
    cut = text.rfind("\n", 0, limit - len(note))
    return text[: cut if cut > 0 else limit - len(note)] + note


def md_pre(text: str) -> str:
    """Untrusted text as a ``<pre>`` block: HTML-escaped, so it shows literally on GitHub."""
    import html

    return "<pre>\n" + html.escape(text, quote=False) + "\n</pre>"


# -- transcripts ------------------------------------------------------------------------------

#: Longest text shown for one message, argument list or tool result in a transcript.
TRANSCRIPT_TEXT_LIMIT = 500
#: Most lines of one transcript; the rest is counted.
TRANSCRIPT_LINE_LIMIT = 120

_STYLES = {
    "turn": "bold",
    "user": "cyan",
    "assistant": "",
    "call": "magenta",
    "ok": "green",
    "error": "red",
    "stop": "yellow",
    "note": "dim",
}


#: Control characters (C0, DEL, C1) shown as ``\xNN`` in transcripts: a model's output must
#: not send escape sequences (colours, hyperlinks, cursor moves) to the reader's terminal.
_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))}
for _space in "\t\n\r":
    del _CONTROLS[ord(_space)]  # whitespace: folded to one space by clip()


def printable(text: str) -> str:
    r"""``text`` with control characters shown as ``\xNN`` (whitespace kept)."""
    return text.translate(_CONTROLS)


def _text(value: Any, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        import json

        value = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return clip(value.translate(_CONTROLS), limit)


def transcript_lines(
    traces: Sequence[Any],
    *,
    text_limit: int = TRANSCRIPT_TEXT_LIMIT,
    line_limit: int = TRANSCRIPT_LINE_LIMIT,
) -> list[tuple[str, str]]:
    """The transcript of one trial (one trace per turn) as ``(kind, line)`` pairs.

    ``kind`` is one of ``turn``, ``user``, ``assistant``, ``call``, ``ok``, ``error``,
    ``stop`` and ``note`` (for styling). Each text is clipped to ``text_limit`` characters
    and the transcript to ``line_limit`` lines. Malformed trace data is shown as it is, never
    raised on.
    """
    out: list[tuple[str, str]] = []
    for number, trace in enumerate(traces, 1):
        if not isinstance(trace, dict):
            continue
        turn = f"turn {number}" if len(traces) > 1 else "run"
        out.append(("turn", f"{turn} (trace {_text(trace.get('id'), 40)})"))
        out.append(("user", f"user: {_text(trace.get('input'), text_limit)}"))
        steps = trace.get("steps")
        said: Any = None
        for step in steps if isinstance(steps, list) else []:
            if isinstance(step, dict):
                said = _step_lines(step, text_limit, out)
        _ending_lines(trace, said, text_limit, out)
    if len(out) > line_limit:
        hidden = len(out) - line_limit + 1
        out = [*out[: line_limit - 1], ("note", f"… {hidden} more lines (see the JSON report)")]
    return out


def _step_lines(step: dict[str, Any], text_limit: int, out: list[tuple[str, str]]) -> Any:
    """Add the lines of one step (what the model said, its calls, their results) to ``out``.

    Returns:
        What the model said in the step.
    """
    response = step.get("response")
    response = response if isinstance(response, dict) else {}
    content = response.get("content")
    if content:
        out.append(("assistant", f"assistant: {_text(content, text_limit)}"))
    calls = response.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        raw = call.get("raw_arguments")
        arguments = call.get("arguments") if raw is None else raw
        line = (
            f"call {_text(call.get('name'), 80)} [{_text(call.get('id'), 60)}] "
            f"{_text(arguments, text_limit)}"
        )
        out.append(("call", line))
        if call.get("arguments_error"):
            out.append(("error", f"  bad arguments: {_text(call['arguments_error'], text_limit)}"))
    for error in step.get("parse_errors") or []:
        out.append(("error", f"unparsable tool call: {_text(error, text_limit)}"))
    results = step.get("tool_results")
    for result in results if isinstance(results, list) else []:
        if not isinstance(result, dict):
            continue
        status = _text(result.get("status"), 20) or "?"
        kind = "ok" if status == "ok" else "error"
        what = status
        if result.get("error_type"):
            what += f" ({_text(result.get('error_type'), 80)})"
        if result.get("mocked"):
            what += ", mocked"
        out.append(
            (
                kind,
                f"result {_text(result.get('name'), 80)} "
                f"[{_text(result.get('call_id'), 60)}] {what}: "
                f"{_text(result.get('content'), text_limit)}",
            )
        )
    return content


def _ending_lines(
    trace: dict[str, Any], said: Any, text_limit: int, out: list[tuple[str, str]]
) -> None:
    """Add how the run ended to ``out``: its stop reason, its error, and its answer.

    The answer is shown when it is not what the model said in the last step (``said``).
    """
    stop = _text(trace.get("stop_reason"), 40) or "?"
    detail = trace.get("stop_detail")
    error = trace.get("error")
    if isinstance(error, dict) and detail == error.get("message"):
        detail = None  # the error line below says it
    line = f"stop: {stop}" + (f": {_text(detail, text_limit)}" if detail else "")
    out.append(("stop" if stop != "final" else "note", line))
    if isinstance(error, dict):
        tool = f" (tool {_text(error.get('tool_name'), 80)})" if error.get("tool_name") else ""
        out.append(
            (
                "error",
                f"error: {_text(error.get('type'), 80)}: "
                f"{_text(error.get('message'), text_limit)}{tool}",
            )
        )
    if trace.get("output") is not None and trace.get("output") != said:
        out.append(("assistant", f"answer: {_text(trace.get('output'), text_limit)}"))


def transcript_text(traces: Sequence[Any], *, indent: str = "", **limits: int) -> str:
    """The transcript as plain text (for JUnit and Markdown), one line per entry."""
    return "\n".join(
        f"{indent}{'' if kind == 'turn' else '  '}{line}"
        for kind, line in transcript_lines(traces, **limits)
    )


def transcript_rich(traces: Sequence[Any], *, indent: str = "", **limits: int) -> Text:
    """The transcript as a rich ``Text``: styled, and every string shown literally.

    ``Text`` never parses markup, so model output such as ``[red]x[/]`` or ``[link=...]``
    prints as written.
    """
    from rich.text import Text

    text = Text()
    for number, (kind, line) in enumerate(transcript_lines(traces, **limits)):
        if number:
            text.append("\n")
        text.append(f"{indent}{'' if kind == 'turn' else '  '}{line}", style=_STYLES[kind])
    return text
