"""Redaction: sensitive values are removed from a trace before anything is written.

Two kinds of rules:

- **Field rules** name keys (``user_id``, ``*_token``; case-insensitive, ``*`` and ``?``
  wildcards) at any depth of tool arguments, tool return values, tool results written as
  JSON text, and trace metadata.
- **Pattern rules** find values in any text: e-mail addresses, phone numbers, payment card
  numbers (Luhn-checked), API-key-like tokens, and your own regular expressions.

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


def _luhn(text: str) -> bool:
    digits = [int(ch) for ch in text if ch.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def _enough_phone_digits(text: str) -> bool:
    return 9 <= sum(ch.isdigit() for ch in text) <= 15


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


#: The built-in patterns by name: ``email``, ``phone``, ``card`` and ``api_key``.
BUILTIN_PATTERNS: dict[str, tuple[str, Callable[[str], bool] | None]] = {
    "api_key": (
        r"\b(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{16,}"
        r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
        r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
        r"|\bAKIA[0-9A-Z]{16}\b"
        r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"
        r"|\bAIza[0-9A-Za-z_-]{35}"
        r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
        r"|(?i:bearer)\s+[A-Za-z0-9._~+/=-]{16,}",
        None,
    ),
    "email": (r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}", None),
    "card": (r"(?<!\d)(?<!\d\.)\d(?:[ -]?\d){12,18}(?!\d|\.\d)", _luhn),
    "phone": (
        r"(?<![\w+])\+\d{9,15}(?!\w)"
        r"|(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)[ .-]?|\d{2,4}[ .-])"
        r"\d{3,4}[ .-]?\d{3,4}(?!\w)",
        _enough_phone_digits,
    ),
}

_DEFAULT_PATTERNS: dict[str, Action] = {
    "api_key": "mask",
    "email": "mask",
    "card": "mask",
    "phone": "mask",
}

_JSON_START = ("{", "[")
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
        self._text_cache: dict[str, str] = {}
        self._cached_chars = 0
        self._patterns: re.Pattern[str] | None = None
        if self.pattern_rules:
            parts = []
            for index, rule in enumerate(self.pattern_rules):
                try:
                    re.compile(rule.regex)
                except re.error as exc:
                    raise ConfigError(
                        f"redaction pattern {rule.name!r}: invalid regular expression ({exc})"
                    ) from exc
                parts.append(f"(?P<p{index}>{rule.regex})")
            self._patterns = re.compile("|".join(parts))
        # `user_id=123`, `"user_id": "abc"` in free text.
        self._key_value: re.Pattern[str] | None = None
        if self.field_rules:
            names = "|".join(_glob_regex(rule.name) for rule in self.field_rules)
            self._key_value = re.compile(
                rf"(?i)(?<![\w])((?:{names}))([\"']?\s*[:=]\s*[\"']?)([^\s\"',;}}&)\]]+)"
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
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping of redaction settings, got {data!r}")
        known = {"secret_env", "mask", "default_fields", "fields", "patterns", "custom"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; "
                f"valid keys: {', '.join(sorted(known))}"
            )
        fields = data.get("fields") or {}
        if isinstance(fields, list):
            fields = {str(name): "mask" for name in fields}
        if not isinstance(fields, Mapping):
            raise ConfigError(f"{where}.fields: expected a mapping of field name to action")
        patterns = data.get("patterns")
        if isinstance(patterns, list):
            patterns = {str(name): "mask" for name in patterns}
        if patterns is not None and not isinstance(patterns, Mapping):
            raise ConfigError(f"{where}.patterns: expected a mapping of pattern name to action")
        custom: list[PatternRule] = []
        for index, item in enumerate(data.get("custom") or []):
            if not isinstance(item, Mapping) or "regex" not in item:
                raise ConfigError(
                    f"{where}.custom[{index}]: expected {{name: ..., regex: ..., action: ...}}"
                )
            custom.append(
                PatternRule(
                    str(item.get("name") or f"custom{index}"),
                    str(item["regex"]),
                    _action(item.get("action", "mask"), f"{where}.custom[{index}].action"),
                )
            )
        secret_env = str(data.get("secret_env") or SECRET_ENV)
        mask = data.get("mask", "***")
        if not isinstance(mask, str):
            raise ConfigError(f"{where}.mask: expected text, got {mask!r}")
        try:
            return cls(
                {str(k): _action(v, f"{where}.fields.{k}") for k, v in fields.items()},
                patterns,
                custom,
                secret=os.environ.get(secret_env) or None,
                mask=mask,
                default_fields=bool(data.get("default_fields", True)),
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
        """Redact a trace in its plain form (``Trace.to_dict()``); returns a new dict."""
        if not self.enabled:
            return data
        job = _Job(self)
        job.collect_trace(data)
        return job.trace(data)

    def redact_many(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Redact traces of one conversation together (``Trace.to_dict()`` forms).

        A value found under a sensitive field in any of them is removed from all of them,
        so a user id the user typed in turn 1 goes even when only turn 3 passed it to a tool.
        """
        if not self.enabled:
            return items
        job = _Job(self)
        for data in items:
            job.collect_trace(data)
        return [job.trace(data) for data in items]

    def redact_value(self, value: Any) -> Any:
        """Redact one JSON-like value (a tool call's arguments, a result)."""
        if not self.enabled:
            return value
        job = _Job(self)
        job.collect(value)
        return job.value(value)

    def redact_text(self, text: str) -> str:
        """Redact patterns in one text."""
        if not self.enabled:
            return text
        return _Job(self).text(text)

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

    def static_text(self, text: str) -> str:
        """Apply the pattern and ``key=value`` rules to one text (cached)."""
        cached = self._text_cache.get(text)
        if cached is not None:
            return cached
        out = text
        if self._key_value is not None:
            out = self._key_value.sub(self._key_value_match, out)
        if self._patterns is not None:
            out = self._patterns.sub(self._pattern_match, out)
        if len(text) >= 8:
            self._cached_chars += len(text) + len(out)
            if self._cached_chars > _TEXT_CACHE_CHARS:
                self._text_cache.clear()
                self._cached_chars = len(text) + len(out)
            self._text_cache[text] = out
        return out

    def _key_value_match(self, match: re.Match[str]) -> str:
        key, sep, value = match.group(1), match.group(2), match.group(3)
        action = self.field_action(key)
        if action is None or value == self.mask:
            return match.group(0)
        if action == "hash":
            return f"{key}{sep}{self.pseudonym(_number_or_text(value))}"
        return f"{key}{sep}{self.mask}"

    def _pattern_match(self, match: re.Match[str]) -> str:
        name = match.lastgroup
        if name is None:  # pragma: no cover - every alternative is a named group
            return match.group(0)
        rule = self.pattern_rules[int(name[1:])]
        found = match.group(0)
        if rule.check is not None and not rule.check(found):
            return found
        replacement = self.replacement(found, rule.action, rule.name)
        return "" if replacement is _DROP else str(replacement)


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


