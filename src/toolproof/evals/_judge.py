"""Judged checks: a judge model grades a trial against one rubric line at a time.

The judge sees the agent's setup (its system prompt and tools, unless the case turns that
off), the conversation (user turns, tool calls with their results, answers), the case's
metadata (the situation), and one criterion. It gives its verdict, ``PASS``, ``FAIL`` or
``INCONCLUSIVE`` with a reason, by calling a verdict tool; a model that answers in text
instead is read by :func:`parse_verdict`, which takes JSON, or prose only when it names one
verdict plainly (a negated, conditional, contrasted or questioned verdict word makes the
answer unreadable, and an unreadable answer never passes). The prompt is versioned
(:data:`JUDGE_PROMPT_VERSION`, recorded in every judged check) and verdicts are cached by
content: the same transcript, criterion, judge model and prompt version are graded once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from toolproof._messages import Message
from toolproof._text import clip
from toolproof._verdict import (
    JudgeVerdict,
    Reading,
    ask_verdict,
    parse_verdict,
)
from toolproof.evals._checks import CheckResult, SessionRecord

if TYPE_CHECKING:
    from toolproof.evals._cache import ResponseCache
    from toolproof.models import Model

__all__ = [
    "JUDGE_PROMPT_VERSION",
    "JUDGE_SYSTEM_PROMPT",
    "JudgeVerdict",
    "judge",
    "judge_messages",
    "parse_verdict",
    "render_transcript",
]

#: Version of the judge prompt. Bump it whenever the prompt's wording changes: it is part of
#: the verdict cache key and of every judged check's result, so verdicts from different
#: prompts are never mixed up.
JUDGE_PROMPT_VERSION = "judge-v2"

JUDGE_SYSTEM_PROMPT = """\
You are a strict, fair grader of an AI assistant that uses tools.
You receive the assistant's setup (its system prompt and the tools it has, when given), one \
conversation (the user's messages, every tool call the assistant made with its result, and \
the assistant's answers), the situation it happened in, and ONE criterion.
Decide whether the assistant's behaviour meets the criterion, judging only by what you are \
shown. Tool results are the ground truth; the assistant must not contradict or embellish them.
Give your verdict by calling the record_verdict tool. If you cannot call tools, answer with \
one JSON object and nothing else:
{"verdict": "PASS" | "FAIL" | "INCONCLUSIVE", "reason": "<one or two sentences citing the \
transcript>"}
Use INCONCLUSIVE only when the transcript does not contain enough information to decide."""

_CLIP = 1500


def render_transcript(record: SessionRecord) -> str:
    """The conversation of a trial as the judge reads it."""
    lines: list[str] = []
    for number, trace in enumerate(record.traces, 1):
        if len(record.traces) > 1:
            lines.append(f"--- turn {number} ---")
        lines.append(f"USER: {trace.input}")
        for step in trace.steps:
            results = {r.call_id: r for r in step.tool_results}
            if step.response.content and step.response.tool_calls:
                thought = clip(step.response.content, _CLIP, flatten=False)
                lines.append(f"ASSISTANT (thinking aloud): {thought}")
            for call in step.response.tool_calls:
                lines.append(f"ASSISTANT called {call.signature()}")
                result = results.get(call.id)
                if result is not None:
                    status = "returned" if result.ok else f"failed ({result.error_type})"
                    lines.append(
                        f"TOOL {call.name} {status}: {clip(result.content, _CLIP, flatten=False)}"
                    )
        if trace.output is not None:
            lines.append(f"ASSISTANT: {clip(trace.output, 4000, flatten=False)}")
        elif trace.stop_reason != "final":
            lines.append(
                f"(the run stopped without an answer: {trace.stop_reason}"
                + (f", {trace.stop_detail}" if trace.stop_detail else "")
                + ")"
            )
    return "\n".join(lines)


def render_agent(record: SessionRecord) -> str:
    """The agent's setup as the judge reads it: its system prompt and its tools."""
    prompt = next((t.system_prompt for t in record.traces if t.system_prompt), None)
    tools: dict[str, str] = {}
    for trace in record.traces:
        for info in trace.tools:
            tools.setdefault(info.name, info.description)
    lines = [
        "AGENT'S SYSTEM PROMPT: " + (clip(prompt, 4000, flatten=False) if prompt else "(none)"),
        "AGENT'S TOOLS (what it can do besides writing text):"
        if tools
        else "AGENT'S TOOLS: (none: it can do nothing besides writing text)",
    ]
    shown = list(tools.items())[:_TOOLS_SHOWN]
    lines.extend(f"- {name}: {clip(text, 300)}" if text else f"- {name}" for name, text in shown)
    if len(tools) > _TOOLS_SHOWN:
        lines.append(f"- and {len(tools) - _TOOLS_SHOWN} more")
    return "\n".join(lines)


