"""Reading traces from files: toolproof JSONL exports and OpenAI-format conversations.

OpenAI chat conversations (``system``/``user``/``assistant``/``tool`` messages, assistant
``tool_calls`` with JSON-text arguments) are what most agent frameworks log and what
benchmarks such as τ-bench publish. A toolproof ``Trace`` is one *run*: the answer to one
user message, given the history before it. A conversation with several user turns is
therefore cut into one trace per answered user turn, exactly as ``Agent.session()``
records a live conversation: turn *k* gets the messages before the *k*-th user message as
``history``, that message as ``input``, and the assistant and tool messages up to the next
user message as its steps. Turns that got no answer (a closing "###STOP###") are skipped.
All turns of a conversation share ``metadata["conversation"]`` and carry
``metadata["turn"]`` (1-based) and ``metadata["turns"]``; ``turns="last"`` keeps only the
last answered turn, whose history then holds the whole conversation.

Trace ids are hashes of the record: its messages, its position among the file's records and
its other top-level fields. Importing the same file again gives the same ids (the store
keeps one copy); records with equal messages (two trials that went the same way) stay
separate traces. Ids, names and model names given as numbers are read as text.

Top-level fields of a conversation record other than the messages (``task_id``,
``trial``...) become metadata when they are plain values; a numeric ``reward`` also
becomes a ``reward:<value>`` tag, so ``--tag reward:0`` selects failed τ-bench runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from toolproof._messages import Message, ToolCall, ToolResult
from toolproof._trace import ToolInfo, Trace, stable_hash, tool_info
from toolproof._trace_build import TraceBuilder
from toolproof.errors import UserError

__all__ = [
    "ImportFormat",
    "Turns",
    "conversation_to_traces",
    "load_tool_infos",
    "read_trace_file",
]

ImportFormat = Literal["auto", "toolproof", "openai"]
Turns = Literal["all", "last"]

_MESSAGE_KEYS = ("traj", "messages", "conversation")


def load_tool_infos(source: str | Path | Sequence[Mapping[str, Any]]) -> list[ToolInfo]:
    """Tool schemas in OpenAI form (a file or a list) as ``ToolInfo`` with schema hashes.

    Accepts ``[{"type": "function", "function": {name, description, parameters}}]`` or the
    bare ``{name, description, parameters}`` objects. The schema hash is computed as for
    a ``@tool``, so an imported tool and the same tool defined in code hash alike.

    Raises:
        UserError: The file cannot be read or holds something else.
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        data = _loads(_read(path, "tool schemas "), str(path))
        where = str(path)
    else:
        data, where = source, "tools"
    if isinstance(data, Mapping) and "tools" in data:
        data = data["tools"]
    if not isinstance(data, list):
        raise UserError(f"{where}: expected a list of OpenAI tool schemas")
    infos = []
    for index, item in enumerate(data):
        spec = item.get("function", item) if isinstance(item, Mapping) else None
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            raise UserError(
                f"{where}[{index}]: expected {{'type': 'function', 'function': {{'name': ..., "
                "'parameters': ...}}"
            )
        name = spec["name"]
        description = str(spec.get("description") or "")
        parameters = spec.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(parameters, Mapping):
            raise UserError(
                f"{where}[{index}].parameters: expected a JSON Schema object, got "
                f"{type(parameters).__name__}"
            )
        infos.append(tool_info(name, description, dict(parameters)))
    return infos


def conversation_to_traces(
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[ToolInfo] = (),
    model: str = "",
    metadata: Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
    turns: Turns = "all",
    where: str = "conversation",
    source: Any = None,
) -> list[Trace]:
    """Cut one OpenAI-format conversation into traces, one per answered user turn.

    Trace ids are content hashes, so importing the same conversation again gives the same
    ids (and the store keeps one copy). ``source`` tells apart records whose messages are
    equal (several trials of one task that went the same way): it is hashed with them.

    Args:
        messages: The conversation's messages.
        tools: The tools offered (recorded in each trace).
        model: The model name to record.
        metadata: Recorded in every trace (with ``conversation``, ``turn``, ``turns``).
        tags: Recorded in every trace.
        turns: ``"all"`` for one trace per answered turn, ``"last"`` for the last one only.
        where: Names the conversation in error messages.
        source: What identifies the record besides its messages (JSON data, such as its
            position in the file and its other fields); ``None`` for the messages alone.

    Raises:
        UserError: A message is malformed (the message names it).
    """
    converted = [_message(m, f"{where}.messages[{i}]") for i, m in enumerate(messages)]
    system_prompt = None
    if converted and converted[0].role == "system":
        system_prompt = converted.pop(0).content or ""
    plain = [_plain(m) for m in messages]
    conversation_id = stable_hash(
        plain if source is None else {"messages": plain, "source": source}
    )
    user_positions = [i for i, m in enumerate(converted) if m.role == "user"]
    pieces: list[tuple[int, int]] = []  # (index of the user message, end of its turn)
    for n, start in enumerate(user_positions):
        end = user_positions[n + 1] if n + 1 < len(user_positions) else len(converted)
        if end > start + 1:  # the turn got at least one answer
            pieces.append((start, end))
    if turns == "last":
        pieces = pieces[-1:]
    traces = []
    for start, end in pieces:
        turn = user_positions.index(start) + 1
        trace = Trace(
            id=stable_hash({"conversation": conversation_id, "turn": turn}),
            input=converted[start].content or "",
            history=converted[:start],
            system_prompt=system_prompt,
            model=model,
            tools=list(tools),
            metadata={
                **(metadata or {}),
                "conversation": conversation_id,
                "turn": turn,
                "turns": len(user_positions),
            },
            tags=list(tags),
        )
        traces.append(_turn(trace, converted[start + 1 : end], f"{where} turn {turn}"))
    return traces


