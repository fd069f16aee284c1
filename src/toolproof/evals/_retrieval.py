"""Retrieval quality checks: ranking metrics, grounding in the retrieved chunks, faithfulness.

Three ``expect:`` keys read what a retrieval tool actually returned in the trace:

- ``retrieval``: the ranking metrics of :mod:`toolproof.rag` (Recall@K, Precision@K, Hit@K,
  MRR, nDCG@K, MAP) of the ids the tool returned against the labelled relevant ids, with
  optional minimums (``min_recall: 0.8``). Without minimums it only measures.
- ``retrieval_grounded``: every number, id and quoted span of the answer comes from the
  retrieved chunks (or the question): the grounding rules of ``grounded``, scoped to one tool.
- ``faithfulness`` (judged): the judge model splits the answer into claims and grades each as
  supported, contradicted or not found in the retrieved chunks; the hallucination rate is
  the share of claims that are not supported.

Ids are read from each call's result (its JSON value, or its text parsed as JSON) by
``id_path`` (``results[*].id``, ``[*].metadata.source``) or, without one, by the default
rules of :func:`result_ids`. Every check stores its figures in ``CheckResult.metrics``;
:func:`toolproof.evals._quality.quality_summary` aggregates them per suite for the reports.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo

from toolproof._filemodel import Expected, FileModel, problem
from toolproof._text import clip
from toolproof.evals._checks import (
    CheckContext,
    CheckResult,
    CheckStatus,
    Grader,
    SessionRecord,
    check,
)
from toolproof.evals._quality import VERDICTS as _VERDICTS
from toolproof.evals._yaml import describe_type
from toolproof.rag._metrics import METRICS, score_ranking

if TYPE_CHECKING:
    from toolproof.evals._cache import ResponseCache
    from toolproof.models import Model

__all__ = [
    "FAITHFULNESS_PROMPT_VERSION",
    "parse_id_path",
    "result_ids",
]

#: Keys of a list-of-dicts item holding its id, tried in order (no ``id_path``).
ID_KEYS = ("id", "doc_id", "document_id", "chunk_id")
#: Keys of a result mapping holding the list of retrieved items, tried in order.
LIST_KEYS = ("results", "documents", "docs", "hits", "chunks", "items", "matches")
_SHOWN = 8


# -- ids ----------------------------------------------------------------------------------------

_KEY = r"[A-Za-z_][\w-]*"
_INDEX = r"\[(\*|-?\d+)\]"
_SEGMENT = re.compile(rf"\.?({_KEY})|{_INDEX}")
#: The paths :func:`parse_id_path` reads, as one pattern (for the JSON Schema).
ID_PATH = rf"^\s*(?:\.?{_KEY}|{_INDEX})(?:\.{_KEY}|{_INDEX})*\s*$"


def parse_id_path(path: str) -> list[str | int]:
    """Parse ``results[*].metadata.id`` into steps (``"*"`` is every item of a list).

    Raises:
        ValueError: The path is malformed (the message says where).
    """
    steps: list[str | int] = []
    position = 0
    text = path.strip()
    if not text:
        raise ValueError("an id_path must not be empty")
    while position < len(text):
        m = _SEGMENT.match(text, position)
        if m is None or (m.group(1) is not None and position and text[position] != "."):
            raise ValueError(
                f"malformed id_path {path!r} at character {position + 1}: write keys joined "
                "by dots, [*] for every item of a list and [N] for one item (results[*].id)"
            )
        if m.group(1) is not None:
            steps.append(m.group(1))
        else:
            index = m.group(2)
            steps.append("*" if index == "*" else int(index))
        position = m.end()
    return steps


def _follow(value: Any, steps: Sequence[str | int]) -> list[Any]:
    current = [value]
    for step in steps:
        following: list[Any] = []
        for item in current:
            if step == "*" and isinstance(item, list):
                following.extend(item)
            elif isinstance(step, int) and isinstance(item, list):
                if -len(item) <= step < len(item):
                    following.append(item[step])
            elif isinstance(step, str) and isinstance(item, Mapping) and step in item:
                following.append(item[step])
        current = following
    return current


def _default_ids(value: Any) -> list[Any]:
    items = value
    if isinstance(value, Mapping):
        for key in LIST_KEYS:
            if isinstance(value.get(key), list):
                items = value[key]
                break
        else:
            return []
    if not isinstance(items, list):
        return []
    ids: list[Any] = []
    for item in items:
        if isinstance(item, (str, int)) and not isinstance(item, bool):
            ids.append(item)
        elif isinstance(item, Mapping):
            for key in ID_KEYS:
                if key in item:
                    ids.append(item[key])
                    break
    return ids


def result_ids(value: Any, steps: Sequence[str | int] | None = None) -> list[str]:
    """The document ids of one retrieval result, in the order it ranked them.

    Without ``steps`` (an ``id_path``) the default rules apply: a list of strings is the ids;
    a list of mappings gives each item's ``id`` (else ``doc_id``, ``document_id``,
    ``chunk_id``); a mapping gives the ids of its list under ``results`` (else ``documents``,
    ``docs``, ``hits``, ``chunks``, ``items``, ``matches``).
    """
    found = _follow(value, steps) if steps is not None else _default_ids(value)
    return [str(v) for v in found if isinstance(v, (str, int, float)) and not isinstance(v, bool)]


def _result_value(content: str, value: Any) -> Any:
    if value is not None:
        return value
    text = content.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _retrieved(
    record: SessionRecord, tool: str, calls: str, steps: list[str | int] | None
) -> tuple[list[str], list[str], int, list[str]]:
    """(ids in order, the texts of the results, calls of the tool, problems with results)."""
    pairs = [(c, r) for c, r in record.calls_and_results() if c.name == tool]
    if calls == "first":
        pairs = pairs[:1]
    elif calls == "last":
        pairs = pairs[-1:]
    ids: list[str] = []
    texts: list[str] = []
    problems: list[str] = []
    for call, result in pairs:
        if result is None:
            problems.append(f"{call.signature()} has no result")
            continue
        if not result.ok:
            problems.append(f"{call.signature()} failed: {clip(result.content, 80)}")
            continue
        texts.append(result.content)
        found = result_ids(_result_value(result.content, result.value), steps)
        if not found:
            problems.append(f"no ids in the result of {call.signature()}")
        ids.extend(found)
    return ids, texts, len(pairs), problems


#: Keys of a retrieved item holding its text, tried in order (for the judge's context).
TEXT_KEYS = ("text", "content", "chunk", "passage", "snippet", "page_content")


def passages(content: str) -> list[str]:
    """A result's passages as the judge reads them: ``[id] text`` per retrieved item.

    A result that is not a list of items with a text (by the default rules of
    :func:`result_ids`) is one passage: its text as the tool returned it.
    """
    value = _result_value(content, None)
    items = value
    if isinstance(value, Mapping):
        items = next((value[k] for k in LIST_KEYS if isinstance(value.get(k), list)), None)
    if not isinstance(items, list) or not items:
        return [content]
    out: list[str] = []
    for item in items:
        if not isinstance(item, Mapping):
            return [content]
        text = next((item[k] for k in TEXT_KEYS if isinstance(item.get(k), str)), None)
        if text is None:
            return [content]
        ident = next((item[k] for k in ID_KEYS if k in item), None)
        out.append(f"[{ident}] {text}" if ident is not None else text)
    return out


def _listing(ids: Sequence[str]) -> str:
    unique = list(dict.fromkeys(ids))
    shown = ", ".join(unique[:_SHOWN])
    return shown + (f" and {len(unique) - _SHOWN} more" if len(unique) > _SHOWN else "")


# -- the options shared by the three checks -----------------------------------------------------

_TOOL = "the retrieval tool's name"
_RELEVANT = "the relevant ids: a list, or a mapping of id to grade (1 or more)"


def _known(tool: str, info: ValidationInfo) -> str:
    context = CheckContext.of(info)
    if not context.knows(tool):
        raise problem(context.unknown_tool(tool))
    return tool


#: The retrieval tool: one of the agent's tools.
RetrievalTool = Annotated[
    str, Field(min_length=1, description=_TOOL), Expected(got="type"), AfterValidator(_known)
]
#: Which calls of the tool a check reads.
Calls = Annotated[
    Literal["all", "first", "last"],
    Field(description="which calls of the tool: all (default, in call order), first or last"),
    Expected("all, first or last"),
]
#: A share: 0 to 1.
Fraction = Annotated[float, Field(ge=0, le=1), Expected("0 to 1")]
#: An option that is on or off.
Flag = Annotated[bool, Expected("true or false")]


def _tool_or_options(value: Any, info: ValidationInfo) -> Any:
    """The options of a check written as the tool's name alone, or as a mapping."""
    if isinstance(value, Mapping):
        return value
    if not isinstance(value, str) or not value:
        raise problem(f"expected {_TOOL}, got {describe_type(value)}")
    return {"tool": _known(value, info)}


