"""Recorded traces promoted to eval cases: ``toolproof traces promote``.

Each trace becomes a case a person can read and edit: the user's turns, a script of what the
recorded model answered (so ``--model scripted`` runs the recording offline), expectations
drafted from the recorded calls, and a fixture file that answers every recorded call with
its recorded result. Everything written passes through the redactor first, so a promoted
case never holds what the store's redaction removed (nor what it missed and the default
rules catch).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolproof._grounding import check_grounding, extract_claims, trace_evidence
from toolproof._messages import refused

if TYPE_CHECKING:
    from toolproof._messages import Message, ToolCall, ToolResult
    from toolproof._trace import Trace
    from toolproof.replay._redact import Redactor

__all__ = ["Promoted", "Signals", "distinct", "promote_traces", "signals_of", "write_promoted"]

#: Errors the agent's toolset returns without running a tool: no fixture answers them, and
#: the scripted call is sent as recorded (it need not fit the schema).

#: A string argument longer than this, or with this many words, is free text (a query, a
#: message): models word it differently each time, so it is no key argument.
_FREE_TEXT_CHARS = 40
_FREE_TEXT_WORDS = 4


@dataclass(slots=True)
class Promoted:
    """A suite drafted from traces, and the fixture file of each case (plain data, redacted).

    Attributes:
        suite: The suite.
        fixtures: Each case's fixture file, by its path relative to the suite file.
        notes: What a person should look at (a recording that did not end with an answer).
    """

    suite: dict[str, Any]
    fixtures: dict[str, dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def promote_traces(
    traces: Sequence[Trace],
    *,
    agent: str,
    suite_name: str,
    fixtures_dir: str,
    redactor: Redactor,
) -> Promoted:
    """Draft one eval case per trace, and the fixtures that replay their tool results.

    Args:
        traces: The recorded runs.
        agent: The agent factory of the suite (``module:factory``).
        suite_name: The suite's name.
        fixtures_dir: Where the cases' fixture files go, relative to the suite file (one
            file per case, so two recordings of the same call keep their own results).
        redactor: Applied to every trace before anything is drafted from it.

    Returns:
        The suite and the fixtures, as data ready to be written as YAML.
    """
    clean = redactor.redact_many([t.to_dict() for t in traces])
    from toolproof._trace import Trace

    fixtures: dict[str, dict[str, Any]] = {}
    cases: list[dict[str, Any]] = []
    names: set[str] = set()
    notes: list[str] = []
    for data in clean:
        trace = Trace.from_dict(data)
        case, entries = _case(trace, redactor.mask)
        name = case["name"]
        n = 2
        while case["name"] in names:
            case["name"] = f"{name}-{n}"
            n += 1
        names.add(case["name"])
        if entries:
            path = f"{fixtures_dir}/{case['name']}.yaml"
            fixtures[path] = {"version": 1, "assert_all_used": False, "fixtures": _order(entries)}
            case["mocks"] = [path]
        cases.append(case)
        if "earlier_turns" in case["metadata"]["promoted_from"]:
            notes.append(
                f"{case['name']}: an earlier turn of the conversation ended without an answer, "
                "so the case replays the last turn alone"
            )
        if trace.stop_reason != "final":
            notes.append(
                f"{case['name']}: the recording stopped with {trace.stop_reason}; the draft "
                "expects that too (edit stop_reason to what it should do)"
            )
    suite = {
        "suite": suite_name,
        "description": "Recorded runs promoted to regression cases (toolproof traces promote).",
        "agent": agent,
        "model": "scripted",
        "tools": "mock",
        "cases": cases,
    }
    return Promoted(suite, fixtures, notes)


def write_promoted(promoted: Promoted, suite_path: Path) -> None:
    """Write the suite and its fixture files as YAML (each with a header saying what it is)."""
    import yaml

    header = (
        "# Drafted by `toolproof traces promote` from recorded traces: read it, keep what\n"
        "# matters. `model: scripted` replays the recorded answers; run it with\n"
        "# `--model MODEL` to test a model against the recorded tool results.\n"
    )
    from toolproof._reporting import open_output

    # Each file atomically (as every file toolproof writes), the suite last: a suite never
    # names a fixture file that is not there.
    for relative, data in promoted.fixtures.items():
        with open_output(suite_path.parent / relative) as out:
            out.write(
                "# The recorded tool results of a promoted trace (toolproof traces promote).\n"
            )
            out.write(_dump(yaml, data))
    with open_output(suite_path) as out:
        out.write(header + _dump(yaml, promoted.suite))


def _dump(yaml: Any, data: Any) -> str:
    text: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return text


# -- one case -----------------------------------------------------------------------------------


def _unfinished(history: Sequence[Message]) -> bool:
    """Whether an earlier turn ended without an answer (a limit stopped it).

    Its last response is not in the history, so replaying the turns could not follow it.
    """
    for before, message in itertools.pairwise(history):
        if message.role == "user" and not (before.role == "assistant" and not before.tool_calls):
            return True
    return bool(history) and (history[-1].role != "assistant" or bool(history[-1].tool_calls))


def _case(trace: Trace, mask: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    dropped = _unfinished(trace.history)
    if dropped:
        import dataclasses

        trace = dataclasses.replace(trace, history=[])
    turns: list[str] = [m.content or "" for m in trace.history if m.role == "user"]
    turns.append(trace.input)
    responses = [m for m in trace.history if m.role == "assistant"]
    responses += [step.response for step in trace.steps]
    recorded: list[tuple[ToolCall, ToolResult | Message | None]] = []
    pending: dict[str, int] = {}  # call id -> its place in `recorded`, in the current group
    for message in trace.history:  # (ids repeat across turns: pair within each group)
        if message.tool_calls:
            pending = {}
            for call in message.tool_calls:
                pending[call.id] = len(recorded)
                recorded.append((call, None))
        elif message.role == "tool" and message.tool_call_id in pending:
            place = pending.pop(message.tool_call_id)
            recorded[place] = (recorded[place][0], message)
    recorded.extend(trace.calls_and_results())

    case: dict[str, Any] = {"name": _name(trace)}
    if len(turns) == 1:
        case["input"] = turns[0]
    else:
        case["turns"] = turns
    metadata: dict[str, Any] = {"promoted_from": _origin(trace)}
    if dropped:
        metadata["promoted_from"]["earlier_turns"] = (
            "not replayed: one of them ended without an answer"
        )
    if trace.metadata:
        metadata["recorded"] = trace.metadata
    case["metadata"] = metadata
    if trace.tags:
        case["tags"] = list(dict.fromkeys(trace.tags))
    offered = {tool.name for tool in trace.tools}
    refused = {
        id(call)
        for call, result in recorded
        if _refused(result) or (offered and call.name not in offered)
    }
    kept = [(call, result) for call, result in recorded if id(call) not in refused]
    case["expect"] = _expect(trace, recorded, kept, mask)
    script = [
        item for item in (_script_item(m, mask, refused) for m in responses) if item is not None
    ]
    if script:
        case["script"] = script
    # (a call without a result never ran: the run stopped first)
    fixtures = [_fixture(call, result) for call, result in kept if result is not None]
    return case, fixtures


def _refused(result: ToolResult | Message | None) -> bool:
    if result is None or result.status != "error":
        return False
    kind = getattr(result, "error_type", None)
    if kind is None:  # a tool message of the history: its text names the kind
        match = re.match(r"Error \(([^)]*)\)", result.content or "")
        kind = match.group(1) if match else None
    return refused(result.status, kind)


def _origin(trace: Trace) -> dict[str, Any]:
    origin: dict[str, Any] = {"trace": trace.id}
    if trace.model:
        origin["model"] = trace.model
    if trace.started_at:
        origin["started_at"] = trace.started_at
    origin["stop_reason"] = trace.stop_reason
    return origin


def _name(trace: Trace) -> str:
    words = re.findall(r"[a-z0-9]+", trace.input.lower())[:6]
    slug = "-".join(words)[:48].strip("-") or "trace"
    return f"{slug}-{re.sub(r'[^A-Za-z0-9]', '', trace.id)[:8] or 'x'}"


def _expect(
    trace: Trace,
    recorded: list[tuple[ToolCall, ToolResult | Message | None]],
    kept: list[tuple[ToolCall, ToolResult | Message | None]],
    mask: str,
) -> dict[str, Any]:
    calls = [call for call, _ in kept]
    expect: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for call in calls:
        counts[call.name] = counts.get(call.name, 0) + 1
    if counts:
        expect["tools_called"] = counts
    args: dict[str, Any] = {}
    for name in counts:
        specs = _argument_specs([c.arguments for c in calls if c.name == name], mask)
        if specs:
            args[name] = specs[0] if len(specs) == 1 else specs
    if args:
        expect["args"] = args
    if all(result is None or result.status != "error" for _, result in recorded):
        expect["no_tool_errors"] = True
    if trace.stop_reason != "final":
        expect["stop_reason"] = trace.stop_reason
    if trace.output:
        evidence = trace_evidence(trace)
        ungrounded = check_grounding(trace.output, evidence).ungrounded
        ids, numbers = extract_claims(trace.output)
        facts = [t for t in dict.fromkeys([*ids, *numbers]) if t not in ungrounded]
        facts = [t for t in facts if mask not in t]
        if facts:
            expect["final_contains"] = facts
        if not ungrounded:
            expect["grounded"] = True
    return expect


def _argument_specs(calls: list[dict[str, Any]], mask: str) -> list[dict[str, Any]]:
    """Argument specs a person would write for a tool's recorded calls.

    Ids and other short values are exact; free text and redacted values are left out (a
    model words a query differently each time; a mask matches nothing real); a number that
    differs between the calls becomes a range over what was recorded.
    """
    keys: dict[str, list[Any]] = {}
    for arguments in calls:
        for key, value in arguments.items():
            keys.setdefault(key, []).append(value)
    varying = {
        key
        for key, values in keys.items()
        if len(values) == len(calls)
        and len(values) > 1
        and all(_is_number(v) for v in values)
        and len(set(values)) > 1
    }
    specs: list[dict[str, Any]] = []
    for arguments in calls:
        spec: dict[str, Any] = {}
        for key, value in arguments.items():
            if key in varying:
                spec[key] = {"range": [min(keys[key]), max(keys[key])]}
            elif _key_value(value, mask):
                spec[key] = value
        if spec and spec not in specs:
            specs.append(spec)
    return specs


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _key_value(value: Any, mask: str) -> bool:
    if value is None or isinstance(value, bool) or _is_number(value):
        return True
    if isinstance(value, str):
        return (
            bool(value)
            and mask not in value
            and len(value) <= _FREE_TEXT_CHARS
            and len(value.split()) < _FREE_TEXT_WORDS
        )
    return False  # lists and objects: left to the fixture (and to a person)


def _script_item(message: Message, mask: str, refused: set[int]) -> Any:
    if message.tool_calls:
        calls = [_script_call(call, mask, id(call) in refused) for call in message.tool_calls]
        return calls[0] if len(calls) == 1 else calls
    if message.content is not None:
        return message.content
    return None


def _script_call(call: ToolCall, mask: str, refused: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"name": call.name}
    if call.arguments_error is not None and call.raw_arguments is not None:
        body["arguments"] = call.raw_arguments  # malformed as recorded
    else:
        body["arguments"] = call.arguments
    if refused or _holds(call.arguments, mask):
        body["unchecked"] = True  # sent as recorded: it need not fit the tool's schema
    return {"call": body}


def _holds(value: Any, mask: str) -> bool:
    if isinstance(value, str):
        return mask in value
    if isinstance(value, dict):
        return any(_holds(v, mask) for v in value.values())
    if isinstance(value, list):
        return any(_holds(v, mask) for v in value)
    return False


def _fixture(call: ToolCall, result: ToolResult | Message) -> dict[str, Any]:
    entry: dict[str, Any] = {"tool": call.name, "arguments": call.arguments}
    if result.status == "error":
        text = result.content or ""
        match = re.match(r"Error \(([^)]*)\): (.*)", text, re.S)
        entry["raises"] = {"type": "ToolError", "message": match.group(2) if match else text}
    else:
        value = getattr(result, "value", None)
        entry["returns"] = value if value is not None else (result.content or "")
    return entry


def _order(fixtures: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fixtures, each repeated call answered in the recorded order.

    The same call recorded with different results gets one fixture per result, each used
    once but the last; the same call with the same result, one fixture.
    """
    out: list[dict[str, Any]] = []
    seen: dict[str, list[dict[str, Any]]] = {}
    from toolproof._trace import stable_hash

    for entry in fixtures:
        key = stable_hash([entry["tool"], entry["arguments"]])
        same = seen.setdefault(key, [])
        answer = {k: v for k, v in entry.items() if k in ("returns", "raises")}
        if any({k: v for k, v in e.items() if k in ("returns", "raises")} == answer for e in same):
            continue
        if same:
            same[-1]["times"] = 1
        same.append(entry)
        out.append(entry)
    return out


