"""Durations ("30d", "12h") and points in time ("7d" ago, "2024-05-01") for filters and aging."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

from toolproof.errors import UserError

__all__ = ["format_duration", "parse_duration", "parse_time", "parse_timestamp"]

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)


def parse_duration(value: str | float | int, *, where: str = "duration") -> float:
    """Seconds in ``value``: a number of seconds, or text such as ``"90s"``, ``"12h"``, ``"30d"``.

    Raises:
        UserError: The value is not a positive duration; the message names ``where``.
    """
    if isinstance(value, bool):
        raise UserError(f"{where}: expected a duration such as '30d', got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if match is None:
            raise UserError(
                f"{where}: {value!r} is not a duration; write a number followed by s, m, h, d "
                "or w (for example '90s', '12h', '30d', '2w')"
            )
        seconds = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if seconds <= 0:
        raise UserError(f"{where}: the duration must be positive, got {value!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """A short readable form: ``"30d"``, ``"12h"``, ``"90s"``."""
    for unit in ("w", "d", "h", "m"):
        size = _UNITS[unit]
        if seconds >= size and (seconds / size).is_integer():
            return f"{int(seconds / size)}{unit}"
    return f"{seconds:g}s"


def parse_timestamp(text: str) -> float | None:
    """Epoch seconds of an ISO-8601 time (``Z`` or offset; naive means UTC), or ``None``."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def parse_time(
    value: str | float | datetime, *, where: str = "time", now: float | None = None
) -> float:
    """Epoch seconds of ``value``.

    ``value`` is a datetime, epoch seconds, an ISO date or time, or an age such as ``"7d"``
    meaning that long before ``now``.

    Raises:
        UserError: The value is none of these; the message names ``where``.
    """
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return moment.timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value)
    if _DURATION.match(text):
        return (time.time() if now is None else now) - parse_duration(text, where=where)
    stamp = parse_timestamp(text)
    if stamp is None:
        raise UserError(
            f"{where}: {value!r} is neither an age (such as '7d' or '12h') nor an ISO date or "
            "time (such as '2024-05-01' or '2024-05-01T12:00:00Z')"
        )
    return stamp
