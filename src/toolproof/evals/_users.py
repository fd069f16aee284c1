"""The user side of a conversation: fixed turns, turns from a function, a simulated user.

A case's ``user:`` plays the customer. Its ``script`` mixes fixed turns, turns chosen by a
function of the conversation, turns written by a model following instructions the agent
never sees (``simulate``), and checks between turns. Without a script the whole
conversation is simulated; with ``recorded:`` the user's turns of a recorded conversation
are replayed, until the agent departs from the recording.

The user sees the conversation as a person would: its own messages and the agent's
answers, never the agent's system prompt, tool calls or tool results. It answers once per
agent answer (never two opening turns), and a last message sent with "done" still reaches
the agent, so a user who confirms and leaves in one breath does not stop the agent before
its write call.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator

from toolproof._filemodel import Expected, FileModel, validate
from toolproof._messages import Message, ModelSettings
from toolproof._yaml import DocPath, describe_type
from toolproof.errors import UserError
from toolproof.evals._checks import Check, compile_expect

if TYPE_CHECKING:
    from toolproof._agent import Session
    from toolproof._run import RunResult
    from toolproof._tools import Tool
    from toolproof._trace import Trace
    from toolproof.evals._checks import CheckResult
    from toolproof.evals._simulator_faults import SimulatorFault
    from toolproof.models._base import Model

__all__ = [
    "DONE_MARKER",
    "USER_KEYS",
    "Conversation",
    "UserEntry",
    "UserPlan",
    "UserProfile",
    "conversation_checks",
    "converse",
    "parse_user",
    "user_view",
]

#: What the simulated user writes to end the conversation (its other text is still sent).
DONE_MARKER = "###DONE###"

#: Where the conversation ended: the user said it was done (or its script ended), the
#: agent called one of ``end_tools``, the agent's turn stopped without an answer, the
#: turn limit, or (for a replayed user) the agent departed from the recording.
EndedBy = Literal["user", "agent_ended", "agent_stopped", "max_turns", "diverged"]

USER_KEYS: dict[str, str] = {
    "persona": "who the user is, in a few sentences",
    "instructions": "what the user wants from the agent (the agent never sees this)",
    "knows": "facts the user knows, as a mapping (booking_code: ABC123)",
    "reveal_when_asked": "keys of 'knows' the user must not say until the agent asks for them",
    "situation": "the situation the conversation happens in",
    "user_model": "the model that plays the user (a model string), apart from the agent's",
    "max_turns": "the most user turns (a positive integer, default 10)",
    "end_tools": "tools that end the conversation when the agent calls them (a transfer)",
    "script": (
        "the user's turns in order: text, {say: text, expect}, {reply: 'module:function', "
        "expect}, {simulate: N, expect}, or {expect: checks} between turns"
    ),
    "recorded": "a JSON file of a recorded conversation's traces whose user turns are replayed",
    "on_divergence": "when the agent departs from the recording: stop or simulate",
}

_STEP_KEYS = {
    "say": "a fixed user message",
    "reply": "'module:function' returning the next user message from the conversation",
    "simulate": "how many turns the user model writes (a positive integer)",
    "expect": "checks of the agent's answer to the turn before",
}


# -- the file format ----------------------------------------------------------------------------


class UserEntry(FileModel):
    """A case's ``user:``."""

    model_config = ConfigDict(defer_build=True)

    persona: Annotated[str | None, Expected("a string")] = Field(
        None, description=USER_KEYS["persona"]
    )
    instructions: Annotated[str | None, Expected("a string")] = Field(
        None, description=USER_KEYS["instructions"]
    )
    knows: Annotated[
        dict[str, str | int | float], Expected("a mapping of fact names to values", got="type")
    ] = Field(default_factory=dict, description=USER_KEYS["knows"])
    reveal_when_asked: Annotated[list[str], Expected("a list of keys of 'knows'", got="type")] = (
        Field(default_factory=list, description=USER_KEYS["reveal_when_asked"])
    )
    situation: Annotated[str | None, Expected("a string")] = Field(
        None, description=USER_KEYS["situation"]
    )
    user_model: Annotated[str | None, Field(min_length=1), Expected("a model string")] = Field(
        None, description=USER_KEYS["user_model"]
    )
    max_turns: Annotated[int, Field(ge=1), Expected("a positive integer")] = Field(
        10, description=USER_KEYS["max_turns"]
    )
    end_tools: Annotated[list[str], Expected("a list of tool names", got="type")] = Field(
        default_factory=list, description=USER_KEYS["end_tools"]
    )
    script: Annotated[list[Any] | None, Expected("a non-empty list of turns", got="type")] = Field(
        None, description=USER_KEYS["script"], min_length=1
    )
    recorded: Annotated[str | None, Field(min_length=1), Expected("a file path")] = Field(
        None, description=USER_KEYS["recorded"]
    )
    on_divergence: Annotated[Literal["stop", "simulate"], Expected("stop or simulate")] = Field(
        "stop", description=USER_KEYS["on_divergence"]
    )

    missing: ClassVar[dict[str, str]] = {}

    @field_validator("reveal_when_asked", "end_tools", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


# -- what a loaded user is ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UserProfile:
    """What the user is told to be: the simulator's instructions, and what it must keep to.

    Attributes:
        persona: Who the user is.
        instructions: What the user wants.
        knows: Facts the user knows, by name.
        reveal_when_asked: Names of ``knows`` the user must not say before the agent asks.
        situation: The situation of the conversation.
    """

    persona: str | None = None
    instructions: str | None = None
    knows: Mapping[str, str] = field(default_factory=dict)
    reveal_when_asked: tuple[str, ...] = ()
    situation: str | None = None

    def texts(self) -> list[str]:
        """Every text the user was given (what its statements may rest on)."""
        facts = [f"{name.replace('_', ' ')}: {value}" for name, value in self.knows.items()]
        return [t for t in (self.persona, self.instructions, self.situation, *facts) if t]

    def prompt(self) -> str:
        """The system prompt of the user model."""
        lines = [
            "You are role-playing a customer who writes to a support agent. You are the "
            "customer, never the agent: write only what the customer says next, one short "
            "message in plain words.",
        ]
        if self.persona:
            lines.append(f"\nWho you are: {self.persona}")
        if self.situation:
            lines.append(f"\nThe situation: {self.situation}")
        if self.instructions:
            lines.append(f"\nWhat you want: {self.instructions}")
        if self.knows:
            lines.append("\nWhat you know:")
            for name, value in self.knows.items():
                hidden = name in self.reveal_when_asked
                lines.append(
                    f"- {name.replace('_', ' ')}: {value}"
                    + (" (say it only after the agent asks for it)" if hidden else "")
                )
        lines.append(
            "\nRules: state only facts listed above; if the agent asks for something you were "
            "not given, say you do not know it. Never change a fact once given. Answer the "
            "agent's questions, and confirm only what matches what you want. Stay until the "
            "agent has done what you want or told you it cannot; then write "
            f"{DONE_MARKER} (after your last words, if any)."
        )
        return "\n".join(lines)


@dataclass(slots=True)
class _Step:
    """One entry of a user script; ``checks`` read the agent's answer to its last turn."""

    kind: Literal["say", "reply", "simulate", "recorded"]
    text: str = ""
    function: Callable[..., Any] | None = None
    turns: int = 1
    checks: list[Check] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RecordedTurn:
    """One turn of a recorded conversation: the user's message and what the agent did."""

    input: str
    calls: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, trace: Trace) -> RecordedTurn:
        """The turn a recorded trace holds."""
        return cls(trace.input, _calls(trace))


