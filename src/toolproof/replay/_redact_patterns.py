"""Redaction's rules of text: the built-in patterns, rule types, and rebuilding a text.

The built-in patterns (e-mail addresses, phone numbers, Luhn-checked card numbers, API-key
tokens) with the cheap hints that skip a pattern's scan on a text that cannot hold a match,
the ``PatternRule`` and ``FieldRule`` types, and ``apply``, which rebuilds a text with its
matched spans replaced. The ``Redactor`` (``_redact.py``) compiles them; the walker
(``_redact_walk.py``) applies them to every string of a trace.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from toolproof.errors import ConfigError

Action = Literal["mask", "drop", "hash"]
_ACTIONS = ("mask", "drop", "hash")

#: The environment variable that holds the HMAC secret of ``hash`` rules by default.
SECRET_ENV = "TOOLPROOF_REDACTION_SECRET"

#: Field names masked by default: credentials that must never be stored.
DEFAULT_FIELDS: tuple[str, ...] = (
    "api_key",
    "apikey",
    "password",
    "passwd",
    "secret",
    "client_secret",
    "token",
    "access_token",
    "refresh_token",
    "authorization",
    "cookie",
    "private_key",
)


_LUHN_DOUBLE = bytes.maketrans(b"0123456789", bytes([0, 2, 4, 6, 8, 1, 3, 5, 7, 9]))


def _luhn(text: str) -> bool:
    digits = text.replace(" ", "").replace("-", "").encode()
    if not digits.isdigit():
        digits = bytes(ch for ch in digits if 48 <= ch <= 57)
    if not 13 <= len(digits) <= 19:
        return False
    kept = digits[-1::-2]
    doubled = digits[-2::-2].translate(_LUHN_DOUBLE)
    return (sum(kept) - 48 * len(kept) + sum(doubled)) % 10 == 0


def _key_like(text: str) -> bool:
    """An ``sk-``/``pk-``/``rk-`` token whose tail looks random, not a word (``sk-learn``)."""
    if text[:3] not in ("sk-", "pk-", "rk-"):
        return True
    tail = text[3:]
    return (
        _ANY_DIGIT.search(tail) is not None
        or (_ANY_LOWER.search(tail) is not None and _ANY_UPPER.search(tail) is not None)
        or _LONG_RUN.search(tail) is not None
    )


_ANY_DIGIT = re.compile("[0-9]")
_ANY_LOWER = re.compile("[a-z]")
_ANY_UPPER = re.compile("[A-Z]")
_LONG_RUN = re.compile("[A-Za-z0-9]{16}")


def _enough_phone_digits(text: str) -> bool:
    return 9 <= sum(map(text.count, "0123456789")) <= 15


@dataclass(frozen=True, slots=True)
class PatternRule:
    """A pattern of sensitive text and what to do with each match.

    Attributes:
        name: The rule's name (``"email"``); also the label of its pseudonyms.
        regex: The regular expression.
        action: ``"mask"``, ``"drop"`` or ``"hash"``.
        check: An extra test of a match (the Luhn checksum for cards).
    """

    name: str
    regex: str
    action: Action = "mask"
    check: Callable[[str], bool] | None = None


@dataclass(frozen=True, slots=True)
class FieldRule:
    """A field name (or ``*``/``?`` wildcard pattern) whose values are sensitive.

    Attributes:
        name: The key to match, case-insensitively, at any depth.
        action: ``"mask"``, ``"drop"`` or ``"hash"``.
    """

    name: str
    action: Action = "mask"


# Every built-in pattern runs in linear time on any text, by construction:
# - a match can begin only where a token begins: each pattern starts with the token's first
#   character (so the engine skips other positions at C speed) followed by a look-behind that
#   fails inside a run of the token's own characters;
# - repeated parts are separated by characters they cannot contain, so the engine never has
#   two ways to split the same text, and each start's work ends where its token ends;
# - parts after the first are bounded (DNS labels hold at most 63 characters).
# 1 MB of adversarial text (long base64url, runs of '@', digits, 'sk-' prefixes,
# near-misses) redacts in a fraction of a second; the guarantees bench measures it.
_ANY = "(?s:.)"
_LOCAL = r"[\w.%+\\-]"  # '\' for addresses written with JSON escapes (jos\u00e9@...)
_LABEL = r"[\w\\-]{1,63}"  # no '%': '%40' is the '@' of a URL-encoded address
_DOT = r"[.\u3002\uff0e\uff61]"  # the dot, and the dots of CJK input methods
_TLD = r"(?:xn--[A-Za-z0-9-]{1,59}|(?:[^\W\d_]|\\u[0-9A-Fa-f]{4}){2,63})"
_AT = r"(?:[@\uff20]|%40)"


def _starts(first: str, width: int, before: str) -> str:
    r"""``first`` (a fixed-width prefix), not preceded by a character of ``before``.

    A JSON escape (``\n``, ``\t``...) before it separates too: text holding JSON that
    could not be parsed (cut short, or after a prefix) still has its tokens found.
    """
    return f'{first}(?:(?<!{before}{_ANY}{{{width}}})|(?<=\\\\[nrtbf"/]{_ANY}{{{width}}}))'


_KEY = r"[\w-]"  # what may not stand right before a key
_BARE_PHONE_END = "(?![0-9A-Za-z_])"
_PHONE_TAIL = r"\d{3,4}[ .-]?\d{3,4}(?!\w)"

#: The built-in patterns by name: ``email``, ``phone``, ``card`` and ``api_key``.
BUILTIN_PATTERNS: dict[str, tuple[str, Callable[[str], bool] | None]] = {
    "api_key": (
        "|".join(
            [
                # OpenAI (sk-proj-, sk-svcacct-...), Anthropic (sk-ant-api03-...), and the like
                _starts("[spr]k-", 3, _KEY) + "[A-Za-z0-9_-]{16,}",
                _starts("[spr]k_(?:live|test)_", 8, _KEY) + "[A-Za-z0-9]{10,}",  # Stripe
                _starts("gh[pousr]_", 4, _KEY) + "[A-Za-z0-9]{20,}",
                _starts("github_pat_", 11, _KEY) + "[A-Za-z0-9_]{20,}",
                _starts("glpat-", 6, _KEY) + "[A-Za-z0-9_-]{20,}",
                _starts("hf_", 3, _KEY) + "[A-Za-z0-9]{30,}",
                _starts("npm_", 4, _KEY) + "[A-Za-z0-9]{36}",
                _starts("(?:AKIA|ASIA)", 4, "[A-Za-z0-9]") + "[0-9A-Z]{16}(?![0-9A-Za-z])",
                _starts("xox[abprs]-", 5, _KEY) + "[A-Za-z0-9-]{10,}",
                _starts("AIza", 4, _KEY) + "[0-9A-Za-z_-]{35}",
                _starts("eyJ", 3, _KEY)
                + r"[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
                _starts("(?:[Bb]earer|BEARER)", 6, r"\w") + r"[ \t]{1,8}[A-Za-z0-9._~+/=-]{16,}",
            ]
        ),
        _key_like,
    ),
    "email": (
        _starts(_LOCAL, 1, _LOCAL) + f"{_LOCAL}*{_AT}{_LABEL}(?:{_DOT}{_LABEL})*{_DOT}{_TLD}",
        None,
    ),
    "card": (
        _starts("[0-9]", 1, "[0-9]") + "(?:[0-9]{12,18}"
        "|[0-9]{3}(?:[ -][0-9]{4}){2}[ -][0-9]{1,4}(?:[ -][0-9]{1,3})?"
        "|[0-9]{3}[ -][0-9]{6}[ -][0-9]{4,5})(?![0-9])",
        _luhn,
    ),
    "phone": (
        "|".join(
            [
                _starts(r"\+", 1, "[0-9+]") + "[0-9]{9,15}(?![0-9])",  # E.164
                # with separators: +1 (555) 123-4567, 555-123-4567, +86 138 0013 8000
                _starts(r"\+", 1, r"[\w+]")
                + rf"\d{{1,3}}[ .-]?(?:\(\d{{2,4}}\)[ .-]?|\d{{2,4}}[ .-]){_PHONE_TAIL}",
                _starts(r"\(", 1, r"[\w+]") + rf"\d{{2,4}}\)[ .-]?{_PHONE_TAIL}",
                _starts(r"\d", 1, r"[\w+]") + rf"\d{{1,3}}[ .-]{_PHONE_TAIL}",
                _starts("1", 1, r"[\w+]") + rf"[ .-]\d{{3}}[ .-]{_PHONE_TAIL}",  # 1-415-...
                # without: 13812345678 (CN mobile), 4155552671 and 14155552671 (US)
                _starts("1", 1, "[0-9A-Za-z_+]")
                + f"(?:[3-9][0-9]{{9}}|[2-9][0-9]{{2}}[2-9][0-9]{{6}}){_BARE_PHONE_END}",
                _starts("[2-9]", 1, "[0-9A-Za-z_+]")
                + f"[0-9]{{2}}[2-9][0-9]{{6}}{_BARE_PHONE_END}",
            ]
        ),
        _enough_phone_digits,
    ),
}

_API_KEY_HINTS = (
    "k-", "k_", "gh", "github_pat_", "glpat-", "hf_", "npm_", "AKIA", "ASIA", "xox", "AIza",
    "eyJ", "earer", "EARER",
)  # fmt: skip

_HAS_DIGITS = re.compile(r"[0-9]{3}")
_API_KEY_HINT = re.compile("|".join(re.escape(hint) for hint in _API_KEY_HINTS))

# A cheap test that a text may hold a match at all (plain substring tests run at C speed).
HINTS: dict[str, Callable[[str], bool]] = {
    "api_key": lambda text: _API_KEY_HINT.search(text) is not None,
    "email": lambda text: "@" in text or "%40" in text or "\uff20" in text,
    "card": lambda text: _HAS_DIGITS.search(text) is not None,
    "phone": lambda text: _HAS_DIGITS.search(text) is not None,
}

DEFAULT_PATTERNS: dict[str, Action] = {
    "api_key": "mask",
    "email": "mask",
    "card": "mask",
    "phone": "mask",
}

DROP: Any = object()  # the replacement of a dropped value

# (start, end, priority, replacement): lower priority wins among spans with the same extent.
Span = tuple[int, int, int, str]


def apply(text: str, spans: list[Span]) -> str:
    """``text`` with every span replaced; overlapping spans merge into one replaced region."""
    if not spans:
        return text
    spans.sort(key=lambda span: (span[0], -span[1], span[2]))
    out: list[str] = []
    last = 0
    region_end = -1
    for start, end, _, replacement in spans:
        if start < region_end:
            # overlaps the region being replaced: the region grows, nothing of it survives
            region_end = max(region_end, end)
            continue
        if region_end >= 0:
            last = region_end
        out.append(text[last:start])
        out.append(replacement)
        region_end = end
    out.append(text[region_end:])
    return "".join(out)


def _priority(name: str) -> int:
    order = list(BUILTIN_PATTERNS)
    return order.index(name) if name in order else len(order)


def _action(value: Any, where: str) -> Action:
    if value not in _ACTIONS:
        raise ConfigError(
            f"{where}: unknown redaction action {value!r}; use one of: {', '.join(_ACTIONS)}"
        )
    action: Action = value
    return action


def glob_regex(glob: str) -> str:
    """A field-name glob as a regex fragment that stays inside one word-like key."""
    out = []
    for ch in glob:
        if ch == "*":
            out.append(r"[\w.-]*")
        elif ch == "?":
            out.append(r"[\w.-]")
        else:
            out.append(re.escape(ch))
    return "".join(out)


EMAIL = re.compile(BUILTIN_PATTERNS["email"][0])


def canonical(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def number_or_text(text: str) -> Any:
    if text.lstrip("-").isdigit():
        return int(text)
    return text
