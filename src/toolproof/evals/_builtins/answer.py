"""Checks of the final answer: text, patterns, values, JSON Schemas, grounding."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from toolproof._yaml import describe_type as _type
from toolproof.evals._builtins._schemas import TEXTS
from toolproof.evals._checks import (
    Check,
    CheckContext,
    CheckStatus,
    SessionRecord,
    accepts,
    answer_text,
    check,
    string_list,
    value_matcher,
)


@check.compiler("final_contains", accepts="a string or a list of strings", schema=TEXTS)
def _final_contains(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    texts = string_list(ctx, value, "final_contains")
    if texts is None:
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        output = record.output or ""
        missing = [t for t in texts if t not in output]
        if missing or record.output is None:
            return "fail", (
                f"expected the final answer to contain {', '.join(map(repr, missing or texts))}; "
                f"it was {answer_text(record.output)}"
            )
        return "pass", f"the final answer contains {', '.join(map(repr, texts))}"

    return Check("final_contains", f"answer contains {', '.join(map(repr, texts))}", evaluate)


@check.compiler("final_not_contains", accepts="a string or a list of strings", schema=TEXTS)
def _final_not_contains(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    texts = string_list(ctx, value, "final_not_contains")
    if texts is None:
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        output = record.output or ""
        found = [t for t in texts if t in output]
        if found:
            return "fail", (
                f"expected the final answer not to contain {', '.join(map(repr, found))}; "
                f"it was {answer_text(record.output)}"
            )
        return "pass", f"the final answer contains none of {', '.join(map(repr, texts))}"

    return Check("final_not_contains", f"answer avoids {', '.join(map(repr, texts))}", evaluate)


@check.compiler("final_regex", accepts="a regular expression or a list of them", schema=TEXTS)
def _final_regex(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    patterns = string_list(ctx, value, "final_regex")
    if patterns is None:
        return None
    compiled = []
    for index, pattern in enumerate(patterns):
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            path = (
                ctx.at("final_regex", index) if isinstance(value, list) else ctx.at("final_regex")
            )
            ctx.problems.add(path, f"invalid regular expression {pattern!r}: {exc}")
    if len(compiled) != len(patterns):
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        output = record.output or ""
        missing = [p.pattern for p in compiled if not p.search(output)]
        if missing or record.output is None:
            return "fail", (
                f"expected the final answer to match {', '.join(map(repr, missing or patterns))}; "
                f"it was {answer_text(record.output)}"
            )
        return "pass", f"the final answer matches {', '.join(map(repr, patterns))}"

    return Check("final_regex", f"answer matches {', '.join(map(repr, patterns))}", evaluate)


@check.compiler("final_equals", accepts="a value or a matcher spec ({text: ...}, {regex: ...}...)")
def _final_equals(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    matcher = value_matcher(ctx, value, ctx.at("final_equals"))
    if matcher is None:
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        if record.output is None:
            return "fail", f"expected a final answer {matcher.describe()}; the run gave none"
        reason = matcher(record.output)
        if reason is not None:
            return "fail", f"final answer: {reason}"
        return "pass", f"the final answer is {matcher.describe()}"

    return Check("final_equals", f"answer {matcher.describe()}", evaluate)


@check.compiler("final_json_schema", accepts="a JSON Schema (mapping)", schema={"type": "object"})
def _final_json_schema(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    if not isinstance(value, Mapping):
        ctx.problems.add(
            ctx.at("final_json_schema"), f"expected a JSON Schema mapping, got {_type(value)}"
        )
        return None
    import jsonschema

    try:
        schema = dict(value)
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        ctx.problems.add(ctx.at("final_json_schema"), f"invalid JSON Schema: {exc.message}")
        return None
    validator = validator_class(schema)

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
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

    return Check("final_json_schema", "answer is JSON fitting the schema", evaluate)


def _strip_fence(text: str) -> str:
    stripped = text.strip()
    match = re.fullmatch(r"```(?:json)?\s*\n?(.*?)\n?```", stripped, re.DOTALL)
    return match.group(1) if match else stripped


@check.compiler(
    "grounded",
    accepts="true, or {check_small_numbers: bool, include_system_prompt: bool}",
    schema={
        "anyOf": [
            {"type": "boolean"},
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "check_small_numbers": {"type": "boolean"},
                    "include_system_prompt": {"type": "boolean"},
                },
            },
        ]
    },
)
def _grounded(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
    options = {"check_small_numbers": True, "include_system_prompt": True}
    if value is False:
        return None
    if isinstance(value, Mapping):
        for key, option in value.items():
            if key not in options:
                ctx.problems.add(
                    ctx.at("grounded", key),
                    f"unknown option {key!r}; allowed: {', '.join(options)}",
                )
                return None
            if not isinstance(option, bool):
                ctx.problems.add(ctx.at("grounded", key), f"expected true or false, got {option!r}")
                return None
            options[key] = option
    elif value is not True:
        ctx.problems.add(ctx.at("grounded"), f"expected {accepts('grounded')}, got {value!r}")
        return None

    def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
        from toolproof._grounding import check_grounding, trace_evidence

        if record.output is None:
            return "skip", "no final answer to check"
        evidence: list[str] = []
        for trace in record.traces:
            evidence.extend(
                trace_evidence(trace, include_system_prompt=options["include_system_prompt"])
            )
        result = check_grounding(
            record.output, evidence, check_small_numbers=options["check_small_numbers"]
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

    return Check("grounded", "numbers and ids in the answer come from inputs or tools", evaluate)