@dataclass(slots=True)
class UserPlan:
    """A loaded ``user:``: who the user is, its script, and how the conversation ends.

    Attributes:
        profile: The instructions the simulator follows (and is checked against).
        steps: The script; a user without one is simulated throughout.
        user_model: The model string that plays the user, when a step needs one.
        max_turns: The most user turns.
        end_tools: Tools whose call by the agent ends the conversation.
        recorded: The turns of a recorded conversation to replay.
        on_divergence: ``"stop"`` or ``"simulate"`` when the agent departs from them.
    """

    profile: UserProfile
    steps: list[_Step]
    user_model: str | None = None
    max_turns: int = 10
    end_tools: tuple[str, ...] = ()
    recorded: list[RecordedTurn] | None = None
    on_divergence: Literal["stop", "simulate"] = "stop"

    @property
    def needs_model(self) -> bool:
        """Whether some turns are written by the user model."""
        return any(s.kind == "simulate" for s in self.steps) or (
            self.recorded is not None and self.on_divergence == "simulate"
        )

    def describe(self) -> str:
        """The user in a line (``toolproof run --list``)."""
        kinds = {"say": "fixed", "reply": "function", "simulate": "simulated"}
        turns = [kinds.get(s.kind, s.kind) for s in self.steps]
        parts = [f"user: {len(turns)} step{'s' if len(turns) != 1 else ''}"]
        if turns:
            parts[0] += f" ({', '.join(dict.fromkeys(turns))})"
        if self.needs_model:
            parts.append(f"user_model={self.user_model or '(set --user-model)'}")
        parts.append(f"max_turns={self.max_turns}")
        if self.end_tools:
            parts.append("end_tools=" + ",".join(self.end_tools))
        return "  ".join(parts)

    @property
    def checks(self) -> list[Check]:
        """Every check between turns (their turns are set when the conversation runs)."""
        return [check for step in self.steps for check in step.checks]


