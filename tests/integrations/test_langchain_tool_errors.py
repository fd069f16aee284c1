"""The LangChain route behaves as LangChain does, and records the agent's own system prompt.

A differential test: the same tool functions and the same script, run by the real
``create_agent`` directly and through ``LangChainAgent``, for generated exception types,
declared to toolproof or not. Both runs must end the same way: the run fails with the same
exception, or the model reads an error message and answers.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import ToolException

from toolproof import Agent, ToolError, tool
from toolproof.errors import AgentRunError
from toolproof.integrations.langchain import LangChainAgent, ScriptedChatModel
from toolproof.replay import replay
from toolproof.testing import ScriptedModel, call

BUILTIN = [ValueError, KeyError, RuntimeError, TypeError, LookupError, ZeroDivisionError]
names = st.from_regex(r"\A[A-Z][a-z]{1,10}Error\Z")
error_types = st.one_of(
    st.sampled_from([*BUILTIN, ToolError, ToolException]),
    st.builds(lambda name, base: type(name, (base,), {}), names, st.sampled_from(BUILTIN)),
)
texts = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)


def _function(error: type[Exception], text: str) -> Any:
    def check_stock(sku: str) -> str:
        """Check the stock of a product.

        Args:
            sku: The product id.
        """
        raise error(text)

    return check_stock


def _outcome(run: Any) -> tuple[str, str, str]:
    """``("crash", type, message)``, or ``("message", what the model read, answer)``."""
    try:
        answer, seen = run()
    except AgentRunError as exc:  # toolproof's error carries the framework's exception
        cause = exc.__cause__ or exc
        return "crash", type(cause).__name__, str(cause)
    except Exception as exc:
        return "crash", type(exc).__name__, str(exc)
    return "message", seen, answer


def _direct(error: type[Exception], text: str) -> tuple[str, str, str]:
    model = ScriptedChatModel([call("check_stock", sku="A-1"), "Out of luck."])
    agent = create_agent(model, [_function(error, text)])

    def run() -> tuple[str, str]:
        messages = agent.invoke({"messages": [HumanMessage("Is A-1 in stock?")]})["messages"]
        (reply,) = [m for m in messages if isinstance(m, ToolMessage)]
        return messages[-1].content, "error" if reply.status == "error" else "ok"

    return _outcome(run)


def _through_toolproof(
    error: type[Exception], text: str, declared: bool, **options: Any
) -> tuple[str, str, str]:
    declares = (error,) if declared and error is not ToolError else ()
    check_stock = tool(_function(error, text), errors=declares)
    agent = LangChainAgent(
        lambda chat, tools: create_agent(chat, tools),
        ScriptedModel([call("check_stock", sku="A-1"), "Out of luck."]),
        [check_stock],
        **options,
    )

    def run() -> tuple[str, str]:
        result = agent.run_sync("Is A-1 in stock?")
        (reply,) = result.trace.tool_results
        return result.output or "", reply.status

    return _outcome(run)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(error=error_types, text=texts, declared=st.booleans())
def test_a_tool_exception_ends_the_run_as_it_does_in_langchain(
    error: type[Exception], text: str, declared: bool
) -> None:
    direct = _direct(error, text)
    assert direct[0] == "crash"  # create_agent's default: a tool's exception ends the run
    assert _through_toolproof(error, text, declared) == direct


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(error=error_types, text=texts)
def test_errors_become_messages_only_when_asked(error: type[Exception], text: str) -> None:
    # What the tool declared (and ToolError) reaches the model as an error message.
    declared = _through_toolproof(error, text, True, tool_errors="message")
    assert declared == ("message", "error", "Out of luck.")
    # An exception the tool did not declare is a bug: it ends the run either way.
    undeclared = _through_toolproof(error, text, False, tool_errors="message")
    if error is ToolError:
        assert undeclared == declared
    else:
        assert undeclared[:2] == ("crash", error.__name__)


def test_invalid_arguments_are_reported_to_the_model_as_langchain_does() -> None:
    @tool
    def check_stock(sku: str, count: int) -> str:
        """Check the stock of a product.

        Args:
            sku: The product id.
            count: How many are needed.
        """
        return "in stock"

    model = ScriptedModel([call("check_stock", sku="A-1", count="many"), "Let me retry."])
    agent = LangChainAgent(lambda chat, tools: create_agent(chat, tools), model, [check_stock])
    result = agent.run_sync("Is A-1 in stock?")
    assert result.output == "Let me retry."
    (reply,) = result.trace.tool_results
    assert (reply.status, reply.error_type) == ("error", "ValidationError")
    assert model.requests[1].messages[-1].text.startswith("Error (ValidationError): ")


# -- the agent's own system prompt ---------------------------------------------------------


def _orders(prompt: str, model: Any, tools: Any = None) -> LangChainAgent:
    @tool
    def lookup(order_id: str) -> str:
        """Look an order up.

        Args:
            order_id: The order id.
        """
        return f"{order_id}: shipped"

    return LangChainAgent(
        lambda chat, lc_tools: create_agent(chat, lc_tools, system_prompt=prompt),
        model,
        [lookup] if tools is None else tools,
    )


def test_the_trace_records_the_system_prompt_the_agent_sent() -> None:
    agent = _orders("You handle orders.", ScriptedModel(["Hello."]))
    trace = agent.run_sync("hi").trace
    assert trace.system_prompt == "You handle orders."
    assert trace.system_prompt_hash is not None
    # Given to LangChainAgent as well, both reach the model and the trace.
    both = LangChainAgent(
        lambda chat, lc_tools: create_agent(chat, lc_tools, system_prompt="Be brief."),
        ScriptedModel(["Hello."]),
        system_prompt="You handle orders.",
    )
    assert both.run_sync("hi").trace.system_prompt == "Be brief.\n\nYou handle orders."


@pytest.mark.parametrize(("today", "changed"), [("You handle orders.", False), ("Be rude.", True)])
def test_replay_sees_a_changed_langchain_system_prompt(today: str, changed: bool) -> None:
    recorded = (
        _orders(
            "You handle orders.", ScriptedModel([call("lookup", order_id="A-1"), "A-1 shipped."])
        )
        .run_sync("Where is A-1?")
        .trace
    )
    report = replay(
        [recorded],
        mode="model",
        agent=lambda model, tools=None: _orders(today, model, tools),
        model="recorded",
    )
    (sample,) = report.samples
    assert ("system prompt changed since recording" in sample.notes) is changed
    assert sample.grade == "pass"


def test_toolproofs_own_agent_is_unaffected() -> None:
    agent = Agent(ScriptedModel(["ok"]), system_prompt="Own prompt.")
    assert agent.run_sync("hi").trace.system_prompt == "Own prompt."
