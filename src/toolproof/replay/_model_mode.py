"""Model mode: today's agent answers recorded questions; tools answer from the recordings."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from toolproof._messages import (
    Message,
    ModelResponse,
    ModelSettings,
    ToolDefinition,
    ToolResult,
    error_message,
)
from toolproof._tools import Tool
from toolproof._toolset import Toolset, mock_context
from toolproof._trace import Trace
from toolproof._verdict import ask_verdict
from toolproof.errors import (
    AgentRunError,
    MissingFixture,
    MockBypassed,
    ReplayError,
    ToolError,
)
from toolproof.models._base import Model
from toolproof.replay._grading import (
    REJECTED,
    Finding,
    SampleResult,
    grade_answer,
    grade_calls,
    sample_result,
)
from toolproof.replay._rules import ReplayRules

if TYPE_CHECKING:
    from toolproof._agent import Runnable
    from toolproof._mocks import ToolMock


# -- model mode ------------------------------------------------------------------------------


class ReplayModel(Model):
    """A model that answers with a recorded run's model outputs, in order.

    Model mode with ``model="recorded"`` uses it: the whole agent loop runs again (today's
    tools, schemas and policies) while the model says what it said then.

    Args:
        trace: The recorded run.
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.name = trace.model or "recorded"
        self.position = 0

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        """The next recorded model output.

        Raises:
            ReplayError: The agent asked for more model outputs than were recorded.
        """
        steps = self.trace.steps
        if self.position >= len(steps):
            raise ReplayError(
                f"the recording has {len(steps)} model response{'s' if len(steps) != 1 else ''};"
                f" the agent asked for response {self.position + 1}"
            )
        step = steps[self.position]
        self.position += 1
        return ModelResponse(
            message=step.response,
            usage=step.usage,
            model_name=step.model_name,
            finish_reason=step.finish_reason,
            parse_errors=list(step.parse_errors),
        )


def mock_from_trace(
    trace: Trace,
    *,
    tools: Toolset | Sequence[Tool[..., Any]] | None = None,
    rules: ReplayRules | None = None,
) -> ToolMock:
    """A strict fixture mock answering each tool call with the response recorded in ``trace``.

    Fixtures are keyed by tool name and the arguments that matter: every recorded argument
    except the rules' ``ignore`` list (and, when today's ``tools`` are given, arguments the
    tool no longer has). A call repeated with the same arguments gets the recorded responses
    in order, then the last one again. Recorded errors are raised as ``ToolError`` with the
    recorded message; calls that the schema rejected when recorded get no fixture.

    Args:
        trace: The recorded run.
        tools: Today's tools, to drop arguments they no longer have.
        rules: Grading rules (``ignore`` lists and ``mask``).
    """
    from toolproof._mocks import ToolMock

    rules = rules or ReplayRules()
    known: dict[str, set[str]] | None = None
    if tools is not None:
        toolset = tools if isinstance(tools, Toolset) else Toolset(tools)
        known = {t.name: set(t.parameters.get("properties", {})) for t in toolset}
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], ToolResult]]] = {}
    key_args: dict[str, set[str]] = {}
    for call, result in trace.calls_and_results():
        if result is None or result.error_type in REJECTED or call.arguments_error is not None:
            continue
        ignored = set(rules.rule_for(call.name).ignore)
        params = known.get(call.name) if known is not None else None
        if known is not None and params is None:
            continue  # the tool no longer exists: no fixture can answer it
        keys = {k: v for k, v in call.arguments.items() if k not in ignored}
        if params is not None:
            keys = {k: v for k, v in keys.items() if k in params}
        key_args.setdefault(call.name, set()).update(keys)
        marker = json.dumps(keys, sort_keys=True, default=str)
        groups.setdefault((call.name, marker), []).append((keys, result))
    mock = ToolMock(
        key_args={name: sorted(args) for name, args in key_args.items()},
        mask=list(rules.mask),
        assert_all_used=False,
    )
    for (name, _), answers in groups.items():
        distinct = {json.dumps(_answer_key(r), sort_keys=True, default=str) for _, r in answers}
        if len(distinct) == 1:
            _add(mock, name, answers[0][0], answers[0][1], times=None)
            continue
        for index, (arguments, result) in enumerate(answers):
            _add(mock, name, arguments, result, times=None if index == len(answers) - 1 else 1)
    return mock


def _answer_key(result: ToolResult) -> Any:
    return [result.status, result.value if result.ok else result.content]


def _add(
    mock: ToolMock, name: str, arguments: dict[str, Any], result: ToolResult, *, times: int | None
) -> None:
    if result.ok:
        mock.add(name, arguments, returns=result.value, times=times)
    else:
        mock.add(name, arguments, raises=ToolError(error_message(result)), times=times)


REAL_TOOL_HOW = "--real-tool {0} (Python: replay(..., real_tools=['{0}']))"


class _RecordedOnly:
    """Mock provider: answers every tool from the recording, never from real code."""

    def __init__(self, mock: ToolMock) -> None:
        self.mock = mock

    def mock_for(self, tool: Tool[..., Any]) -> Callable[..., Any] | None:
        found = self.mock.mock_for(tool)
        if found is not None and any(f.tool == tool.name for f in self.mock.fixtures):
            return found
        mask = self.mock.mask

        def missing(**kwargs: Any) -> Any:
            from toolproof._matching._objects import format_call, mask_arguments

            shown = format_call(tool.name, mask_arguments(kwargs, mask))
            raise MissingFixture(
                f"No recorded response for the call {shown}: the recorded run never called "
                f"'{tool.name}', so replay cannot answer it without a live call.",
                tool_name=tool.name,
                arguments=mask_arguments(kwargs, mask),
            )

        return missing


