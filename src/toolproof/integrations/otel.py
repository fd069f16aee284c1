"""OpenTelemetry GenAI spans: export toolproof traces, import instrumented runs as traces.

Install with ``pip install "toolproof[otel]"``. This module imports the OpenTelemetry SDK.

- :func:`export_trace` emits a trace as spans that follow the GenAI semantic conventions
  (``invoke_agent`` > ``chat`` and ``execute_tool``), through any OTel ``TracerProvider``, so
  every OTel exporter works. Message content is left out unless ``capture_content=True``.
- :class:`OTLPJsonFileExporter` writes spans as OTLP JSON lines (the format of the OTel
  Collector's file exporter); :func:`otlp_json` encodes spans the same way.
- :func:`traces_from_otlp_json` reads OTLP JSON (a file, text or data) and turns each OTel
  trace that has GenAI spans into a toolproof :class:`~toolproof.Trace`;
  :func:`import_otlp_json` adds them to a trace store, ready for replay.

Message content is read from the ``gen_ai.input.messages``, ``gen_ai.output.messages`` and
``gen_ai.system_instructions`` attributes and tool content from ``gen_ai.tool.call.arguments``
and ``gen_ai.tool.call.result``; without them a trace still has its steps, tool names, call
ids, models, token counts and timings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Status, StatusCode

from toolproof._messages import Message, ToolCall, ToolResult, Usage
from toolproof._trace import RequestSummary, Step, Trace
from toolproof._trace import stable_hash as _hash
from toolproof._trace_build import TraceBuilder, split_request
from toolproof.errors import UserError

__all__ = [
    "OTLPJsonFileExporter",
    "export_trace",
    "import_otlp_json",
    "otlp_json",
    "traces_from_otlp_json",
]

#: Limits that keep an import bounded on untrusted files.
MAX_BYTES = 256 * 1024 * 1024
MAX_SPANS = 200_000

_CHAT_OPERATIONS = {"chat", "text_completion", "generate_content"}


# -- export ---------------------------------------------------------------------------------------


def _ns(iso: str, fallback: int) -> int:
    if not iso:
        return fallback
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return fallback
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1e9)


def _parts(message: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if message.role == "tool":
        parts.append(
            {"type": "tool_call_response", "id": message.tool_call_id, "response": message.text}
        )
    else:
        if message.content:
            parts.append({"type": "text", "content": message.content})
        for c in message.tool_calls:
            parts.append(
                {
                    "type": "tool_call",
                    "id": c.id,
                    "name": c.name,
                    "arguments": c.arguments if c.arguments_error is None else c.raw_arguments,
                }
            )
    return {"role": message.role, "parts": parts}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def export_trace(
    trace: Trace,
    *,
    tracer_provider: Any = None,
    capture_content: bool = False,
    provider_name: str | None = None,
) -> None:
    """Emit one toolproof trace as OpenTelemetry GenAI spans.

    The run is an ``invoke_agent`` span; each step a ``chat {model}`` client span with
    ``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.usage.input_tokens`` and
    ``gen_ai.usage.output_tokens`` and ``gen_ai.response.finish_reasons``; each tool call an
    ``execute_tool {name}`` span with ``gen_ai.tool.name``, ``gen_ai.tool.call.id`` and
    ``error.type`` for errors. Times are the trace's own. toolproof's extras are under
    ``toolproof.*`` (trace id, stop reason, tool status, mocked).

    Args:
        trace: The trace.
        tracer_provider: The OTel tracer provider (default: the global one).
        capture_content: Also record message content (``gen_ai.input.messages``,
            ``gen_ai.output.messages``, ``gen_ai.system_instructions``, tool arguments and
            results). Off by default: content may be sensitive.
        provider_name: ``gen_ai.provider.name`` (default: the part of the model name before
            ``:``, such as ``deepseek``).
    """
    from toolproof._version import __version__

    provider = tracer_provider or otel_trace.get_tracer_provider()
    tracer = provider.get_tracer("toolproof", __version__)
    start = _ns(trace.started_at, 0) or 1
    end = max(_ns(trace.ended_at, 0), start + int(trace.duration_ms * 1e6))
    model = trace.model or "unknown"
    system = provider_name or (model.split(":", 1)[0] if ":" in model else "toolproof")
    agent = str(trace.metadata.get("agent") or "agent")
    root = tracer.start_span(
        f"invoke_agent {agent}",
        kind=SpanKind.INTERNAL,
        attributes=_root_attributes(trace, agent, system, model, capture_content),
        start_time=start,
    )
    context = otel_trace.set_span_in_context(root)
    conversation: list[Message] = [*trace.history, Message.user(trace.input)]
    for step in trace.steps:
        step_start = start + int(step.offset_ms * 1e6)
        step_end = step_start + int(step.latency_ms * 1e6)
        attributes = _chat_attributes(trace, step, system, model)
        if capture_content:
            attributes["gen_ai.input.messages"] = _dumps([_parts(m) for m in conversation])
            output = _parts(step.response)
            output["finish_reason"] = step.finish_reason or (
                "tool_call" if step.response.tool_calls else "stop"
            )
            attributes["gen_ai.output.messages"] = _dumps([output])
            if trace.system_prompt:
                attributes["gen_ai.system_instructions"] = _dumps(
                    [{"type": "text", "content": trace.system_prompt}]
                )
        span = tracer.start_span(
            f"chat {step.model_name or model}",
            context=context,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=step_start,
        )
        span.end(end_time=step_end)
        conversation.append(step.response)
        _tool_spans(tracer, context, step, step_end, capture_content)
        conversation.extend(Message.tool(result) for result in step.tool_results)
    if trace.stop_reason == "error":
        detail = trace.error.message if trace.error else trace.stop_detail or "error"
        root.set_status(Status(StatusCode.ERROR, detail[:500]))
        root.set_attribute("error.type", trace.error.type if trace.error else "error")
    root.end(end_time=end)


def _root_attributes(
    trace: Trace, agent: str, system: str, model: str, capture_content: bool
) -> dict[str, Any]:
    """The ``invoke_agent`` span's attributes."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "gen_ai.provider.name": system,
        "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": trace.usage.input_tokens,
        "gen_ai.usage.output_tokens": trace.usage.output_tokens,
        "toolproof.trace.id": trace.id,
        "toolproof.stop_reason": trace.stop_reason,
        "toolproof.tool_mode": trace.tool_mode,
    }
    if trace.tags:
        attributes["toolproof.tags"] = list(trace.tags)
    if not capture_content:
        return attributes
    if trace.tools:
        attributes["gen_ai.tool.definitions"] = _dumps(
            [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                }
                for t in trace.tools
            ]
        )
    if trace.metadata:
        attributes["toolproof.metadata"] = _dumps(trace.metadata)
    attributes["gen_ai.input.messages"] = _dumps(
        [_parts(m) for m in [*trace.history, Message.user(trace.input)]]
    )
    if trace.output is not None:
        attributes["gen_ai.output.messages"] = _dumps(
            [{**_parts(Message.assistant(trace.output)), "finish_reason": "stop"}]
        )
    if trace.system_prompt:
        attributes["gen_ai.system_instructions"] = _dumps(
            [{"type": "text", "content": trace.system_prompt}]
        )
    return attributes