# -- choosing what to promote -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Signals:
    """What makes a trace worth promoting; a trace is chosen when it shows any signal asked for.

    Attributes:
        failed: It did not end with an answer, or (recorded by an eval run) a check or the
            judge failed it.
        errors: A tool returned an error, or the run stopped on one.
        retries: The same call (tool and arguments) was made more than once.
        min_cost: It cost at least this many USD.
        min_latency_s: It took at least this many seconds.
        new_tools: It called a tool outside this set (the tools a suite already covers).
    """

    failed: bool = False
    errors: bool = False
    retries: bool = False
    min_cost: float | None = None
    min_latency_s: float | None = None
    new_tools: frozenset[str] | None = None

    @property
    def any(self) -> bool:
        """Whether any signal was asked for (none: every trace is chosen)."""
        return (
            self.failed
            or self.errors
            or self.retries
            or self.min_cost is not None
            or self.min_latency_s is not None
            or self.new_tools is not None
        )


def signals_of(trace: Trace, wanted: Signals) -> list[str]:
    """The signals ``wanted`` asks for that ``trace`` shows, as short labels."""
    found: list[str] = []
    if wanted.failed:
        verdict = trace.metadata.get("eval")
        status = verdict.get("status") if isinstance(verdict, dict) else None
        if not trace.ok or status in ("fail", "error"):
            found.append("failed")
    if wanted.errors and (
        trace.error is not None or any(r.status == "error" for r in trace.tool_results)
    ):
        found.append("errors")
    if wanted.retries:
        calls = [(c.name, _canonical(c.arguments)) for c in trace.tool_calls]
        if len(set(calls)) < len(calls):
            found.append("retries")
    if wanted.min_cost is not None and trace.cost is not None and trace.cost >= wanted.min_cost:
        found.append("cost")
    if wanted.min_latency_s is not None and trace.duration_ms >= wanted.min_latency_s * 1000:
        found.append("latency")
    if wanted.new_tools is not None and set(trace.tool_names) - wanted.new_tools:
        found.append("new tools")
    return found


