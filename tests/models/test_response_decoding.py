"""Response bodies and tool-call arguments are read by pydantic-core, with ``json`` behind it.

pydantic-core reads what it can; what it refuses (lone surrogates, deep nesting, bytes that
are not UTF-8, ``NaN`` in arguments, invalid JSON) goes to ``json``, which reads it as it
always did or says why it cannot. These tests try to make the two readings differ: generated
completions with hostile values in every field, written with and without escapes, and
hostile bodies (deep, huge, cut off, wrong types), each within a time bound; the outcome
(the response, or the error and its message) must be what ``json`` alone gives.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof._messages import Message, ToolCall
from toolproof.errors import ToolproofError
from toolproof.models import OpenAIChatModel
from toolproof.models import _openai_wire as wire_module
from toolproof.models import openai as openai_module

MODEL = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1")
MESSAGES = [Message.user("hi")]

_text = st.text(max_size=12)  # lone surrogates included
_numbers = (
    st.integers()
    | st.integers(min_value=10**300, max_value=10**310)
    | st.floats()
    | st.sampled_from([1e308, -0.0, 5e-324, 0.1, 1 / 3])
)
_json = st.recursive(
    st.none() | st.booleans() | _numbers | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=10,
)
_arguments = st.one_of(
    _json.map(lambda v: json.dumps(v, ensure_ascii=False)),
    st.dictionaries(_text, _json, max_size=4).map(json.dumps),
    st.sampled_from(
        [
            '{"a": 12, "b": 8}',
            '{"a": NaN}',
            '{"a": Infinity}',
            '{"a": 1e400}',
            '{"a": "\\ud800"}',
            '{"a": 1, "a": 2}',
            '\ufeff{"a": 1}',
            " {} ",
            "",
            "   ",
            '{"a": ' + "9" * 5000 + "}",
            '{"a": ' + "[" * 300 + "]" * 300 + "}",
            '{"a": 0.1000000000000000055511151231257827021181583404541015625}',
            '{"a": 12, "b": 8} trailing',
        ]
    ),
    _text,
)
_tool_call = st.fixed_dictionaries(
    {},
    optional={
        "id": _json | _text,
        "type": st.just("function") | _json,
        "function": st.fixed_dictionaries(
            {}, optional={"name": _text | _json, "arguments": _arguments | _json}
        )
        | _json,
    },
)
_message = st.fixed_dictionaries(
    {},
    optional={
        "role": st.just("assistant") | _json,
        "content": _text | _json,
        "tool_calls": st.lists(_tool_call | _json, max_size=3) | _json,
        "reasoning_content": _text | _json,
        "refusal": _text | _json,
    },
)
_usage = st.fixed_dictionaries(
    {},
    optional={
        "prompt_tokens": st.integers(0, 10**6) | _json,
        "completion_tokens": st.integers(0, 10**6) | _json,
        "total_tokens": _json,
        "prompt_tokens_details": st.dictionaries(_text, _json, max_size=2) | _json,
    },
)
_completion = st.fixed_dictionaries(
    {},
    optional={
        "model": _text | _json,
        "choices": st.lists(
            st.fixed_dictionaries(
                {}, optional={"message": _message | _json, "finish_reason": _text | _json}
            )
            | _json,
            max_size=2,
        )
        | _json,
        "usage": _usage | _json,
        "error": _json,
    },
)


def _outcome(raw: bytes) -> Any:
    """The response, or the error and its message: what the adapter makes of ``raw``."""
    try:
        return MODEL._parse_completion(raw, MESSAGES)
    except ToolproofError as exc:
        return type(exc), str(exc)


def _with_json_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_module, "_decode", lambda raw: None)
    monkeypatch.setattr(wire_module, "_decode_object", lambda text: None)


def _same(a: Any, b: Any) -> bool:
    """Equal, counting NaN equal to NaN (a model name may be one)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b) or repr(a) == repr(b)


