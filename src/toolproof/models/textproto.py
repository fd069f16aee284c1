"""The text tool protocol, for models without native function calling.

:class:`TextProtocolModel` wraps any model. It describes the tools in the system prompt,
sends no native ``tools``, and turns the ``<tool_call>{"name": ..., "arguments": {...}}
</tool_call>`` blocks the model writes into the same :class:`~toolproof.ToolCall` objects a
native adapter returns. Tool results go back as ``<tool_result>`` blocks in a user message,
so the wrapped model never sees a ``tool`` role.

Parsing is tolerant: several blocks per message, whitespace and newlines, code fences inside
or around a block, prose before and after, a missing closing tag at the end, arguments given
as a JSON string, a JSON list of calls in one block. A block that still cannot be parsed
becomes a ``ModelResponse.parse_errors`` entry; the agent sends the model a correction and
records the error in ``Step.parse_errors``. The parser raises nothing but
:class:`ToolCallParseError`, and :func:`parse_tool_calls` raises nothing at all.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from toolproof._messages import Message, ModelResponse, ModelSettings, ToolCall, ToolDefinition
from toolproof._text import clip
from toolproof.errors import ToolCallParseError
from toolproof.models._base import Model

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "ParsedToolCalls",
    "TextProtocolModel",
    "ToolCallParseError",
    "parse_tool_call_block",
    "parse_tool_calls",
    "render_tool_call",
]

#: How the tools are described to the model; ``{tools}`` is replaced by one JSON object per
#: tool (name, description, parameters).
DEFAULT_INSTRUCTIONS = """\
# Tools

You can call the tools listed below. To call a tool, write a block like this, with the \
arguments as a JSON object that follows the tool's parameters schema:
<tool_call>{"name": "TOOL_NAME", "arguments": {"ARGUMENT": "VALUE"}}</tool_call>
Write one block per call; several blocks in one message call several tools. After your \
blocks, stop and wait: the results come back in <tool_result> blocks. When you can answer \
without a tool, reply in plain text without any <tool_call> block. Never invent a tool \
result.

