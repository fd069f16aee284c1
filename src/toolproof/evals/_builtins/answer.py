"""Checks of the final answer: text, patterns, values, JSON Schemas, grounding."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from toolproof._filemodel import FileModel, problem
from toolproof.evals._builtins._specs import Expected, Texts, ValueMatcher, one_or_many, switch
from toolproof.evals._checks import CheckStatus, SessionRecord, answer_text, check

if TYPE_CHECKING:
    from toolproof._matching import Matcher


def _quoted(texts: list[str]) -> str:
    return ", ".join(map(repr, texts))


@check("final_contains", spec=Texts, describe=lambda texts: f"answer contains {_quoted(texts)}")
def _final_contains(record: SessionRecord, texts: list[str]) -> tuple[CheckStatus, str]:
    output = record.output or ""
    missing = [t for t in texts if t not in output]
    if missing or record.output is None:
        return "fail", (
            f"expected the final answer to contain {_quoted(missing or texts)}; "
            f"it was {answer_text(record.output)}"
        )
    return "pass", f"the final answer contains {_quoted(texts)}"


@check("final_not_contains", spec=Texts, describe=lambda texts: f"answer avoids {_quoted(texts)}")
def _final_not_contains(record: SessionRecord, texts: list[str]) -> tuple[CheckStatus, str]:
    output = record.output or ""
    found = [t for t in texts if t in output]
    if found:
        return "fail", (
            f"expected the final answer not to contain {_quoted(found)}; "
            f"it was {answer_text(record.output)}"
        )
    return "pass", f"the final answer contains none of {_quoted(texts)}"


def _pattern(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise problem(f"invalid regular expression {pattern!r}: {exc}") from None


@check(
    "final_regex",
    spec=Annotated[
        list[Annotated[str, AfterValidator(_pattern)]],
        one_or_many("a string or a list of strings"),
    ],
    accepts="a regular expression or a list of them",
    describe=lambda patterns: f"answer matches {_quoted([p.pattern for p in patterns])}",
)
def _final_regex(record: SessionRecord, compiled: list[re.Pattern[str]]) -> tuple[CheckStatus, str]:
    output = record.output or ""
    patterns = [p.pattern for p in compiled]
    missing = [p.pattern for p in compiled if not p.search(output)]
    if missing or record.output is None:
        return "fail", (
            f"expected the final answer to match {_quoted(missing or patterns)}; "
            f"it was {answer_text(record.output)}"
        )
    return "pass", f"the final answer matches {_quoted(patterns)}"


@check(
    "final_equals",
    spec=ValueMatcher,
    accepts="a value or a matcher spec ({text: ...}, {regex: ...}...)",
    describe=lambda matcher: f"answer {matcher.describe()}",
)
def _final_equals(record: SessionRecord, matcher: Matcher) -> tuple[CheckStatus, str]:
    if record.output is None:
        return "fail", f"expected a final answer {matcher.describe()}; the run gave none"
    reason = matcher(record.output)
    if reason is not None:
        return "fail", f"final answer: {reason}"
    return "pass", f"the final answer is {matcher.describe()}"


def _validator(schema: dict[str, Any]) -> Any:
    import jsonschema

    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise problem(f"invalid JSON Schema: {exc.message}") from None
    return validator_class(schema)


@check(
    "final_json_schema",
    spec=Annotated[
        dict[str, Any],
        AfterValidator(_validator),
        Expected("a JSON Schema mapping", got="type"),
    ],
    accepts="a JSON Schema (mapping)",
    describe="answer is JSON fitting the schema",
)
def _final_json_schema(record: SessionRecord, validator: Any) -> tuple[CheckStatus, str]:
    if record.output is None:
        return "fail", "expected a JSON final answer; the run gave none"
    try:
        data = json.loads(_strip_fence(record.output))
    except ValueError as exc:
        return "fail", f"the final answer is not JSON ({exc}): {answer_text(record.output)}"
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        shown = []
        for error in errors[:3]:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            shown.append(f"at {where}: {error.message}")
        return "fail", "the final answer does not fit the schema: " + "; ".join(shown)
    return "pass", "the final answer is JSON that fits the schema"


def _strip_fence(text: str) -> str:
    stripped = text.strip()
    match = re.fullmatch(r"```(?:json)?\s*\n?(.*?)\n?```", stripped, re.DOTALL)
    return match.group(1) if match else stripped


_GROUNDED = "true, or {check_small_numbers: bool, include_system_prompt: bool}"


class Grounding(FileModel):
    """Which numbers are checked, and whether the system prompt counts as evidence."""

    unknown_key = staticmethod(  # type: ignore[assignment]
        lambda key, allowed: f"unknown option {key!r}; allowed: {', '.join(allowed)}"
    )

    check_small_numbers: Annotated[bool, Expected("true or false")] = True
    include_system_prompt: Annotated[bool, Expected("true or false")] = True


@check(
    "grounded",
    spec=Annotated[
        Grounding | None,
        BeforeValidator(switch(Grounding, _GROUNDED), json_schema_input_type=bool | Grounding),
    ],
    accepts=_GROUNDED,
    describe="numbers and ids in the answer come from inputs or tools",
)
def _grounded(record: SessionRecord, options: Grounding) -> tuple[CheckStatus, str]:
    from toolproof._grounding import check_grounding, trace_evidence

    if record.output is None:
        return "skip", "no final answer to check"
    evidence: list[str] = []
    for trace in record.traces:
        evidence.extend(trace_evidence(trace, include_system_prompt=options.include_system_prompt))
    result = check_grounding(
        record.output, evidence, check_small_numbers=options.check_small_numbers
    )
    if result.ungrounded:
        return "fail", (
            f"the final answer states {', '.join(map(repr, result.ungrounded))}, found in no "
            f"input or tool result (invented?): {answer_text(record.output)}"
        )
    if not result.checked:
        return "pass", "the final answer states no numbers or ids"
    return (
        "pass",
        f"every number and id in the answer is grounded ({', '.join(result.checked)})",
    )
