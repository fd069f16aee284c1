"""Grading one replayed sample: the recorded run against the new one.

- **pass**: the same tools were called with compatible arguments, and the answer is
  supported by the evidence (worded the same).
- **warn**: the answer is worded differently but supported by the same evidence, or the
  calls changed in ways the schema accepts (new arguments, changed values of arguments
  that are not compared strictly, another order).
- **fail**: a tool is missing or unexpected, an argument is out of bounds or rejected by
  the schema, a required argument is missing, the answer is not supported by the tool
  results (numbers or ids that appear nowhere), the answer states none of the facts the
  recorded answer stated, the run did not finish, or the judge found the answers not
  equivalent.

Every warn and fail is a :class:`Finding` that says why, with the recorded and the new
values side by side.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from toolproof._grounding import check_grounding, stated_facts, trace_evidence
from toolproof._matching import json_equal
from toolproof._messages import error_text
from toolproof._trace import Trace
from toolproof.replay._rules import ReplayRules, ToolRule

if TYPE_CHECKING:
    from toolproof.replay._recorded import RecordedTrace

__all__ = [
    "REJECTED",
    "Finding",
    "Grade",
    "SampleResult",
    "grade_answer",
    "grade_calls",
    "overall",
]

Grade = Literal["pass", "warn", "fail", "error"]

#: ``error_type`` values of results that mean the call never reached the tool.
REJECTED = frozenset({"ValidationError", "InvalidArguments", "UnknownTool"})


class CallLike(Protocol):
    """What grading reads of a tool call: a ``ToolCall``, or a stored one read as data."""

    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> dict[str, Any]: ...
    @property
    def id(self) -> str: ...
    @property
    def raw_arguments(self) -> str | None: ...
    @property
    def arguments_error(self) -> str | None: ...


class ResultLike(Protocol):
    """What grading reads of a tool result: a ``ToolResult``, or a stored one read as data."""

    @property
    def call_id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def ok(self) -> bool: ...
    @property
    def content(self) -> str: ...
    @property
    def value(self) -> Any: ...
    @property
    def error_type(self) -> str | None: ...


@dataclass(slots=True)
class Finding:
    """One reason a sample is not a plain pass.

    Attributes:
        grade: ``"warn"``, ``"fail"`` or ``"error"`` (the sample could not be graded).
        check: What was checked: ``tool_missing``, ``tool_unexpected``, ``order``,
            ``schema``, ``required_args``, ``bounds``, ``extra_args``, ``argument_changed``,
            ``argument_dropped``, ``return_shape``, ``no_answer``, ``run_error``,
            ``no_fixture``, ``ungrounded``, ``answer_changed``, ``judge``.
        message: Why, in a sentence.
        tool: The tool concerned, if any.
        recorded: The recorded value (call, argument or answer), if any.
        new: The new value, if any.
    """

    grade: Grade
    check: str
    message: str
    tool: str | None = None
    recorded: Any = None
    new: Any = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON reports."""
        out: dict[str, Any] = {"grade": self.grade, "check": self.check, "message": self.message}
        for name in ("tool", "recorded", "new"):
            if (value := getattr(self, name)) is not None:
                out[name] = value
        return out


@dataclass(slots=True)
class SampleResult:
    """The verdict on one replayed sample.

    Attributes:
        trace_id: The recorded trace.
        grade: ``"pass"``, ``"warn"``, ``"fail"``, or ``"error"`` when an infrastructure
            problem (the model provider failing) prevented a verdict.
        findings: Every warn, fail and error, in the order found.
        weight: The sample's weight from its age (1.0 without aging).
        age_s: The sample's age in seconds.
        input: The recorded user input (as stored, redacted).
        recorded_model: The model of the recorded run.
        new_model: The model of the new run (model mode), or ``None``.
        recorded_output: The recorded answer.
        new_output: The new answer (model mode).
        duration_ms: Time spent replaying and grading this sample.
        notes: Context that is not a finding (``"query_users: schema changed since
            recording"``).
        new_trace: The new run's trace (model mode).
    """

    trace_id: str
    grade: Grade
    findings: list[Finding] = field(default_factory=list)
    weight: float = 1.0
    age_s: float = 0.0
    input: str = ""
    recorded_model: str = ""
    new_model: str | None = None
    recorded_output: str | None = None
    new_output: str | None = None
    duration_ms: float = 0.0
    notes: list[str] = field(default_factory=list)
    new_trace: Trace | None = None

    @property
    def reasons(self) -> list[str]:
        """The findings' messages."""
        return [finding.message for finding in self.findings]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON reports."""
        out: dict[str, Any] = {
            "trace_id": self.trace_id,
            "grade": self.grade,
            "weight": round(self.weight, 6),
            "age_days": round(self.age_s / 86400, 3),
            "input": self.input,
            "recorded_model": self.recorded_model,
            "recorded_output": self.recorded_output,
            "findings": [finding.to_dict() for finding in self.findings],
        }
        if self.new_model is not None:
            out["new_model"] = self.new_model
            out["new_output"] = self.new_output
        if self.notes:
            out["notes"] = list(self.notes)
        out["duration_ms"] = round(self.duration_ms, 3)
        return out


def overall(findings: Iterable[Finding]) -> Grade:
    """The sample's grade: the worst of its findings (error > fail > warn > pass)."""
    grade: Grade = "pass"
    for finding in findings:
        if finding.grade == "error":
            return "error"
        if finding.grade == "fail":
            grade = "fail"
        elif finding.grade == "warn" and grade == "pass":
            grade = "warn"
    return grade


