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
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from toolproof._messages import Message, ModelSettings, ToolCall, ToolDefinition
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
JUDGE_PROMPT_VERSION = "judge-v2"

JudgeVerdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]

_VERDICTS: tuple[JudgeVerdict, ...] = ("PASS", "FAIL", "INCONCLUSIVE")

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

_VERDICT_TOOL = ToolDefinition(
    name="record_verdict",
    description="Record your verdict on the criterion, with its reason.",
    parameters={
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": list(_VERDICTS)},
            "reason": {
                "type": "string",
                "description": "One or two sentences citing the transcript.",
            },
        },
        "required": ["verdict", "reason"],
        "additionalProperties": False,
    },
)

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


class _Reading(NamedTuple):
    """A verdict read from the judge's answer; ``read`` is false when it could not be read."""

    verdict: JudgeVerdict
    reason: str
    read: bool = True


def parse_verdict(text: str | None) -> tuple[JudgeVerdict, str]:
    """Read the judge's answer given as text: JSON (fenced or not), else plain prose.

    Prose gives a verdict only when it names exactly one verdict (``PASS``, ``FAIL`` or
    ``INCONCLUSIVE``, in any case) and nothing hedges it: no negation, condition, contrast
    or question in its sentence, no other verdict anywhere, no word in a script mixed into
    another (a homoglyph). Anything else is ``INCONCLUSIVE``, with a reason quoting the
    answer.
    """
    reading = _read_text(text)
    return reading.verdict, reading.reason


def _read_text(text: str | None) -> _Reading:
    raw = (text or "").strip()
    if not raw:
        return _unreadable("the judge returned an empty answer")
    start, end = raw.find("{"), raw.rfind("}")
    if start != -1 and end > start:
        try:
            data = json.loads(raw[start : end + 1])
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and any(str(k).lower() == "verdict" for k in data):
            return _structured(data, raw[:start] + "\n" + raw[end + 1 :])
    return _prose(raw)


def _read_response(calls: Sequence[ToolCall], content: str | None) -> _Reading:
    """The verdict of a judge's response: its verdict tool calls, else its text."""
    given = [
        call.arguments
        for call in calls
        if call.arguments_error is None and any(str(k).lower() == "verdict" for k in call.arguments)
    ]
    if not given:
        return _read_text(content)
    readings = {_structured(arguments, content or "") for arguments in given}
    if len(readings) == 1:
        return readings.pop()
    verdicts = ", ".join(sorted({str(a.get("verdict")) for a in given}))
    return _unreadable(f"the judge gave several verdicts ({verdicts})")


def _structured(data: Mapping[Any, Any], outside: str) -> _Reading:
    """A verdict given as data, checked against the text written around it."""
    values = {str(k).lower(): v for k, v in data.items()}
    verdict = str(values.get("verdict", "")).strip().upper()
    reason = str(values.get("reason", "")).strip() or "(the judge gave no reason)"
    if verdict not in _VERDICTS:
        return _unreadable(
            f"the judge's verdict {clip(str(values.get('verdict')), 60)!r} is not "
            "PASS, FAIL or INCONCLUSIVE"
        )
    # Text around the verdict that names another verdict, or hedges one, makes it unclear.
    if len(outside) > _MAX_PROSE:
        return _unreadable(f"the judge answered {verdict} amid too much text to read")
    mentions = _mentions(_normalize(outside))
    for mention in mentions:
        if mention.family != verdict or mention.hedged or len(mentions) > _MAX_MENTIONS:
            return _unreadable(
                f"the judge answered {verdict} and also wrote {clip(outside.strip(), 160)!r}"
            )
    return _Reading(verdict, reason)


def _unreadable(why: str) -> _Reading:
    return _Reading("INCONCLUSIVE", why, read=False)


# -- prose --------------------------------------------------------------------------------------

#: Verdict words, and forms of them that count as mentions (``passes``, ``failed``...).
_MENTION = re.compile(
    r"(?<![A-Za-z])(pass(?:es|ed|ing)?|fail(?:s|ed|ing|ures?)?|inconclusive)(?![A-Za-z])",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^!?;\n。！？；]*?(?:[!?;\n。！？；]|\.(?!\d)|$)")
_CLAUSE_BREAK = re.compile(r":|\s[-–—]\s|[–—(]")
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Words that negate, condition, contrast or doubt what follows or precedes them.
_HEDGES = _words(
    """
    not no never none nor neither nobody nothing cannot cant without hardly barely lacks un
    unable refuse refused instead rather than wrong incorrect false mistaken doubt unclear
    if unless would could should might may whether provided providing assuming assume
    suppose supposing once until only otherwise else maybe perhaps possibly probably
    likely unlikely uncertain partially partly mostly almost nearly somewhat arguably
    but however although though yet while whereas except despite nevertheless nonetheless
    or either versus vs
    nicht kein keine keinen nein nie niemals ohne wenn falls sofern aber jedoch sondern außer
    ne pas non jamais sans si mais sauf cependant pourtant
    nunca ni sin pero sino excepto aunque
    """
)
#: Words that condition or contrast a whole sentence, even past a colon.
_STRONG = frozenset(
    {"if", "unless", "only", "provided", "providing", "assuming", "except", "but", "however"}
    | {"although", "though", "whereas", "wenn", "falls", "außer", "aber", "si", "sauf", "mais"}
    | {"pero", "aunque"}
)
#: Negations, conditions and contrasts of languages written without spaces (matched inside).
_CJK_HEDGES = (
    "不",
    "没",
    "沒",
    "未",
    "无",
    "無",
    "非",
    "否",
    "别",
    "如果",
    "若",
    "假如",
    "除非",
    "只有",
    "但",
    "然而",
    "虽然",
    "雖然",
    "可能",
    "是否",
    "吗",
    "嗎",
    "或",
    "ない",
    "ません",
    "ず",
    "もし",
    "しかし",
    "だが",
    "けど",
    "でも",
    "かも",
    "않",
    "안",
    "못",
    "아니",
    "만약",
    "하지만",
)
#: Scripts whose words are read (Latin words against :data:`_HEDGES`, the others against
#: :data:`_CJK_HEDGES`); a word in any other script, or mixing two, hedges its sentence.
_READ_SCRIPTS = frozenset({"LATIN", "CJK", "HIRAGANA", "KATAKANA", "HANGUL"})
_FAMILIES: dict[str, JudgeVerdict] = {"pass": "PASS", "fail": "FAIL", "inco": "INCONCLUSIVE"}
#: Longest answer read as prose (characters).
_MAX_PROSE = 20_000
#: Most mentions of a verdict in an answer that gives one.
_MAX_MENTIONS = 20


