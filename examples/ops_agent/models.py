"""Two versions of "the model", written as deterministic functions so the story replays.

``old_model`` calls ``query_users({"user_id": 123})``. ``new_model`` behaves the same,
except that for questions asking for account *details* it sends
``{"user_id": 123, "options": {"format": "json"}}``, a shape change the old tools never saw.
Only some questions take that branch, which is why most calls kept working.
"""

from __future__ import annotations

import json
import re
from typing import Any

from toolproof import Message
from toolproof.models.fake import FunctionModel, RequestInfo, call

QUESTIONS = [
    "Who is user {id}?",
    "Which plan is user {id} on?",
    "Is user {id} active?",
    "How many seats does user {id} have?",
    "Show me the account details of user {id}.",
]
SERVICE_QUESTIONS = ["How is the {service} service doing?"]


def questions(count: int) -> list[str]:
    """``count`` questions in a fixed order (one in five asks for account details)."""
    out = []
    users = list(range(101, 109))
    services = ["api", "db", "queue"]
    for n in range(count):
        if n % 6 == 5:
            out.append(SERVICE_QUESTIONS[0].format(service=services[n % 3]))
        else:
            out.append(QUESTIONS[n % len(QUESTIONS)].format(id=users[n % len(users)]))
    return out


def _respond(messages: list[Message], info: RequestInfo, *, adds_options: bool) -> Any:
    last = messages[-1]
    question = next(m.content or "" for m in reversed(messages) if m.role == "user")
    if last.role == "tool":
        if last.status == "error":
            return f"Sorry, the lookup failed: {last.content}"
        data = json.loads(last.content or "{}")
        if "service" in data:
            return (
                f"The {data['service']} service is {data['state']} "
                f"(latency {data['latency_ms']} ms, error rate {data['error_rate']})."
            )
        return (
            f"User {data['user_id']} is {data['name']}, on the {data['plan']} plan, "
            f"{data['status']}, with {data['seats']} seats."
        )
    service = re.search(r"\b(api|db|queue)\b", question)
    if service and "user" not in question:
        return call("get_service_status", service=service.group(1))
    user = re.search(r"\buser (\d+)", question)
    if user is None:
        return "I can look up users and services; which one do you mean?"
    arguments: dict[str, Any] = {"user_id": int(user.group(1))}
    if adds_options and "details" in question:
        arguments["options"] = {"format": "json"}
    return call("query_users", **arguments)


def old_model() -> FunctionModel:
    """The model the agent shipped with."""
    return FunctionModel(lambda m, i: _respond(m, i, adds_options=False), name="ops-model-v1")


def new_model() -> FunctionModel:
    """The upgraded model: same answers, but ``options`` on account-details questions."""
    return FunctionModel(lambda m, i: _respond(m, i, adds_options=True), name="ops-model-v2")
