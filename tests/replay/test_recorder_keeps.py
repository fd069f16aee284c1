"""The recorder's check that a trace holds nothing to redact, against the full walk.

Before rewriting a trace, the recorder's walk asks whether every data field of every
object would come back unchanged (``_ObjectWalk.keeps``); only then is the trace written as
it is. These tests try to make that answer wrong: one secret at a time in every data field
of every trace class (texts, containers, JSON inside strings, a mirrored text beside its
twin, a long integer), each after a clean trace has filled the caches with the same texts
around it, and objects of the wrong type. Each trace must come out exactly as the walk of
its plain data writes it (the oracle), and a trace with a secret never as the same object.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_core import to_json
from redaction_secrets import CLEAN_VALUE, DATA_FIELDS, clean_trace_data, put

from toolproof import Trace
from toolproof.replay import Redactor
from toolproof.replay._redact_trace import _PLANS, Unsupported, redact_trace_object

_EMAIL = "Reach me at jo.doe@example.com please"


def test_the_fields_above_are_every_data_field_of_the_trace_classes() -> None:
    names = {name for plan in _PLANS.values() for name, kind, _, _ in plan if kind == 0}
    assert names == {str(path[-1]) for path in DATA_FIELDS}


def _secret_for(path: tuple[Any, ...]) -> Any:
    name = path[-1]
    if name in ("settings", "metadata", "arguments"):
        return {"note": _EMAIL}
    if name in ("tags", "parse_errors"):
        return ["ok", _EMAIL]
    if name == "value":
        return {"user_id": 7, "contact": _EMAIL}
    if name in ("raw_arguments",):
        return json.dumps({"user_id": 7, "note": _EMAIL})
    return _EMAIL


def _oracle(trace: Trace) -> bytes:
    return to_json(Redactor().redact_data(trace.to_dict()))


def test_a_trace_with_nothing_to_redact_comes_back_as_itself() -> None:
    trace = Trace.from_dict(clean_trace_data())
    redactor = Redactor()
    assert redact_trace_object(redactor, trace) is trace
    assert redact_trace_object(redactor, trace) is trace  # and again, from the caches
    assert trace.to_json().encode() == _oracle(trace)


@pytest.mark.parametrize("path", DATA_FIELDS, ids=lambda path: ".".join(map(str, path)))
@pytest.mark.parametrize("secret", ["email", "sensitive key", "long number"])
def test_a_secret_in_any_one_data_field_is_redacted_after_clean_traces(
    path: tuple[Any, ...], secret: str
) -> None:
    redactor = Redactor()
    clean = Trace.from_dict(clean_trace_data())
    assert redact_trace_object(redactor, clean) is clean  # the caches hold its texts now
    data = clean_trace_data()
    value = _secret_for(path)
    if secret == "sensitive key":  # a credential field: the trace takes both phases
        value = {"password": "Zq7hunter2"} if isinstance(value, dict) else value
        if isinstance(value, str) and not value.startswith("{"):
            value = "password: Zq7hunter2 here"
        elif isinstance(value, str):
            value = json.dumps({"password": "Zq7hunter2"})
        elif isinstance(value, list):
            value = ["ok", json.dumps({"api_key": "Zq7hunter2"})]
    elif secret == "long number" and isinstance(value, dict):
        value = {"card": 4111111111111111}
    elif secret == "long number" and isinstance(value, list):
        value = [4111111111111111]
    elif secret == "long number":
        value = "card 4111 1111 1111 1111 on file"
    put(data, path, value)
    trace = Trace.from_dict(data)
    out = redact_trace_object(redactor, trace)
    assert out is not trace
    written = out.to_json().encode()
    assert written == _oracle(trace)
    for leaked in ("jo.doe@example.com", "Zq7hunter2", "4111111111111111", "4111 1111"):
        assert leaked.encode() not in written


def test_a_mirrored_text_and_its_twin_are_both_checked() -> None:
    redactor = Redactor()
    clean = Trace.from_dict(clean_trace_data())
    assert redact_trace_object(redactor, clean) is clean
    # the twin holds the secret and the text mirrors it
    data = clean_trace_data()
    result = data["steps"][0]["tool_results"][0]
    result["value"] = {"user_id": 7, "contact": _EMAIL}
    result["content"] = json.dumps(result["value"])
    trace = Trace.from_dict(data)
    out = redact_trace_object(redactor, trace)
    assert out is not trace and out.to_json().encode() == _oracle(trace)
    assert b"jo.doe@example.com" not in out.to_json().encode()
    # a text that looks like its twin's JSON but is not: redacted as a text
    data = clean_trace_data()
    data["steps"][0]["tool_results"][0]["content"] = json.dumps({**CLEAN_VALUE, "x": _EMAIL})
    trace = Trace.from_dict(data)
    out = redact_trace_object(redactor, trace)
    assert out is not trace and out.to_json().encode() == _oracle(trace)


def test_objects_of_the_wrong_type_are_refused_as_before() -> None:
    redactor = Redactor()
    trace = Trace.from_dict(clean_trace_data())
    assert redact_trace_object(redactor, trace) is trace
    object.__setattr__(trace.steps[0], "tool_results", tuple(trace.steps[0].tool_results))
    with pytest.raises(Unsupported):
        redact_trace_object(redactor, trace)
    trace = Trace.from_dict(clean_trace_data())

    class Text(str):
        pass

    object.__setattr__(trace, "output", Text("User 7 is on pro."))
    with pytest.raises(Unsupported):
        redact_trace_object(redactor, trace)


def test_a_clean_trace_is_checked_without_building_or_rewriting_anything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the work budget of the common case: nothing rebuilt, no rewrite pass at all
    from toolproof.replay import _redact_trace

    calls: list[str] = []
    rewrite = _redact_trace._ObjectWalk.rewrite_object

    def counted(self: Any, node: Any, cls: type) -> Any:
        calls.append(cls.__name__)
        return rewrite(self, node, cls)

    monkeypatch.setattr(_redact_trace._ObjectWalk, "rewrite_object", counted)
    redactor = Redactor()
    for _ in range(3):
        trace = Trace.from_dict(clean_trace_data())
        assert redact_trace_object(redactor, trace) is trace
    assert calls == []
    data = clean_trace_data()
    data["output"] = _EMAIL
    assert redact_trace_object(redactor, Trace.from_dict(data)).output == "Reach me at *** please"
    assert calls.count("Trace") == 1  # one rewrite of the trace with something to redact