def sample_result(
    trace: Trace | RecordedTrace, findings: list[Finding], notes: list[str] | None = None
) -> SampleResult:
    """A sample graded by its findings, with the recorded run's input, model and answer."""
    return SampleResult(
        trace_id=trace.id,
        grade=overall(findings),
        findings=findings,
        input=trace.input,
        recorded_model=trace.model,
        recorded_output=trace.output,
        notes=[] if notes is None else notes,
    )


# -- calls ---------------------------------------------------------------------------------


def grade_calls(
    recorded: Sequence[tuple[CallLike, ResultLike | None]],
    new: Sequence[tuple[CallLike, ResultLike | None]],
    rules: ReplayRules,
    *,
    compare_calls: bool = True,
) -> list[Finding]:
    """Compare the recorded calls with the new ones, tool by tool in call order.

    The *k*-th call of a tool in the new run is paired with the *k*-th recorded call of
    that tool. ``compare_calls=False`` (tools mode, where the calls are the recorded ones)
    only applies the per-call rules.
    """
    findings: list[Finding] = []
    mask = rules.mask
    if compare_calls:
        findings.extend(_selection(recorded, new, rules.order, mask))
    by_tool: dict[str, list[tuple[CallLike, ResultLike | None]]] = {}
    for call, result in recorded:
        by_tool.setdefault(call.name, []).append((call, result))
    seen: dict[str, int] = {}
    for call, result in new:
        index = seen.get(call.name, 0)
        seen[call.name] = index + 1
        pairs = by_tool.get(call.name, ())
        before = pairs[index] if index < len(pairs) else None
        rule = rules.rule_for(call.name)
        findings.extend(one_call(before, (call, result), rule, mask, compare_calls))
    return findings


def _selection(
    recorded: Sequence[tuple[CallLike, ResultLike | None]],
    new: Sequence[tuple[CallLike, ResultLike | None]],
    order: str,
    mask: Sequence[str],
) -> list[Finding]:
    old_names = [call.name for call, _ in recorded]
    new_names = [call.name for call, _ in new]
    findings: list[Finding] = []
    old_counts, new_counts = Counter(old_names), Counter(new_names)
    for name in dict.fromkeys(old_names + new_names):
        before, after = old_counts[name], new_counts[name]
        if after < before:
            missing = [c for c, _ in recorded if c.name == name][after:]
            findings.append(
                Finding(
                    "fail",
                    "tool_missing",
                    f"tool '{name}' was called {before} time{_s(before)} when recorded and "
                    f"{after} time{_s(after)} now",
                    tool=name,
                    recorded=[show_call(c, mask) for c in missing],
                    new=None,
                )
            )
        elif after > before:
            extra = [c for c, _ in new if c.name == name][before:]
            findings.append(
                Finding(
                    "fail",
                    "tool_unexpected",
                    f"tool '{name}' was called {after} time{_s(after)} now and {before} "
                    f"time{_s(before)} when recorded",
                    tool=name,
                    recorded=None,
                    new=[show_call(c, mask) for c in extra],
                )
            )
    if not findings and order != "ignore" and old_names != new_names:
        findings.append(
            Finding(
                "fail" if order == "fail" else "warn",
                "order",
                "the same tools were called in another order",
                recorded=old_names,
                new=new_names,
            )
        )
    return findings