# -- retrieval ----------------------------------------------------------------------------------


def _relevant(value: Any) -> dict[str, float]:
    """The relevant ids with their grades (a listed id has grade 1)."""
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, list) and all(
        isinstance(v, (str, int)) and not isinstance(v, bool) for v in value
    ):
        return {str(v): 1.0 for v in value}
    if isinstance(value, Mapping) and all(
        isinstance(g, (int, float)) and not isinstance(g, bool) and math.isfinite(g)
        for g in value.values()
    ):
        return {str(doc): float(grade) for doc, grade in value.items()}
    raise problem(f"expected {_RELEVANT}, got {describe_type(value)}")


def _id_path(value: Any) -> list[str | int]:
    if not isinstance(value, str):
        raise problem(f"expected a path string, got {describe_type(value)}")
    try:
        return parse_id_path(value)
    except ValueError as exc:
        raise problem(str(exc)) from None


def _least(name: str) -> Any:
    # ``None`` when not written; a written ``null`` is refused like any value outside 0 to 1.
    return Field(None, description=f"the least {name} allowed (0 to 1)")


class Retrieval(FileModel):
    """The ids a retrieval tool should return (labelled relevant), and the least figures."""

    missing: ClassVar[dict[str, str]] = {"relevant": "retrieval needs 'relevant': the relevant ids"}

    tool: RetrievalTool
    relevant: Annotated[
        dict[str, float],
        BeforeValidator(
            _relevant, json_schema_input_type=str | int | list[str | int] | dict[str, float]
        ),
        Field(description=_RELEVANT),
    ]
    k: Annotated[
        Annotated[int, Field(ge=1)] | None,
        Field(description="the cut-off: a positive integer (default: every id returned)"),
        Expected("a positive integer"),
    ] = None
    id_path: Annotated[
        list[str | int] | None,
        BeforeValidator(_id_path, json_schema_input_type=Annotated[str, Field(pattern=ID_PATH)]),
        Field(description="where the ids are in a result: 'results[*].id', '[*].doc_id'..."),
    ] = None
    calls: Calls = "all"
    min_recall: Fraction = _least("recall")
    min_precision: Fraction = _least("precision")
    min_hit: Fraction = _least("hit")
    min_mrr: Fraction = _least("mrr")
    min_ndcg: Fraction = _least("ndcg")
    min_map: Fraction = _least("map")

    @property
    def minimums(self) -> dict[str, float]:
        """The least value of each bounded metric (``recall`` -> 0.8)."""
        bounds = {metric: getattr(self, f"min_{metric}") for metric in METRICS}
        return {metric: bound for metric, bound in bounds.items() if bound is not None}

    @property
    def wanted(self) -> list[str]:
        """The ids of grade 1 or more."""
        return [doc for doc, grade in self.relevant.items() if grade >= 1]

    @property
    def cut(self) -> str:
        """``@k``, or nothing without a cut-off."""
        return f"@{self.k}" if self.k is not None else ""


