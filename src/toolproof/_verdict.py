"""A judge model's verdict: asked through a verdict tool, read strictly from its answer.

Every judge in toolproof (a suite's judged checks, replay's comparison of two answers) asks
its model to call :data:`VERDICT_TOOL` and reads the answer here. A model that answers in
text is read by :func:`parse_verdict`: JSON (fenced or not), or prose only when it names one
verdict plainly; a negated, conditional, contrasted or questioned verdict word makes the
answer unreadable, and an unreadable answer is ``INCONCLUSIVE`` with ``read`` false.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple, Protocol

from toolproof._messages import Message, ModelResponse, ModelSettings, ToolCall, ToolDefinition
from toolproof._text import clip

__all__ = [
    "VERDICTS",
    "VERDICT_TOOL",
    "JudgeVerdict",
    "Reading",
    "ask_verdict",
    "parse_verdict",
    "read_response",
    "read_text",
    "unreadable",
]

JudgeVerdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]

VERDICTS: tuple[JudgeVerdict, ...] = ("PASS", "FAIL", "INCONCLUSIVE")


VERDICT_TOOL = ToolDefinition(
    name="record_verdict",
    description="Record your verdict on the criterion, with its reason.",
    parameters={
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": list(VERDICTS)},
            "reason": {
                "type": "string",
                "description": "One or two sentences citing the transcript.",
            },
        },
        "required": ["verdict", "reason"],
        "additionalProperties": False,
    },
)


class Reading(NamedTuple):
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
    reading = read_text(text)
    return reading.verdict, reading.reason


def read_text(text: str | None) -> Reading:
    raw = (text or "").strip()
    if not raw:
        return unreadable("the judge returned an empty answer")
    start, end = raw.find("{"), raw.rfind("}")
    if start != -1 and end > start:
        try:
            data = json.loads(raw[start : end + 1])
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and any(str(k).lower() == "verdict" for k in data):
            return _structured(data, raw[:start] + "\n" + raw[end + 1 :])
    return _prose(raw)


def read_response(calls: Sequence[ToolCall], content: str | None) -> Reading:
    """The verdict of a judge's response: its verdict tool calls, else its text."""
    given = [
        call.arguments
        for call in calls
        if call.arguments_error is None and any(str(k).lower() == "verdict" for k in call.arguments)
    ]
    if not given:
        return read_text(content)
    readings = {_structured(arguments, content or "") for arguments in given}
    if len(readings) == 1:
        return readings.pop()
    verdicts = ", ".join(sorted({str(a.get("verdict")) for a in given}))
    return unreadable(f"the judge gave several verdicts ({verdicts})")


def _structured(data: Mapping[Any, Any], outside: str) -> Reading:
    """A verdict given as data, checked against the text written around it."""
    values = {str(k).lower(): v for k, v in data.items()}
    verdict = str(values.get("verdict", "")).strip().upper()
    reason = str(values.get("reason", "")).strip() or "(the judge gave no reason)"
    if verdict not in VERDICTS:
        return unreadable(
            f"the judge's verdict {clip(str(values.get('verdict')), 60)!r} is not "
            "PASS, FAIL or INCONCLUSIVE"
        )
    # Text around the verdict that names another verdict, or hedges one, makes it unclear.
    if len(outside) > _MAX_PROSE:
        return unreadable(f"the judge answered {verdict} amid too much text to read")
    mentions = _mentions(_normalize(outside))
    for mention in mentions:
        if mention.family != verdict or mention.hedged or len(mentions) > _MAX_MENTIONS:
            return unreadable(
                f"the judge answered {verdict} and also wrote {clip(outside.strip(), 160)!r}"
            )
    return Reading(verdict, reason)


def unreadable(why: str) -> Reading:
    return Reading("INCONCLUSIVE", why, read=False)


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


def _prose(raw: str) -> Reading:
    shown = raw if len(raw) <= 200 else raw[:199] + "…"
    if len(raw) > _MAX_PROSE:
        return unreadable(f"the judge's answer is too long to read as a verdict: {shown!r}")
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
        return unreadable(f"the judge's answer could not be read as a verdict ({why}): {shown!r}")
    first = words[0]
    lead = text[: first.start].strip(" \t\n*_#>`\"'")
    rest = text[first.end :].strip(" \t\n*_`\"':.-—–")
    if len(lead) <= 24 and rest:  # "PASS: ...", "Verdict: FAIL - ..."
        reason = clip(rest, 1000, flatten=False)
    else:
        reason = clip(text.strip(), 1000, flatten=False)
    return Reading(first.family, reason)


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


class _Judge(Protocol):
    """What a judge must offer: a model's request (any ``toolproof.models.Model``)."""

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse: ...


async def ask_verdict(model: _Judge, messages: list[Message]) -> Reading:
    """Ask for the verdict through the verdict tool; without it if the provider refuses tools."""
    from toolproof.errors import ModelHTTPError

    settings = ModelSettings(temperature=0.0, tool_choice=VERDICT_TOOL.name)
    try:
        response = await model.request(messages, [VERDICT_TOOL], settings)
    except ModelHTTPError as exc:
        if exc.retryable or exc.status in (401, 403):
            raise
        # A server that takes no tools (or no forced tool choice) is asked for the JSON text.
        response = await model.request(messages, [], ModelSettings(temperature=0.0))
    return read_response(response.message.tool_calls, response.message.content)
