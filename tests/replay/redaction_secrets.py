"""Plant generated secrets of every class in every field of a trace, and look for them.

Shared by the redaction property tests and the redaction guarantees bench: one generator
(``plant_trace``) builds a trace full of secrets from a ``random.Random``, and ``leaks``
searches raw bytes for every planted secret in the encodings a store or an export could
hold it in (plain UTF-8, JSON-escaped ``\\uXXXX``, URL-encoded e-mail addresses).
``clean_trace_data`` and ``DATA_FIELDS`` place one secret at a time in each data field of
a trace that is otherwise clean.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from toolproof import Trace

SECRET = "property-secret"

#: The redaction the guide documents: hashed ids, hashed e-mails, masked phones, cards, keys.
DOCUMENTED_RULES: dict[str, Any] = {
    "fields": {"user_id": "hash", "order_id": "hash"},
    "patterns": {"email": "hash", "phone": "mask", "card": "mask", "api_key": "mask"},
}

_B62 = string.ascii_letters + string.digits
_URLSAFE = _B62 + "_-"


def _chars(rng: random.Random, alphabet: str, size: int) -> str:
    """Random characters with at least one digit, as every real key has."""
    text = "".join(rng.choice(alphabet) for _ in range(size))
    spot = rng.randrange(size)
    return text[:spot] + rng.choice(string.digits) + text[spot + 1 :]


def email(rng: random.Random, variant: int = 0) -> str:
    kind = variant % 4
    tld = rng.choice(["com", "org", "co.uk", "io", "dev"])
    if kind == 0:  # ASCII
        local = rng.choice(string.ascii_lowercase) + "".join(
            rng.choice(string.ascii_lowercase + string.digits + "._+-") for _ in range(8)
        )
        host = rng.choice(["example", "mail-host", "corp"])
        return f"{local.rstrip('.')}x@{host}{rng.randrange(99)}.{tld}"
    if kind == 1:  # non-ASCII local part
        local = rng.choice(["josé", "müller", "søren", "zoë", "ľubica"]) + str(rng.randrange(999))
        return f"{local}@example{rng.randrange(99)}.{tld}"
    if kind == 2:  # IDN domain
        local = "".join(rng.choice(string.ascii_lowercase) for _ in range(6))
        domain = rng.choice(["exämple", "bücher", "münchen-shop", "ñandú"])
        return f"{local}@{domain}{rng.randrange(99)}.{tld}"
    local = rng.choice(["用户", "测试", "ユーザー", "사용자"]) + str(rng.randrange(999))
    host = rng.choice(["例子", "测试", "実例"])
    return f"{local}@{host}{rng.randrange(9)}.{rng.choice(['中国', '公司', 'com'])}"


def phone(rng: random.Random, variant: int = 0) -> str:
    kind = variant % 7
    area = f"{rng.randrange(2, 10)}{rng.randrange(10)}{rng.randrange(10)}"
    exchange = f"{rng.randrange(2, 10)}{rng.randrange(10)}{rng.randrange(10)}"
    line = f"{rng.randrange(10_000):04d}"
    if kind == 0:  # E.164
        return f"+1{area}{exchange}{line}"
    if kind == 1:
        return f"+{rng.choice(['44', '49', '33', '86', '91'])}{rng.randrange(10**9, 10**10)}"
    if kind == 2:  # CN mobile
        return f"1{rng.randrange(3, 10)}{rng.randrange(10**9):09d}"
    if kind == 3:  # US, ten digits
        return f"{area}{exchange}{line}"
    if kind == 4:
        return f"+1 ({area}) {exchange}-{line}"
    if kind == 5:
        return f"{area}-{exchange}-{line}"
    return f"+86 13{rng.randrange(10)} {rng.randrange(10_000):04d} {rng.randrange(10_000):04d}"


def card(rng: random.Random, variant: int = 0) -> str:
    digits = [rng.choice([4, 5]), *(rng.randrange(10) for _ in range(14))]
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2 == 0:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    digits.append((10 - total % 10) % 10)
    text = "".join(map(str, digits))
    style = variant % 3
    if style == 0:
        return text
    sep = " " if style == 1 else "-"
    return sep.join(text[i : i + 4] for i in range(0, 16, 4))


def api_key(rng: random.Random, variant: int = 0) -> str:
    kind = variant % 9
    if kind == 0:
        return "sk-proj-" + _chars(rng, _URLSAFE, 120)
    if kind == 1:
        return "sk-ant-api03-" + _chars(rng, _URLSAFE, 93) + "AA"
    if kind == 2:  # an underscore, then a dash
        return (
            f"sk-svcacct-{_chars(rng, _B62, 8)}_{_chars(rng, _B62, 6)}-{_chars(rng, _URLSAFE, 40)}"
        )
    if kind == 3:
        return "sk-" + _chars(rng, _B62, 48)
    if kind == 4:
        return "ghp_" + _chars(rng, _B62, 36)
    if kind == 5:
        return "github_pat_" + _chars(rng, _B62 + "_", 82)
    if kind == 6:
        return "AKIA" + _chars(rng, string.ascii_uppercase + string.digits, 16)
    if kind == 7:
        return (
            "xoxb-"
            + "-".join(_chars(rng, string.digits, 12) for _ in range(2))
            + "-"
            + _chars(rng, _B62, 24)
        )
    return "sk_live_" + _chars(rng, _B62, 32)


def hashed_value(rng: random.Random) -> str:
    return "Z" + "".join(rng.choice(_B62) for _ in range(rng.randrange(10, 17)))


GENERATORS: dict[str, Callable[[random.Random, int], str]] = {
    "email": email,
    "phone": phone,
    "card": card,
    "api_key": api_key,
}


@dataclass
class Planted:
    """The secrets planted in one trace, by class."""

    by_class: dict[str, list[str]] = field(default_factory=dict)

    def add(self, kind: str, value: str) -> str:
        self.by_class.setdefault(kind, []).append(value)
        return value

    @property
    def count(self) -> int:
        return sum(len(values) for values in self.by_class.values())


_BEFORE = [" ", ": ", " (", "\n", "=", " <", "\t"]
_AFTER = [" ", ", ", ").", "\n", ";", "> ", " "]


class _Planter:
    def __init__(self, rng: random.Random, planted: Planted) -> None:
        self.rng = rng
        self.planted = planted
        self.made = 0
        self.offset = rng.randrange(1000)

    def secret(self, kind: str | None = None) -> str:
        """The next secret: classes and their forms take turns, from a random start."""
        self.made += 1
        kinds = list(GENERATORS)
        kind = kind or kinds[(self.made + self.offset) % len(kinds)]
        variant = self.made // len(kinds) + self.offset
        return self.planted.add(kind, GENERATORS[kind](self.rng, variant))

    def text(self, count: int = 2) -> str:
        """Free text with ``count`` secrets between words."""
        rng = self.rng
        parts = [rng.choice(["Please check", "Result for", "note", "Hi"])]
        for _ in range(count):
            value = self.secret()
            if "@" in value and rng.random() < 0.3 and value.split("@")[1].isascii():
                value = "https://crm.test/lookup?email=" + quote(value, safe="")
            parts.append(rng.choice(_BEFORE) + value + rng.choice(_AFTER))
            parts.append(rng.choice(["and then", "thanks", "ok", "see"]))
        return "".join(parts)

    def user(self) -> str:
        return self.planted.add("hashed", hashed_value(self.rng))

    def data(self, depth: int) -> dict[str, Any]:
        """A JSON object with hashed ids and secrets; JSON inside strings ``depth`` deep."""
        rng = self.rng
        value: dict[str, Any] = {
            "user_id": self.user(),
            "note": self.text(1),
            "items": [{"order_id": self.user(), "contact": self.secret()}],
        }
        for level in range(depth):
            wrapped = json.dumps(value, ensure_ascii=rng.random() < 0.5)
            value = {f"payload{level}": wrapped, "kind": "encoded", "user_id": self.user()}
        return value


def plant_trace(rng: random.Random, index: int = 0) -> tuple[Trace, Planted]:
    """A trace with generated secrets in every field that holds data."""
    planted = Planted()
    p = _Planter(rng, planted)

    def depth() -> int:
        return rng.randrange(1, 4)

    args = {"user_id": p.user(), "query": p.text(1), "filters": p.data(depth())}
    result_value = p.data(depth())
    content = json.dumps(result_value, ensure_ascii=rng.random() < 0.5)
    text_result = "lookup log: " + p.text(2) + " raw=" + json.dumps(p.data(depth()))
    data: dict[str, Any] = {
        "id": f"plant-{index:06d}",
        "version": 1,
        "input": p.text(2) + f" my id is {args['user_id']}",
        "system_prompt": "Serve the user. " + p.text(1),
        "history": [
            {"role": "user", "content": p.text(2)},
            {
                "role": "assistant",
                "content": p.text(1),
                "reasoning": p.text(1),
                "tool_calls": [
                    {
                        "id": "call_h1",
                        "name": "lookup",
                        "arguments": {"user_id": p.user(), "note": p.text(1)},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call_h1",
                "name": "lookup",
                "content": json.dumps(p.data(depth())),
                "status": "ok",
            },
        ],
        "model": "scripted",
        "settings": {"extra": {"user": p.secret(), "stop": [p.text(1)]}},
        "steps": [
            {
                "index": 1,
                "request": {"message_count": 2},
                "response": {
                    "role": "assistant",
                    "content": p.text(1),
                    "reasoning": p.text(1),
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "name": "lookup",
                            "arguments": args,
                            "raw_arguments": json.dumps(args),
                        },
                        {
                            "id": "call_2",
                            "name": "lookup",
                            "arguments": {},
                            "raw_arguments": '{"user_id": "' + p.user() + '", ' + p.text(1),
                            "arguments_error": "invalid JSON near " + p.text(1),
                        },
                    ],
                },
                "tool_results": [
                    {
                        "call_id": "call_1",
                        "name": "lookup",
                        "status": "ok",
                        "content": content,
                        "value": result_value,
                    },
                    {
                        "call_id": "call_2",
                        "name": "lookup",
                        "status": "error",
                        "content": text_result,
                        "error_type": "ValueError",
                    },
                ],
                "parse_errors": [p.text(1)],
            }
        ],
        "output": p.text(2),
        "stop_reason": "error",
        "stop_detail": p.text(1),
        "error": {"type": "RuntimeError", "message": p.text(2), "tool_name": "lookup"},
        "metadata": {
            "user_id": p.user(),
            "customer": {"email": p.secret("email"), "profile": p.data(depth())},
            "raw": json.dumps(p.data(depth())),
            "note": p.text(1),
        },
        "tags": [p.text(1), "prod"],
    }
    return Trace.from_dict(data), planted


def encodings(kind: str, value: str) -> list[bytes]:
    """The byte forms a planted secret could take in a store file or an export."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    if kind == "email":
        forms.add(quote(value, safe=""))
        forms.add(quote(value, safe="@"))
    return [form.encode() for form in forms]


