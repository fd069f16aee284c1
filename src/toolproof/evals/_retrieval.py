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
from typing import TYPE_CHECKING, Any, Literal

from toolproof._text import clip
from toolproof.evals._checks import (
    Check,
    CheckContext,
    CheckResult,
    CheckStatus,
    SessionRecord,
    accepts,
    check,
)
from toolproof.evals._quality import VERDICTS as _VERDICTS
from toolproof.evals._yaml import describe_type as _type
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
#: Figures a ``min_*`` key may bound.
MINIMUMS = {f"min_{name}": name for name in METRICS}
_RETRIEVAL_KEYS = {
    "tool": "the retrieval tool's name",
    "relevant": "the relevant ids: a list, or a mapping of id to grade (1 or more)",
    "k": "the cut-off: a positive integer (default: every id returned)",
    "id_path": "where the ids are in a result: 'results[*].id', '[*].doc_id'...",
    "calls": "which calls of the tool: all (default, in call order), first or last",
    **{key: f"the least {name} allowed (0 to 1)" for key, name in MINIMUMS.items()},
}
_SHOWN = 8

# -- the JSON Schema fragments of the three checks' values (for the published suite schema) --

_TOOL: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "description": "the retrieval tool's name",
}
_FRACTION: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}
_CALLS: dict[str, Any] = {"enum": ["all", "first", "last"]}
_ID: dict[str, Any] = {"type": ["string", "integer"]}
_RETRIEVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["tool", "relevant"],
    "properties": {
        "tool": _TOOL,
        "relevant": {
            "description": "the relevant ids: a list, or a mapping of id to grade",
            "anyOf": [
                _ID,
                {"type": "array", "items": _ID},
                {"type": "object", "additionalProperties": {"type": "number"}},
            ],
        },
        "k": {"type": "integer", "minimum": 1},
        "id_path": {"type": "string", "minLength": 1},
        "calls": _CALLS,
        **dict.fromkeys(MINIMUMS, _FRACTION),
    },
}


def _tool_or_options(**options: Any) -> dict[str, Any]:
    """The schema of a check given the tool's name, or an object naming it with options."""
    properties = {"tool": _TOOL, **options, "calls": _CALLS}
    options_schema = {"type": "object", "additionalProperties": False, "required": ["tool"]}
    return {"anyOf": [_TOOL, {**options_schema, "properties": properties}]}


_BOOLEAN: dict[str, Any] = {"type": "boolean"}
_GROUNDED_SCHEMA = _tool_or_options(
    quotes=_BOOLEAN, check_small_numbers=_BOOLEAN, include_input=_BOOLEAN
)
_FAITHFULNESS_SCHEMA = _tool_or_options(max_hallucination_rate=_FRACTION)


# -- ids ----------------------------------------------------------------------------------------

_SEGMENT = re.compile(r"\.?([A-Za-z_][\w-]*)|\[(\*|-?\d+)\]")


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


def _tool_option(ctx: CheckContext, value: Any, key: str) -> str | None:
    tool = value.get("tool") if isinstance(value, Mapping) else value
    if not isinstance(tool, str) or not tool:
        where = ctx.at(key, "tool") if isinstance(value, Mapping) else ctx.at(key)
        ctx.problems.add(where, f"expected the retrieval tool's name, got {_type(tool)}")
        return None
    if not ctx.tool(tool, key, *(("tool",) if isinstance(value, Mapping) else ())):
        return None
    return tool


def _calls_option(ctx: CheckContext, value: Mapping[str, Any], key: str) -> str | None:
    """Which calls of the tool a check reads: ``all`` (the default), ``first`` or ``last``."""
    calls = value.get("calls", "all")
    if calls in ("all", "first", "last"):
        return str(calls)
    ctx.problems.add(ctx.at(key, "calls"), f"expected all, first or last, got {calls!r}")
    return None