def _canonical(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, default=str)


def _features(trace: Trace) -> frozenset[str]:
    """What two near-duplicate runs share: their calls, errors, ending and input words."""
    features = {f"call:{name}" for name in trace.tool_names}
    features.update(f"path:{a}>{b}" for a, b in itertools.pairwise(trace.tool_names))
    features.update(f"error:{r.name}:{r.error_type}" for r in trace.tool_results if not r.ok)
    features.add(f"stop:{trace.stop_reason}")
    features.update(f"word:{w}" for w in re.findall(r"[a-z]{3,}", trace.input.lower()))
    return frozenset(features)


def distinct(traces: Sequence[Trace], count: int, *, same_below: float = 0.2) -> list[Trace]:
    """At most ``count`` traces, as different from each other as they come.

    Greedy farthest-first over the Jaccard distance of the traces' features (calls and their
    order, errors, how the run ended, the words of the input): the first trace is kept, then
    each time the one farthest from every kept trace, until ``count`` are kept or what is
    left is a near-duplicate (closer than ``same_below``) of a kept one. ``count``
    distances are computed per trace, no more.
    """
    if count <= 0 or not traces:
        return []
    features = [_features(t) for t in traces]
    nearest = [1.0] * len(traces)  # each trace's distance to the closest kept one
    kept: list[int] = []
    pick = 0
    while len(kept) < count:
        kept.append(pick)
        nearest[pick] = -1.0
        best = -1
        for i, mine in enumerate(features):
            if nearest[i] < 0:
                continue
            nearest[i] = min(nearest[i], _distance(mine, features[pick]))
            if best < 0 or nearest[i] > nearest[best]:
                best = i
        if best < 0 or nearest[best] < same_below:
            break
        pick = best
    return [traces[i] for i in kept]


def _distance(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return 0.0 if not union else 1.0 - len(a & b) / union