_TOOLS_SHOWN = 64


def judge_messages(
    criterion: str, record: SessionRecord, metadata: Mapping[str, Any], *, agent: bool = True
) -> list[Message]:
    """The messages sent to the judge for one criterion.

    Args:
        criterion: The rubric line.
        record: The trial's traces.
        metadata: The case's metadata (the situation).
        agent: Show the judge the agent's system prompt and tools (``judge_sees_agent``).
    """
    situation = (
        json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True, default=str)
        if metadata
        else "(none given)"
    )
    setup = f"{render_agent(record)}\n\n" if agent else ""
    user = (
        f"{setup}SITUATION: {situation}\n\n"
        f"TRANSCRIPT:\n{render_transcript(record)}\n\n"
        f"CRITERION: {criterion}\n\n"
        "Does the assistant meet the criterion? Call record_verdict (or answer with the JSON "
        "object only)."
    )
    return [Message.system(JUDGE_SYSTEM_PROMPT), Message.user(user)]


def _cache_key(model: str, messages: list[Message]) -> str:
    import hashlib

    text = json.dumps(
        ["judge", JUDGE_PROMPT_VERSION, model, [[m.role, m.content] for m in messages]],
        ensure_ascii=False,
    )
    return "judge:" + hashlib.sha256(text.encode()).hexdigest()


async def judge(
    model: Model,
    criterion: str,
    record: SessionRecord,
    metadata: Mapping[str, Any],
    *,
    cache: ResponseCache | None = None,
    inconclusive: Literal["fail", "pass"] = "fail",
    agent: bool = True,
) -> tuple[CheckResult, bool]:
    """Grade one criterion.

    Args:
        model: The judge model.
        criterion: The rubric line.
        record: The trial's traces.
        metadata: The case's metadata (the situation).
        cache: Where verdicts are cached by content.
        inconclusive: Whether the judge's own INCONCLUSIVE verdict counts as ``"fail"`` or
            ``"pass"``; the check's status stays ``"inconclusive"`` when it counts as a
            failure. An answer that could not be read as a verdict never passes.
        agent: Show the judge the agent's system prompt and tools.

    Returns:
        The check result, and whether the judge model was called (``False`` on a cache hit).

    Raises:
        ModelError: The judge model could not be reached (an infrastructure error).
    """
    messages = judge_messages(criterion, record, metadata, agent=agent)
    key = _cache_key(model.name, messages) if cache is not None else None
    called = False
    cached = cache.get(key) if cache is not None and key is not None else None
    if cached is not None:
        data = json.loads(cached)
        reading = Reading(data["verdict"], data["reason"], data.get("read", True))
    else:
        reading = await ask_verdict(model, messages)
        called = True
        if cache is not None and key is not None:
            payload = {"verdict": reading.verdict, "reason": reading.reason, "read": reading.read}
            cache.put(key, json.dumps(payload, ensure_ascii=False).encode(), kind="judge")
    status: Any
    if reading.verdict == "PASS":
        status = "pass"
    elif reading.verdict == "FAIL":
        status = "fail"
    else:
        status = "pass" if inconclusive == "pass" and reading.read else "inconclusive"
    text = f"{reading.verdict} ({model.name}, {JUDGE_PROMPT_VERSION}): {reading.reason}"
    return CheckResult("judge", status, text, kind="judged", criterion=criterion), called