class _Mention(NamedTuple):
    family: JudgeVerdict
    word: bool  # the verdict word itself (``pass``), not a form of it (``passed``)
    hedged: bool
    start: int
    end: int


def _normalize(text: str) -> str:
    """Compatibility forms folded (full-width letters), invisible format characters dropped."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return text.replace("\u2019", "'").replace("\u2018", "'")


def _prose(raw: str) -> _Reading:
    shown = raw if len(raw) <= 200 else raw[:199] + "…"
    if len(raw) > _MAX_PROSE:
        return _unreadable(f"the judge's answer is too long to read as a verdict: {shown!r}")
    text = _normalize(raw)
    mentions = _mentions(text)
    families = {m.family for m in mentions}
    words = [m for m in mentions if m.word]
    hedged = any(m.hedged for m in mentions)
    if len(families) != 1 or not words or hedged or len(mentions) > _MAX_MENTIONS:
        why = (
            "names more than one verdict"
            if len(families) > 1
            else f"names a verdict more than {_MAX_MENTIONS} times"
            if len(mentions) > _MAX_MENTIONS
            else "hedges its verdict (a negation, condition, contrast or question)"
            if hedged
            else "names no verdict"
        )
        return _unreadable(f"the judge's answer could not be read as a verdict ({why}): {shown!r}")
    first = words[0]
    lead = text[: first.start].strip(" \t\n*_#>`\"'")
    rest = text[first.end :].strip(" \t\n*_`\"':.-—–")
    if len(lead) <= 24 and rest:  # "PASS: ...", "Verdict: FAIL - ..."
        reason = clip(rest, 1000, flatten=False)
    else:
        reason = clip(text.strip(), 1000, flatten=False)
    return _Reading(first.family, reason)


def _mentions(text: str) -> list[_Mention]:
    """The verdict words and forms in ``text``, each with whether its sentence hedges it.

    At most :data:`_MAX_MENTIONS` + 1 are read (more make an answer unreadable), so the work
    is linear in the text.
    """
    found: list[_Mention] = []
    for sentence in _SENTENCE.finditer(text):
        body = sentence.group(0)
        if not body:
            continue
        question = body.rstrip().endswith(("?", "？"))
        for match in _MENTION.finditer(body):
            if len(found) > _MAX_MENTIONS:
                return found
            before, after = body[: match.start()], body[match.end() :]
            clause = _CLAUSE_BREAK.split(after, maxsplit=1)[0]
            hedged = (
                question
                or _hedges(before, _HEDGES)
                or _hedges(clause, _HEDGES)
                or _hedges(after, _STRONG)
            )
            word = match.group(1).lower()
            found.append(
                _Mention(
                    _FAMILIES[word[:4]],
                    word in ("pass", "fail", "inconclusive"),
                    hedged,
                    sentence.start() + match.start(),
                    sentence.start() + match.end(),
                )
            )
    return found


def _hedges(text: str, vocabulary: frozenset[str]) -> bool:
    """Whether ``text`` holds a hedging word, or a word toolproof cannot read."""
    for word in _WORD.findall(text.lower()):
        scripts = {"LATIN"} if word.isascii() else {_script(ch) for ch in word if ch != "'"}
        if scripts == {"LATIN"}:
            if word in vocabulary or word.endswith("n't") or word.replace("'", "") in vocabulary:
                return True
        elif len(scripts) > 1 or not scripts <= _READ_SCRIPTS:
            return True  # mixed scripts (a homoglyph), or a language not read here
        elif any(hedge in word for hedge in _CJK_HEDGES):
            return True
    return False


def _script(ch: str) -> str:
    if ch.isascii():
        return "LATIN"
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else "UNKNOWN"


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
        reading = _Reading(data["verdict"], data["reason"], data.get("read", True))
    else:
        reading = await _ask(model, messages)
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


async def _ask(model: Model, messages: list[Message]) -> _Reading:
    """Ask for the verdict through the verdict tool; without it if the provider refuses tools."""
    from toolproof.errors import ModelHTTPError

    settings = ModelSettings(temperature=0.0, tool_choice=_VERDICT_TOOL.name)
    try:
        response = await model.request(messages, [_VERDICT_TOOL], settings)
    except ModelHTTPError as exc:
        if exc.retryable or exc.status in (401, 403):
            raise
        # A server that takes no tools (or no forced tool choice) is asked for the JSON text.
        response = await model.request(messages, [], ModelSettings(temperature=0.0))
    return _read_response(response.message.tool_calls, response.message.content)