_RETRIEVAL = "{tool, relevant: [ids] or {id: grade}, k, id_path, min_recall, min_mrr...}"


def _options(value: Any) -> Any:
    if isinstance(value, Mapping):
        return value
    raise problem(f"expected {_RETRIEVAL}")


def _describe_retrieval(spec: Retrieval) -> str:
    bounds = ", ".join(f"{m}{spec.cut} >= {b:g}" for m, b in spec.minimums.items())
    return f"{spec.tool} retrieves {_listing(spec.wanted)} ({bounds or 'measured'})"


@check(
    "retrieval",
    spec=Annotated[Retrieval, BeforeValidator(_options)],
    accepts=_RETRIEVAL,
    describe=_describe_retrieval,
)
def _retrieval(record: SessionRecord, spec: Retrieval) -> tuple[CheckStatus, str, dict[str, Any]]:
    tool, k, cut, wanted = spec.tool, spec.k, spec.cut, spec.wanted
    ids, _, count, problems = _retrieved(record, tool, spec.calls, spec.id_path)
    scores = score_ranking(ids, spec.relevant, k)
    metrics: dict[str, Any] = {"tool": tool, **scores.to_dict(), "ids": ids[:50]}
    if not wanted:
        reason = (
            f"nothing is labelled relevant (an unanswerable question): the ranking metrics "
            f"do not apply; {tool} returned {_listing(ids) or 'nothing'}"
        )
        return "skip", reason, metrics
    if count == 0:
        reason = f"{tool} was not called; it should have retrieved {_listing(wanted)}"
        return "fail", reason, metrics
    figures = ", ".join(
        f"{name}{cut} {getattr(scores, name):.2f}" for name in ("recall", "precision", "mrr")
    )
    missing = [d for d in wanted if d not in ids[: k or len(ids)]]
    returned = f"{tool} returned {_listing(ids[: k or len(ids)]) or 'nothing'}"
    detail = f"; missing {_listing(missing)}" if missing else ""
    trouble = f" ({'; '.join(problems[:3])})" if problems else ""
    low = [
        f"{metric}{cut} {getattr(scores, metric):.2f} < {bound:g}"
        for metric, bound in spec.minimums.items()
        if (getattr(scores, metric) or 0.0) < bound
    ]
    if low:
        return "fail", f"{'; '.join(low)}: {returned}{detail}{trouble}", metrics
    return "pass", f"{figures}: {returned}{detail}{trouble}", metrics


