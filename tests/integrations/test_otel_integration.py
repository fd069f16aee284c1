"""OpenTelemetry GenAI export and import, through the real OTel SDK and instrumentation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from models._openai_server import FakeOpenAIServer, Reply, tool_call
from toolproof import Agent, Trace, tool
from toolproof.errors import UserError
from toolproof.integrations.otel import (
    OTLPJsonFileExporter,
    export_trace,
    import_otlp_json,
    otlp_json,
    traces_from_otlp_json,
)
from toolproof.replay import TraceStore
from toolproof.testing import ScriptedModel, assert_tool_called, call

ROOT = Path(__file__).resolve().parents[2]


@tool(errors=(KeyError,))
def get_leave_balance(employee_id: str) -> int:
    """Look up an employee's remaining annual leave.

    Args:
        employee_id: The employee id.
    """
    return {"E001": 5}[employee_id]


def _trace() -> Trace:
    model = ScriptedModel(
        [
            [
                call("get_leave_balance", employee_id="E001"),
                call("get_leave_balance", employee_id="E9"),
            ],
            "E001 has 5 days; E9 does not exist.",
        ],
        name="deepseek:deepseek-chat",
    )
    agent = Agent(model, [get_leave_balance], system_prompt="You are an HR assistant.")
    return agent.run_sync("Leave of E001 and E9?", metadata={"agent": "hr"}).trace


def _spans(trace: Trace, **options: Any) -> list[Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    export_trace(trace, tracer_provider=provider, **options)
    return list(exporter.get_finished_spans())


def test_export_follows_the_genai_conventions_without_content_by_default() -> None:
    trace = _trace()
    exported = _spans(trace)
    spans = {s.name: s for s in exported}
    assert set(spans) == {
        "invoke_agent hr",
        "chat deepseek:deepseek-chat",
        "execute_tool get_leave_balance",
    }
    root = spans["invoke_agent hr"].attributes
    assert root["gen_ai.operation.name"] == "invoke_agent"
    assert root["gen_ai.provider.name"] == "deepseek"
    chats = [s for s in exported if s.name.startswith("chat")]
    assert [c.attributes["gen_ai.operation.name"] for c in chats] == ["chat", "chat"]
    assert chats[0].attributes["gen_ai.usage.input_tokens"] == trace.steps[0].usage.input_tokens
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    tools = [s for s in exported if s.name.startswith("execute_tool")]
    assert [t.attributes["gen_ai.tool.call.id"] for t in tools] == [c.id for c in trace.tool_calls]
    assert tools[1].attributes["error.type"] == "KeyError"
    for span in exported:
        text = json.dumps(dict(span.attributes or {}))
        assert "E001" not in text and "HR assistant" not in text  # no content without the switch
        assert (
            span.parent is None or span.parent.span_id == spans["invoke_agent hr"].context.span_id
        )


def test_export_then_import_keeps_the_trajectory() -> None:
    trace = _trace()
    (back,) = traces_from_otlp_json(otlp_json(_spans(trace, capture_content=True)))
    assert back.id == trace.id
    assert back.input == trace.input and back.system_prompt == trace.system_prompt
    assert back.output == trace.output and back.stop_reason == "final"
    assert [c.signature() for c in back.tool_calls] == [c.signature() for c in trace.tool_calls]
    assert [(r.call_id, r.status, r.content) for r in back.tool_results] == [
        (r.call_id, r.status, r.content) for r in trace.tool_results
    ]
    assert back.usage.input_tokens == trace.usage.input_tokens
    assert back.duration_ms == pytest.approx(trace.duration_ms, abs=5)  # span times: ns
    assert_tool_called(back, "get_leave_balance", employee_id="E001")


def test_without_content_the_import_keeps_tools_ids_and_tokens() -> None:
    trace = _trace()
    (back,) = traces_from_otlp_json(otlp_json(_spans(trace)))
    assert back.tool_names == trace.tool_names
    assert [c.id for c in back.tool_calls] == [c.id for c in trace.tool_calls]
    assert [r.status for r in back.tool_results] == ["ok", "error"]
    assert back.usage.output_tokens == trace.usage.output_tokens


def test_the_file_exporter_writes_lines_the_importer_reads_into_a_store(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPJsonFileExporter(path)))
    first, second = _trace(), _trace()
    export_trace(first, tracer_provider=provider, capture_content=True)
    export_trace(second, tracer_provider=provider, capture_content=True)
    lines = path.read_text().splitlines()
    assert len(lines) == 10 and all("resourceSpans" in json.loads(line) for line in lines)
    span = json.loads(lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16  # OTLP JSON: hex ids
    imported = import_otlp_json(path, str(tmp_path / "traces.db"))
    assert {t.id for t in imported} == {first.id, second.id}
    store = TraceStore(str(tmp_path / "traces.db"))
    try:
        stored = store.get(first.id)
    finally:
        store.close()
    assert stored.tags == ["otel"] and stored.tool_names == first.tool_names


def test_spans_of_the_openai_instrumentation_become_a_trace(tmp_path: Path) -> None:
    """A plain OpenAI SDK tool loop, instrumented by opentelemetry-instrumentation-openai-v2."""
    path = tmp_path / "spans.jsonl"
    script = f"""