def _calls(trace: Trace) -> tuple[tuple[str, str], ...]:
    encode = json.JSONEncoder(sort_keys=True, default=str).encode
    return tuple((c.name, encode(c.arguments)) for c in trace.tool_calls)


# -- loading ------------------------------------------------------------------------------------


def parse_user(
    builder: Any,
    value: Any,
    path: DocPath,
    tools: Mapping[str, Tool[..., Any]] | None,
) -> UserPlan | None:
    """The ``user:`` of a case, every problem recorded with its path (``None`` if invalid)."""
    if not isinstance(value, Mapping):
        builder.add(
            path, f"expected a mapping ({', '.join(USER_KEYS)}), got {describe_type(value)}"
        )
        return None
    before = len(builder.problems)
    entry, _bad = validate(UserEntry, value, builder.problems, path)
    if entry is None:
        return None
    knows = {str(k): str(v) for k, v in entry.knows.items()}
    for index, name in enumerate(entry.reveal_when_asked):
        if name not in knows:
            builder.add(
                (*path, "reveal_when_asked", index),
                f"{name!r} is not a key of 'knows' ({', '.join(knows) or 'it is empty'})",
            )
    if tools is not None:
        from toolproof.evals._script import unknown_tool

        for index, name in enumerate(entry.end_tools):
            if name not in tools:
                builder.add((*path, "end_tools", index), unknown_tool(name, tools))
    recorded = None
    if entry.recorded is not None:
        recorded = _load_recorded(builder, entry.recorded, (*path, "recorded"))
        if entry.script is not None:
            builder.add((*path, "script"), "give either 'script' or 'recorded', not both")
    steps: list[_Step] = []
    if entry.script is not None:
        steps = _steps(builder, entry.script, (*path, "script"), tools)
    elif recorded is None:
        steps = [_Step("simulate", turns=entry.max_turns)]
    elif recorded is not None:
        steps = [_Step("recorded", turns=len(recorded))]
    plan = UserPlan(
        UserProfile(
            entry.persona,
            entry.instructions,
            knows,
            tuple(entry.reveal_when_asked),
            entry.situation,
        ),
        steps,
        entry.user_model,
        entry.max_turns,
        tuple(entry.end_tools),
        recorded,
        entry.on_divergence,
    )
    if plan.needs_model and not (entry.instructions or entry.persona):
        builder.add(
            path,
            "a simulated user needs 'instructions' (what it wants) or a 'persona'; give a "
            "'script' of fixed turns for a user that is not simulated",
        )
    if len(builder.problems) > before:
        return None
    return plan


