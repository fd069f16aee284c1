"""A minimal LangChain tool agent: one decision, one tool round, one final answer.

``ToolAgent`` is plain LangChain (``bind_tools``, ``ToolMessage``); nothing in it knows about
toolproof. ``build_agent`` is the small adapter that lets toolproof run it in eval suites,
with its mocks and scripted models.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool

from examples.langchain_agent.tools import build_tools
from toolproof import Tool, Toolset
from toolproof.integrations.langchain import LangChainAgent, from_langchain
from toolproof.models import Model


@dataclass
class AgentRunResult:
    """What one run did: the model's decision, the tool results, the final answer."""

    decision: AIMessage
    tool_messages: list[ToolMessage]
    final_response: AIMessage


class ToolAgent:
    """Ask the model, run the tools it asks for, and ask it again with the results."""

    def __init__(self, chat_model: BaseChatModel, tools: Sequence[BaseTool]) -> None:
        self.model_with_tools = chat_model.bind_tools(list(tools))
        self.tools_by_name = {tool.name: tool for tool in tools}

    def decide(self, prompt: str) -> AIMessage:
        message = self.model_with_tools.invoke(prompt)
        assert isinstance(message, AIMessage)
        return message

    def execute_tool_calls(self, message: AIMessage) -> list[ToolMessage]:
        tool_messages = []
        for tool_call in message.tool_calls:
            tool = self.tools_by_name[tool_call["name"]]
            try:
                content = str(tool.invoke(tool_call["args"]))
                status = "success"
            except (ValueError, KeyError) as exc:
                # Known business errors go back to the model; anything else is a bug and stops.
                content = str(exc.args[0] if exc.args else exc)
                status = "error"
            tool_messages.append(
                ToolMessage(
                    content=content,
                    status=status,
                    name=tool_call["name"],
                    tool_call_id=tool_call["id"],
                )
            )
        return tool_messages

    def run(self, prompt: str) -> AgentRunResult:
        decision = self.decide(prompt)
        if not decision.tool_calls:
            return AgentRunResult(decision=decision, tool_messages=[], final_response=decision)
        tool_messages = self.execute_tool_calls(decision)
        messages: list[BaseMessage] = [HumanMessage(content=prompt), decision, *tool_messages]
        final_response = self.model_with_tools.invoke(messages)
        assert isinstance(final_response, AIMessage)
        return AgentRunResult(
            decision=decision, tool_messages=tool_messages, final_response=final_response
        )


# -- toolproof's view of the same agent ------------------------------------------------------------

#: The LangChain tools as toolproof tools; the business errors are declared so that mock mode
#: and the error contract treat them as the agent does.
TOOLS: list[Tool[..., Any]] = [
    from_langchain(lc_tool, errors=(ValueError, KeyError)) for lc_tool in build_tools()
]

#: The test data the mocked HR system answers with (the real one is a company service).
TEST_LEAVE = {"E001": 5, "E003": 12}


@TOOLS[0].mock
def _mock_leave(employee_id: str) -> int:
    key = employee_id.strip().upper()
    if not key:
        raise ValueError("employee_id must not be empty")
    if key not in TEST_LEAVE:
        raise KeyError("employee not found")
    return TEST_LEAVE[key]


def build_agent(
    model: Model | str, tools: Toolset | Sequence[Tool[..., Any]] | None = None
) -> LangChainAgent:
    """The ``ToolAgent`` as a toolproof agent (for eval suites, ``run_agent`` and recording).

    Args:
        model: The model (a suite's scripted model, or a real one).
        tools: The tools, in the suite's mode; defaults to the real tools.
    """
    return LangChainAgent(
        lambda chat_model, lc_tools: ToolAgent(chat_model, lc_tools),
        model,
        TOOLS if tools is None else tools,
        tool_errors="raise",  # ToolAgent catches ValueError and KeyError itself
        name="langchain-tool-agent",
    )
