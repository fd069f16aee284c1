"""Agents, tools and mocks that the eval tests' suites name (``evalagents:build_agent``).

Suites written by the tests live in ``tmp_path``; they import this module by name, which
works because pytest puts ``tests/evals`` on ``sys.path`` (rootdir-less test directory).
Subprocess tests add this directory to ``PYTHONPATH``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from toolproof import Agent, Message, Tool, ToolError, Toolset, tool
from toolproof.errors import ModelConnectionError
from toolproof.models import Model, ModelResponse, ModelSettings, ToolDefinition
from toolproof.testing import FunctionModel, RequestInfo, StatefulMock, call

LEAVE = {"E001": 5, "E002": 0, "E003": 12}


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@tool(errors=(KeyError,))
def get_leave_balance(employee_id: str) -> int:
    """Look up an employee's remaining annual leave, in days.

    Args:
        employee_id: Employee id such as E001.
    """
    return LEAVE[employee_id.upper()]


@tool
def search_docs(query: str, top_k: int = 5) -> list[str]:
    """Search the HR handbook.

    Args:
        query: What to look for.
        top_k: How many passages to return.
    """
    return [f"passage about {query}"][:top_k]


@tool(side_effects=True)
def cancel_order(order_id: str) -> str:
    """Cancel an order.

    Args:
        order_id: The order id.
    """
    raise RuntimeError("the real order system must never be called in tests")


@tool
def crash() -> str:
    """A tool with a bug."""
    raise ZeroDivisionError("division by zero")


TOOLS: list[Tool[..., Any]] = [
    multiply_numbers,
    get_leave_balance,
    search_docs,
    cancel_order,
    crash,
]


def build_agent(
    model: Model | str, tools: Toolset | Sequence[Tool[..., Any]] | None = None, **options: Any
) -> Agent:
    """The test agent factory."""
    return Agent(model, TOOLS if tools is None else tools, system_prompt="You help.", **options)


def broken_factory(model: Model, tools: Toolset | None = None) -> Agent:
    """A factory that fails when called."""
    raise RuntimeError("factory is broken")


def not_an_agent(model: Model, tools: Toolset | None = None) -> str:
    """A factory that returns the wrong thing."""
    return "agent"


AGENT = Agent(FunctionModel(lambda m, i: "unused"), TOOLS, system_prompt="prebuilt")


class Orders(StatefulMock):
    """A stateful mock of the order system."""

    initial_state = {"orders": {"A1": {"status": "paid"}}, "cancelled": []}

    @StatefulMock.handles("cancel_order")
    def cancel(self, order_id: str) -> str:
        order = self.state["orders"].get(order_id)
        if order is None:
            raise ToolError(f"order {order_id} does not exist")
        order["status"] = "cancelled"
        self.state["cancelled"].append(order_id)
        return "cancelled"


def order_mocks() -> list[Any]:
    """A mock factory returning a provider and a mapping."""
    return [Orders(), {"search_docs": lambda query, top_k=5: ["mocked passage"]}]


# -- models that the tests use as "the model under test" ------------------------------------


def rule_model(messages: list[Message], info: RequestInfo) -> object:
    """Multiplies the two numbers of the question; cancels orders; answers greetings."""
    import re

    last = messages[-1]
    if last.role == "tool":
        return f"The result is {last.content}."
    numbers = re.findall(r"\d+", last.content or "")
    if "cancel" in (last.content or ""):
        return call("cancel_order", order_id="A1")
    if len(numbers) >= 2:
        return call("multiply_numbers", a=int(numbers[0]), b=int(numbers[1]))
    return "Hello!"


class FlakyConnection(Model):
    """Fails the first ``failures`` requests with a connection error, then answers."""

    def __init__(self, failures: int, answer: str = "fine") -> None:
        self.name = "flaky-connection"
        self.failures = failures
        self.answer = answer
        self.requests = 0

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        self.requests += 1
        if self.requests <= self.failures:
            raise ModelConnectionError("connection refused (127.0.0.1:9)")
        return ModelResponse(Message.assistant(self.answer))


class Counting(Model):
    """Answers by numbering its requests, so tests can tell fresh answers from cached ones."""

    def __init__(self, name: str = "counting") -> None:
        self.name = name
        self.requests = 0

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        self.requests += 1
        return ModelResponse(Message.assistant(f"answer {self.requests}"))


class Slow(Model):
    """Answers after ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        self.name = "slow"
        self.delay = delay

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        await asyncio.sleep(self.delay)
        return ModelResponse(Message.assistant("slow answer"))


def slow_agent(model: Model, tools: Toolset | None = None) -> Agent:
    """An agent whose model takes a second per answer, whatever model it is given."""
    return Agent(Slow(1.0), TOOLS if tools is None else tools)


class FailingMocks:
    """A mock factory that works once (while the suite loads), then fails."""

    calls = 0

    def __new__(cls) -> Orders:  # type: ignore[misc]
        cls.calls += 1
        if cls.calls > 1:
            raise OSError("fixture service unavailable")
        return Orders()
