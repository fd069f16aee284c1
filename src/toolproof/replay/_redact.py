"""Redaction: sensitive values are removed from a trace before anything is written.

Two kinds of rules:

One walker redacts every string of a trace (``_Walk``): every field of every message, tool
call, tool result, the metadata, tags, error and stop texts, at any depth, and JSON found
inside strings at any depth (parsed, redacted, written back as valid JSON). Only the
structural fields of the trace format (ids, roles, statuses, times, tool names, counts: see
``_TRACE``) are kept as they are, so a field added to the format later is redacted.

- **Field rules** name keys (``user_id``, ``*_token``; case-insensitive, ``*`` and ``?``
  wildcards) at any depth of the trace's data, JSON inside strings included.
- **Pattern rules** find values in any text: e-mail addresses, phone numbers, payment card
  numbers (Luhn-checked), API-key-like tokens, and your own regular expressions. The
  built-in patterns run in linear time on any input (see the notes above them).

Each rule has an action: ``mask`` (replace with ``***``), ``drop`` (remove the key, or the
matched text) or ``hash`` (an HMAC-SHA256 pseudonym under a project secret: the same value
always becomes the same pseudonym, so recorded calls still match their fixtures on replay).
Pseudonyms keep the type of the value (an integer id stays an integer with as many digits,
an e-mail address stays an address) so that replayed calls still pass the tools' schemas.

A value found under a sensitive field is also removed wherever it appears in the trace's
free text (the user's question, the answer, a reasoning block, an error message, a
``key=value`` string), so a user id passed as an argument does not survive in the input
that mentioned it.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from toolproof._trace import Trace
from toolproof.errors import ConfigError

__all__ = [
    "BUILTIN_PATTERNS",
    "DEFAULT_FIELDS",
    "SECRET_ENV",
    "Action",
    "FieldRule",
    "PatternRule",
    "Redactor",
]

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
_HINTS: dict[str, Callable[[str], bool]] = {
    "api_key": lambda text: _API_KEY_HINT.search(text) is not None,
    "email": lambda text: "@" in text or "%40" in text or "\uff20" in text,
    "card": lambda text: _HAS_DIGITS.search(text) is not None,
    "phone": lambda text: _HAS_DIGITS.search(text) is not None,
}

_DEFAULT_PATTERNS: dict[str, Action] = {
    "api_key": "mask",
    "email": "mask",
    "card": "mask",
    "phone": "mask",
}

_TEXT_CACHE_CHARS = 8_000_000
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z_ -]*")
_DROP: Any = object()


class Redactor:
    """Removes sensitive values from traces before they are stored.

    Args:
        fields: Field rules: a mapping ``{name: action}``, names (masked), or
            :class:`FieldRule` objects.
        patterns: Built-in patterns to apply (``{"email": "hash", "card": "mask"}``, or
            names, masked); default: ``api_key``, ``email``, ``card`` and ``phone``, masked.
        custom_patterns: Your own :class:`PatternRule` objects.
        secret: The HMAC key of ``hash`` actions (text or bytes). Defaults to the
            ``TOOLPROOF_REDACTION_SECRET`` environment variable.
        mask: The text that replaces masked values.
        default_fields: Also mask the credential fields of :data:`DEFAULT_FIELDS`.

    Raises:
        ConfigError: An unknown action or pattern name, an invalid regular expression, or a
            ``hash`` rule without a secret.

    Example:
        ```python
        redactor = Redactor(
            fields={"user_id": "hash", "order_id": "hash", "address": "drop"},
            patterns={"email": "hash", "phone": "mask", "card": "mask", "api_key": "mask"},
            secret=os.environ["TOOLPROOF_REDACTION_SECRET"],
        )
        clean = redactor.redact_trace(result.trace)
        ```
    """

    def __init__(
        self,
        fields: Mapping[str, Action] | Iterable[str | FieldRule] = (),
        patterns: Mapping[str, Action] | Iterable[str] | None = None,
        custom_patterns: Iterable[PatternRule] = (),
        *,
        secret: str | bytes | None = None,
        mask: str = "***",
        default_fields: bool = True,
    ) -> None:
        field_rules: list[FieldRule] = []
        if isinstance(fields, Mapping):
            field_rules = [FieldRule(str(k), _action(v, f"fields.{k}")) for k, v in fields.items()]
        else:
            for item in fields:
                field_rules.append(item if isinstance(item, FieldRule) else FieldRule(str(item)))
        if default_fields:
            named = {rule.name.lower() for rule in field_rules}
            field_rules.extend(FieldRule(name) for name in DEFAULT_FIELDS if name not in named)
        for checked in field_rules:
            _action(checked.action, f"field {checked.name!r}")
        chosen: Mapping[str, Action]
        if patterns is None:
            chosen = _DEFAULT_PATTERNS
        elif isinstance(patterns, Mapping):
            chosen = {str(k): _action(v, f"patterns.{k}") for k, v in patterns.items()}
        else:
            chosen = {str(name): "mask" for name in patterns}
        pattern_rules: list[PatternRule] = []
        # Fixed priority, so that a card number is not taken for a phone number.
        for name, action in sorted(chosen.items(), key=lambda item: _priority(item[0])):
            if name not in BUILTIN_PATTERNS:
                raise ConfigError(
                    f"unknown redaction pattern {name!r}; built-in patterns are: "
                    f"{', '.join(sorted(BUILTIN_PATTERNS))} (add your own as custom patterns)"
                )
            regex, check = BUILTIN_PATTERNS[name]
            pattern_rules.append(PatternRule(name, regex, action, check))
        for custom in custom_patterns:
            _action(custom.action, f"pattern {custom.name!r}")
            pattern_rules.append(custom)

        self.field_rules: tuple[FieldRule, ...] = tuple(field_rules)
        self.pattern_rules: tuple[PatternRule, ...] = tuple(pattern_rules)
        self.mask = mask
        if secret is None:
            secret = os.environ.get(SECRET_ENV) or None
        needs_secret = any(f.action == "hash" for f in self.field_rules) or any(
            p.action == "hash" for p in self.pattern_rules
        )
        if needs_secret and not secret:
            raise ConfigError(
                "redaction rules use the 'hash' action but no secret is set: pass "
                f"Redactor(secret=...) or set the {SECRET_ENV} environment variable (keep the "
                "same secret across runs so pseudonyms stay stable)"
            )
        self._secret = secret.encode() if isinstance(secret, str) else (secret or b"")

        exact: dict[str, Action] = {}
        globs: list[tuple[re.Pattern[str], Action]] = []
        for field_rule in self.field_rules:
            key = field_rule.name.lower()
            if any(ch in key for ch in "*?["):
                globs.append((re.compile(fnmatch.translate(key)), field_rule.action))
            else:
                exact.setdefault(key, field_rule.action)
        self._exact = exact
        self._globs = globs
        self._field_cache: dict[str, Action | None] = {}
        self._span_cache: dict[str, tuple[_Span, ...]] = {}
        self._cached_chars = 0
        compiled: list[tuple[PatternRule, re.Pattern[str], Callable[[str], bool] | None]] = []
        for rule in self.pattern_rules:
            try:
                compiled_rule = re.compile(rule.regex)
            except re.error as exc:
                raise ConfigError(
                    f"redaction pattern {rule.name!r}: invalid regular expression ({exc})"
                ) from exc
            builtin = BUILTIN_PATTERNS.get(rule.name)
            hint = _HINTS.get(rule.name) if builtin and builtin[0] == rule.regex else None
            compiled.append((rule, compiled_rule, hint))
        self._compiled = tuple(compiled)
        # `user_id=123`, `"user_id": "abc"`, `\"user_id\": \"abc\"` in free text.
        self._key_value: re.Pattern[str] | None = None
        if self.field_rules:
            # A name may follow a dot (`params.user_id=5`); a name with a `*` wildcard may
            # not, or each dot of `a.b.c...` would start a new scan of the whole run.
            plain = [_glob_regex(r.name) for r in self.field_rules if "*" not in r.name]
            wild = [_glob_regex(r.name) for r in self.field_rules if "*" in r.name]
            starts = [f"(?<!\\w)(?:{'|'.join(plain)})"] if plain else []
            starts += [f"(?<![\\w.-])(?:{'|'.join(wild)})"] if wild else []
            self._key_value = re.compile(
                rf"(?i)(?:{'|'.join(starts)})((?:\\*[\"'])?\s*[:=]\s*(?:\\*[\"'])?)"
                rf"([^\s\"'\\,;}}&)\]]+)"
            )

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def none(cls) -> Redactor:
        """A redactor that changes nothing (for data that is already clean)."""
        return cls((), (), default_fields=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "redaction") -> Redactor:
        r"""Build a redactor from configuration data (the YAML form).

        The form::

            secret_env: TOOLPROOF_REDACTION_SECRET   # where the HMAC secret is read from
            mask: "***"
            default_fields: true                      # also mask api_key, password, token...
            fields: {user_id: hash, order_id: hash, api_key: mask, "*_token": drop}
            patterns: {email: hash, phone: mask, card: mask, api_key: mask}
            custom:
              - {name: employee_id, regex: "E\\d{4}", action: hash}

        Raises:
            ConfigError: The data is malformed; the message names ``where`` and the key.
        """
        from toolproof.replay._redact_rules import parse_redaction

        settings = parse_redaction(data, where)
        secret_env = settings.secret_env or SECRET_ENV
        custom = [PatternRule(name, regex, action) for name, regex, action in settings.custom]
        try:
            return cls(
                settings.fields,
                settings.patterns,
                custom,
                secret=os.environ.get(secret_env) or None,
                mask=settings.mask,
                default_fields=settings.default_fields,
            )
        except ConfigError as exc:
            if secret_env != SECRET_ENV and "no secret is set" in str(exc):
                raise ConfigError(
                    f"{where}: the 'hash' action needs a secret in the {secret_env} "
                    "environment variable (secret_env), which is not set"
                ) from None
            raise ConfigError(f"{where}: {exc}") from None

    @classmethod
    def from_file(cls, path: str | Path) -> Redactor:
        """Read redaction rules from a YAML (or JSON) file; see :meth:`from_dict`.

        A file whose top level has a ``redaction:`` key uses that section.

        Raises:
            ConfigError: The file is missing, unreadable or invalid.
        """
        import yaml

        from toolproof._yaml import safe_load

        path = Path(path)
        try:
            data = safe_load(path.read_text(encoding="utf-8"), path)
        except OSError as exc:
            raise ConfigError(f"cannot read redaction rules {path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: invalid YAML ({exc})") from exc
        if isinstance(data, Mapping) and "redaction" in data:
            data = data["redaction"]
        return cls.from_dict(data or {}, where=str(path))

    # -- public operations -------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        """Whether any rule is configured."""
        return bool(self.field_rules or self.pattern_rules)

    def field_action(self, key: str) -> Action | None:
        """The action for a field named ``key``, or ``None`` when it is not sensitive."""
        try:
            return self._field_cache[key]
        except KeyError:
            pass
        lowered = key.lower()
        action: Action | None = self._exact.get(lowered)
        if action is None:
            for pattern, glob_action in self._globs:
                if pattern.match(lowered):
                    action = glob_action
                    break
        if len(self._field_cache) < 10_000:
            self._field_cache[key] = action
        return action

    def pseudonym(self, value: Any, label: str = "anon") -> Any:
        """The stable pseudonym of ``value`` under this redactor's secret (same type).

        Strings become ``anon_<12 hex>`` (e-mail addresses ``<12 hex>@redacted.invalid``),
        integers another integer with as many digits, floats another float.
        """
        if isinstance(value, bool) or value is None:
            return value
        digest = hmac.new(self._secret, _canonical(value).encode(), hashlib.sha256).hexdigest()
        if isinstance(value, int):
            digits = len(str(abs(value)))
            number = int(digest, 16)
            if digits <= 1:
                pseudo = number % 10
            else:
                pseudo = 10 ** (digits - 1) + number % (9 * 10 ** (digits - 1))
            return -pseudo if value < 0 else pseudo
        if isinstance(value, float):
            return int(digest[:10], 16) / 1000.0
        if label == "email" or _EMAIL.fullmatch(str(value)):
            return f"{digest[:12]}@redacted.invalid"
        # One prefix for every rule: a value hashed by a field rule in a tool call and by a
        # pattern rule in the user's message gets the same pseudonym.
        return f"anon_{digest[:12]}"

    def redact_trace(self, trace: Trace) -> Trace:
        """A redacted copy of ``trace`` (the original is not changed)."""
        return Trace.from_dict(self.redact_data(trace.to_dict()))

    def redact_data(self, data: dict[str, Any]) -> dict[str, Any]:
        """Redact a trace in its plain form (``Trace.to_dict()``); returns a new dict.

        Every string of the trace is redacted, at any depth, except the structural fields
        listed in the guide's redaction section (ids, roles, statuses, times, tool names...).
        """
        if not self.enabled:
            return data
        walk = _Walk(self)
        walk.collect(data, _TRACE)
        out: dict[str, Any] = walk.rewrite(data, _TRACE)
        return out

    def redact_many(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Redact traces of one conversation together (``Trace.to_dict()`` forms).

        A value found under a sensitive field in any of them is removed from all of them,
        so a user id the user typed in turn 1 goes even when only turn 3 passed it to a tool.
        """
        if not self.enabled:
            return items
        walk = _Walk(self)
        for data in items:
            walk.collect(data, _TRACE)
        return [walk.rewrite(data, _TRACE) for data in items]

    def redact_value(self, value: Any) -> Any:
        """Redact one JSON-like value (a tool call's arguments, a result)."""
        if not self.enabled:
            return value
        walk = _Walk(self)
        walk.collect(value, _DATA)
        return walk.rewrite(value, _DATA)

    def redact_text(self, text: str) -> str:
        """Redact one text (patterns, ``key=value`` rules and JSON inside it)."""
        if not self.enabled:
            return text
        walk = _Walk(self)
        walk.collect(text, _DATA)
        out: str = walk.rewrite(text, _DATA)
        return out

    def replacement(self, value: Any, action: Action, label: str = "anon") -> Any:
        """What replaces one sensitive scalar (``_DROP`` for ``drop``)."""
        if action == "drop":
            return _DROP
        if action == "hash":
            return self.pseudonym(value, label)
        if isinstance(value, str):
            return self.mask
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int):
            return 0
        if isinstance(value, float):
            return 0.0
        return self.mask

    def static_spans(self, text: str) -> tuple[_Span, ...]:
        """Where the pattern and ``key=value`` rules match in ``text`` (cached).

        Each pattern runs separately over the original text, so one rule's near-miss (a
        number that fails the Luhn check) never hides another rule's match; overlapping
        matches are merged when the text is rebuilt.
        """
        cached = self._span_cache.get(text)
        if cached is not None:
            return cached
        spans: list[_Span] = []
        if self._key_value is not None:
            for match in self._key_value.finditer(text):
                key = text[match.start() : match.start(1)]
                value = match.group(2)
                action = self.field_action(key)
                if action is None or value == self.mask:
                    continue
                if action == "hash":
                    replacement = str(self.pseudonym(_number_or_text(value)))
                else:
                    replacement = self.mask
                spans.append((match.start(2), match.end(2), 0, replacement))
        for priority, (rule, regex, hint) in enumerate(self._compiled, 2):
            if hint is not None and not hint(text):
                continue
            check = rule.check
            seen: dict[str, str] = {}  # the same match, replaced once
            checked: dict[str, bool] = {}
            pos = 0
            while True:
                hit = regex.search(text, pos)
                if hit is None:
                    break
                start, end = hit.span()
                found = hit.group()
                if end == start:
                    pos = end + 1
                    continue
                if check is not None and found not in seen:
                    passed = checked.get(found)
                    if passed is None:
                        passed = checked[found] = check(found)
                    if not passed:
                        pos = start + 1  # a shorter candidate may start inside this one
                        continue
                text_for = seen.get(found)
                if text_for is None:
                    made = self.replacement(found, rule.action, rule.name)
                    text_for = seen[found] = "" if made is _DROP else str(made)
                spans.append((start, end, priority, text_for))
                pos = end
        result = tuple(spans)
        if len(text) >= 8:
            self._cached_chars += len(text)
            if self._cached_chars > _TEXT_CACHE_CHARS:
                self._span_cache.clear()
                self._cached_chars = len(text)
            self._span_cache[text] = result
        return result

    def static_text(self, text: str) -> str:
        """Apply the pattern and ``key=value`` rules to one text."""
        return _apply(text, list(self.static_spans(text)))


