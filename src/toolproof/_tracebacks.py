"""The user's own frames of an exception, for one-line messages and ``--traceback``.

toolproof reports bad input and bugs in user code (a tool, an agent factory, a module that
fails to import) in one line by default. The line names where the user's code failed
(``file:line``); with ``toolproof --traceback`` (or ``TOOLPROOF_TRACEBACK=1``) the CLI also
prints the traceback of the user's frames, without toolproof's and asyncio's internals.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import traceback

__all__ = ["ENV_VARIABLE", "format_user_traceback", "traceback_enabled", "user_location"]

#: Set to 1 to print the user's frames after a one-line error (what ``--traceback`` does).
ENV_VARIABLE = "TOOLPROOF_TRACEBACK"

_PACKAGE = str(Path(__file__).resolve().parent) + os.sep


def _is_internal(filename: str) -> bool:
    """Whether a frame is toolproof's or the standard library's (asyncio, pathlib...).

    Installed third-party packages count as the user's.
    """
    import sysconfig

    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError):
        resolved = filename
    if resolved.startswith(_PACKAGE):
        return True
    paths = sysconfig.get_paths()
    sites = {str(Path(paths[k]).resolve()) + os.sep for k in ("purelib", "platlib") if k in paths}
    if any(resolved.startswith(site) for site in sites) or "site-packages" in resolved:
        return False
    stdlib = {
        str(Path(paths[k]).resolve()) + os.sep for k in ("stdlib", "platstdlib") if k in paths
    }
    return any(resolved.startswith(root) for root in stdlib)


def traceback_enabled() -> bool:
    """Whether the user asked for tracebacks (``TOOLPROOF_TRACEBACK=1`` or ``--traceback``)."""
    return os.environ.get(ENV_VARIABLE, "").strip().lower() in {"1", "true", "yes", "on"}


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes, root cause first (as Python prints them)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen) and len(seen) < 20:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen[::-1]


def _user_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    import traceback  # on an error, not at every command's start-up

    return [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith(("<frozen ", "<string"))
        and not _is_internal(frame.filename)
    ]


def user_location(exc: BaseException) -> str | None:
    """``file:line in function`` of the innermost user frame of the exception's chain."""
    for error in reversed(_chain(exc)):
        if isinstance(error, SyntaxError) and error.filename and error.lineno:
            return f"{_shown(error.filename)}:{error.lineno}"
    for error in _chain(exc)[::-1]:
        frames = _user_frames(error)
        if frames:
            last = frames[-1]
            return f"{_shown(last.filename)}:{last.lineno} in {last.name}"
    return None


def _shown(filename: str) -> str:
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return filename if relative.startswith("..") else relative


def format_user_traceback(exc: BaseException) -> str:
    """The traceback of the user's frames for each exception of the chain, root cause first.

    Exceptions raised by toolproof itself with no user frame (the one-line error that wraps
    the user's exception) are shown by their message only.
    """
    import traceback

    lines = ["Traceback of your code (toolproof's and asyncio's frames hidden):"]
    for error in _chain(exc):
        frames = _user_frames(error)
        if frames:
            lines.extend(
                line.rstrip("\n") for line in traceback.StackSummary.from_list(frames).format()
            )
        text = "".join(traceback.format_exception_only(type(error), error)).rstrip("\n")
        lines.append(text)
    return "\n".join(lines)
