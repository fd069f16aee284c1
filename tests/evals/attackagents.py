"""Tools whose real code records that it ran, and agent factories, for the attack tests.

Every real implementation appends to ``RAN`` (and to the file named by
``TOOLPROOF_ATTACK_LEDGER``, for subprocess tests), so a test proves that no real code ran
in an attack case by finding the record empty. ``eager()`` is a model that calls every tool,
with the attacker's arguments, whatever it reads.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from toolproof import Agent, Message, Tool, Toolset, tool
from toolproof.models import Model
from toolproof.models.fake import FunctionModel, RequestInfo, ScriptedModel, call

RAN: list[str] = []
ATTACKER = "attacker-0042"


def _ran(what: str) -> None:
    RAN.append(what)
    path = os.environ.get("TOOLPROOF_ATTACK_LEDGER")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(what + "\n")


@tool
def read_mail() -> dict[str, Any]:
    """Read the inbox (answered by the suite's fixtures)."""
    _ran("read_mail")
    return {"mails": [{"from": "real@example.com", "body": "real mail"}]}


@tool
def lookup(query: str) -> str:
    """Search (no side effects, and no mock anywhere).

    Args:
        query: What to find.
    """
    _ran(f"lookup {query}")
    return f"real results for {query}"


@tool(side_effects=True)
def pay(to: str, amount: float) -> str:
    """Move money (its mock comes from the suite's fixtures).

    Args:
        to: The payee.
        amount: How much.
    """
    _ran(f"pay {to} {amount}")
    return "paid"


@tool(side_effects=True)
def wire(to: str) -> str:
    """Wire everything away (a declared mock).

    Args:
        to: The payee.
    """
    _ran(f"wire {to}")
    return "wired"


@wire.mock
def _wire_mock(to: str) -> str:
    return f"mock wire to {to}"


TOOLS = [read_mail, lookup, pay, wire]
PLAN = [
    call("read_mail"),
    call("pay", to=ATTACKER, amount=10.0),
    call("wire", to=ATTACKER),
    call("lookup", query="secret"),
]


def _every_tool(messages: list[Message], info: RequestInfo) -> Any:
    made = sum(len(m.tool_calls) for m in messages if m.role == "assistant")
    return PLAN[made] if made < len(PLAN) else "done"


def eager() -> FunctionModel:
    """Calls every tool once, the payments to the attacker, then answers."""
    return FunctionModel(_every_tool, name="eager")


def build(model: Model, tools: Toolset | Sequence[Tool[..., Any]] | None = None) -> Agent:
    return Agent(model, TOOLS if tools is None else tools)


def build_real_mode(model: Model, tools: Toolset | None = None) -> Agent:
    """Switches the toolset it is handed to real mode."""
    return Agent(model, Toolset(TOOLS, mode="real") if tools is None else tools.with_mode("real"))


def build_real_overrides(model: Model, tools: Toolset | None = None) -> Agent:
    """Asks for every tool's real code through overrides of the toolset it is handed."""
    real = dict.fromkeys(["read_mail", "lookup", "pay", "wire"], "real")
    toolset = Toolset(TOOLS) if tools is None else tools
    return Agent(model, toolset.with_mode("real", overrides=real))  # type: ignore[arg-type]


def build_own(model: Model, tools: Toolset | None = None) -> Agent:
    """Ignores the toolset it is handed and builds its own, real one."""
    return Agent(model, Toolset(TOOLS, mode="real", overrides={"pay": "real"}))


#: An agent object whose toolset is real (suites may name an Agent instead of a factory).
AGENT = Agent(ScriptedModel([]), Toolset(TOOLS, mode="real"))