# -- grounded in the retrieved chunks -----------------------------------------------------------

# A quoted span: "...", “...”, «...», 「...」 of 8 to 400 characters on one line.
_QUOTE = re.compile(r'"([^"\n]{8,400})"|“([^”\n]{8,400})”|«([^»\n]{8,400})»|「([^」\n]{4,400})」')


def quoted_spans(answer: str) -> list[str]:
    """The quoted spans of an answer (8 characters or more; 4 for 「」)."""
    return [next(g for g in m.groups() if g is not None) for m in _QUOTE.finditer(answer)]


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


class RetrievalGrounding(FileModel):
    """The retrieval tool whose results the answer's numbers, ids and quotes come from."""

    tool: RetrievalTool
    quotes: Annotated[Flag, Field(description="check quoted spans too (default true)")] = True
    check_small_numbers: Annotated[
        Flag, Field(description="check integers 0-10 too (default false)")
    ] = False
    include_input: Annotated[
        Flag, Field(description="the user's messages count as evidence (default true)")
    ] = True
    calls: Calls = "all"


@check(
    "retrieval_grounded",
    spec=Annotated[
        RetrievalGrounding,
        BeforeValidator(
            _tool_or_options, json_schema_input_type=RetrievalTool | RetrievalGrounding
        ),
    ],
    accepts="a retrieval tool's name, or {tool, quotes, check_small_numbers...}",
    describe=lambda spec: f"answer's facts come from {spec.tool}'s results",
)
def _retrieval_grounded(
    record: SessionRecord, spec: RetrievalGrounding
) -> tuple[CheckStatus, str, dict[str, Any]]:
    from toolproof._grounding import check_grounding

    tool = spec.tool
    if record.output is None:
        return "skip", "no final answer to check", {"tool": tool}
    _, texts, count, _ = _retrieved(record, tool, spec.calls, None)
    evidence = list(texts)
    if spec.include_input:
        evidence.extend(trace.input for trace in record.traces)
    result = check_grounding(record.output, evidence, check_small_numbers=spec.check_small_numbers)
    unquoted: list[str] = []
    quotes = quoted_spans(record.output) if spec.quotes else []
    if quotes:
        haystack = _normal("\n".join(evidence))
        unquoted = [q for q in quotes if _normal(q) not in haystack]
    checked = len(result.checked) + len(quotes)
    bad = len(result.ungrounded) + len(unquoted)
    metrics = {"tool": tool, "claims": checked, "ungrounded": bad}
    if bad:
        parts = []
        if result.ungrounded:
            parts.append(", ".join(map(repr, result.ungrounded)))
        if unquoted:
            parts.append("the quotes " + ", ".join(repr(clip(q, 60)) for q in unquoted))
        calls_text = f"{count} call{'s' if count != 1 else ''}"
        source = f"what {tool} returned ({calls_text})" if count else f"{tool} (never called)"
        reason = (
            f"the answer states {' and '.join(parts)}, found in none of {source}: "
            f"{clip(record.output, 160)!r}"
        )
        return "fail", reason, metrics
    if not checked:
        return "pass", "the answer states no numbers, ids or quotes", metrics
    shown = ", ".join([*result.checked, *(repr(clip(q, 30)) for q in quotes)][:_SHOWN])
    return (
        "pass",
        f"every number, id and quote of the answer comes from {tool} ({shown})",
        metrics,
    )


