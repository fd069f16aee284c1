"""Nothing is written that cannot be read back: hostile values at construction and encoding,
and the decoder on arbitrary input raises only ``TraceFormatError``, quickly."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Message, ToolCall, ToolResult, Trace, Usage, UserError
from toolproof._messages import MAX_JSON_DEPTH, ModelResponse, json_data
from toolproof._trace import RequestSummary, Step
from toolproof.errors import TraceFormatError


def deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


# -- construction makes every field storable -----------------------------------------------


def test_ids_names_and_model_names_given_as_numbers_become_text() -> None:
    trace = Trace(
        id=7,  # type: ignore[arg-type]
        input="hi",
        model=123,  # type: ignore[arg-type]
        history=[Message(role="tool", content="4", tool_call_id=5, name=9)],  # type: ignore[arg-type]
        tags=[1, "a"],  # type: ignore[list-item]
        steps=[
            Step(
                1,
                RequestSummary(1),
                Message.assistant(None, [ToolCall(name=3, id=4)]),  # type: ignore[arg-type]
                model_name=123,  # type: ignore[arg-type]
                tool_results=[ToolResult(call_id=4, name="f", status="ok", content="x")],  # type: ignore[arg-type]
            )
        ],
    )
    assert (trace.id, trace.model, trace.tags) == ("7", "123", ["1", "a"])
    assert (trace.history[0].tool_call_id, trace.history[0].name) == ("5", "9")
    step = trace.steps[0]
    assert (step.model_name, step.response.tool_calls[0].name) == ("123", "3")
    assert step.tool_results[0].call_id == step.response.tool_calls[0].id == "4"
    assert Trace.from_json(trace.to_json()) == trace
    assert ModelResponse(Message.assistant("x"), model_name=123).model_name == "123"  # type: ignore[arg-type]


def test_hostile_free_form_values_become_plain_json() -> None:
    huge = 10**5000
    metadata: dict[Any, Any] = {
        "huge": huge,
        "nan": math.nan,
        "inf": -math.inf,
        "tuple": (1, 2),
        1: "int key",
        None: "none key",
        "when": datetime(2026, 1, 2, tzinfo=timezone.utc),
        "surrogate": "a\ud800b",
        "big but fine": 2**200,
    }
    trace = Trace(id="t", input="x\udfff", metadata=metadata)
    data = trace.metadata
    assert data["huge"] == "1" + "0" * 5000
    assert (data["nan"], data["inf"], data["tuple"]) == ("NaN", "-Infinity", [1, 2])
    assert (data["1"], data["null"]) == ("int key", "none key")
    assert data["when"] == "2026-01-02T00:00:00Z"
    assert data["surrogate"] == "a\ufffdb" and trace.input == "x\ufffd"
    assert data["big but fine"] == 2**200  # exact: Python reads back up to 4,300 digits
    assert Trace.from_json(trace.to_json()) == trace
    assert Trace.from_dict(json.loads(trace.to_json())) == trace
    # already plain data is kept as the same object
    plain = {"a": [1, 2.5, None, True, {"b": "c"}]}
    assert json_data(plain) is plain


def test_too_deep_and_unwritable_values_are_refused_with_the_path() -> None:
    with pytest.raises(TraceFormatError, match=r"metadata\['a'\](\[0\])+: nested more than 64"):
        Trace(id="t", input="x", metadata={"a": deep(MAX_JSON_DEPTH + 5)})
    with pytest.raises(TraceFormatError, match=r"metadata\['f'\]: object is not JSON data"):
        Trace(id="t", input="x", metadata={"f": object()})
    assert Trace(id="t", input="x", metadata={"a": deep(MAX_JSON_DEPTH - 1)}).to_json()


def test_negative_or_non_integer_token_counts_are_refused() -> None:
    with pytest.raises(TraceFormatError, match="input_tokens must not be negative, got -5"):
        Usage(input_tokens=-5)
    with pytest.raises(TraceFormatError, match="details must not be negative"):
        Usage(details={"x": -1})
    with pytest.raises(TraceFormatError, match="output_tokens must be an integer"):
        Usage(output_tokens=1.5)  # type: ignore[arg-type]
    assert isinstance(TraceFormatError("x"), UserError)  # the CLI exits 2 on it
    assert Usage(1, 2) + Usage(3, 4) == Usage(4, 6)


def test_the_encoder_refuses_values_changed_after_construction() -> None:
    trace = Trace(id="t", input="x")
    trace.metadata["n"] = 10**5000
    with pytest.raises(TraceFormatError, match=r"trace 't': metadata\['n'\]: an integer of more"):
        trace.to_json()
    trace.metadata["n"] = math.inf
    with pytest.raises(TraceFormatError, match="inf is not a JSON number"):
        trace.to_dict()
    trace.metadata = {}
    trace.model = 123  # type: ignore[assignment]
    with pytest.raises(TraceFormatError, match="cannot be encoded"):
        trace.to_json()
    trace.model = "m"
    trace.stop_reason = "exploded"  # type: ignore[assignment]
    with pytest.raises(TraceFormatError, match="unknown stop_reason 'exploded'"):
        trace.to_json()
    trace.stop_reason = "final"
    trace.history = [Message(role="robot", content="hi")]  # type: ignore[arg-type]
    with pytest.raises(TraceFormatError, match="history: unknown message role 'robot'"):
        trace.to_json()
    trace.history = []
    trace.version = 2
    with pytest.raises(TraceFormatError, match="this toolproof writes version 1"):
        trace.to_json()
    trace.version = 1
    trace.usage.input_tokens = -1
    with pytest.raises(TraceFormatError, match="usage: token counts"):
        trace.to_json()


def test_non_finite_numbers_in_numeric_fields_read_back() -> None:
    step = Step(1, RequestSummary(1), Message.assistant("x"), cost=math.inf, latency_ms=math.nan)
    trace = Trace(id="t", input="x", steps=[step], duration_ms=-math.inf)
    text = trace.to_json()
    assert '"cost":"Infinity"' in text and "NaN" in text  # valid JSON, not a NaN literal
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} literal in JSON"))
    back = Trace.from_json(text)
    assert back.steps[0].cost == math.inf and math.isnan(back.steps[0].latency_ms)
    assert back.duration_ms == -math.inf
    data = trace.to_dict()  # the plain form says the same, so any JSON writer can write it
    assert (data["duration_ms"], data["steps"][0]["cost"]) == ("-Infinity", "Infinity")
    assert json.loads(json.dumps(data, allow_nan=False)) == json.loads(text)
    assert Trace.from_dict(data).steps[0].cost == math.inf


def test_model_arguments_that_cannot_be_stored_become_an_argument_error() -> None:
    for raw in ('{"a": NaN}', '{"a": Infinity}', '{"a": ' + "[" * 80 + "]" * 80 + "}"):
        call = ToolCall.from_json_arguments("f", raw, "c1")
        assert call.arguments == {} and call.arguments_error, raw
        assert (
            Trace.from_json(
                Trace(id="t", input="x", history=[Message.assistant(None, [call])]).to_json()
            )
            .history[0]
            .tool_calls[0]
            == call
        )


# -- the decoder on hostile input ------------------------------------------------------------


@pytest.mark.timeout(60)  # a decoder that hangs on an input fails here
@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ('{"version": 1, "id": "x", "input": "y", "usage": {"input_tokens": -3}}', "negative"),
        ('{"version": 1, "id": "x", "input": []}', "input: Input should be a valid string"),
        ('{"version": 1, "id": "x", "input": "", "metadata": ' + "[" * 5000, "invalid JSON"),
        ('{"version": 1, "id": "x", "input": "", "m": ' + "[" * 300 + "]" * 300 + "}", "JSON"),
        ('{"version": 1, "id": "x", "input": "", "metadata": {"n": 1' + "0" * 5000 + "}}", "JSON"),
        (b"\xff\xfe\x00", "invalid JSON"),
        ('{"version": [1], "id": "x", "input": ""}', "no integer 'version'"),
        ('{"version": 1, "id": "x", "input": "", "steps": [{"index": 1}]}', "steps.0"),
        ('{"version": 1, "id": "x", "input": "", "stop_reason": "exploded"}', "stop_reason"),
    ],
)
def test_hostile_json_gives_one_trace_format_error(payload: str | bytes, message: str) -> None:
    with pytest.raises(TraceFormatError, match=message) as info:
        Trace.from_json(payload)
    assert "\n" not in str(info.value)


def test_from_dict_refuses_non_dicts_and_deep_python_data() -> None:
    with pytest.raises(TraceFormatError, match="expected a JSON object"):
        Trace.from_dict([1])  # type: ignore[arg-type]
    with pytest.raises(TraceFormatError, match="nested more than 64"):
        Trace.from_dict({"version": 1, "id": "x", "input": "", "metadata": {"a": deep(500)}})
    with pytest.raises(TraceFormatError, match="expected JSON text"):
        Trace.from_json(None)  # type: ignore[arg-type]


def check_decoder(payload: str | bytes) -> None:
    try:
        trace = Trace.from_json(payload)
    except TraceFormatError as exc:
        message = str(exc)
        assert message and "\n" not in message
    else:
        # whatever the decoder accepts, the encoder writes back, and it reads back equal
        assert Trace.from_json(trace.to_json()) == trace


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.integers(300, 400).map(lambda digits: 10**digits),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=10,
)


@pytest.mark.timeout(300)  # a decoder that hangs on an input fails here
@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200) | json_values.map(json.dumps))
def test_fuzz_decoder_on_arbitrary_bytes_and_json(payload: str | bytes) -> None:
    check_decoder(payload)


VALID = Trace(
    id="base",
    input="Who is user 1?",
    model="scripted",
    steps=[
        Step(
            1,
            RequestSummary(2),
            Message.assistant(None, [ToolCall("query_users", {"user_id": 1}, "c1")]),
            usage=Usage(10, 5),
            tool_results=[ToolResult("c1", "query_users", "ok", '{"name": "a"}', {"name": "a"})],
        ),
        Step(2, RequestSummary(4), Message.assistant("User 1 is a."), usage=Usage(20, 5)),
    ],
    output="User 1 is a.",
    metadata={"case": 1},
).to_dict()


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += paths(item, (*prefix, index))
    return out


PATHS = paths(VALID)[1:]


@pytest.mark.timeout(300)
@settings(max_examples=150, deadline=None)
@given(st.sampled_from(PATHS), json_values | st.just(deep(300)), st.booleans())
def test_fuzz_decoder_on_mutated_valid_traces(
    path: tuple[Any, ...], value: Any, drop: bool
) -> None:
    data = json.loads(json.dumps(VALID))
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    if drop and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    try:
        text = json.dumps(data)
    except (ValueError, RecursionError):
        return  # not even JSON: covered by the arbitrary-bytes fuzz
    check_decoder(text)
    try:
        trace = Trace.from_dict(data)
    except TraceFormatError:
        return
    assert Trace.from_json(trace.to_json()) == trace


# -- round trip of hostile, generated traces ---------------------------------------------------

hostile_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(4300, 5000).map(lambda digits: 10**digits)
    | st.floats()
    | st.text(max_size=6)
    | st.just("\ud800"),
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children)
        | st.dictionaries(st.text(max_size=4) | st.integers(-3, 3), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(
    metadata=st.dictionaries(st.text(max_size=4), hostile_values, max_size=3),
    value=hostile_values,
    arguments=st.dictionaries(st.text(max_size=4), hostile_values, max_size=2),
    ids=st.integers() | st.text(max_size=4),
)
def test_any_hostile_trace_that_is_built_round_trips(
    metadata: dict[str, Any], value: Any, arguments: dict[str, Any], ids: Any
) -> None:
    trace = Trace(
        id=ids,
        input="x",
        model=ids,
        metadata=metadata,
        steps=[
            Step(
                1,
                RequestSummary(1),
                Message.assistant(None, [ToolCall("f", arguments, ids)]),
                model_name=ids,
                tool_results=[ToolResult(ids, "f", "ok", "c", value)],
            )
        ],
    )
    text = trace.to_json()
    assert Trace.from_json(text) == trace
    assert Trace.from_dict(json.loads(text)) == trace


@pytest.mark.parametrize("text", ['{"input": "\ud800"}', '"\udfff"', '{"version": 1, "\ud83d": 1}'])
def test_text_with_a_lone_surrogate_is_a_trace_format_error(text: str) -> None:
    with pytest.raises(TraceFormatError, match="lone surrogate"):
        Trace.from_json(text)


@pytest.mark.parametrize("key", ["\n", "a\nb", "\r", "\x1b[31m", "\u2028"])
def test_an_invalid_field_under_an_unprintable_key_is_named_on_one_line(key: str) -> None:
    data = json.loads(json.dumps(VALID))
    data["steps"][0]["usage"] = {"details": {key: "not a number"}}
    with pytest.raises(TraceFormatError) as info:
        Trace.from_dict(data)
    message = str(info.value)
    assert "\n" not in message and "\r" not in message and message.isprintable(), message
    assert "usage.details" in message and repr(key) in message
