"""Deterministic stand-ins for the models, so the example runs without a key.

``offline_model()`` reads the question, calls ``search_knowledge_base`` and answers with the
sentences of the top results that share the most words with the question, citing each page.
``offline_judge()`` grades the faithfulness prompt by the rules a careful reader would apply
mechanically: each sentence of the answer is a claim, supported when the retrieved context
contains it word for word (citations and the lead-in aside), not found otherwise.

Run the suite with them::

    toolproof run examples/knowledge_assistant/knowledge.eval.yaml \\
        --model examples.knowledge_assistant.models:offline_model \\
        --judge-model examples.knowledge_assistant.models:offline_judge
"""

from __future__ import annotations

import json
import re
from typing import Any

from examples.knowledge_assistant.retrieval import terms
from toolproof import Message
from toolproof.models.fake import FunctionModel, RequestInfo, call

NOT_FOUND = "I could not find this in the handbook."
LEAD = "According to the handbook, "
#: Words too common in the handbook to show that a sentence answers a question.
_GENERIC = frozenset(
    ["fernhill", "employee", "employees", "company", "work", "day", "days", "per", "year", "get"]
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


def _stem(word: str) -> str:
    return word[:5]


def _overlap(question: set[str], sentence: str) -> int:
    return len(question & {_stem(w) for w in terms(sentence)})


def answer_from_results(question: str, results: list[dict[str, Any]]) -> str:
    """The answer: the best one or two sentences of the results, each with its citation."""
    wanted = {_stem(w) for w in terms(question) if w not in _GENERIC}
    need = 2 if len(wanted) >= 3 else 1
    scored: list[tuple[int, int, str, str]] = []
    for rank, result in enumerate(results[:3]):
        text = " ".join(str(result.get("text", "")).split())
        for sentence in _SENTENCE.split(text):
            if not sentence[:1].isupper() and not sentence[:1].isdigit():
                continue  # the tail of a sentence cut by chunking
            score = _overlap(wanted, sentence)
            if score >= need:
                scored.append((score, -rank, sentence.strip(), str(result.get("doc_id"))))
    if not scored:
        return NOT_FOUND
    scored.sort(key=lambda item: (-item[0], -item[1]))
    best = scored[0][0]
    chosen: list[tuple[int, int, str, str]] = []
    for item in scored:
        if item[0] == best and len(chosen) < 2 and all(item[2] != c[2] for c in chosen):
            chosen.append(item)
    parts = [f"{sentence} [{doc}]" for _, _, sentence, doc in chosen]
    return LEAD + " ".join(parts)


def _respond(messages: list[Message], info: RequestInfo) -> Any:
    question = next(m.content or "" for m in reversed(messages) if m.role == "user")
    last = messages[-1]
    if last.role != "tool":
        return call("search_knowledge_base", query=question, top_k=5)
    if last.status == "error":
        return f"The handbook search failed: {last.content}"
    try:
        data = json.loads(last.content or "{}")
    except ValueError:
        return NOT_FOUND
    return answer_from_results(question, list(data.get("results", [])))


def offline_model() -> FunctionModel:
    """The key-free assistant model."""
    return FunctionModel(_respond, name="handbook-rules")


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w%.,:]+", " ", text.casefold()).split())


def grade_claims(answer: str, context: str) -> list[dict[str, str]]:
    """Each sentence of ``answer`` as a claim: supported when ``context`` holds it verbatim."""
    text = re.sub(r"\[[\w./#-]+\]", " ", answer).replace(LEAD, "")
    haystack = _normal(context)
    claims = []
    for sentence in _SENTENCE.split(" ".join(text.split())):
        sentence = sentence.strip()
        if not sentence or sentence == NOT_FOUND or "could not find" in sentence.lower():
            continue
        core = _normal(sentence).rstrip(".")
        verdict = "supported" if core and core in haystack else "not_found"
        claims.append({"claim": sentence, "verdict": verdict, "evidence": ""})
    return claims


def _judge(messages: list[Message], info: RequestInfo) -> str:
    prompt = messages[-1].content or ""
    if "CONTEXT (what the retrieval tool returned):" not in prompt or "\nANSWER:\n" not in prompt:
        return json.dumps({"verdict": "INCONCLUSIVE", "reason": "only grades faithfulness"})
    context = prompt.split("CONTEXT (what the retrieval tool returned):", 1)[1]
    context, answer = context.split("\nANSWER:\n", 1)
    answer = answer.rsplit("\n\nGrade every claim", 1)[0]
    return json.dumps({"claims": grade_claims(answer, context)})


def offline_judge() -> FunctionModel:
    """The key-free faithfulness judge."""
    return FunctionModel(_judge, name="handbook-judge-rules")


def _careless(messages: list[Message], info: RequestInfo) -> Any:
    reply = _respond(messages, info)
    if isinstance(reply, str) and reply.startswith(LEAD):
        # What a careless model does: it embellishes with a fact no page states.
        return reply + " Employees also receive a 300 EUR birthday bonus every March."
    return reply


def careless_model() -> FunctionModel:
    """The assistant model with a habit of adding an invented fact (to see the checks fail)."""
    return FunctionModel(_careless, name="handbook-careless")