def _steps(
    builder: Any, items: list[Any], path: DocPath, tools: Mapping[str, Tool[..., Any]] | None
) -> list[_Step]:
    steps: list[_Step] = []
    for index, item in enumerate(items):
        where = (*path, index)
        if isinstance(item, str):
            steps.append(_Step("say", item))
            continue
        if not isinstance(item, Mapping):
            builder.add(where, f"a user turn is text or a mapping, got {describe_type(item)}")
            continue
        unknown = [k for k in item if k not in _STEP_KEYS]
        if unknown:
            from toolproof._filemodel import unknown_key_message

            builder.add(where, unknown_key_message(unknown[0], list(_STEP_KEYS)))
            continue
        kinds = [k for k in ("say", "reply", "simulate") if k in item]
        if len(kinds) > 1:
            builder.add(
                where, f"a turn is one of say, reply or simulate, not {' and '.join(kinds)}"
            )
            continue
        checks: list[Check] = []
        if "expect" in item and tools is not None:
            checks = compile_expect(
                item["expect"],
                tools=tools,
                problems=builder.problems,
                path=(*where, "expect"),
                turn=1,
            )
        if not kinds:  # {expect: ...}: checks of the turn before
            if not steps:
                builder.add(where, "checks between turns follow a turn: put a turn before them")
            else:
                steps[-1].checks.extend(checks)
            continue
        kind = kinds[0]
        if kind == "say":
            if not isinstance(item["say"], str) or not item["say"]:
                builder.add((*where, "say"), f"expected text, got {describe_type(item['say'])}")
                continue
            steps.append(_Step("say", item["say"], checks=checks))
        elif kind == "reply":
            function = _function(builder, item["reply"], (*where, "reply"))
            if function is not None:
                steps.append(_Step("reply", function=function, checks=checks))
        else:
            turns = item["simulate"]
            if turns is True:
                turns = 10**6  # until the user is done or max_turns
            if not isinstance(turns, int) or isinstance(turns, bool) or turns < 1:
                builder.add((*where, "simulate"), f"expected a positive integer, got {turns!r}")
                continue
            steps.append(_Step("simulate", turns=turns, checks=checks))
    return steps


def _function(builder: Any, spec: Any, where: DocPath) -> Callable[..., Any] | None:
    if not isinstance(spec, str) or ":" not in spec:
        builder.add(where, f"expected 'module:function', got {spec!r}")
        return None
    try:
        target = builder.resolver.import_object(spec, builder.file)
    except UserError as exc:
        builder.add(where, str(exc))
        return None
    if not callable(target):
        builder.add(where, f"{spec} is {type(target).__name__}, not a function")
        return None
    return target  # type: ignore[no-any-return]


def _load_recorded(builder: Any, name: str, where: DocPath) -> list[RecordedTurn] | None:
    from toolproof._trace import Trace

    file = Path(name) if Path(name).is_absolute() else builder.file.parent / name
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        if isinstance(data, Mapping):
            data = data.get("traces")
        if not isinstance(data, list) or not data:
            raise ValueError("expected a list of traces, or {traces: [...]}")
        turns = [RecordedTurn.of(Trace.from_dict(item)) for item in data]
    except (OSError, ValueError, TypeError, KeyError) as exc:
        builder.add(where, f"cannot read the recorded conversation {name}: {exc}")
        return None
    return turns


# -- running a conversation ---------------------------------------------------------------------


def user_view(traces: Sequence[Trace]) -> list[Message]:
    """The conversation as the user saw it: its messages and the agent's answers, no tools."""
    view: list[Message] = []
    for trace in traces:
        view.append(Message("user", trace.input))
        if trace.output:
            view.append(Message("assistant", trace.output))
    return view


