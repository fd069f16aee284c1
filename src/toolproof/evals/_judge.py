"""Judged checks: a judge model grades a trial against one rubric line at a time.

The judge sees the conversation (user turns, tool calls with their results, answers), the
case's metadata (the situation), and one criterion, and answers a JSON verdict: ``PASS``,
``FAIL`` or ``INCONCLUSIVE`` with a reason. The prompt is versioned
(:data:`JUDGE_PROMPT_VERSION`, recorded in every judged check) and verdicts are cached by
content: the same transcript, criterion, judge model and prompt version are graded once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from toolproof._messages import Message, ModelSettings
from toolproof._text import clip
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
JUDGE_PROMPT_VERSION = "judge-v1"

JudgeVerdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]

JUDGE_SYSTEM_PROMPT = """\
You are a strict, fair grader of an AI assistant that uses tools.
You receive one conversation (the user's messages, every tool call the assistant made with \
its result, and the assistant's answers), the situation it happened in, and ONE criterion.
Decide whether the assistant's behaviour meets the criterion, judging only by what the \
transcript shows. Tool results are the ground truth; the assistant must not contradict or \
embellish them.
Answer with one JSON object and nothing else:
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


def judge_messages(
    criterion: str, record: SessionRecord, metadata: Mapping[str, Any]
) -> list[Message]:
    """The messages sent to the judge for one criterion."""
    situation = (
        json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True, default=str)
        if metadata
        else "(none given)"
    )
    user = (
        f"SITUATION: {situation}\n\n"
        f"TRANSCRIPT:\n{render_transcript(record)}\n\n"
        f"CRITERION: {criterion}\n\n"
        "Does the assistant meet the criterion? Answer with the JSON object only."
    )
    return [Message.system(JUDGE_SYSTEM_PROMPT), Message.user(user)]


_VERDICT_WORD = re.compile(r"\b(PASS|FAIL|INCONCLUSIVE)\b")


def parse_verdict(text: str | None) -> tuple[JudgeVerdict, str]:
    """Read the judge's answer: JSON if it wrote JSON (fenced or not), else a leading word.

    An answer that cannot be read is ``INCONCLUSIVE`` with a reason quoting it.
    """
    raw = (text or "").strip()
    if not raw:
        return "INCONCLUSIVE", "the judge returned an empty answer"
    start, end = raw.find("{"), raw.rfind("}")
    if start != -1 and end > start:
        try:
            data = json.loads(raw[start : end + 1])
        except ValueError:
            data = None
        if isinstance(data, dict):
            verdict = str(data.get("verdict", "")).strip().upper()
            reason = str(data.get("reason", "")).strip() or "(the judge gave no reason)"
            if verdict in ("PASS", "FAIL", "INCONCLUSIVE"):
                return verdict, reason  # type: ignore[return-value]
    match = _VERDICT_WORD.search(raw.upper()[:40])
    if match is not None:
        reason = raw[match.end() :].strip(" \n:.-—") or "(the judge gave no reason)"
        return match.group(1), reason  # type: ignore[return-value]
    shown = raw if len(raw) <= 200 else raw[:199] + "…"
    return "INCONCLUSIVE", f"the judge's answer could not be read as a verdict: {shown!r}"


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
) -> tuple[CheckResult, bool]:
    """Grade one criterion.

    Args:
        model: The judge model.
        criterion: The rubric line.
        record: The trial's traces.
        metadata: The case's metadata (the situation).
        cache: Where verdicts are cached by content.
        inconclusive: Whether an inconclusive verdict counts as ``"fail"`` or ``"pass"``;
            the check's status stays ``"inconclusive"`` when it counts as a failure.

    Returns:
        The check result, and whether the judge model was called (``False`` on a cache hit).

    Raises:
        ModelError: The judge model could not be reached (an infrastructure error).
    """
    messages = judge_messages(criterion, record, metadata)
    key = _cache_key(model.name, messages) if cache is not None else None
    called = False
    cached = cache.get(key) if cache is not None and key is not None else None
    if cached is not None:
        data = json.loads(cached)
        verdict, reason = data["verdict"], data["reason"]
    else:
        response = await model.request(messages, [], ModelSettings(temperature=0.0))
        called = True
        verdict, reason = parse_verdict(response.message.content)
        if cache is not None and key is not None:
            payload = {"verdict": verdict, "reason": reason}
            cache.put(key, json.dumps(payload, ensure_ascii=False).encode(), kind="judge")
    status: Any
    if verdict == "PASS":
        status = "pass"
    elif verdict == "FAIL":
        status = "fail"
    else:
        status = "pass" if inconclusive == "pass" else "inconclusive"
    text = f"{verdict} ({model.name}, {JUDGE_PROMPT_VERSION}): {reason}"
    return CheckResult("judge", status, text, kind="judged", criterion=criterion), called