def _encodings(body: Any) -> list[bytes]:
    out = []
    for ascii_only in (True, False):
        try:
            text = json.dumps(body, ensure_ascii=ascii_only)
        except ValueError:  # pragma: no cover - json writes every generated value
            continue
        out.append(text.encode("utf-8", "surrogatepass"))
    return out


@pytest.mark.timeout(300)
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(body=_completion)
def test_a_generated_completion_reads_as_json_alone_reads_it(
    body: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for raw in _encodings(body):
        fast = _outcome(raw)
        with monkeypatch.context() as patch:
            _with_json_only(patch)
            slow = _outcome(raw)
        assert _same(fast, slow), (raw[:300], fast, slow)


@pytest.mark.timeout(300)
@settings(max_examples=300, deadline=None)
@given(arguments=_arguments, name=_text, call_id=_text)
def test_generated_tool_call_arguments_read_as_json_alone_reads_them(
    arguments: str, name: str, call_id: str
) -> None:
    call = wire_module.decode_tool_call(
        {"id": call_id, "function": {"name": name, "arguments": arguments}}, 0
    )
    expected = ToolCall.from_json_arguments(name, arguments, call_id or "call_0")
    assert call == expected, (arguments, call, expected)


_DEEP = 100_000
_HOSTILE = {
    "deep-list": b'{"choices": ' + b"[" * _DEEP + b"]" * _DEEP + b"}",
    "deep-object": b'{"choices": [{"message": ' + b'{"a":' * _DEEP + b"1" + b"}" * _DEEP + b"}]}",
    "huge-integer": b'{"choices": [], "usage": {"prompt_tokens": ' + b"9" * 5000 + b"}}",
    "huge-count": b'{"choices": [{"message": {"content": "x"}}], '
    b'"usage": {"prompt_tokens": 99999999999999999999999}}',
    "huge-string": b'{"choices": [{"message": {"content": "' + b"x" * 5_000_000 + b'"}}]}',
    "many-calls": json.dumps(
        {
            "choices": [
                {
                    "message": {
                        "tool_calls": [
                            {"id": str(i), "function": {"name": "f", "arguments": "{}"}}
                            for i in range(20_000)
                        ]
                    }
                }
            ]
        }
    ).encode(),
    "cut-off": b'{"choices": [{"message": {"content": "x',
    "lone-surrogate-escape": b'{"choices": [{"message": {"content": "\\udc00"}}]}',
    "surrogate-bytes": b'{"choices": [{"message": {"content": "\xed\xb0\x80"}}]}',
    "invalid-utf-8": b'{"choices": [{"message": {"content": "\xff\xfe"}}]}',
    "nan-count": b'{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": NaN}}',
    "wrong-types": b'{"choices": [{"message": {"content": 5, "tool_calls": {"a": 1}}, '
    b'"finish_reason": [1]}], "model": {"x": 1}, "usage": [1, 2]}',
    "arguments-object": b'{"choices": [{"message": {"tool_calls": [{"function": '
    b'{"name": 5, "arguments": {"a": [1, {"b": null}]}}}]}}]}',
    "trailing-garbage": b'{"choices": []} {"choices": []}',
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(_HOSTILE))
def test_a_hostile_body_reads_as_json_alone_reads_it_and_quickly(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = _HOSTILE[name]
    fast = _outcome(raw)
    _with_json_only(monkeypatch)
    assert _same(fast, _outcome(raw))


_ODD = [True, False, 5, -1.5, "call", {}, {"0": {"function": {"name": "f"}}}, [None, 3, "x"]]


@pytest.mark.parametrize("field", ["tool_calls", "content", "refusal", "reasoning_content"])
@pytest.mark.parametrize("value", _ODD, ids=repr)
def test_a_message_field_of_any_type_is_read_or_refused_never_a_crash(
    field: str, value: Any
) -> None:
    """A message field of a type the API never sends gives an answer or a clear error."""
    raw = json.dumps({"choices": [{"message": {field: value}}]}).encode()
    outcome = _outcome(raw)  # a ToolproofError is returned; anything else raises here
    if not isinstance(outcome, tuple):
        assert all(call.name for call in outcome.message.tool_calls)