@dataclass(slots=True)
class Conversation:
    """How a conversation with a user went (the traces stay in the session).

    Attributes:
        ended_by: Why it ended (see ``EndedBy``).
        sources: Per user turn, who wrote it: ``fixed``, ``function``, ``simulated`` or
            ``recorded``.
        checks: The checks between turns, each with the turn it reads.
        diverged: For a replayed user, where and how the agent departed from the recording.
        faults: The simulator's mistakes found in the conversation.
    """

    ended_by: EndedBy = "user"
    sources: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    diverged: str | None = None
    faults: list[SimulatorFault] = field(default_factory=list)


@dataclass(slots=True)
class _Reply:
    text: str | None
    source: str
    done: bool = False


async def simulated_reply(model: Model, profile: UserProfile, view: Sequence[Message]) -> _Reply:
    """The user model's next message, from the user's side of the conversation.

    The model sees the user's instructions as its system prompt and the conversation with
    the roles turned around (the agent's answers as the other party's messages). A reply
    holding ``DONE_MARKER`` ends the conversation after its other words are sent; an empty
    reply (or only tool calls) ends it too, never the run.
    """
    messages = [Message("system", profile.prompt())]
    if not view or view[0].role != "assistant":
        messages.append(Message("user", "(The agent is waiting for your first message.)"))
    for message in view:
        turned = Message("assistant" if message.role == "user" else "user", message.content or "")
        messages.append(turned)
    response = await model.request(messages, [], ModelSettings())
    text = response.message.content or ""
    done = DONE_MARKER in text
    text = text.replace(DONE_MARKER, "").strip()
    return _Reply(text or None, "simulated", done or not text)


async def converse(
    plan: UserPlan,
    session: Session,
    *,
    user_model: Model | None,
    metadata: Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
    settings: ModelSettings | None = None,
) -> Conversation:
    """Run a conversation between ``plan``'s user and the agent of ``session``.

    Each user turn is one run of the session; the user answers once per agent answer. The
    conversation ends when the user is done (its script ended, a function returned
    ``None``, the model wrote ``DONE_MARKER``), when the agent calls one of
    ``plan.end_tools`` or its turn stops without an answer, at ``plan.max_turns``, or when
    a replayed user finds the agent departed from the recording (``on_divergence: stop``).

    Raises:
        AgentRunError: A turn of the agent stopped on an error (the session keeps its trace).
        ModelError: The user model failed.
        UserError: A user step needs the user model and none was given.
    """
    out = Conversation()
    last_turn: list[int] = [0] * len(plan.steps)
    cursor = _Cursor(plan, list(plan.recorded or []))
    while True:
        if len(out.sources) >= plan.max_turns:
            out.ended_by = "max_turns"
            break
        reply = await cursor.next_reply(user_view(session.traces), user_model)
        if reply is None or reply.text is None:  # the script ended, or the user left silently
            break
        out.sources.append(reply.source)
        turn = len(out.sources)
        turn_metadata = {**(metadata or {}), "user": {"turn": turn, "source": reply.source}}
        result = await session.run(reply.text, metadata=turn_metadata, tags=tags, settings=settings)
        if cursor.position < len(plan.steps):
            last_turn[cursor.position] = turn
        if reply.source == "recorded" and not cursor.simulating:
            expected, got = cursor.recorded[turn - 1].calls, _calls(result.trace)
            if got != expected:
                out.diverged = (
                    f"diverged at turn {turn}: the recording called {_shown(expected)}, the "
                    f"agent called {_shown(got)}"
                )
                if plan.on_divergence == "stop":
                    out.ended_by = "diverged"
                    break
                cursor.simulating = True
        ended = _ended(reply, result, plan.end_tools)
        if ended is not None:
            out.ended_by = ended
            break
    if session.traces:
        session.traces[-1].metadata["conversation"] = {
            "ended_by": out.ended_by,
            "turns": len(out.sources),
            **({"diverged": out.diverged} if out.diverged else {}),
        }
    previous = 0
    for index, step in enumerate(plan.steps):
        turn = last_turn[index] or previous + 1  # a step that never ran: its turn did not run
        previous = last_turn[index] or previous
        out.checks.extend(dataclasses.replace(check, turn=turn) for check in step.checks)
    return out