def _turn(trace: Trace, messages: list[Message], where: str) -> Trace:
    """The trace of one turn: its assistant messages are steps, its tool messages results."""
    build = TraceBuilder(trace)
    for message in messages:
        if message.role == "assistant":
            build.step(
                message,
                model_name=trace.model or None,
                finish_reason="tool_calls" if message.tool_calls else "stop",
            )
        elif message.role == "tool":
            if not trace.steps:
                raise UserError(f"{where}: a tool message comes before any assistant message")
            content = message.text
            call_id = message.tool_call_id or ""
            build.result(ToolResult(call_id, message.name or "", "ok", content, _json(content)))
        # system messages in the middle of a conversation carry no run data: skipped
    # A conversation ended from outside (a hand-off, the user left) is cancelled there, and
    # a replay stops at the same point.
    return build.finish()


def _json(content: str) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return content


def _message(data: Any, where: str) -> Message:
    if not isinstance(data, Mapping):
        raise UserError(f"{where}: expected a message object, got {type(data).__name__}")
    role = data.get("role")
    if role not in ("system", "user", "assistant", "tool"):
        raise UserError(f"{where}: unknown role {role!r} (expected system, user, assistant, tool)")
    content = data.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        content = "".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping)
        )
    elif content is not None and not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    calls = []
    listed = data.get("tool_calls") or ()
    if not isinstance(listed, (list, tuple)):
        raise UserError(f"{where}.tool_calls: expected a list, got {type(listed).__name__}")
    for index, raw in enumerate(listed):
        function = raw.get("function") if isinstance(raw, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise UserError(
                f"{where}.tool_calls[{index}]: expected {{'function': {{'name': ...}}}}"
            )
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            # (an object as JSON text; anything else is kept as the malformed call it is)
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        calls.append(
            ToolCall.from_json_arguments(function["name"], arguments, str(raw.get("id") or ""))
        )
    reasoning = data.get("reasoning_content") or data.get("reasoning")
    return Message(
        role=role,
        content=content,
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
        reasoning=reasoning if isinstance(reasoning, str) else None,
        status="ok" if role == "tool" else None,
    )


def _plain(message: Mapping[str, Any]) -> Any:
    return {k: v for k, v in message.items() if k in ("role", "content", "tool_calls", "name")}


def read_trace_file(
    path: str | Path,
    *,
    format: ImportFormat = "auto",
    tools: Sequence[ToolInfo] = (),
    model: str = "",
    tags: Sequence[str] = (),
    turns: Turns = "all",
) -> Iterator[Trace]:
    """Read traces from a toolproof JSONL export or a file of OpenAI-format conversations.

    Conversation files may be one JSON list of records, one record, or JSONL with a record
    per line; a record is a list of messages or an object whose ``traj``, ``messages`` or
    ``conversation`` key holds them (and may hold ``tools`` and ``model``).

    Args:
        path: The file.
        format: ``"toolproof"``, ``"openai"`` or ``"auto"`` (decided from the content).
        tools: Tool schemas to record in imported conversations (see
            :func:`load_tool_infos`).
        model: The model name to record for conversations that do not name one.
        tags: Tags added to every imported conversation trace.
        turns: How multi-turn conversations are cut (see the module docstring).

    Raises:
        UserError: The file cannot be read, or a record is neither a trace nor a
            conversation (the message gives the line or record number).
    """
    path = Path(path)
    text = _read(path)
    records = list(_records(text, path))
    for ordinal, (number, record) in enumerate(records, 1):
        kind = format if format != "auto" else _kind(record)
        where = f"{path}:{number}" if number else str(path)
        if format != "openai" and _is_eval_report(record):
            yield from _eval_report_traces(record, where)
            continue
        if kind == "toolproof":
            if not isinstance(record, dict):
                raise UserError(f"{where}: expected a toolproof trace object")
            try:
                yield Trace.from_dict(record)
            except UserError as exc:
                raise UserError(f"{where}: {exc}") from None
            except ValueError as exc:
                raise UserError(f"{where}: not a valid toolproof trace ({_first(exc)})") from None
            continue
        yield from _conversation_record(
            record, where=where, tools=tools, model=model, tags=tags, turns=turns, ordinal=ordinal
        )


def _records(text: str, path: Path) -> Iterator[tuple[int, Any]]:
    stripped = text.lstrip()
    if not stripped:
        return
    if stripped.startswith("["):
        data = _loads(text, str(path))
        if data and all(isinstance(m, Mapping) and "role" in m for m in data):
            yield 0, data  # one conversation given as a bare message list
            return
        for index, item in enumerate(data):
            yield index + 1, item
        return
    lines = text.splitlines()
    if len(lines) > 1 and all(not line.strip() or line.lstrip().startswith("{") for line in lines):
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            yield number, _loads(line, f"{path}:{number}")
        return
    yield 0, _loads(text, str(path))


def _read(path: Path, what: str = "") -> str:
    """The text of a UTF-8 file; a file that cannot be read is one error naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read {what}{path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise UserError(f"{path} is not UTF-8 text ({exc.reason})") from exc


def _loads(text: str, where: str) -> Any:
    """JSON text; anything Python's parser refuses (nesting too deep included) is one error."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UserError(f"{where}: invalid JSON ({exc})") from None
    except RecursionError:
        raise UserError(f"{where}: invalid JSON (nested too deeply)") from None


def _kind(record: Any) -> Literal["toolproof", "openai"]:
    if isinstance(record, Mapping) and "version" in record and "steps" in record:
        return "toolproof"
    return "openai"


def _conversation_record(
    record: Any,
    *,
    where: str,
    tools: Sequence[ToolInfo],
    model: str,
    tags: Sequence[str],
    turns: Turns,
    ordinal: int,
) -> Iterable[Trace]:
    metadata: dict[str, Any] = {}
    record_tags = list(tags)
    record_tools = list(tools)
    record_model = model
    if isinstance(record, list):
        messages = record
    elif isinstance(record, Mapping):
        key = next((k for k in _MESSAGE_KEYS if isinstance(record.get(k), list)), None)
        if key is None:
            raise UserError(
                f"{where}: neither a toolproof trace nor a conversation (expected a list of "
                f"messages under one of: {', '.join(_MESSAGE_KEYS)})"
            )
        messages = record[key]
        for name, value in record.items():
            if name in _MESSAGE_KEYS or name in ("tools", "model"):
                continue
            if isinstance(value, (str, int, float, bool)) or value is None:
                metadata[name] = value
        reward = record.get("reward")
        if isinstance(reward, (int, float)) and not isinstance(reward, bool):
            record_tags.append(f"reward:{reward:g}")
        if not record_tools and isinstance(record.get("tools"), list):
            record_tools = load_tool_infos(record["tools"])
        if isinstance(record.get("model"), str) and not model:
            record_model = record["model"]
    else:
        raise UserError(f"{where}: expected a conversation object, got {type(record).__name__}")
    return conversation_to_traces(
        messages,
        tools=record_tools,
        model=record_model,
        metadata=metadata,
        tags=record_tags,
        turns=turns,
        where=where,
        # The record's place in the file and its own fields (task, trial...) tell apart
        # records with equal messages; tags and the model given on import do not.
        source={"record": ordinal, "fields": metadata},
    )


def _first(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _is_eval_report(record: Any) -> bool:
    return isinstance(record, Mapping) and record.get("format") == "toolproof-eval-report"


def _eval_report_traces(report: Mapping[str, Any], where: str) -> Iterator[Trace]:
    """The traces of an eval run's JSON report, each with its case and trial's verdict."""
    cases = report.get("cases")
    for number, case in enumerate(cases if isinstance(cases, list) else [], 1):
        trials = case.get("trials") if isinstance(case, Mapping) else None
        for trial in trials if isinstance(trials, list) else []:
            traces = trial.get("traces") if isinstance(trial, Mapping) else None
            for data in traces if isinstance(traces, list) else []:
                try:
                    trace = Trace.from_dict(data)
                except (UserError, ValueError) as exc:
                    raise UserError(
                        f"{where}: cases[{number - 1}]: not a valid toolproof trace ({_first(exc)})"
                    ) from None
                verdict = trace.metadata.get("eval")
                trace.metadata["eval"] = {
                    **(verdict if isinstance(verdict, dict) else {}),
                    "case_id": case.get("id"),
                    "status": trial.get("status"),
                }
                if "eval" not in trace.tags:
                    trace.tags = [*trace.tags, "eval"]
                yield trace