def one_call(
    before: tuple[CallLike, ResultLike | None] | None,
    after: tuple[CallLike, ResultLike | None],
    rule: ToolRule,
    mask: Sequence[str],
    compare: bool,
) -> list[Finding]:
    call, result = after
    old_call, old_result = before if before is not None else (None, None)
    old_rejected = old_result is not None and old_result.error_type in REJECTED
    if result is not None and result.error_type in REJECTED and not old_rejected:
        return [
            Finding(
                "fail",
                "schema",
                "today's schema rejects the call: "
                + result.content.removeprefix(error_text(result.error_type or "", "")),
                tool=call.name,
                recorded=show_call(old_call, mask) if old_call is not None else None,
                new=show_call(call, mask) if compare else None,
            )
        ]
    if call.arguments_error is not None:
        return []
    findings = _rule_findings(call, old_call, rule, mask)
    if compare and old_call is not None and old_call.arguments_error is None:
        findings.extend(_changed_arguments(call, old_call, rule, mask))
    return findings


def _rule_findings(
    call: CallLike, old_call: CallLike | None, rule: ToolRule, mask: Sequence[str]
) -> list[Finding]:
    """What the rule's required arguments and bounds find wrong with the new call."""
    name = call.name
    findings: list[Finding] = []
    arguments = call.arguments
    for required in rule.required_args:
        if required not in arguments:
            findings.append(
                Finding(
                    "fail",
                    "required_args",
                    f"{name}: required argument '{required}' is missing",
                    tool=name,
                    recorded=_shown_arg(old_call, required, mask),
                    new=show_call(call, mask),
                )
            )
    for arg, matcher in rule.bounds.items():
        if arg not in arguments:
            continue
        reason = matcher(arguments[arg])
        if reason is not None:
            findings.append(
                Finding(
                    "fail",
                    "bounds",
                    f"{name}: argument '{arg}' is out of bounds ({matcher.describe()}): {reason}",
                    tool=name,
                    recorded=_shown_arg(old_call, arg, mask),
                    new=mask_value(arg, arguments[arg], mask),
                )
            )
    return findings


def _changed_arguments(
    call: CallLike, old_call: CallLike, rule: ToolRule, mask: Sequence[str]
) -> list[Finding]:
    """How the new call's arguments differ from the recorded call's."""
    name = call.name
    arguments = call.arguments
    findings: list[Finding] = []
    old_args = old_call.arguments
    ignored = set(rule.ignore)
    for arg, value in arguments.items():
        if arg in ignored:
            continue
        if arg not in old_args:
            if rule.extra_args != "accept":
                findings.append(
                    Finding(
                        "fail" if rule.extra_args == "fail" else "warn",
                        "extra_args",
                        f"{name}: new argument '{arg}' (the schema accepts it)"
                        if rule.extra_args == "warn"
                        else f"{name}: new argument '{arg}' (forbid_extra_args)",
                        tool=name,
                        recorded=show_call(old_call, mask),
                        new=show_call(call, mask),
                    )
                )
        elif not json_equal(old_args[arg], value):
            strict = arg in rule.compare
            findings.append(
                Finding(
                    "fail" if strict else "warn",
                    "argument_changed",
                    f"{name}: argument '{arg}' changed"
                    + (" (compared strictly)" if strict else ""),
                    tool=name,
                    recorded=mask_value(arg, old_args[arg], mask),
                    new=mask_value(arg, value, mask),
                )
            )
    for arg in old_args:
        if arg not in arguments and arg not in ignored and arg not in rule.required_args:
            findings.append(
                Finding(
                    "fail" if arg in rule.compare else "warn",
                    "argument_dropped",
                    f"{name}: argument '{arg}' is no longer passed",
                    tool=name,
                    recorded=mask_value(arg, old_args[arg], mask),
                    new=None,
                )
            )
    return findings


# -- answers -------------------------------------------------------------------------------