def _chat_attributes(trace: Trace, step: Step, system: str, model: str) -> dict[str, Any]:
    """A ``chat`` span's attributes, content aside."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": system,
        "gen_ai.request.model": model,
        "gen_ai.response.model": step.model_name or model,
        "gen_ai.usage.input_tokens": step.usage.input_tokens,
        "gen_ai.usage.output_tokens": step.usage.output_tokens,
    }
    if step.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = [step.finish_reason]
    for key in ("temperature", "max_tokens", "seed"):
        if key in trace.settings:
            attributes[f"gen_ai.request.{key}"] = trace.settings[key]
    return attributes


def _tool_spans(tracer: Any, context: Any, step: Step, start: int, capture_content: bool) -> None:
    """An ``execute_tool`` span for each call of ``step`` that ran, from its answer on."""
    by_id = {r.call_id: r for r in step.tool_results}
    for call in step.response.tool_calls:
        result = by_id.get(call.id)
        if result is None:
            continue  # a call that never ran has no execute_tool span
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
            "toolproof.tool.status": result.status,
            "toolproof.tool.mocked": result.mocked,
        }
        if not result.ok:
            attributes["error.type"] = result.error_type or "ToolError"
        if capture_content:
            attributes["gen_ai.tool.call.arguments"] = call.arguments_json()
            attributes["gen_ai.tool.call.result"] = result.content
        span = tracer.start_span(
            f"execute_tool {call.name}",
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start,
        )
        if not result.ok:
            span.set_status(Status(StatusCode.ERROR, result.content[:500]))
        span.end(end_time=start + int(result.duration_ms * 1e6))


# -- OTLP JSON ------------------------------------------------------------------------------------


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    if isinstance(value, bytes):
        import base64

        return {"bytesValue": base64.b64encode(value).decode()}
    return {"stringValue": str(value)}


def _attributes(attributes: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": key, "value": _any_value(value)} for key, value in (attributes or {}).items()]


def _span_json(span: ReadableSpan) -> dict[str, Any]:
    context = span.context
    assert context is not None
    data: dict[str, Any] = {
        "traceId": format(context.trace_id, "032x"),
        "spanId": format(context.span_id, "016x"),
        "name": span.name,
        "kind": int(span.kind.value) + 1,  # OTLP numbers kinds from 1 (INTERNAL)
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or 0),
        "attributes": _attributes(span.attributes),
        "status": {},
    }
    if span.parent is not None:
        data["parentSpanId"] = format(span.parent.span_id, "016x")
    if span.status.status_code is not StatusCode.UNSET:
        data["status"] = {"code": 1 if span.status.status_code is StatusCode.OK else 2}
        if span.status.description:
            data["status"]["message"] = span.status.description
    if span.events:
        data["events"] = [
            {
                "name": event.name,
                "timeUnixNano": str(event.timestamp),
                "attributes": _attributes(event.attributes),
            }
            for event in span.events
        ]
    return data


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Encode finished spans as one OTLP JSON ``ExportTraceServiceRequest`` object."""
    grouped: dict[int, tuple[Any, dict[tuple[str, str | None], list[dict[str, Any]]]]] = {}
    for span in spans:
        resource = span.resource
        key = id(resource)
        if key not in grouped:
            grouped[key] = (resource, {})
        scope = span.instrumentation_scope
        scope_key = (scope.name if scope else "", scope.version if scope else None)
        grouped[key][1].setdefault(scope_key, []).append(_span_json(span))
    resource_spans = []
    for resource, scopes in grouped.values():
        resource_spans.append(
            {
                "resource": {"attributes": _attributes(getattr(resource, "attributes", {}))},
                "scopeSpans": [
                    {
                        "scope": {"name": name, **({"version": version} if version else {})},
                        "spans": items,
                    }
                    for (name, version), items in scopes.items()
                ],
            }
        )
    return {"resourceSpans": resource_spans}