def leaks(planted: Planted, *blobs: bytes) -> list[tuple[str, str]]:
    """Every planted secret found in ``blobs``, as (class, secret)."""
    found = []
    for kind, values in planted.by_class.items():
        for value in values:
            if any(form in blob for form in encodings(kind, value) for blob in blobs):
                found.append((kind, value))
    return found


def merge(items: list[Planted]) -> Planted:
    out = Planted()
    for item in items:
        for kind, values in item.by_class.items():
            out.by_class.setdefault(kind, []).extend(values)
    return out


# -- one data field at a time ----------------------------------------------------------------

CLEAN_VALUE = {"user_id": 7, "plan": "pro"}


def clean_trace_data() -> dict[str, Any]:
    """A trace with every kind of object and a value in every data field, nothing secret."""
    args = {"user_id": 7, "fields": ["plan"]}
    call = {
        "id": "c1",
        "name": "lookup",
        "arguments": args,
        "raw_arguments": json.dumps(args),
        "arguments_error": "no error here",
    }
    message = {"role": "assistant", "content": "Looking it up.", "reasoning": "a lookup"}
    return {
        "id": "keep-1",
        "version": 1,
        "input": "Who is user 7?",
        "system_prompt": "Serve the user.",
        "history": [{"role": "user", "content": "hello"}, {**message, "tool_calls": [call]}],
        "settings": {"temperature_note": "default"},
        "steps": [
            {
                "index": 1,
                "request": {"message_count": 2},
                "response": {**message, "tool_calls": [json.loads(json.dumps(call))]},
                "tool_results": [
                    {
                        "call_id": "c1",
                        "name": "lookup",
                        "status": "ok",
                        "content": json.dumps(CLEAN_VALUE),
                        "value": dict(CLEAN_VALUE),
                    }
                ],
                "parse_errors": ["nothing to see"],
            }
        ],
        "output": "User 7 is on pro.",
        "stop_reason": "error",
        "stop_detail": "stopped for a test",
        "error": {"type": "RuntimeError", "message": "it broke", "tool_name": "lookup"},
        "metadata": {"region": "eu"},
        "tags": ["prod"],
        "tools": [
            {
                "name": "lookup",
                "description": "Look a user up.",
                "parameters": {"type": "object", "properties": {"user_id": {"type": "integer"}}},
                "schema_hash": "kept",
            }
        ],
    }


# Every data field of the trace classes, where it sits in the plain data.
DATA_FIELDS: list[tuple[str, ...]] = [
    ("input",),
    ("system_prompt",),
    ("settings",),
    ("output",),
    ("stop_detail",),
    ("metadata",),
    ("tags",),
    ("error", "message"),
    ("history", 0, "content"),
    ("history", 1, "reasoning"),
    ("history", 1, "tool_calls", 0, "arguments"),
    ("history", 1, "tool_calls", 0, "raw_arguments"),
    ("history", 1, "tool_calls", 0, "arguments_error"),
    ("steps", 0, "parse_errors"),
    ("steps", 0, "response", "content"),
    ("steps", 0, "response", "reasoning"),
    ("steps", 0, "response", "tool_calls", 0, "arguments"),
    ("steps", 0, "response", "tool_calls", 0, "raw_arguments"),
    ("steps", 0, "response", "tool_calls", 0, "arguments_error"),
    ("steps", 0, "tool_results", 0, "content"),
    ("steps", 0, "tool_results", 0, "value"),
    ("tools", 0, "description"),
]


def put(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    node: Any = data
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