def grade_answer(recorded: Trace, new: Trace, rules: ReplayRules) -> list[Finding]:
    """Check the new run's outcome and answer against the recorded ones."""
    findings: list[Finding] = []
    if new.stop_reason != "final":
        if recorded.stop_reason == "final" or new.stop_reason == "error":
            findings.append(_stopped(new))
        return findings
    answer = new.output
    if answer is None or recorded.output is None:
        return findings
    if rules.grounding:
        small = rules.check_small_numbers
        ungrounded = check_grounding(answer, trace_evidence(new), check_small_numbers=small)
        # The recording is the baseline: a claim its own answer already made without evidence
        # (a total the model worked out, say) is not a regression, so a replay that
        # reproduces its recording is never "ungrounded". A claim the recorded run had
        # evidence for must have evidence in the new run too.
        baseline = set()
        if not ungrounded.ok:
            recorded_check = check_grounding(
                recorded.output, trace_evidence(recorded), check_small_numbers=small
            )
            baseline = set(recorded_check.ungrounded)
        invented = [token for token in ungrounded.ungrounded if token not in baseline]
        if invented:
            findings.append(
                Finding(
                    "fail",
                    "ungrounded",
                    "the answer states "
                    + ", ".join(repr(token) for token in invented)
                    + ", found in neither the input nor any tool result",
                    recorded=recorded.output,
                    new=answer,
                )
            )
            return findings
    if _normalize(answer) != _normalize(recorded.output):
        small = rules.check_small_numbers
        old_facts = stated_facts(recorded.output, check_small_numbers=small)
        new_facts = stated_facts(answer, check_small_numbers=small)
        dropped = [token for key, token in old_facts.items() if key not in new_facts]
        added = [token for key, token in new_facts.items() if key not in old_facts]
        grade: Grade = "warn"
        if not dropped and not added:
            message = "the answer is worded differently; it states the same facts"
        elif old_facts and len(dropped) == len(old_facts):  # a non-answer, or other facts
            grade = "fail"
            message = "the answer states none of the recorded facts (" + ", ".join(dropped) + ")"
            if added:
                message += "; it states " + ", ".join(added) + " instead"
        else:
            parts = []
            if dropped:
                parts.append("no longer states " + ", ".join(dropped))
            if added:
                parts.append("now also states " + ", ".join(added))
            message = "the answer changed and is supported by the evidence; it " + " and ".join(
                parts
            )
        findings.append(
            Finding(grade, "answer_changed", message, recorded=recorded.output, new=answer)
        )
    return findings


def _stopped(new: Trace) -> Finding:
    error = new.error
    if error is not None and error.type == "MissingFixture":
        return Finding(
            "fail",
            "no_fixture",
            "the new run made a call the recording has no response for: "
            + (error.message.splitlines()[0] if error.message else ""),
            tool=error.tool_name,
            new=error.message,
        )
    if error is not None and error.type in _INFRA_ERRORS:
        return Finding(
            "error",
            "run_error",
            f"the model could not be reached ({error.type}): {error.message}",
            new=error.message,
        )
    if error is not None:
        return Finding(
            "fail",
            "run_error",
            f"the new run stopped on {error.type}: {error.message}",
            tool=error.tool_name,
            new=error.message,
        )
    detail = f": {new.stop_detail}" if new.stop_detail else ""
    return Finding(
        "fail",
        "no_answer",
        f"the new run gave no answer (stop_reason={new.stop_reason}){detail}",
        new=new.stop_reason,
    )


_INFRA_ERRORS = frozenset(
    {
        "ModelHTTPError",
        "ModelConnectionError",
        "MissingAPIKey",
        "ModelRequestsDisabled",
        "TimeoutError",
        "ClientConnectorError",
    }
)

_SPACE = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]")


def _normalize(text: str) -> str:
    return _SPACE.sub(" ", _PUNCT.sub(" ", text.casefold())).strip()


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def mask_value(name: str, value: Any, mask: Sequence[str]) -> Any:
    if name.lower() in {m.lower() for m in mask}:
        return "***"
    if isinstance(value, Mapping):
        return {k: mask_value(str(k), v, mask) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_value("", v, mask) for v in value]
    return value


def show_call(call: CallLike | None, mask: Sequence[str]) -> str | None:
    if call is None:
        return None
    if call.arguments_error is not None:
        return f"{call.name}(<{call.raw_arguments!r}>)"
    masked = mask_value("", call.arguments, mask)
    return f"{call.name}({json.dumps(masked, ensure_ascii=False, sort_keys=True, default=str)})"


def _shown_arg(call: CallLike | None, arg: str, mask: Sequence[str]) -> Any:
    if call is None or arg not in call.arguments:
        return None
    return mask_value(arg, call.arguments[arg], mask)
