"""LangChain and LangGraph: tools both ways, a scripted chat model, trace capture, suite agents.

Install with ``pip install "toolproof[langchain]"``. This module imports ``langchain_core``.

- :func:`from_langchain` makes a LangChain tool a toolproof :class:`~toolproof.Tool`;
  :func:`to_langchain` makes toolproof tools LangChain ``StructuredTool`` objects whose calls
  go through a :class:`~toolproof.Toolset`, so mock mode, fixtures and faults apply inside a
  LangChain agent.
- :class:`ScriptedChatModel` is a real ``BaseChatModel`` answering from a toolproof script
  (``call(...)`` and strings); :class:`ToolproofChatModel` puts any toolproof model (replay,
  function, OpenAI-compatible) behind LangChain's chat-model interface. Both record requests.
- :class:`TraceCapture` (a callback handler) and :func:`capture_trace` turn any LangChain or
  LangGraph run into a :class:`~toolproof.Trace`.
- :class:`LangChainAgent` runs a LangChain agent wherever toolproof expects an ``Agent``: an
  eval suite's ``agent:`` factory, ``run_agent`` in tests, the recorder.
"""

from __future__ import annotations

from toolproof.integrations.langchain._agent import LangChainAgent
from toolproof.integrations.langchain._capture import TraceCapture, capture_trace
from toolproof.integrations.langchain._chat import (
    ChatRequest,
    ScriptedChatModel,
    ToolproofChatModel,
)
from toolproof.integrations.langchain._messages import to_langchain_messages, to_toolproof_messages
from toolproof.integrations.langchain._tools import from_langchain, to_langchain

__all__ = [
    "ChatRequest",
    "LangChainAgent",
    "ScriptedChatModel",
    "ToolproofChatModel",
    "TraceCapture",
    "capture_trace",
    "from_langchain",
    "to_langchain",
    "to_langchain_messages",
    "to_toolproof_messages",
]