class OTLPJsonFileExporter(SpanExporter):
    """An OTel span exporter that appends OTLP JSON lines to a file.

    Each export batch is one line holding an ``ExportTraceServiceRequest``, as the OTel
    Collector's file exporter writes it; :func:`traces_from_otlp_json` reads such files.

    Args:
        path: The file (created if missing, appended to).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Append one line with ``spans``."""
        try:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(otlp_json(spans), ensure_ascii=False) + "\n")
        except OSError:
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to release: each export opens and closes the file."""


# -- import ---------------------------------------------------------------------------------------


def _value(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return None
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return {
            kv.get("key"): _value(kv.get("value"))
            for kv in (value["kvlistValue"] or {}).get("values") or []
            if isinstance(kv, dict)
        }
    return None


def _attrs(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = _value(item.get("value"))
    return out


def _payloads(source: str | Path | Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> list[Any]:
    if isinstance(source, Mapping):
        return [source]
    if isinstance(source, Path) or (
        isinstance(source, str) and not source.lstrip().startswith(("{", "["))
    ):
        path = Path(source)
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise UserError(f"cannot read OTLP JSON file {path}: {exc.strerror or exc}") from None
        if size > MAX_BYTES:
            raise UserError(
                f"{path} is larger than the import limit ({size} > {MAX_BYTES} bytes): "
                "split the file"
            )
        text = path.read_text(encoding="utf-8", errors="replace")
        where = str(path)
    elif isinstance(source, str):
        text, where = source, "the OTLP JSON text"
    else:
        return list(source)
    text = text.strip()
    if not text:
        return []
    try:
        return [json.loads(text)]
    except (ValueError, RecursionError):
        pass
    payloads = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            payloads.append(json.loads(line))
        except (ValueError, RecursionError) as exc:
            raise UserError(
                f"{where}, line {number}: not OTLP JSON ({str(exc)[:120]}); expected one "
                "ExportTraceServiceRequest object per line, as the OTel file exporter writes"
            ) from None
    return payloads


def _spans(payloads: list[Any]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = []
    for number, payload in enumerate(payloads, 1):
        if isinstance(payload, list):  # a JSON array of requests
            spans.extend(_spans(payload))
            continue
        if not isinstance(payload, dict) or "resourceSpans" not in payload:
            raise UserError(
                f"OTLP JSON object {number} has no 'resourceSpans': it is not an OTLP trace "
                "export (ExportTraceServiceRequest)"
            )
        for resource in payload.get("resourceSpans") or []:
            if not isinstance(resource, dict):
                continue
            for scope in (
                resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []
            ):
                if not isinstance(scope, dict):
                    continue
                for span in scope.get("spans") or []:
                    if isinstance(span, dict):
                        spans.append(span)
                        if len(spans) > MAX_SPANS:
                            raise UserError(f"more than {MAX_SPANS} spans: split the file")
    return spans


def _int(value: Any) -> int:
    """A token count from a foreign span: a non-negative integer, else 0 (not reported)."""
    try:
        count = int(value)
    except (TypeError, ValueError, OverflowError):  # text, None, inf, nan
        return 0
    return count if count >= 0 else 0


def _iso(nanos: int) -> str:
    if nanos <= 0:
        return ""
    moment = datetime.fromtimestamp(nanos / 1e9, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _json_attr(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value


def _messages(value: Any) -> list[Message]:
    """GenAI structured messages (``[{"role", "parts": [...]}]``) as toolproof messages."""
    data = _json_attr(value)
    out: list[Message] = []
    if not isinstance(data, list):
        return out
    for item in data:
        if not isinstance(item, dict):
            continue
        role = str(item.get("role") or "user")
        texts: list[str] = []
        calls: list[ToolCall] = []
        responses: list[tuple[str, str]] = []
        for part in item.get("parts") or []:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text":
                texts.append(str(part.get("content") or ""))
            elif kind == "tool_call":
                arguments = part.get("arguments")
                name, call_id = str(part.get("name") or ""), str(part.get("id") or "")
                if isinstance(arguments, dict):
                    calls.append(ToolCall(name, arguments, call_id))
                else:
                    raw = (
                        arguments
                        if isinstance(arguments, str) or arguments is None
                        else _dumps(arguments)
                    )
                    calls.append(ToolCall.from_json_arguments(name, raw, call_id))
            elif kind == "tool_call_response":
                response = part.get("response")
                text = response if isinstance(response, str) else _dumps(response)
                responses.append((str(part.get("id") or ""), text))
        if role == "tool" or responses:
            for call_id, text in responses:
                out.append(Message(role="tool", content=text, tool_call_id=call_id))
        elif role == "assistant":
            out.append(Message.assistant("".join(texts) or (None if calls else ""), calls))
        elif role == "system":
            out.append(Message.system("".join(texts)))
        else:
            out.append(Message.user("".join(texts)))
    return out


def _operation(span: dict[str, Any], attributes: dict[str, Any]) -> str | None:
    name = attributes.get("gen_ai.operation.name")
    if isinstance(name, str):
        return name
    span_name = str(span.get("name") or "")
    head = span_name.split(" ", 1)[0]
    if head in (*_CHAT_OPERATIONS, "execute_tool", "invoke_agent"):
        return head
    return None


def traces_from_otlp_json(
    source: str | Path | Mapping[str, Any] | Iterable[Mapping[str, Any]],
) -> list[Trace]:
    """Turn OTLP JSON spans into toolproof traces, one per OTel trace with GenAI spans.

    Args:
        source: A file path (OTLP JSON lines or one JSON object), JSON text, or decoded
            ``ExportTraceServiceRequest`` data.

    Returns:
        The traces, ordered by start time; OTel traces without ``chat`` spans are skipped.

    Raises:
        UserError: The file cannot be read or is not OTLP JSON (names the line).
    """
    by_trace: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for span in _spans(_payloads(source)):
        trace_id = str(span.get("traceId") or "")
        by_trace.setdefault(trace_id, []).append((span, _attrs(span.get("attributes"))))
    traces = [t for t in (_trace(tid, spans) for tid, spans in by_trace.items()) if t is not None]
    traces.sort(key=lambda t: t.started_at)
    return traces


def _trace(trace_id: str, spans: list[tuple[dict[str, Any], dict[str, Any]]]) -> Trace | None:
    spans = sorted(spans, key=lambda item: _int(item[0].get("startTimeUnixNano")))
    chats = [(s, a) for s, a in spans if _operation(s, a) in _CHAT_OPERATIONS]
    if not chats:
        return None
    agents = [(s, a) for s, a in spans if _operation(s, a) == "invoke_agent"]
    begin = min(_int(s.get("startTimeUnixNano")) for s, _ in spans)
    finish = max(_int(s.get("endTimeUnixNano")) for s, _ in spans)
    root_attrs = agents[0][1] if agents else {}
    first = chats[0][1]
    first_input = _messages(first.get("gen_ai.input.messages"))
    system_prompt, history, input_text = split_request(first_input)
    instructions = _json_attr(first.get("gen_ai.system_instructions"))
    if isinstance(instructions, list):
        parts = (str(p.get("content") or "") for p in instructions if isinstance(p, dict))
        system_prompt = "".join(parts) or None
    if not any(m.role == "user" for m in first_input):
        root_inputs = _messages(root_attrs.get("gen_ai.input.messages"))
        users = [m for m in root_inputs if m.role == "user"]
        input_text, history = (users[-1].text if users else ""), []
    build = TraceBuilder(
        Trace(
            id=str(root_attrs.get("toolproof.trace.id") or trace_id or _hash(input_text)),
            input=input_text,
            started_at=_iso(begin),
            ended_at=_iso(finish),
            history=history,
            system_prompt=system_prompt,
            model=str(
                first.get("gen_ai.request.model") or first.get("gen_ai.response.model") or ""
            ),
            duration_ms=max(finish - begin, 0) / 1e6,
            metadata={**_metadata(root_attrs), "otel": {"trace_id": trace_id}},
            tools=_tools(root_attrs),
            tags=[str(t) for t in root_attrs.get("toolproof.tags") or () if isinstance(t, str)],
        ),
        mode_from_results=True,
    )
    for span, attributes in chats:
        _chat_step(build, span, attributes, begin)
    tools = [(s, a) for s, a in spans if _operation(s, a) == "execute_tool"]
    _attach_tool_spans(build, chats, tools)
    # An error on a tool span was reported to the model; one elsewhere stopped the run.
    failed = next(
        (
            s
            for s, a in spans
            if (s.get("status") or {}).get("code") in (2, "STATUS_CODE_ERROR")
            and _operation(s, a) != "execute_tool"
        ),
        None,
    )
    if failed is not None:
        return build.finish(
            "error", detail=str((failed.get("status") or {}).get("message") or "error")
        )
    return build.finish()


def _chat_step(
    build: TraceBuilder, span: dict[str, Any], attributes: dict[str, Any], begin: int
) -> None:
    """One chat span as the next step; the tool results it sent answer the step before."""
    start = _int(span.get("startTimeUnixNano"))
    end = _int(span.get("endTimeUnixNano"))
    inputs = _messages(attributes.get("gen_ai.input.messages"))
    build.answer(inputs)
    outputs = [
        m for m in _messages(attributes.get("gen_ai.output.messages")) if m.role == "assistant"
    ]
    reasons = attributes.get("gen_ai.response.finish_reasons")
    model = attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model")
    build.step(
        outputs[0] if outputs else Message.assistant(""),
        request=RequestSummary(len(inputs)),
        offset_ms=(start - begin) / 1e6,
        latency_ms=max(end - start, 0) / 1e6,
        usage=Usage(
            input_tokens=_int(attributes.get("gen_ai.usage.input_tokens")),
            output_tokens=_int(attributes.get("gen_ai.usage.output_tokens")),
            requests=1,
        ),
        finish_reason=str(reasons[0]) if isinstance(reasons, list) and reasons else None,
        model_name=str(model) if model else None,
    )


def _attach_tool_spans(
    build: TraceBuilder,
    chats: list[tuple[dict[str, Any], dict[str, Any]]],
    tools: list[tuple[dict[str, Any], dict[str, Any]]],
) -> None:
    steps = build.trace.steps
    starts = [_int(s.get("startTimeUnixNano")) for s, _ in chats]
    # A span answers the call its id names; a span without a known id, the last step
    # that started before it.
    by_id = {c.id: (step, c) for step in steps for c in step.response.tool_calls if c.id}
    for span, attributes in tools:
        start = _int(span.get("startTimeUnixNano"))
        name = str(attributes.get("gen_ai.tool.name") or str(span.get("name") or "").split(" ")[-1])
        call_id = str(attributes.get("gen_ai.tool.call.id") or "")
        raw_arguments = attributes.get("gen_ai.tool.call.arguments")
        step, call = by_id.get(call_id, (None, None))
        if step is None:
            before = [i for i, s in enumerate(starts) if s <= start]
            if not before:
                continue
            step = steps[before[-1]]
        if call is None:
            # Content was not captured: the tool span is the only record of the call.
            call = ToolCall.from_json_arguments(
                name, raw_arguments if isinstance(raw_arguments, str) else None, call_id
            )
            step.response.tool_calls.append(call)
        status_code = (span.get("status") or {}).get("code")
        error = attributes.get("error.type")
        failed = status_code in (2, "STATUS_CODE_ERROR") or error is not None
        result_text = attributes.get("gen_ai.tool.call.result")
        content = (
            result_text
            if isinstance(result_text, str)
            else str((span.get("status") or {}).get("message") or "")
        )
        result = ToolResult(
            call.id,
            call.name,
            "error" if failed else "ok",
            content,
            error_type=str(error) if failed and error else ("Error" if failed else None),
            duration_ms=max(_int(span.get("endTimeUnixNano")) - start, 0) / 1e6,
            mocked=bool(attributes.get("toolproof.tool.mocked", False)),
        )
        existing = next((r for r in step.tool_results if r.call_id == call.id), None)
        if existing is None:
            build.result(result, step)
            continue
        existing.status, existing.error_type = result.status, result.error_type
        existing.duration_ms, existing.mocked = result.duration_ms, result.mocked
        if isinstance(result_text, str):
            existing.content = result_text


def _metadata(attributes: dict[str, Any]) -> dict[str, Any]:
    """The trace's metadata as exported (``toolproof.metadata``, with content)."""
    value = _json_attr(attributes.get("toolproof.metadata"))
    return dict(value) if isinstance(value, dict) else {}


