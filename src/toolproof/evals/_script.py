"""The ``script:`` of a case: responses of the scripted model, checked against the agent's tools.

A scripted call must name one of the agent's tools and fit its schema (a call that is wrong
on purpose says ``unchecked: true``), so a script cannot silently test the wrong thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from toolproof._messages import Message, ToolCall
from toolproof._yaml import DocPath
from toolproof._yaml import describe_type as _type

if TYPE_CHECKING:
    from toolproof._tools import Tool
    from toolproof.models.fake import ScriptItem

__all__ = ["parse_script", "unknown_tool"]


class _Builder(Protocol):
    """Where the problems of a script go (the suite loader)."""

    def add(self, path: DocPath, message: str) -> None: ...

    def unknown_keys(
        self, data: Mapping[Any, Any], allowed: Mapping[str, str], path: DocPath
    ) -> None: ...


SCRIPT = "responses of the scripted model: text, {call: {name, arguments}}, a list of calls"


def parse_script(
    builder: _Builder, value: Any, path: DocPath, tools: Mapping[str, Tool[..., Any]] | None = None
) -> list[ScriptItem] | None:
    if not isinstance(value, list) or not value:
        builder.add(path, f"expected a list of responses ({SCRIPT}), got {_type(value)}")
        return None
    items: list[ScriptItem] = []
    for index, item in enumerate(value):
        parsed = _script_item(builder, item, (*path, index), tools)
        if parsed is not None:
            items.append(parsed)
    return items


def _script_item(
    builder: _Builder, item: Any, path: DocPath, tools: Mapping[str, Tool[..., Any]] | None
) -> ScriptItem | None:
    if isinstance(item, str):
        return item
    if isinstance(item, list):
        calls = [_script_call(builder, entry, (*path, i), tools) for i, entry in enumerate(item)]
        if not item:
            builder.add(path, "a list of calls must not be empty")
            return None
        if any(c is None for c in calls):
            return None
        if any(isinstance(c, Message) for c in calls):  # an unchecked call: sent as written
            parts = [
                p
                for c in calls
                if c is not None
                for p in (c.tool_calls if isinstance(c, Message) else [c])
            ]
            return Message("assistant", None, parts)
        return [c for c in calls if isinstance(c, ToolCall)]
    if isinstance(item, Mapping) and "raise" in item:
        return _script_error(builder, item, path)
    if isinstance(item, Mapping) and "call" in item:
        return _script_call(builder, item, path, tools)
    builder.add(
        path,
        f"a script item is text, {{call: {{name, arguments}}}}, a list of calls (parallel), or "
        f"{{raise: ModelConnectionError}}; got {_type(item)}",
    )
    return None


def _script_call(
    builder: _Builder, item: Any, path: DocPath, tools: Mapping[str, Tool[..., Any]] | None
) -> ToolCall | Message | None:
    if not isinstance(item, Mapping) or set(item) != {"call"}:
        builder.add(path, "expected {call: {name: ..., arguments: {...}}}")
        return None
    body = item["call"]
    if not isinstance(body, Mapping) or not isinstance(body.get("name"), str):
        builder.add(
            (*path, "call"), "a call needs a 'name' (string) and optional 'arguments' (mapping)"
        )
        return None
    builder.unknown_keys(
        body,
        {"name": "", "arguments": "", "id": "", "unchecked": "send it as written"},
        (*path, "call"),
    )
    arguments = body.get("arguments", {})
    call_id = str(body.get("id", ""))
    unchecked = body.get("unchecked", False)
    if not isinstance(unchecked, bool):
        builder.add((*path, "call", "unchecked"), f"expected true or false, got {unchecked!r}")
        return None
    if isinstance(arguments, str):  # raw JSON text, possibly malformed on purpose
        made = ToolCall.from_json_arguments(body["name"], arguments, call_id)
        return Message("assistant", None, [made]) if unchecked else made
    if not isinstance(arguments, Mapping):
        builder.add(
            (*path, "call", "arguments"),
            f"expected a mapping (or JSON text), got {_type(arguments)}",
        )
        return None
    if (
        tools is not None
        and not unchecked
        and not _script_call_fits(builder, body["name"], dict(arguments), tools, path)
    ):
        return None
    made = ToolCall(body["name"], dict(arguments), call_id)
    # Written as a whole message, a call is sent as written (never checked at request time).
    return Message("assistant", None, [made]) if unchecked else made


def _script_call_fits(
    builder: _Builder,
    name: str,
    arguments: dict[str, Any],
    tools: Mapping[str, Tool[..., Any]],
    path: DocPath,
) -> bool:
    """Whether a scripted call fits the agent's tools (names and arguments).

    A call that is wrong on purpose says ``unchecked: true``.
    """
    from toolproof._tools import ArgumentsInvalid

    hint = " (to send it anyway, to test how the agent copes, add 'unchecked: true')"
    found = tools.get(name)
    if found is None:
        builder.add((*path, "call", "name"), "script calls " + unknown_tool(name, tools) + hint)
        return False
    try:
        found.validate(arguments)
    except ArgumentsInvalid as exc:
        builder.add(
            (*path, "call", "arguments"),
            f"script call of {name!r} does not fit its schema: {exc}{hint}",
        )
        return False
    return True


def _script_error(builder: _Builder, item: Mapping[str, Any], path: DocPath) -> ScriptItem | None:
    from toolproof import errors

    spec = item["raise"]
    allowed = ("ModelConnectionError", "ModelHTTPError", "UnexpectedModelOutput")
    if isinstance(spec, str):
        spec = {"type": spec}
    if not isinstance(spec, Mapping) or spec.get("type") not in allowed:
        builder.add(
            (*path, "raise"),
            f"expected one of {', '.join(allowed)} (or {{type, status, message}})",
        )
        return None
    message = str(spec.get("message", f"scripted {spec['type']}"))
    if spec["type"] == "ModelHTTPError":
        status = spec.get("status", 503)
        if not isinstance(status, int) or isinstance(status, bool):
            builder.add((*path, "raise", "status"), f"expected an HTTP status, got {status!r}")
            return None
        return errors.ModelHTTPError(message, status=status)
    if spec["type"] == "UnexpectedModelOutput":
        return errors.UnexpectedModelOutput(message)
    return errors.ModelConnectionError(message)


def unknown_tool(name: Any, tools: Mapping[str, Any]) -> str:
    """``unknown tool 'x' (did you mean 'y'?); the agent's tools are: ...``."""
    from toolproof._filemodel import did_you_mean

    known = sorted(tools)
    hint = did_you_mean(name, known)
    return f"unknown tool {name!r}{hint}; the agent's tools are: {', '.join(known) or '(none)'}"
