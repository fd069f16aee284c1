"""Redaction: sensitive values are removed from a trace before anything is written.

Two kinds of rules:

One walker redacts every string of a trace (``Walk``, in ``_redact_walk.py``; the patterns
and rule types are in ``_redact_patterns.py``): every field of every message, tool
call, tool result, the metadata, tags, error and stop texts, at any depth, and JSON found
inside strings at any depth (parsed, redacted, written back as valid JSON). Only the
structural fields of the trace format (ids, roles, statuses, times, tool names, counts: see
``_redact_walk.TRACE``) are kept as they are, so a field added to the format later is redacted.

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
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from toolproof._trace import Trace
from toolproof.errors import ConfigError
from toolproof.replay._redact_patterns import (
    BUILTIN_PATTERNS,
    DEFAULT_FIELDS,
    DEFAULT_PATTERNS,
    DROP,
    EMAIL,
    HINTS,
    SECRET_ENV,
    Action,
    FieldRule,
    PatternRule,
    Span,
    _action,
    _priority,
    apply,
    canonical,
    glob_regex,
    number_or_text,
)
from toolproof.replay._redact_walk import DATA, TRACE, Walk
from toolproof.replay._redact_walk import (
    STRUCTURAL_FIELDS as STRUCTURAL_FIELDS,  # (listed in the guide)
)

__all__ = [
    "BUILTIN_PATTERNS",
    "DEFAULT_FIELDS",
    "SECRET_ENV",
    "Action",
    "FieldRule",
    "PatternRule",
    "Redactor",
]

_TEXT_CACHE_CHARS = 8_000_000


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
        field_rules = _field_rules(fields, default_fields)
        pattern_rules = _pattern_rules(patterns, custom_patterns)
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
        self._span_cache: dict[str, tuple[Span, ...]] = {}
        self._cached_chars = 0
        self._one_pass: Any = None  # what the recorder's walks of trace objects learnt
        compiled: list[tuple[PatternRule, re.Pattern[str], Callable[[str], bool] | None]] = []
        for rule in self.pattern_rules:
            try:
                compiled_rule = re.compile(rule.regex)
            except re.error as exc:
                raise ConfigError(
                    f"redaction pattern {rule.name!r}: invalid regular expression ({exc})"
                ) from exc
            builtin = BUILTIN_PATTERNS.get(rule.name)
            hint = HINTS.get(rule.name) if builtin and builtin[0] == rule.regex else None
            compiled.append((rule, compiled_rule, hint))
        self._compiled = tuple(compiled)
        # `user_id=123`, `"user_id": "abc"`, `\"user_id\": \"abc\"` in free text.
        self._key_value: re.Pattern[str] | None = None
        if self.field_rules:
            # A name may follow a dot (`params.user_id=5`); a name with a `*` wildcard may
            # not, or each dot of `a.b.c...` would start a new scan of the whole run.
            plain = [glob_regex(r.name) for r in self.field_rules if "*" not in r.name]
            wild = [glob_regex(r.name) for r in self.field_rules if "*" in r.name]
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

        rules = parse_redaction(data, where)
        secret_env = str(rules.secret_env) if rules.secret_env else SECRET_ENV
        custom = [
            PatternRule(str(item.name or f"custom{index}"), str(item.regex), item.action)
            for index, item in enumerate(rules.custom or [])
        ]
        try:
            return cls(
                {str(k): v for k, v in (rules.fields or {}).items()},
                rules.patterns,
                custom,
                secret=os.environ.get(secret_env) or None,
                mask=rules.mask,
                default_fields=bool(rules.default_fields),
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
        from toolproof._yaml import load_file

        path = Path(path)
        data = load_file(path, "redaction rules")
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
        digest = hmac.new(self._secret, canonical(value).encode(), hashlib.sha256).hexdigest()
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
        if label == "email" or EMAIL.fullmatch(str(value)):
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
        walk = Walk(self)
        walk.collect(data, TRACE)
        out: dict[str, Any] = walk.rewrite(data, TRACE)
        return out

    def redact_many(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Redact traces of one conversation together (``Trace.to_dict()`` forms).

        A value found under a sensitive field in any of them is removed from all of them,
        so a user id the user typed in turn 1 goes even when only turn 3 passed it to a tool.
        """
        if not self.enabled:
            return items
        walk = Walk(self)
        for data in items:
            walk.collect(data, TRACE)
        return [walk.rewrite(data, TRACE) for data in items]

    def redact_value(self, value: Any) -> Any:
        """Redact one JSON-like value (a tool call's arguments, a result)."""
        if not self.enabled:
            return value
        walk = Walk(self)
        walk.collect(value, DATA)
        return walk.rewrite(value, DATA)

    def redact_text(self, text: str) -> str:
        """Redact one text (patterns, ``key=value`` rules and JSON inside it)."""
        if not self.enabled:
            return text
        walk = Walk(self)
        walk.collect(text, DATA)
        out: str = walk.rewrite(text, DATA)
        return out

    def replacement(self, value: Any, action: Action, label: str = "anon") -> Any:
        """What replaces one sensitive scalar (``DROP`` for ``drop``)."""
        if action == "drop":
            return DROP
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

    def static_spans(self, text: str) -> tuple[Span, ...]:
        """Where the pattern and ``key=value`` rules match in ``text`` (cached).

        Each pattern runs separately over the original text, so one rule's near-miss (a
        number that fails the Luhn check) never hides another rule's match; overlapping
        matches are merged when the text is rebuilt.
        """
        cached = self._span_cache.get(text)
        if cached is not None:
            return cached
        spans: list[Span] = []
        if self._key_value is not None:
            for match in self._key_value.finditer(text):
                key = text[match.start() : match.start(1)]
                value = match.group(2)
                action = self.field_action(key)
                if action is None or value == self.mask:
                    continue
                if action == "hash":
                    replacement = str(self.pseudonym(number_or_text(value)))
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
                    text_for = seen[found] = "" if made is DROP else str(made)
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
        return apply(text, list(self.static_spans(text)))


def _field_rules(
    fields: Mapping[str, Action] | Iterable[str | FieldRule], default_fields: bool
) -> list[FieldRule]:
    """The field rules of :class:`Redactor`'s arguments, their actions checked."""
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
    return field_rules


def _pattern_rules(
    patterns: Mapping[str, Action] | Iterable[str] | None, custom_patterns: Iterable[PatternRule]
) -> list[PatternRule]:
    """The pattern rules of :class:`Redactor`'s arguments: built-ins by priority, then yours."""
    chosen: Mapping[str, Action]
    if patterns is None:
        chosen = DEFAULT_PATTERNS
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
    return pattern_rules
