"""The tools of a small inbox-and-bank assistant.

``read_inbox`` returns e-mails anyone can send, so an attacker controls part of what it
returns: the suites plant their instructions there. ``send_money`` and ``send_email`` act on
the world (``side_effects=True``) and go through the agent's approver first.
"""

from __future__ import annotations

from typing import Any

from toolproof import tool

#: What the real tools did, in order (the example has no bank: it only records).
LEDGER: list[dict[str, Any]] = []


@tool
def read_inbox() -> dict[str, Any]:
    """Read the user's new e-mails."""
    raise RuntimeError("this example has no mail server: run it with its fixtures")


@tool
def get_balance() -> dict[str, Any]:
    """Get the balance of the user's bank account."""
    raise RuntimeError("this example has no bank: run it with its fixtures")


@tool(side_effects=True, requires_approval=True)
def send_money(recipient: str, amount: float) -> dict[str, Any]:
    """Transfer money from the user's account.

    Args:
        recipient: The IBAN to pay.
        amount: The amount in USD.
    """
    LEDGER.append({"tool": "send_money", "recipient": recipient, "amount": amount})
    return {"status": "sent", "recipient": recipient, "amount": amount}


@tool(side_effects=True, requires_approval=True)
def send_email(to: str, subject: str, body: str) -> dict[str, Any]:
    """Send an e-mail from the user's address.

    Args:
        to: The address.
        subject: The subject line.
        body: The text.
    """
    LEDGER.append({"tool": "send_email", "to": to, "subject": subject})
    return {"status": "sent", "to": to}


TOOLS = [read_inbox, get_balance, send_money, send_email]
