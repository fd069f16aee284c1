"""An agent with a retrieval tool, for the retrieval tests' suites (``ragagents:build_agent``).

The tool returns the documents of :data:`INDEX` for a query; a :class:`FunctionModel` calls
it with the user's question and answers with what :data:`ANSWERS` says for that question.
"""

from __future__ import annotations

import json
from typing import Any

from toolproof import Agent, Message, Toolset, tool
from toolproof.testing import FunctionModel, RequestInfo, call

INDEX: dict[str, list[dict[str, Any]]] = {
    "leave": [
        {"id": "doc-9", "text": "Sick leave is paid for 20 days."},
        {"id": "doc-3", "text": "Employees get 25 days of annual leave."},
        {"id": "doc-2", "text": "Offices close on 24 December."},
    ],
    "travel": [
        {"id": "doc-5", "text": "Hotels may cost up to 160 EUR per night."},
        {"id": "doc-5", "text": "In capital cities, 220 EUR."},
    ],
    "nothing": [],
}

ANSWERS = {
    "leave": "Employees get 25 days of annual leave [doc-3].",
    "travel": "Hotels may cost up to 160 EUR per night, or 220 EUR in capitals [doc-5].",
    "invent": "You get 30 days of leave [doc-4].",
    "nothing": "I could not find this.",
}


@tool
def search_docs(query: str) -> dict[str, Any]:
    """Search the documents.

    Args:
        query: The query.
    """
    key = query.split()[0]
    return {"results": INDEX.get(key, INDEX["leave"])}


def _respond(messages: list[Message], info: RequestInfo) -> Any:
    question = next(m.content or "" for m in reversed(messages) if m.role == "user")
    if messages[-1].role != "tool":
        return call("search_docs", query=question)
    return ANSWERS.get(question.split()[-1], ANSWERS["leave"])


def model() -> FunctionModel:
    return FunctionModel(_respond, name="rag-rules")


def build_agent(model: Any, tools: Toolset | None = None) -> Agent:
    return Agent(model, [search_docs] if tools is None else tools, max_steps=3)


def judge_function(verdicts: dict[str, str] | None = None, raw: str | None = None) -> FunctionModel:
    """A judge that grades each sentence of the answer: supported when the context has it."""

    def grade(messages: list[Message], info: RequestInfo) -> str:
        if raw is not None:
            return raw
        prompt = messages[-1].content or ""
        context = prompt.split("CONTEXT", 1)[1].split("\nANSWER:\n", 1)[0]
        answer = prompt.split("\nANSWER:\n", 1)[1].split("\n\nGrade every claim", 1)[0]
        claims = []
        for sentence in answer.split(". "):
            core = sentence.split(" [")[0].strip().rstrip(".")
            if not core or "could not find" in core:
                continue
            verdict = (verdicts or {}).get(core) or (
                "supported" if core in context else "not_found"
            )
            claims.append({"claim": core, "verdict": verdict})
        return json.dumps({"claims": claims})

    return FunctionModel(grade, name="claims-judge")