Available tools (one JSON object per line):
{tools}"""

_OPEN = "<tool_call>"
# The scanner's pieces: each is matched at one position and has a single quantifier, so
# no input makes them backtrack. The parser runs in time linear in the text's length.
_TAG = re.compile(r"<(/?)tool_call\s*>", re.I)
_LANG = re.compile(r"[\w+-]*")
_BLANKS = re.compile(r"[ \t]*")
_SPACES = re.compile(r"\s*")
_FENCE = "```"


@dataclass(slots=True)
class ParsedToolCalls:
    """What :func:`parse_tool_calls` found in a model's text.

    Attributes:
        text: The text without the parsed blocks (unparsable blocks stay, verbatim, so the
            model sees them again next to the correction), stripped; ``None`` when empty.
        calls: The tool calls, in order.
        errors: One message per block that could not be parsed.
    """

    text: str | None
    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def parse_tool_call_block(block: str) -> list[ToolCall]:
    """Parse the inside of one ``<tool_call>`` block into calls (ids left empty).

    Accepts ``{"name": ..., "arguments": {...}}`` (``"parameters"`` is taken for
    ``"arguments"``, arguments may be JSON text), the OpenAI shape
    ``{"function": {"name": ..., "arguments": ...}}``, or a JSON list of such objects; code
    fences and text around the JSON are ignored.

    Raises:
        ToolCallParseError: The block holds no usable call; the message says why.
    """
    text = block.strip()
    inner = _inside_fence(text)
    if inner is not None:
        text = inner.strip()
    if not text:
        raise ToolCallParseError("the <tool_call> block is empty", body=block)
    value = _load_json(text, block)
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ToolCallParseError("the <tool_call> block holds an empty list", body=block)
    return [_call_from(item, block) for item in items]


def parse_tool_calls(text: str, *, first_id: int = 1) -> ParsedToolCalls:
    """Find and parse every ``<tool_call>`` block of a model's message; never raises.

    Args:
        text: The model's message.
        first_id: Number of the first call id (``call_1``, ``call_2``...).

    Returns:
        The remaining text, the calls and one error message per unparsable block.
    """
    if "<" not in text or not any(not m.group(1) for m in _TAG.finditer(text)):
        return ParsedToolCalls(text.strip() or None)
    text = _unfence(text)
    calls: list[ToolCall] = []
    errors: list[str] = []
    kept: list[str] = []
    position = 0
    number = 0
    for start, body_start, body_end, end in _blocks(text):
        number += 1
        kept.append(text[position:start])
        position = end
        whole = text[start:end]
        try:
            found = parse_tool_call_block(text[body_start:body_end])
        except ToolCallParseError as exc:
            errors.append(f"block {number} ({clip(whole, 80)!r}): {exc}")
            kept.append(whole)
            continue
        for call in found:
            calls.append(call.with_id(f"call_{first_id + len(calls)}"))
    kept.append(text[position:])
    rest = re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip()
    return ParsedToolCalls(rest or None, calls, errors)


def _blocks(text: str) -> list[tuple[int, int, int, int]]:
    """Every ``<tool_call>`` block: (start, body start, body end, end), in order.

    A block's body runs from its opening tag to the next tag: a closing tag ends the block
    (and belongs to it), another opening tag or the end of the text ends it unclosed.
    Closing tags outside a block stay in the text.
    """
    tags = list(_TAG.finditer(text))
    found: list[tuple[int, int, int, int]] = []
    for index, tag in enumerate(tags):
        if tag.group(1):
            continue
        following = tags[index + 1] if index + 1 < len(tags) else None
        if following is None:
            found.append((tag.start(), tag.end(), len(text), len(text)))
        elif following.group(1):
            found.append((tag.start(), tag.end(), following.start(), following.end()))
        else:
            found.append((tag.start(), tag.end(), following.start(), following.start()))
    return found


def _unfence(text: str) -> str:
    """Remove the code fences around runs of ``<tool_call>`` blocks.

    A fence is removed when, after its opening line (three backticks, a language name,
    blanks, one newline), the first thing is an opening tag, and a closing tag followed only
    by whitespace comes before a closing fence; the first such closing fence ends the run.
    Everything between the fences, prose included, is kept.
    """
    if _FENCE not in text:
        return text
    # Each closing tag directly followed (after whitespace) by a fence: (tag start, fence).
    closings: list[tuple[int, int]] = []
    for tag in _TAG.finditer(text):
        if tag.group(1):
            after = _skip(_SPACES, text, tag.end())
            if text.startswith(_FENCE, after):
                closings.append((tag.start(), after))
    if not closings:
        return text
    starts = [start for start, _ in closings]
    out: list[str] = []
    position = 0
    fence = text.find(_FENCE)
    while fence >= 0:
        inner = _skip(_BLANKS, text, _skip(_LANG, text, fence + 3))
        if text.startswith("\n", inner):
            inner += 1
        opening = _TAG.match(text, _skip(_SPACES, text, inner))
        if opening is not None and not opening.group(1):
            at = bisect.bisect_left(starts, opening.end())
            if at < len(closings):
                closing_fence = closings[at][1]
                out.append(text[position:fence])
                out.append(text[inner:closing_fence])
                position = closing_fence + 3
                fence = text.find(_FENCE, position)
                continue
        fence = text.find(_FENCE, fence + 1)
    out.append(text[position:])
    return "".join(out)


def _skip(pattern: re.Pattern[str], text: str, position: int) -> int:
    """Where a run of ``pattern`` (which also matches nothing) starting at ``position`` ends."""
    found = pattern.match(text, position)
    return found.end() if found is not None else position


def _inside_fence(text: str) -> str | None:
    """The inside of a code fence that spans all of ``text``, or ``None``."""
    if len(text) < 6 or not text.startswith(_FENCE) or not text.endswith(_FENCE):
        return None
    inner = _skip(_BLANKS, text, _skip(_LANG, text, 3))
    if text.startswith("\n", inner):
        inner += 1
    body = text[inner : len(text) - 3]
    return body[:-1] if body.endswith("\n") else body


def render_tool_call(call: ToolCall) -> str:
    """The ``<tool_call>`` block that asks for ``call`` (the inverse of the parser)."""
    if call.arguments_error is not None and call.raw_arguments is not None:
        name = json.dumps(call.name, ensure_ascii=False)
        return f'<tool_call>{{"name": {name}, "arguments": {call.raw_arguments}}}</tool_call>'
    body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    body = body.replace("<", "\\u003c")  # only inside strings: no text of the call reads as a tag
    return f"{_OPEN}{body}</tool_call>"


class TextProtocolModel(Model):
    """Wraps a model so that it calls tools by writing ``<tool_call>`` blocks.

    Use it for models served without function calling (many local models). The wrapped
    model receives no native ``tools``; tool results come back to it as ``<tool_result>``
    blocks in user messages.

    Args:
        inner: The model to wrap (an ``OpenAIChatModel``, a scripted model...).
        instructions: The tool instructions appended to the system prompt; ``{tools}`` is
            replaced by the tool list (see ``DEFAULT_INSTRUCTIONS``).
        name: The name recorded in traces; defaults to ``"<inner name>?protocol=text"``, the
            model string that builds this wrapper.

    Example:
        ```python
        model = TextProtocolModel(model_from_string("ollama:llama3.1"))
        # or: model_from_string("ollama:llama3.1?protocol=text")
        ```
    """

    def __init__(
        self, inner: Model, *, instructions: str | None = None, name: str | None = None
    ) -> None:
        from toolproof.errors import UserError

        if not isinstance(inner, Model):
            raise UserError(f"TextProtocolModel wraps a Model, got {inner!r}")
        self.inner = inner
        self.instructions = DEFAULT_INSTRUCTIONS if instructions is None else instructions
        if "{tools}" not in self.instructions:
            raise UserError("TextProtocolModel(instructions=...) must contain '{tools}'")
        self.name = name or f"{inner.name}?protocol=text"

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        """Render the conversation as text, ask the inner model, parse its tool calls."""
        rendered = self.render(messages, tools)
        inner_settings = settings
        if settings.tool_choice is not None or settings.parallel_tool_calls is not None:
            inner_settings = replace(settings, tool_choice=None, parallel_tool_calls=None)
        response = await self.inner.request(rendered, [], inner_settings)
        message = response.message
        first = _next_call_number(messages)
        parsed = parse_tool_calls(message.content or "", first_id=first)
        if not parsed.calls and not parsed.errors:
            return response
        native = [c.with_id(c.id or f"call_{first + i}") for i, c in enumerate(message.tool_calls)]
        calls = native + [
            c.with_id(f"call_{first + len(native) + i}") for i, c in enumerate(parsed.calls)
        ]
        new_message = Message(
            role="assistant",
            content=parsed.text,
            tool_calls=calls,
            reasoning=message.reasoning,
        )
        return replace(
            response,
            message=new_message,
            parse_errors=[*response.parse_errors, *parsed.errors],
        )

    def render(self, messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> list[Message]:
        """The conversation as the inner model receives it.

        Tools are described in the system prompt, tool calls become ``<tool_call>`` blocks
        and tool results ``<tool_result>`` blocks in user messages.
        """
        out: list[Message] = []
        prompt = self.tools_prompt(tools) if tools else None
        if prompt is not None and (not messages or messages[0].role != "system"):
            out.append(Message.system(prompt))
        for index, m in enumerate(messages):
            if m.role == "system":
                text = m.content or ""
                if index == 0 and prompt is not None:
                    text = f"{text}\n\n{prompt}" if text else prompt
                out.append(Message.system(text))
            elif m.role == "assistant":
                if m.tool_calls:
                    blocks = "\n".join(render_tool_call(c) for c in m.tool_calls)
                    text = f"{m.content}\n{blocks}" if m.content else blocks
                    out.append(Message(role="assistant", content=text, reasoning=m.reasoning))
                else:
                    out.append(m)
            elif m.role == "tool":
                _append_user(out, _render_result(m))
            else:
                _append_user(out, m.content or "")
        return out

    def tools_prompt(self, tools: Sequence[ToolDefinition]) -> str:
        """The tool instructions for ``tools``."""
        lines = "\n".join(
            json.dumps(
                {"name": t.name, "description": t.description, "parameters": t.parameters},
                ensure_ascii=False,
            )
            for t in tools
        )
        return self.instructions.replace("{tools}", lines)

    async def aclose(self) -> None:
        """Close the inner model."""
        await self.inner.aclose()


def _next_call_number(messages: Sequence[Message]) -> int:
    """One more than the highest ``call_N`` id so far.

    Ids stay unique within a conversation, even when memory has trimmed its start.
    """
    top = 0
    for m in messages:
        for c in m.tool_calls:
            if c.id.startswith("call_") and c.id[5:].isdigit():
                top = max(top, int(c.id[5:]))
    return top + 1


def _render_result(message: Message) -> str:
    name = json.dumps(message.name or "", ensure_ascii=False)
    call_id = json.dumps(message.tool_call_id or "", ensure_ascii=False)
    status = ' status="error"' if message.status == "error" else ""
    return (
        f"<tool_result name={name} id={call_id}{status}>\n{message.content or ''}\n</tool_result>"
    )


def _append_user(out: list[Message], text: str) -> None:
    """Add user text, merged into the previous user message (strict role alternation)."""
    if out and out[-1].role == "user":
        out[-1] = Message.user(f"{out[-1].content or ''}\n\n{text}")
    else:
        out.append(Message.user(text))


def _load_json(text: str, block: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        first_error = exc
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if starts:
        try:
            value, _ = json.JSONDecoder().raw_decode(text, min(starts))
        except (ValueError, RecursionError):
            pass
        else:
            return value
    reason = (
        "it nests too deeply"
        if isinstance(first_error, RecursionError)
        else str(first_error).split(":", 1)[0]
    )
    raise ToolCallParseError(f"the block is not valid JSON ({reason})", body=block)


def _call_from(item: Any, block: str) -> ToolCall:
    if not isinstance(item, dict):
        raise ToolCallParseError(
            'a tool call must be a JSON object {"name": ..., "arguments": {...}}, '
            f"got {type(item).__name__}",
            body=block,
        )
    function = item.get("function")
    if isinstance(function, dict) and "name" in function:
        item = function
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ToolCallParseError('the tool call has no "name" string', body=block)
    arguments = item["arguments"] if "arguments" in item else item.get("parameters", {})
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        return ToolCall.from_json_arguments(name.strip(), arguments)
    if not isinstance(arguments, dict):
        raise ToolCallParseError(
            f'the "arguments" of {name.strip()!r} must be a JSON object, '
            f"got {type(arguments).__name__}",
            body=block,
        )
    return ToolCall(name=name.strip(), arguments=arguments)