def _tools(attributes: dict[str, Any]) -> list[Any]:
    """The tools offered, from ``gen_ai.tool.definitions`` (exported with content)."""
    from toolproof.errors import UserError
    from toolproof.replay._import import load_tool_infos

    value = _json_attr(attributes.get("gen_ai.tool.definitions"))
    if not isinstance(value, list):
        return []
    try:
        return load_tool_infos(value)
    except UserError:  # (definitions of another shape: the trace keeps none)
        return []


def import_otlp_json(
    source: str | Path | Mapping[str, Any] | Iterable[Mapping[str, Any]],
    store: Any = None,
    *,
    tags: Sequence[str] = ("otel",),
    redactor: Any = None,
) -> list[Trace]:
    """Import OTLP JSON spans as traces into a trace store (for replay and reports).

    Sensitive values are redacted before anything is written, as by ``toolproof traces
    import``.

    Args:
        source: See :func:`traces_from_otlp_json`.
        store: A ``toolproof.replay.TraceStore`` or the path of one (default: the default
            store path).
        tags: Tags added to every imported trace.
        redactor: A ``toolproof.replay.Redactor`` (default: the default redaction rules;
            ``Redactor.none()`` keeps everything).

    Returns:
        The imported traces, as written.
    """
    from toolproof.replay import Redactor, TraceStore
    from toolproof.replay._store import DEFAULT_STORE_PATH

    chosen = redactor if redactor is not None else Redactor()
    traces = []
    for trace in traces_from_otlp_json(source):
        trace.tags = [*trace.tags, *(t for t in tags if t not in trace.tags)]
        traces.append(chosen.redact_trace(trace))
    owned = not isinstance(store, TraceStore)
    target = (
        store if isinstance(store, TraceStore) else TraceStore(str(store or DEFAULT_STORE_PATH))
    )
    try:
        target.add_many(traces, replace=True)
    finally:
        if owned:
            target.close()
    return traces