class _Job:
    """One redaction: first collect sensitive field values, then rewrite everything."""

    def __init__(self, redactor: Redactor) -> None:
        self.r = redactor
        self.values: dict[str, str] = {}  # sensitive text -> its replacement in free text
        self.parsed: dict[str, Any] = {}  # JSON texts parsed during collection
        self._values_re: re.Pattern[str] | None = None
        self._values_ready = False

    # -- phase 1: collect values under sensitive fields -------------------------------------

    def collect_trace(self, data: Mapping[str, Any]) -> None:
        self.collect(data.get("metadata"))
        self.collect(data.get("settings"))
        for message in data.get("history") or ():
            self._collect_message(message)
        for step in data.get("steps") or ():
            self._collect_message(step.get("response") or {})
            for result in step.get("tool_results") or ():
                self.collect(result.get("value"))
                self._collect_json_text(result.get("content"))

    def _collect_message(self, message: Mapping[str, Any]) -> None:
        for call in message.get("tool_calls") or ():
            self.collect(call.get("arguments"))
            self._collect_json_text(call.get("raw_arguments"))
        if message.get("role") == "tool":
            self._collect_json_text(message.get("content"))

    def _collect_json_text(self, text: Any) -> None:
        parsed = self._parse(text)
        if parsed is not None:
            self.collect(parsed)

    def _parse(self, text: Any) -> Any:
        if not isinstance(text, str) or not text.startswith(_JSON_START):
            return None
        if text in self.parsed:
            return self.parsed[text]
        from pydantic_core import from_json

        try:
            parsed = from_json(text)
        except ValueError:
            parsed = None
        if not isinstance(parsed, (dict, list)):
            parsed = None
        self.parsed[text] = parsed
        return parsed

    def collect(self, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                action = self.r.field_action(str(key))
                if action is not None:
                    self._remember(item, action)
                else:
                    self.collect(item)
        elif isinstance(value, list):
            for item in value:
                self.collect(item)

    def _remember(self, value: Any, action: Action) -> None:
        if isinstance(value, dict):
            for item in value.values():
                self._remember(item, action)
        elif isinstance(value, list):
            for item in value:
                self._remember(item, action)
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            text = value if isinstance(value, str) else json.dumps(value)
            if text and text not in self.values:
                replacement = self.r.replacement(value, action)
                # a dropped field's value is masked where it appears in free text
                self.values[text] = self.r.mask if replacement is _DROP else str(replacement)
                if isinstance(value, str):
                    # the same value as JSON text inside a string (escaped quotes, unicode)
                    encoded = json.dumps(value)[1:-1]
                    if encoded != value:
                        self.values.setdefault(encoded, self.values[text])

    # -- phase 2: rewrite ---------------------------------------------------------------------

    def trace(self, data: dict[str, Any]) -> dict[str, Any]:
        out = dict(data)
        for key in ("input", "output", "system_prompt", "stop_detail"):
            if isinstance(out.get(key), str):
                out[key] = self.text(out[key])
        if out.get("history"):
            out["history"] = [self._message(m) for m in out["history"]]
        if out.get("steps"):
            out["steps"] = [self._step(s) for s in out["steps"]]
        error = out.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            out["error"] = {**error, "message": self.text(error["message"])}
        for key in ("metadata", "settings"):
            if out.get(key):
                out[key] = self.value(out[key])
        if out.get("tags"):
            out["tags"] = [self.text(tag) for tag in out["tags"]]
        return out

    def _step(self, step: dict[str, Any]) -> dict[str, Any]:
        out = dict(step)
        if step.get("response"):
            out["response"] = self._message(step["response"])
        if step.get("tool_results"):
            out["tool_results"] = [self._result(r) for r in step["tool_results"]]
        if step.get("parse_errors"):
            out["parse_errors"] = [self.text(e) for e in step["parse_errors"]]
        return out

    def _message(self, message: dict[str, Any]) -> dict[str, Any]:
        out = dict(message)
        if isinstance(out.get("content"), str):
            out["content"] = self.json_or_text(out["content"])
        if isinstance(out.get("reasoning"), str):
            out["reasoning"] = self.text(out["reasoning"])
        if out.get("tool_calls"):
            out["tool_calls"] = [self._call(c) for c in out["tool_calls"]]
        return out

    def _call(self, call: dict[str, Any]) -> dict[str, Any]:
        out = dict(call)
        arguments = call.get("arguments")
        if isinstance(arguments, dict):
            out["arguments"] = self.value(arguments)
        raw = call.get("raw_arguments")
        if isinstance(raw, str):
            if call.get("arguments_error") is None and isinstance(arguments, dict) and raw.strip():
                if out["arguments"] != arguments:
                    out["raw_arguments"] = json.dumps(out["arguments"], ensure_ascii=False)
            else:
                out["raw_arguments"] = self.text(raw)
        if isinstance(call.get("arguments_error"), str):
            out["arguments_error"] = self.text(call["arguments_error"])
        return out

    def _result(self, result: dict[str, Any]) -> dict[str, Any]:
        out = dict(result)
        value = result.get("value")
        content = result.get("content")
        if value is not None:
            out["value"] = self.value(value)
        if isinstance(content, str):
            parsed = self._parse(content)
            if parsed is not None and value is not None and parsed == value:
                # the usual case: the content is the value as JSON; redact it once
                if out["value"] != value:
                    out["content"] = json.dumps(out["value"], ensure_ascii=False)
            else:
                out["content"] = self.json_or_text(content)
        return out

    def json_or_text(self, text: str) -> str:
        parsed = self._parse(text)
        if parsed is None:
            return self.text(text)
        redacted = self.value(parsed)
        return text if redacted == parsed else json.dumps(redacted, ensure_ascii=False)

    def value(self, value: Any) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                action = self.r.field_action(str(key))
                name = self._key(key) if isinstance(key, str) else key
                if action is None:
                    out[name] = self.value(item)
                elif action != "drop":
                    out[name] = self._field_value(item, action)
            return out
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def _field_value(self, value: Any, action: Action) -> Any:
        if isinstance(value, dict):
            return {k: self._field_value(v, action) for k, v in value.items()}
        if isinstance(value, list):
            return [self._field_value(v, action) for v in value]
        return self.r.replacement(value, action)

    def _key(self, key: str) -> str:
        # Keys are names far more often than data: a plain short name without digits or
        # '@' cannot hold an id, an address or a number, so it skips the pattern pass.
        if self.values and key in self.values:
            return self.values[key]
        if len(key) <= 32 and _PLAIN_KEY.fullmatch(key):
            return key
        return self.text(key)

    def text(self, text: str) -> str:
        if len(text) < 3:
            return self.values.get(text, text) if self.values else text
        text = self.r.static_text(text)
        if self.values and any(value in text for value in self.values):
            text = self._values_pattern().sub(lambda m: self.values[m.group(0)], text)
        return text

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


def _number_or_text(text: str) -> Any:
    if text.lstrip("-").isdigit():
        return int(text)
    return text