def _unknown_options(ctx: CheckContext, value: Mapping[str, Any], key: str, allowed: Any) -> bool:
    from toolproof.evals._checks import unknown_key

    bad = [k for k in value if k not in allowed]
    for name in bad:
        unknown_key(
            CheckContext(ctx.tools, ctx.problems, ctx.at(key), {}), name, dict.fromkeys(allowed, "")
        )
    return not bad


def _relevant(ctx: CheckContext, value: Any, key: str) -> dict[str, float] | None:
    where = ctx.at(key, "relevant")
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
    ctx.problems.add(where, f"expected {_RETRIEVAL_KEYS['relevant']}, got {_type(value)}")
    return None


# -- retrieval ----------------------------------------------------------------------------------


@check.compiler(
    "retrieval",
    accepts="{tool, relevant: [ids] or {id: grade}, k, id_path, min_recall, min_mrr...}",
    schema=_RETRIEVAL_SCHEMA,
)
def _retrieval(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    if not isinstance(value, Mapping):
        ctx.problems.add(ctx.at("retrieval"), f"expected {accepts('retrieval')}")
        return None
    ok = _unknown_options(ctx, value, "retrieval", _RETRIEVAL_KEYS)
    tool = _tool_option(ctx, value, "retrieval")
    if "relevant" not in value:
        ctx.problems.add(ctx.at("retrieval"), "retrieval needs 'relevant': the relevant ids")
        return None
    relevant = _relevant(ctx, value["relevant"], "retrieval")
    k = value.get("k")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        ctx.problems.add(ctx.at("retrieval", "k"), f"expected a positive integer, got {k!r}")
        ok = False
    calls = value.get("calls", "all")
    if calls not in ("all", "first", "last"):
        ctx.problems.add(ctx.at("retrieval", "calls"), f"expected all, first or last: {calls!r}")
        ok = False
    steps = _id_steps(ctx, value, "retrieval")
    minimums: dict[str, float] = {}
    for option, metric in MINIMUMS.items():
        if option not in value:
            continue
        bound = value[option]
        if not _fraction(bound):
            ctx.problems.add(ctx.at("retrieval", option), f"expected 0 to 1, got {bound!r}")
            ok = False
        else:
            minimums[metric] = float(bound)
    if not ok or tool is None or relevant is None or steps is False:
        return None
    path = steps if isinstance(steps, list) else None
    cut = f"@{k}" if k is not None else ""
    wanted = [d for d, g in relevant.items() if g >= 1]

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str, dict[str, Any]]:
        ids, _, count, problems = _retrieved(record, tool, calls, path)
        scores = score_ranking(ids, relevant, k)
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
            for metric, bound in minimums.items()
            if (getattr(scores, metric) or 0.0) < bound
        ]
        if low:
            return "fail", f"{'; '.join(low)}: {returned}{detail}{trouble}", metrics
        return "pass", f"{figures}: {returned}{detail}{trouble}", metrics

    bounds = ", ".join(f"{m}{cut} >= {b:g}" for m, b in minimums.items()) or "measured"
    return Check("retrieval", f"{tool} retrieves {_listing(wanted)} ({bounds})", evaluate)


