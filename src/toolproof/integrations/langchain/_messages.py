"""Messages both ways between LangChain and toolproof.

Also runs toolproof coroutines from LangChain's synchronous paths.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from toolproof._messages import Message, ModelResponse, ToolCall
from toolproof.errors import UserError

__all__ = ["to_langchain_messages", "to_toolproof_messages"]


# -- messages -------------------------------------------------------------------------------------


def _text(content: Any) -> str:
    """The text of a LangChain message content (a string or a list of content blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(content)


def to_toolproof_messages(messages: Sequence[BaseMessage]) -> list[Message]:
    """Convert LangChain messages into toolproof messages.

    System, human, AI (with tool calls and invalid tool calls) and tool messages map to the
    roles ``system``, ``user``, ``assistant`` and ``tool``; other kinds become user messages.
    """
    out: list[Message] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            out.append(Message.system(_text(message.content)))
        elif isinstance(message, AIMessage):
            calls = [
                ToolCall(name=c["name"], arguments=dict(c.get("args") or {}), id=c.get("id") or "")
                for c in message.tool_calls
            ]
            for bad in message.invalid_tool_calls:
                calls.append(
                    ToolCall.from_json_arguments(
                        bad.get("name") or "", bad.get("args"), bad.get("id") or ""
                    )
                )
            content = _text(message.content)
            out.append(Message.assistant(content or (None if calls else ""), calls))
        elif isinstance(message, ToolMessage):
            out.append(
                Message(
                    role="tool",
                    content=_text(message.content),
                    tool_call_id=message.tool_call_id,
                    name=message.name,
                    status="error" if message.status == "error" else "ok",
                )
            )
        else:
            out.append(Message.user(_text(message.content)))
    return out


def ai_message(message: Message, response: ModelResponse | None = None) -> AIMessage:
    calls = []
    invalid = []
    for c in message.tool_calls:
        if c.arguments_error is not None:
            invalid.append(
                {
                    "type": "invalid_tool_call",
                    "name": c.name,
                    "args": c.raw_arguments,
                    "id": c.id,
                    "error": c.arguments_error,
                }
            )
        else:
            calls.append(
                {"type": "tool_call", "name": c.name, "args": dict(c.arguments), "id": c.id}
            )
    kwargs: dict[str, Any] = {}
    if response is not None:
        usage = response.usage
        kwargs["usage_metadata"] = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        }
        kwargs["response_metadata"] = {
            "finish_reason": response.finish_reason,
            "model_name": response.model_name,
        }
    return AIMessage(
        content=message.content or "", tool_calls=calls, invalid_tool_calls=invalid, **kwargs
    )


def to_langchain_messages(messages: Sequence[Message]) -> list[BaseMessage]:
    """Convert toolproof messages into LangChain messages.

    It is the inverse of :func:`to_toolproof_messages`.
    """
    out: list[BaseMessage] = []
    for message in messages:
        if message.role == "system":
            out.append(SystemMessage(message.text))
        elif message.role == "user":
            out.append(HumanMessage(message.text))
        elif message.role == "assistant":
            out.append(ai_message(message))
        else:
            out.append(
                ToolMessage(
                    message.text,
                    tool_call_id=message.tool_call_id or "",
                    name=message.name,
                    status="error" if message.status == "error" else "success",
                )
            )
    return out


# -- running coroutines from LangChain's synchronous paths ----------------------------------------

home_loop: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "toolproof_langchain_loop", default=None
)


def run_sync(make: Callable[[], Awaitable[Any]], what: str) -> Any:
    """Run a coroutine from synchronous LangChain code (``invoke``, a sync tool)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UserError(
            f"{what} was called synchronously inside a running event loop; use the async "
            "form (`await ....ainvoke(...)`) or run the synchronous code in a thread"
        )
    loop = home_loop.get()
    if loop is not None and loop.is_running():
        # LangChainAgent runs synchronous agent code in a worker thread: send the work back to
        # the agent's loop, where the model's connections live.
        return asyncio.run_coroutine_threadsafe(_as_coroutine(make), loop).result()
    return asyncio.run(_as_coroutine(make))


async def _as_coroutine(make: Callable[[], Awaitable[Any]]) -> Any:
    return await make()
