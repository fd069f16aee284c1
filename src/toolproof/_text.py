"""Small text helpers shared by messages, reports and the CLI."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["clip", "cut", "json_type", "mask_urls"]

#: What replaces a password or a secret parameter in a URL.
URL_MASK = "***"
# The part of a URL after ``scheme://`` up to its path: ``user:password@host:port``.
_NETLOC = re.compile(r"://([^/?#\s\"'<>`]*)")
# A secret parameter of a query string or of a model string's options (``?api_key=...``,
# ``&access_token=...``, ``;password=...``); its value runs to the next separator.
_SECRET_PARAM = re.compile(
    r"(?i)([?&;][\w.-]*(?:key|token|secret|password|passwd|pwd|sig|signature|auth"
    r"|authorization|credentials?|session)=)([^&#;\s\"'<>`]+)"
)


def clip(text: str, limit: int, *, flatten: bool = True) -> str:
    """``text`` stripped and cut to ``limit`` characters, ending in an ellipsis when cut.

    With ``flatten`` (the default) whitespace runs fold to one space, so a multi-line value
    fits on one line.
    """
    return cut(" ".join(text.split()) if flatten else text.strip(), limit)


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_type(value: Any) -> str:
    """The JSON Schema type name of a value (``"integer"``, ``"object"``...), for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def mask_urls(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced by ``***``.

    The password of a URL's user information (``postgresql://ops:***@db/traces``) and the
    values of secret parameters (``api_key``, ``key``, ``token``, ``access_token``,
    ``password``, ``secret``, ``signature`` and any name ending in one of them) go, in URLs
    and in model strings' options alike. Everything else is kept. Linear in the text.
    """
    if "://" not in text and "=" not in text:
        return text

    def netloc(match: re.Match[str]) -> str:
        where = match.group(1)
        userinfo, at, host = where.rpartition("@")
        user, colon, password = userinfo.partition(":")
        if not at or not colon or not password or password == URL_MASK:
            return match.group(0)
        return f"://{user}:{URL_MASK}@{host}"

    text = _NETLOC.sub(netloc, text)
    return _SECRET_PARAM.sub(
        lambda m: m.group(0) if m.group(2) == URL_MASK else m.group(1) + URL_MASK, text
    )