# -- faithfulness (judged) ----------------------------------------------------------------------

#: Version of the faithfulness prompt: part of the cache key and of every result's reason.
FAITHFULNESS_PROMPT_VERSION = "faithfulness-v1"

FAITHFULNESS_SYSTEM_PROMPT = """\
You check whether an assistant's answer is faithful to the documents it retrieved.
Split the ANSWER into its factual claims (short, self-contained statements; skip greetings, \
offers to help, and statements that the information is not available). For each claim decide, \
using only the CONTEXT:
- "supported": the context states it or it follows directly from it;
- "contradicted": the context states otherwise;
- "not_found": the context says nothing about it.
Answer with one JSON object and nothing else:
{"claims": [{"claim": "<the claim>", "verdict": "supported" | "contradicted" | "not_found", \
"evidence": "<a short quote from the context, or empty>"}]}
An answer without factual claims gives {"claims": []}."""


def faithfulness_messages(answer: str, context: Sequence[str], question: str) -> list[Any]:
    """The messages sent to the judge to grade an answer's claims."""
    from toolproof._messages import Message

    shown = "\n\n".join(
        f"[{n}] {clip(text, 6000, flatten=False)}" for n, text in enumerate(context, 1)
    )
    user = (
        f"QUESTION: {clip(question, 2000, flatten=False)}\n\n"
        f"CONTEXT (what the retrieval tool returned):\n{shown or '(nothing was retrieved)'}\n\n"
        f"ANSWER:\n{clip(answer, 6000, flatten=False)}\n\n"
        "Grade every claim of the answer. Answer with the JSON object only."
    )
    return [Message.system(FAITHFULNESS_SYSTEM_PROMPT), Message.user(user)]


def parse_claims(text: str | None) -> list[tuple[str, str]] | str:
    """The judge's claims as ``(claim, verdict)``, or a reason why they cannot be read."""
    raw = (text or "").strip()
    start, end = raw.find("{"), raw.rfind("}")
    if start == -1 or end <= start:
        return f"the judge's answer is not a JSON object: {clip(raw, 120)!r}"
    try:
        data = json.loads(raw[start : end + 1])
    except (ValueError, RecursionError):
        return f"the judge's answer is not valid JSON: {clip(raw, 120)!r}"
    items = data.get("claims") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return f"the judge's answer has no 'claims' list: {clip(raw, 120)!r}"
    claims: list[tuple[str, str]] = []
    for item in items[:200]:
        if not isinstance(item, dict):
            return f"a claim is not an object: {clip(repr(item), 80)}"
        verdict = str(item.get("verdict", "")).strip().lower().replace(" ", "_")
        if verdict not in _VERDICTS:
            return f"a claim has the verdict {item.get('verdict')!r}, not one of {_VERDICTS}"
        claims.append((str(item.get("claim", "")).strip(), verdict))
    return claims


class Faithfulness(FileModel):
    """The retrieval tool whose results must support the answer's claims, and the rate allowed."""

    tool: RetrievalTool
    max_hallucination_rate: Annotated[
        Fraction, Field(description="the largest share of unsupported claims allowed (default 0)")
    ] = 0.0
    calls: Calls = "all"