async def model_sample(
    trace: Trace,
    agent: Runnable,
    model: Model | Literal["recorded"] | None,
    rules: ReplayRules,
    judge: Model | None,
    keep_trace: bool,
    real_tools: Sequence[str] = (),
    factory: str | None = None,
) -> SampleResult:
    from toolproof._run import RunOptions

    toolset = agent.toolset
    mock = mock_from_trace(trace, tools=toolset, rules=rules)
    new_model = ReplayModel(trace) if model == "recorded" else model
    error: BaseException | None = None
    cut = model == "recorded" and _ended_after_tool_call(trace)
    if cut and hasattr(agent, "max_steps"):
        # The recording stops after its last tool call (the conversation was ended from
        # outside): the replay runs the same steps and stops there too.
        stepped: Any = copy.copy(agent)
        stepped.max_steps = len(trace.steps)
        agent = stepped
    with (
        mock_context(
            toolset,
            where="replay (model mode)",
            how=REAL_TOOL_HOW,
            real=real_tools,
            mocks=[_RecordedOnly(mock)],
            factory=factory,
        ) as replay_tools,
        agent.override(model=new_model, tools=replay_tools),
    ):
        try:
            options = RunOptions(trace.history, {"replay_of": trace.id}, ["replay"])
            result = await agent.run_with(trace.input, options)
            new = result.trace
        except MockBypassed:
            raise
        except AgentRunError as exc:
            error = exc
            if exc.trace is None:  # pragma: no cover - the agent always attaches it
                raise
            new = exc.trace
    if cut and new.stop_reason == "max_steps":
        new.stop_reason, new.stop_detail = trace.stop_reason, trace.stop_detail
    findings = await _findings(trace, new, rules, judge, judged=error is None)
    notes = []
    if trace.system_prompt_hash != new.system_prompt_hash:
        notes.append("system prompt changed since recording")
    sample = sample_result(trace, findings, notes)
    sample.new_model, sample.new_output = new.model, new.output
    sample.new_trace = new if keep_trace else None
    return sample


async def _findings(
    trace: Trace, new: Trace, rules: ReplayRules, judge: Model | None, *, judged: bool
) -> list[Finding]:
    """What grading the new run against the recorded one finds, the judge's word included."""
    findings = grade_answer(trace, new, rules)
    # A run that stopped early is not compared call by call (the calls it never made would
    # all be "missing"), but the calls it made still answer to the per-call rules: a
    # bounded argument out of its bounds is why there was no recorded response to give.
    finished = not any(f.check in ("no_fixture", "run_error") for f in findings)
    findings = (
        grade_calls(
            list(trace.calls_and_results()),
            list(new.calls_and_results()),
            rules,
            compare_calls=finished,
        )
        + findings
    )
    if (
        judge is not None
        and judged
        and new.output is not None
        and trace.output is not None
        and not any(f.grade in ("fail", "error") for f in findings)
        and any(f.check == "answer_changed" for f in findings)
    ):
        findings.extend(await _judge(judge, trace, new))
    return findings


def _ended_after_tool_call(trace: Trace) -> bool:
    """Whether a recorded run was ended from outside right after a tool call.

    A cancelled run, or an imported conversation that ended there (a hand-off to a human).
    """
    return (
        trace.stop_reason == "cancelled"
        and trace.output is None
        and bool(trace.steps)
        and bool(trace.steps[-1].response.tool_calls)
    )


_JUDGE_PROMPT = (
    "You compare two answers an assistant gave to the same user message. The criterion: a "
    "user would learn the same facts and be asked to do the same things from both; wording, "
    "order and politeness do not matter. Give your verdict by calling the record_verdict "
    "tool: PASS when the new answer meets the criterion, FAIL when it does not, INCONCLUSIVE "
    "when you cannot tell. If you cannot call tools, answer with one JSON object and nothing "
    'else: {"verdict": "PASS" | "FAIL" | "INCONCLUSIVE", "reason": "<one sentence>"}'
)


async def _judge(judge: Model, recorded: Trace, new: Trace) -> list[Finding]:
    """The judge's verdict on two answers; only a plain PASS lets the new one through."""
    question = (
        f"User message:\n{recorded.input}\n\nRecorded answer:\n{recorded.output}\n\n"
        f"New answer:\n{new.output}"
    )
    try:
        reading = await ask_verdict(judge, [Message.system(_JUDGE_PROMPT), Message.user(question)])
    except Exception as exc:
        return [Finding("warn", "judge", f"the judge failed ({type(exc).__name__}: {exc})")]
    if reading.verdict == "PASS":
        return []
    if reading.verdict == "INCONCLUSIVE":
        why = f"it could not tell: {reading.reason}" if reading.read else reading.reason
        return [Finding("warn", "judge", f"the judge gave no verdict ({why})", new=new.output)]
    return [
        Finding(
            "fail",
            "judge",
            f"the judge found the answers not equivalent: {reading.reason}".rstrip(": "),
            recorded=recorded.output,
            new=new.output,
        )
    ]