import json, openai
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from toolproof.integrations.otel import OTLPJsonFileExporter

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPJsonFileExporter({str(path)!r})))
OpenAIInstrumentor().instrument(tracer_provider=provider)
client = openai.OpenAI(base_url=BASE_URL, api_key="test-key", max_retries=0)
parameters = {{"type": "object", "properties": {{"employee_id": {{"type": "string"}}}}}}
function = {{"name": "get_leave_balance", "parameters": parameters}}
tools = [{{"type": "function", "function": function}}]
messages = [{{"role": "system", "content": "You are an HR assistant."}},
            {{"role": "user", "content": "Leave of E001?"}}]
# The application's run is one span, so both model calls belong to one OTel trace.
with provider.get_tracer("hr-app").start_as_current_span("invoke_agent hr"):
    first = client.chat.completions.create(model="test-model", messages=messages, tools=tools)
    decision = first.choices[0].message
    messages.append(decision.model_dump(exclude_none=True))
    for c in decision.tool_calls:
        messages.append({{"role": "tool", "tool_call_id": c.id, "content": "5"}})
    client.chat.completions.create(model="test-model", messages=messages, tools=tools)
"""
    with FakeOpenAIServer() as server:
        server.queue(
            Reply.completion(
                None,
                tool_calls=[tool_call("call_7", "get_leave_balance", {"employee_id": "E001"})],
                usage={"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39},
            ),
            Reply.completion(
                "E001 has 5 days left.",
                usage={"prompt_tokens": 45, "completion_tokens": 7, "total_tokens": 52},
            ),
        )
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
        }
        code = f"BASE_URL = {server.url + '/v1'!r}\n" + script
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-3000:]
    (trace,) = traces_from_otlp_json(path)
    assert trace.input == "Leave of E001?"
    assert trace.system_prompt == "You are an HR assistant."
    assert trace.model == "test-model"
    assert len(trace.steps) == 2
    assert_tool_called(trace, "get_leave_balance", employee_id="E001")
    (result,) = trace.tool_results
    assert (result.call_id, result.content) == ("call_7", "5")
    assert trace.output == "E001 has 5 days left." and trace.stop_reason == "final"
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (75, 16)


def test_bad_files_get_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read OTLP JSON file"):
        traces_from_otlp_json(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"resourceSpans": []}\n{not json\n')
    with pytest.raises(UserError, match=r"bad\.jsonl, line 2: not OTLP JSON"):
        traces_from_otlp_json(bad)
    with pytest.raises(UserError, match="no 'resourceSpans'"):
        traces_from_otlp_json({"spans": []})


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_attribute = st.fixed_dictionaries(
    {
        "key": st.sampled_from(
            [
                "gen_ai.operation.name",
                "gen_ai.input.messages",
                "gen_ai.output.messages",
                "gen_ai.tool.name",
                "gen_ai.tool.call.id",
                "gen_ai.usage.input_tokens",
                "x",
            ]
        ),
        "value": st.one_of(
            st.builds(
                lambda v: {"stringValue": v}, st.sampled_from(["chat", "execute_tool", "[]"])
            ),
            st.builds(lambda v: {"stringValue": json.dumps(v)}, _json),
            st.builds(lambda v: {"intValue": v}, st.text(max_size=5)),
            _json,
        ),
    }
)
_span = st.fixed_dictionaries(
    {
        "traceId": st.sampled_from(["a" * 32, "b" * 32]),
        "name": st.sampled_from(["chat m", "execute_tool t", "invoke_agent a", "other"]),
        "startTimeUnixNano": st.one_of(st.integers(0, 10**19).map(str), st.text(max_size=4)),
        "endTimeUnixNano": st.integers(0, 10**19).map(str),
        "attributes": st.lists(_attribute, max_size=6),
        "status": st.one_of(st.just({}), st.just({"code": 2, "message": "boom"})),
    }
)


@pytest.mark.timeout(300)
@settings(max_examples=60, deadline=None)
@given(spans=st.lists(_span, max_size=8))
def test_hostile_spans_never_crash_the_importer(spans: list[dict[str, Any]]) -> None:
    data = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    traces = traces_from_otlp_json(data)
    for trace in traces:
        assert Trace.from_json(trace.to_json()).id == trace.id


def test_imported_spans_are_redacted_before_they_are_stored(tmp_path: Path) -> None:
    model = ScriptedModel(["Your key sk-abcdefghijklmnopqrstuvwxyz123456 is stored."])
    trace = Agent(model, []).run_sync("my email is jane.doe@example.com").trace
    data = otlp_json(_spans(trace, capture_content=True))
    (stored,) = import_otlp_json(data, str(tmp_path / "traces.db"))
    text = stored.to_json()
    assert "jane.doe@example.com" not in text
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in text
    store = TraceStore(str(tmp_path / "traces.db"))
    try:
        assert "jane.doe@example.com" not in store.get(stored.id).to_json()
    finally:
        store.close()


def test_too_many_spans_are_refused_naming_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolproof.integrations.otel as otel

    monkeypatch.setattr(otel, "MAX_SPANS", 3)
    spans = [{"traceId": "a" * 32, "name": "chat m"} for _ in range(4)]
    with pytest.raises(UserError, match="more than 3 spans"):
        traces_from_otlp_json({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


def test_too_large_files_are_refused_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolproof.integrations.otel as otel

    monkeypatch.setattr(otel, "MAX_BYTES", 10)
    big = tmp_path / "big.jsonl"
    big.write_text('{"resourceSpans": []}\n' * 3)
    with pytest.raises(UserError, match=r"big\.jsonl is larger than"):
        traces_from_otlp_json(big)


def test_traces_import_reads_otlp_json_from_the_command_line(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    path = tmp_path / "spans.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPJsonFileExporter(path)))
    first = _trace()
    export_trace(first, tracer_provider=provider, capture_content=True)
    store_file = tmp_path / "traces.db"
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src}
    command = [sys.executable, "-m", "toolproof", "traces", "import", "--store", str(store_file)]
    done = subprocess.run(
        [*command, "--format", "otel", "--tag", "prod", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    store = TraceStore(str(store_file))
    try:
        stored = store.get(first.id)
    finally:
        store.close()
    assert stored.tool_names == first.tool_names and "prod" in stored.tags
    # Not OTLP JSON: one line naming the file, exit 2, no traceback.
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    done = subprocess.run(
        [*command, "--format", "otel", str(bad)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "bad.jsonl" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "value",
    [
        {"intValue": "-5"},
        {"intValue": -5},
        {"doubleValue": -1.5},
        {"stringValue": "-3"},
        {"doubleValue": float("inf")},
        {"stringValue": "9" * 5000},
    ],
)
def test_token_counts_a_span_cannot_carry_are_left_out(value: dict[str, Any]) -> None:
    attributes = [
        {"key": "gen_ai.usage.input_tokens", "value": value},
        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "7"}},
    ]
    span = {"traceId": "a" * 32, "spanId": "b" * 16, "name": "chat m", "attributes": attributes}
    (trace,) = traces_from_otlp_json({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    back = Trace.from_json(trace.to_json())
    assert back.usage.input_tokens == 0
    assert back.usage.output_tokens == 7