@dataclass(slots=True)
class _Cursor:
    """Where the user is in its script, and which step writes its next message."""

    plan: UserPlan
    recorded: list[RecordedTurn]
    position: int = 0
    used: int = 0  # turns produced by the current step
    simulating: bool = False  # a replayed user that switched to the simulator

    async def next_reply(self, view: Sequence[Message], user_model: Model | None) -> _Reply | None:
        """The next user message, or None when the script ended."""
        steps = self.plan.steps
        while self.position < len(steps):
            reply = await self._reply(steps[self.position], view, user_model)
            if reply is not None:
                self.used += 1
                return reply
            self.position, self.used = self.position + 1, 0
        return None

    async def _reply(
        self, step: _Step, view: Sequence[Message], user_model: Model | None
    ) -> _Reply | None:
        """The step's next message, or None when the step has written all of its turns."""
        used = self.used
        if self.simulating or (step.kind == "simulate" and used < step.turns):
            if user_model is None:
                raise UserError(
                    "this user is simulated by a model: give it a user_model (or "
                    "--user-model), or a script of fixed turns"
                )
            return await simulated_reply(user_model, self.plan.profile, view)
        if step.kind == "say" and used < 1:
            return _Reply(step.text, "fixed")
        if step.kind == "reply" and used < 1:
            return await _function_reply(step, view)
        if step.kind == "recorded" and used < len(self.recorded):
            return _Reply(self.recorded[used].input, "recorded")
        return None


async def _function_reply(step: _Step, view: Sequence[Message]) -> _Reply:
    """The message the step's function returns (None: the user is done)."""
    assert step.function is not None
    text = step.function(list(view))
    if inspect.isawaitable(text):
        text = await text
    if text is not None and not isinstance(text, str):
        raise UserError(
            f"the user function {getattr(step.function, '__qualname__', step.function)}"
            f" returned {describe_type(text)}; it returns the next message or None"
        )
    return _Reply(text, "function", text is None)


def _ended(reply: _Reply, result: RunResult, end_tools: Sequence[str]) -> EndedBy | None:
    """Whether the conversation ends after this turn, and why."""
    if reply.done:
        return "user"
    if result.stop_reason != "final":
        return "agent_stopped"
    if any(call.name in end_tools for call in result.trace.tool_calls):
        return "agent_ended"
    return None


def _shown(calls: Sequence[tuple[str, str]]) -> str:
    if not calls:
        return "no tool"
    return ", ".join(f"{name}({arguments})" for name, arguments in calls)


def conversation_checks(
    plan: UserPlan, conversation: Conversation, traces: Sequence[Trace]
) -> list[CheckResult]:
    """What the conversation itself says: the simulator's mistakes, a departed recording.

    The simulator's mistakes are found with :func:`~toolproof.evals._simulator_faults.
    simulator_faults` and kept in ``conversation.faults``; a trial with any is a
    ``simulator_fault``, not a verdict on the agent.
    """
    from toolproof.evals._checks import CheckResult
    from toolproof.evals._simulator_faults import simulator_faults

    out: list[CheckResult] = []
    if conversation.diverged is not None:
        if conversation.ended_by == "diverged":
            out.append(CheckResult("recorded_user", "fail", conversation.diverged))
        else:
            reason = f"{conversation.diverged}; the simulated user went on from there"
            out.append(CheckResult("recorded_user", "pass", reason))
    simulated = [source == "simulated" for source in conversation.sources]
    if not any(simulated):
        return out  # every turn was written in the suite: no simulator to check
    conversation.faults = simulator_faults(
        plan.profile, user_view(traces), ended_by=conversation.ended_by, simulated=simulated
    )
    for fault in conversation.faults:
        out.append(CheckResult("simulated_user", "fail", f"{fault.kind}: {fault.reason}"))
    if not conversation.faults:
        turns = len(conversation.sources)
        out.append(
            CheckResult(
                "simulated_user",
                "pass",
                f"the user kept to its instructions ({turns} turn{'s' if turns != 1 else ''}, "
                f"ended by {conversation.ended_by.replace('_', ' ')})",
            )
        )
    return out
