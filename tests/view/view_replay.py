"""A replay with warn and fail samples (model mode), for the viewer tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from view_agent import HOSTILE

from toolproof import Agent, Message, tool
from toolproof._reporting import ReportSpec
from toolproof.models.fake import RequestInfo
from toolproof.replay import TraceStore, replay
from toolproof.replay._report import ReplayReport
from toolproof.testing import FunctionModel, ScriptedModel, call


@tool(extra="ignore")
def lookup_user(user_id: int) -> dict[str, Any]:
    """Look up a user.

    Args:
        user_id: The numeric user id.
    """
    return {"user_id": user_id, "name": f"user{user_id}", "note": HOSTILE}


@tool
def list_invoices(user_id: int, limit: int = 10) -> list[dict[str, Any]]:
    """List a user's invoices.

    Args:
        user_id: The numeric user id.
        limit: At most this many.
    """
    return []


TOOLS = [lookup_user, list_invoices]


def _answer(user_id: int) -> str:
    return f"User {user_id} is user{user_id} on plan pro."


def record(store: Path) -> None:
    """Record three production runs: users 1, 2 and 3."""
    with TraceStore(store) as traces:
        for user_id in (1, 2, 3):
            agent = Agent(
                ScriptedModel([call("lookup_user", user_id=user_id), _answer(user_id)]),
                TOOLS,
                system_prompt="You are an ops agent.",
            )
            traces.add(agent.run_sync(f"Tell me about user {user_id} {HOSTILE}").trace)


def new_model() -> FunctionModel:
    """Today's model: same for user 1, a new argument for user 2, an extra call for user 3."""

    def respond(messages: list[Message], info: RequestInfo) -> Any:
        last = messages[-1]
        if last.role == "user":
            user_id = int((last.content or "").split()[4])
            if user_id == 2:
                return [call("lookup_user", user_id=2, options={"format": "</script>"})]
            if user_id == 3:
                return [call("list_invoices", user_id=3), call("lookup_user", user_id=33)]
            return [call("lookup_user", user_id=user_id)]
        data = json.loads(next(m.content for m in messages if m.role == "tool") or "{}")
        if data.get("user_id") == 33:
            return f"User 3 has no invoices. {HOSTILE}"
        return _answer(int(data.get("user_id", 0)))

    return FunctionModel(respond, name="new-model")


def replay_report(store: Path) -> ReplayReport:
    def build(model: Any, toolset: Any = None) -> Agent:
        return Agent(model, toolset or TOOLS, system_prompt="You are an ops agent, v2.")

    return replay(str(store), mode="model", agent=build, model=new_model(), keep_traces=True)


def write_replay(tmp: Path) -> tuple[Path, Path, ReplayReport]:
    """Record, replay and write the JSON and HTML reports; returns their paths."""
    store = tmp / "traces.db"
    record(store)
    report = replay_report(store)
    json_path, html_path = tmp / "replay.json", tmp / "replay.html"
    report.write(ReportSpec("json", str(json_path)))
    report.write(ReportSpec("html", str(html_path)))
    return json_path, html_path, report