# (start, end, priority, replacement): lower priority wins among spans with the same extent.
_Span = tuple[int, int, int, str]


def _apply(text: str, spans: list[_Span]) -> str:
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


def _glob_regex(glob: str) -> str:
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


_EMAIL = re.compile(BUILTIN_PATTERNS["email"][0])


def _canonical(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _number_or_text(text: str) -> Any:
    if text.lstrip("-").isdigit():
        return int(text)
    return text


# -- the one walker ------------------------------------------------------------------------
#
# A trace is walked by its shape: the shape of an object names its structural fields (kept as
# they are: ids, roles, statuses, times, tool names, counts) and the objects nested in it.
# Every other field, including fields added to the Trace later, is data: every string in it
# is redacted, dict keys in it are matched against the field rules, and strings holding JSON
# are parsed, redacted as data and written back, at any depth.

_SKIP = "skip"
_DATA = "data"
_CALL: dict[str, Any] = {"id": _SKIP, "name": _SKIP}
_ERROR: dict[str, Any] = {"type": _SKIP, "tool_name": _SKIP}
_MESSAGE: dict[str, Any] = {
    "role": _SKIP,
    "tool_call_id": _SKIP,
    "name": _SKIP,
    "status": _SKIP,
    "tool_calls": [_CALL],
}
_RESULT: dict[str, Any] = {
    "call_id": _SKIP,
    "name": _SKIP,
    "status": _SKIP,
    "error_type": _SKIP,
    "duration_ms": _SKIP,
    "mocked": _SKIP,
}
_STEP: dict[str, Any] = {
    "index": _SKIP,
    "offset_ms": _SKIP,
    "latency_ms": _SKIP,
    "request": _SKIP,
    "usage": _SKIP,
    "finish_reason": _SKIP,
    "model_name": _SKIP,
    "cost": _SKIP,
    "response": _MESSAGE,
    "tool_results": [_RESULT],
}
_TRACE: dict[str, Any] = {
    "id": _SKIP,
    "version": _SKIP,
    "started_at": _SKIP,
    "ended_at": _SKIP,
    "system_prompt_hash": _SKIP,
    "model": _SKIP,
    "tool_mode": _SKIP,
    "stop_reason": _SKIP,
    "usage": _SKIP,
    "cost": _SKIP,
    "duration_ms": _SKIP,
    # The tools offered are the code's definitions (names, descriptions, JSON Schemas that
    # replay validates against), not data of the run.
    "tools": _SKIP,
    "history": [_MESSAGE],
    "steps": [_STEP],
    "error": _ERROR,
}
# Per shape, the keys kept as they are (by the shape's id: shapes are module constants).
_KEPT: dict[int, frozenset[str]] = {
    id(shape): frozenset(key for key, sub in shape.items() if sub is _SKIP)
    for shape in (_CALL, _ERROR, _MESSAGE, _RESULT, _STEP, _TRACE)
}


def _structural(shape: dict[str, Any], prefix: str = "") -> list[str]:
    names = []
    for key, sub in shape.items():
        if sub == _SKIP:
            names.append(prefix + key)
        elif isinstance(sub, list):
            names.extend(_structural(sub[0], f"{prefix}{key}[]."))
        elif isinstance(sub, dict):
            names.extend(_structural(sub, f"{prefix}{key}."))
    return names


# The trace fields that redaction leaves as they are; every other string is redacted.
_STRUCTURAL_FIELDS: tuple[str, ...] = tuple(_structural(_TRACE))

_JSON_FIRST = frozenset('{["')
# Fields whose text is usually the JSON of the field named next to it (a tool result's
# content and value, a call's raw and parsed arguments): redacted once, written twice.
_MIRRORS = {"content": "value", "raw_arguments": "arguments"}
_CONTAINERS = (dict, list, str)
_KEPT_SCALARS = frozenset({bool, float, type(None)})  # never redacted as data


def _may_be_json(text: str) -> bool:
    first = text[:1]
    return first in _JSON_FIRST or (first.isspace() and text.lstrip()[:1] in _JSON_FIRST)


_MAX_JSON_DEPTH = 16  # JSON inside strings deeper than this is treated as plain text


class _Walk:
    """One redaction: first collect the values under sensitive fields, then rewrite."""

    def __init__(self, redactor: Redactor) -> None:
        self.r = redactor
        self.values: dict[str, str] = {}  # sensitive text -> its replacement in free text
        self.parsed: dict[str, Any] = {}  # JSON texts parsed so far (None: not JSON)
        self._values_re: re.Pattern[str] | None = None

    # -- JSON inside strings ------------------------------------------------------------------

    def _parse(self, text: str) -> Any:
        """The container (or JSON string) ``text`` encodes, else ``None``."""
        first = text[:1]
        if first not in _JSON_FIRST or len(text) < 2:
            if not first.isspace():
                return None
            first = text.lstrip()[:1]
            if not first or first not in _JSON_FIRST:
                return None
        try:
            return self.parsed[text]
        except KeyError:
            pass
        from pydantic_core import from_json

        try:
            parsed = from_json(text)
        except ValueError:
            parsed = None
        if not isinstance(parsed, (dict, list, str)):
            parsed = None
        self.parsed[text] = parsed
        return parsed

    # -- phase 1: collect values under sensitive fields -------------------------------------

    def collect(self, node: Any, shape: Any, depth: int = 0) -> None:
        if type(shape) is dict:
            if type(node) is not dict:
                self.collect_data(node, depth)
                return
            for key in node.keys() - _KEPT[id(shape)]:
                item = node[key]
                if item is None:
                    continue
                sub = shape.get(key, _DATA)
                if sub is not _DATA:
                    self.collect(item, sub, depth)
                elif type(item) is str and not _may_be_json(item):
                    continue  # plain text holds no fields
                elif not (key in _MIRRORS and self._mirrors(node, key)):
                    # (a mirrored text is the same data as its twin, collected there)
                    self.collect_data(item, depth)
        elif type(shape) is list:
            if type(node) is not list:
                self.collect_data(node, depth)
                return
            for item in node:
                self.collect(item, shape[0], depth)
        elif shape is _DATA:
            self.collect_data(node, depth)

    def _mirrors(self, node: dict[str, Any], key: str) -> bool:
        """Whether ``node[key]`` is JSON text of the container next to it (its twin)."""
        text = node[key]
        twin = node.get(_MIRRORS[key])
        if type(text) is not str or not isinstance(twin, (dict, list)):
            return False
        parsed = self._parse(text)
        return parsed is not None and parsed == twin

    def collect_data(self, node: Any, depth: int) -> None:
        kind = type(node)
        if kind is dict:
            field_action = self.r.field_action
            for key, item in node.items():
                action = field_action(str(key))
                if action is not None:
                    self._remember(item, action, depth)
                elif type(item) is str:
                    if _may_be_json(item):
                        self.collect_data(item, depth)
                elif isinstance(item, _CONTAINERS):
                    self.collect_data(item, depth)
        elif kind is list:
            for item in node:
                if type(item) is str:
                    if _may_be_json(item):
                        self.collect_data(item, depth)
                elif isinstance(item, _CONTAINERS):
                    self.collect_data(item, depth)
        elif kind is str and depth < _MAX_JSON_DEPTH:
            parsed = self._parse(node)
            if parsed is not None:
                self.collect_data(parsed, depth + 1)

    def _remember(self, value: Any, action: Action, depth: int) -> None:
        if isinstance(value, dict):
            for item in value.values():
                self._remember(item, action, depth)
        elif isinstance(value, list):
            for item in value:
                self._remember(item, action, depth)
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            text = value if isinstance(value, str) else json.dumps(value)
            if text and text not in self.values:
                replacement = self.r.replacement(value, action)
                # a dropped field's value is masked where it appears in free text
                self.values[text] = self.r.mask if replacement is _DROP else str(replacement)
                self._values_re = None
                if isinstance(value, str):
                    # the same value inside JSON text, at every depth of escaping
                    encoded = value
                    for _ in range(3):
                        encoded = json.dumps(encoded)[1:-1]
                        if encoded in self.values:
                            break
                        self.values[encoded] = self.values[text]
                    ascii_form = json.dumps(value, ensure_ascii=True)[1:-1]
                    self.values.setdefault(ascii_form, self.values[text])
            if isinstance(value, str) and depth < _MAX_JSON_DEPTH:
                parsed = self._parse(value)
                if parsed is not None:
                    self._remember(parsed, action, depth + 1)

    # -- phase 2: rewrite ---------------------------------------------------------------------

    def rewrite(self, node: Any, shape: Any, depth: int = 0) -> Any:
        if type(shape) is dict:
            if type(node) is not dict:
                return self.rewrite_data(node, depth)
            out = dict(node)
            mirrored = []
            for key in node.keys() - _KEPT[id(shape)]:
                item = node[key]
                if item is None:
                    continue
                sub = shape.get(key, _DATA)
                if sub is not _DATA:
                    out[key] = self.rewrite(item, sub, depth)
                elif key in _MIRRORS and self._mirrors(node, key):
                    mirrored.append(key)
                else:
                    out[key] = self.rewrite_data(item, depth)
            for key in mirrored:
                # the JSON text of the value next to it, redacted above: written again
                twin, done = node[_MIRRORS[key]], out[_MIRRORS[key]]
                out[key] = node[key] if done == twin else json.dumps(done, ensure_ascii=False)
            return out
        if type(shape) is list:
            if type(node) is not list:
                return self.rewrite_data(node, depth)
            return [self.rewrite(item, shape[0], depth) for item in node]
        if shape is _SKIP:
            return node
        return self.rewrite_data(node, depth)

    def rewrite_data(self, node: Any, depth: int) -> Any:
        kind = type(node)
        if kind is str:
            return self.string(node, depth)
        if kind is dict:
            out: dict[Any, Any] = {}
            field_action = self.r.field_action
            for key, item in node.items():
                action = field_action(str(key))
                name = self._key(key) if type(key) is str else key
                if action is None:
                    out[name] = (
                        item if type(item) in _KEPT_SCALARS else self.rewrite_data(item, depth)
                    )
                elif action != "drop":
                    out[name] = self._field_value(item, action)
            return out
        if kind is list:
            return [
                item if type(item) in _KEPT_SCALARS else self.rewrite_data(item, depth)
                for item in node
            ]
        if kind is int and abs(node) >= 10**8:
            return self._number(node)
        return node

    def _field_value(self, value: Any, action: Action) -> Any:
        if isinstance(value, dict):
            return {k: self._field_value(v, action) for k, v in value.items()}
        if isinstance(value, list):
            return [self._field_value(v, action) for v in value]
        replacement = self.r.replacement(value, action)
        return self.r.mask if replacement is _DROP else replacement

    def _number(self, number: int) -> int:
        """A long integer that is a phone or card number in its digits (stored as a number)."""
        text = str(number)
        known = self.values.get(text)
        if known is not None:
            return int(known) if known.lstrip("-").isdigit() else 0
        for start, end, _, replacement in self.r.static_spans(text):
            if start == 0 and end == len(text):
                hashed = replacement not in (self.r.mask, "")
                return int(self.r.pseudonym(number)) if hashed else 0
        return number

    def _key(self, key: str) -> str:
        # Keys are names far more often than data: a plain short name without digits or
        # '@' cannot hold an id, an address or a number, so it skips the pattern pass.
        if self.values and key in self.values:
            return self.values[key]
        if len(key) <= 32 and _PLAIN_KEY.fullmatch(key):
            return key
        return self.text(key)

    def string(self, text: str, depth: int) -> str:
        """A string of data: JSON in it is redacted as data, anything else as text."""
        if depth < _MAX_JSON_DEPTH:
            parsed = self._parse(text)
            if parsed is not None:
                redacted = self.rewrite_data(parsed, depth + 1)
                if redacted == parsed:
                    return text
                return json.dumps(redacted, ensure_ascii=False)
        return self.text(text)

    def text(self, text: str) -> str:
        if len(text) < 3:
            return self.values.get(text, text) if self.values else text
        spans = list(self.r.static_spans(text))
        if self.values and any(value in text for value in self.values):
            spans.extend(
                (m.start(), m.end(), 1, self.values[m.group(0)])
                for m in self._values_pattern().finditer(text)
            )
        return _apply(text, spans)

    def _values_pattern(self) -> re.Pattern[str]:
        if self._values_re is None:
            # Long values anywhere; short ones (and numbers) only as whole words.
            parts = []
            for value in sorted(self.values, key=len, reverse=True):
                escaped = re.escape(value)
                if len(value) >= 4 and not value.lstrip("-").replace(".", "").isdigit():
                    parts.append(escaped)
                else:
                    parts.append(rf"(?<![\w.]){escaped}(?![\w]|\.\d)")
            self._values_re = re.compile("|".join(parts))
        return self._values_re