def _fraction(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def _id_steps(ctx: CheckContext, value: Mapping[str, Any], key: str) -> list[str | int] | bool:
    """The parsed ``id_path``, ``True`` when there is none, ``False`` when it is malformed."""
    if "id_path" not in value:
        return True
    raw = value["id_path"]
    if not isinstance(raw, str):
        ctx.problems.add(ctx.at(key, "id_path"), f"expected a path string, got {_type(raw)}")
        return False
    try:
        return parse_id_path(raw)
    except ValueError as exc:
        ctx.problems.add(ctx.at(key, "id_path"), str(exc))
        return False


# -- grounded in the retrieved chunks -----------------------------------------------------------

_GROUNDED_KEYS = {
    "tool": "the retrieval tool's name",
    "quotes": "check quoted spans too (default true)",
    "check_small_numbers": "check integers 0-10 too (default false)",
    "include_input": "the user's messages count as evidence (default true)",
    "calls": "which calls of the tool: all, first or last",
}
# A quoted span: "...", “...”, «...», 「...」 of 8 to 400 characters on one line.
_QUOTE = re.compile(r'"([^"\n]{8,400})"|“([^”\n]{8,400})”|«([^»\n]{8,400})»|「([^」\n]{4,400})」')


def quoted_spans(answer: str) -> list[str]:
    """The quoted spans of an answer (8 characters or more; 4 for 「」)."""
    return [next(g for g in m.groups() if g is not None) for m in _QUOTE.finditer(answer)]


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


@check.compiler(
    "retrieval_grounded",
    accepts="a retrieval tool's name, or {tool, quotes, check_small_numbers...}",
    schema=_GROUNDED_SCHEMA,
)
def _retrieval_grounded(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    options: dict[str, Any] = {
        "quotes": True,
        "check_small_numbers": False,
        "include_input": True,
        "calls": "all",
    }
    if isinstance(value, Mapping):
        if not _unknown_options(ctx, value, "retrieval_grounded", _GROUNDED_KEYS):
            return None
        for key in ("quotes", "check_small_numbers", "include_input"):
            if key in value:
                if not isinstance(value[key], bool):
                    where = ctx.at("retrieval_grounded", key)
                    ctx.problems.add(where, f"expected true or false, got {value[key]!r}")
                    return None
                options[key] = value[key]
        options["calls"] = _calls_option(ctx, value, "retrieval_grounded")
        if options["calls"] is None:
            return None
    tool = _tool_option(ctx, value, "retrieval_grounded")
    if tool is None:
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str, dict[str, Any]]:
        from toolproof._grounding import check_grounding

        if record.output is None:
            return "skip", "no final answer to check", {"tool": tool}
        _, texts, count, _ = _retrieved(record, tool, options["calls"], None)
        evidence = list(texts)
        if options["include_input"]:
            evidence.extend(trace.input for trace in record.traces)
        result = check_grounding(
            record.output, evidence, check_small_numbers=options["check_small_numbers"]
        )
        unquoted: list[str] = []
        quotes = quoted_spans(record.output) if options["quotes"] else []
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

    return Check("retrieval_grounded", f"answer's facts come from {tool}'s results", evaluate)


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

_FAITH_KEYS = {
    "tool": "the retrieval tool's name",
    "max_hallucination_rate": "the largest share of unsupported claims allowed (default 0)",
    "calls": "which calls of the tool: all, first or last",
}


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


@check.compiler(
    "faithfulness",
    accepts="a retrieval tool's name, or {tool, max_hallucination_rate} (judged)",
    schema=_FAITHFULNESS_SCHEMA,
)
def _faithfulness(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    limit = 0.0
    calls = "all"
    if isinstance(value, Mapping):
        if not _unknown_options(ctx, value, "faithfulness", _FAITH_KEYS):
            return None
        if "max_hallucination_rate" in value:
            bound = value["max_hallucination_rate"]
            if not _fraction(bound):
                where = ctx.at("faithfulness", "max_hallucination_rate")
                ctx.problems.add(where, f"expected 0 to 1, got {bound!r}")
                return None
            limit = float(bound)
        chosen = _calls_option(ctx, value, "faithfulness")
        if chosen is None:
            return None
        calls = chosen
    tool = _tool_option(ctx, value, "faithfulness")
    if tool is None:
        return None

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

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        return "skip", (
            "faithfulness is judged once per case, with the judge model: write it in the case's "
            "expect (inside a turn's expect it does not run)"
        )

    return Check(
        "faithfulness",
        f"answer's claims are supported by {tool}'s results (hallucination rate <= {limit:g})",
        evaluate,
        grade=grade,
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