def _grader(spec: Faithfulness) -> Grader:
    """The judged check: the judge grades each claim of the answer against the results."""
    tool, calls, limit = spec.tool, spec.calls, spec.max_hallucination_rate

    async def grade(
        model: Model,
        record: SessionRecord,
        metadata: Mapping[str, Any],
        cache: ResponseCache | None,
        inconclusive: Literal["fail", "pass"] = "fail",
    ) -> tuple[CheckResult, bool]:
        from toolproof._messages import ModelSettings

        def result(status: CheckStatus, reason: str, metrics: Any = None) -> CheckResult:
            return CheckResult("faithfulness", status, reason, kind="judged", metrics=metrics)

        if record.output is None:
            return result("skip", "no final answer to grade"), False
        _, texts, _, _ = _retrieved(record, tool, calls, None)
        texts = [passage for text in texts for passage in passages(text)]
        question = record.traces[-1].input if record.traces else ""
        messages = faithfulness_messages(record.output, texts, question)
        key = _cache_key(model.name, messages)
        cached = cache.get(key) if cache is not None else None
        called = cached is None
        if cached is not None:
            answer = cached.decode("utf-8")
        else:
            response = await model.request(messages, [], ModelSettings(temperature=0.0))
            answer = response.message.content or ""
        claims = parse_claims(answer)
        label = f"({model.name}, {FAITHFULNESS_PROMPT_VERSION})"
        if isinstance(claims, str):
            status: CheckStatus = "pass" if inconclusive == "pass" else "inconclusive"
            return result(status, f"INCONCLUSIVE {label}: {claims}"), called
        if cache is not None and cached is None:
            cache.put(key, answer.encode("utf-8"), kind="judge")
        return result(*_claims_verdict(claims, tool, label, limit)), called

    return grade


@check(
    "faithfulness",
    spec=Annotated[
        Faithfulness,
        BeforeValidator(_tool_or_options, json_schema_input_type=RetrievalTool | Faithfulness),
    ],
    accepts="a retrieval tool's name, or {tool, max_hallucination_rate} (judged)",
    describe=lambda spec: (
        f"answer's claims are supported by {spec.tool}'s results (hallucination rate <= "
        f"{spec.max_hallucination_rate:g})"
    ),
    grade=_grader,
)
def _faithfulness(record: SessionRecord, spec: Faithfulness) -> tuple[CheckStatus, str]:
    return "skip", (
        "faithfulness is judged once per case, with the judge model: write it in the case's "
        "expect (inside a turn's expect it does not run)"
    )


def _claims_verdict(
    claims: list[tuple[str, str]], tool: str, label: str, limit: float
) -> tuple[CheckStatus, str, dict[str, Any]]:
    """Status, reason and metrics of the judge's graded claims against the allowed rate."""
    counts = {v: sum(1 for _, verdict in claims if verdict == v) for v in _VERDICTS}
    total = len(claims)
    rate = (counts["contradicted"] + counts["not_found"]) / total if total else None
    metrics = {"tool": tool, "claims": total, **counts, "hallucination_rate": rate}
    if rate is None:
        return "pass", f"PASS {label}: the answer makes no factual claim", metrics
    shown = "; ".join(
        f"{v.replace('_', ' ')}: {clip(c, 80)!r}" for c, v in claims if v != "supported"
    )
    summary = (
        f"{counts['supported']}/{total} claims supported, {counts['contradicted']} "
        f"contradicted, {counts['not_found']} not found (hallucination rate {rate:.2f})"
    )
    if rate > limit + 1e-12:
        return "fail", f"FAIL {label}: {summary} > {limit:g}: {shown}", metrics
    return "pass", f"PASS {label}: {summary}", metrics


def _cache_key(model: str, messages: Sequence[Any]) -> str:
    content = [[m.role, m.content] for m in messages]
    text = json.dumps(
        ["faithfulness", FAITHFULNESS_PROMPT_VERSION, model, content], ensure_ascii=False
    )
    return "judge:" + hashlib.sha256(text.encode()).hexdigest()
