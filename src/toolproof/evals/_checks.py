"""Objective checks: the ``expect:`` keys of a suite, compiled once, run on every trial.

Each key of ``expect`` becomes one :class:`Check`. Compiling checks a spec completely (tool
names against the agent's tools, argument names against their schemas, regexes, JSON
Schemas, matcher specs) and records every problem with its line, so a bad suite fails
before anything runs. Running a check reads a :class:`SessionRecord` (the traces of one
trial) and returns a :class:`CheckResult` whose reason says what was expected and what
happened.

Built-in checks and your own are registered the same way, with :func:`check`::

    from toolproof.evals import SessionRecord, check

    @check("max_words", accepts="a positive integer")
    def max_words(record: SessionRecord, limit: int) -> tuple[str, str]:
        words = len((record.output or "").split())
        if words > limit:
            return "fail", f"the answer has {words} words, more than {limit}"
        return "pass", f"{words} words <= {limit}"

A suite names the modules that register its checks (``checks: [mypkg.checks]``); then
``expect: {max_words: 50}`` works like any built-in key, and a misspelt name gets a
did-you-mean suggestion among every registered check.

The decorated function runs on every trial with the trial's :class:`SessionRecord` and the
value written in the suite (validated first against ``spec``, a type or pydantic model,
when given: a bad value fails the suite before anything runs, with its file and line). It
returns ``True``/``False``, or ``(status, reason)`` with status ``"pass"``, ``"fail"``,
``"skip"`` or ``"inconclusive"`` (and, as a third item, a mapping of figures it measured).

The spec is the one description of the value: the published JSON Schema, the words of
messages and the accepted forms all come from it. Its validators may read the agent's tools
and the whole ``expect`` mapping (:class:`CheckContext`), which is how the built-in checks
refuse a tool the agent does not have; a value it validates to ``None`` adds no check.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, get_args, get_origin

from toolproof._filemodel import Expected, did_you_mean, unknown_key_message
from toolproof._messages import ToolCall, ToolResult, Usage
from toolproof._text import clip
from toolproof._trace import Trace
from toolproof.errors import UserError
from toolproof.evals._yaml import DocPath, Problems, format_path
from toolproof.evals._yaml import describe_type as _type

if TYPE_CHECKING:
    from toolproof._tools import Tool

__all__ = [
    "EXPECT_KEYS",  # noqa: F822 (read from the registry by __getattr__)
    "ORDER_MODES",
    "Check",
    "CheckContext",
    "CheckDefinition",
    "CheckResult",
    "CheckStatus",
    "SessionRecord",
    "accepts",
    "check",
    "compile_expect",
    "registered",
    "unregister",
]

CheckStatus = Literal["pass", "fail", "skip", "inconclusive"]
CheckKind = Literal["objective", "judged"]

ORDER_MODES = ("strict", "in_order", "unordered", "subset", "superset")
ARG_MODES = ("exact", "subset", "superset", "ignore")
STOP_REASONS = ("final", "max_steps", "budget", "repeated_call", "cancelled", "error")


@dataclass(slots=True)
class CheckResult:
    """The outcome of one check on one trial.

    Attributes:
        check: The check's name (the ``expect`` key, or ``judge`` for rubric lines).
        status: ``"pass"``, ``"fail"``, ``"skip"`` (could not apply, says why) or
            ``"inconclusive"`` (a judge could not decide).
        reason: What was expected and what happened, in a sentence a person can act on.
        kind: ``"objective"`` or ``"judged"``.
        turn: For a per-turn check of a multi-turn case, the 1-based turn.
        criterion: For judged checks, the rubric line.
        metrics: Figures the check measured (retrieval metrics, claim counts), which the
            reports aggregate per suite.
    """

    check: str
    status: CheckStatus
    reason: str
    kind: CheckKind = "objective"
    turn: int | None = None
    criterion: str | None = None
    metrics: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        """Whether the check passed."""
        return self.status == "pass"

    @property
    def label(self) -> str:
        """``check`` with its turn, for reports (``tools_called@turn2``)."""
        return self.check if self.turn is None else f"{self.check}@turn{self.turn}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data for reports."""
        out: dict[str, Any] = {
            "check": self.check,
            "kind": self.kind,
            "status": self.status,
            "reason": self.reason,
        }
        for name in ("turn", "criterion", "metrics"):
            if (value := getattr(self, name)) is not None:
                out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        """Read what :meth:`to_dict` wrote."""
        return cls(
            check=data["check"],
            status=data["status"],
            reason=data["reason"],
            kind=data.get("kind", "objective"),
            turn=data.get("turn"),
            criterion=data.get("criterion"),
            metrics=data.get("metrics"),
        )


@dataclass(slots=True)
class SessionRecord:
    """What the checks of one trial read: the trace of each turn, and the trial's mocks.

    Attributes:
        traces: One trace per user turn, in order.
        mocks: The mock providers of the trial (stateful mocks expose ``state``).
    """

    traces: list[Trace]
    mocks: list[Any] = field(default_factory=list)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call of every turn, in order."""
        return [call for trace in self.traces for call in trace.tool_calls]

    def calls_and_results(self) -> list[tuple[ToolCall, ToolResult | None]]:
        """Each tool call with its result (``None`` when the run stopped before it ran)."""
        return [pair for trace in self.traces for pair in trace.calls_and_results()]

    @property
    def output(self) -> str | None:
        """The final answer of the last turn."""
        return self.traces[-1].output if self.traces else None

    @property
    def stop_reason(self) -> str:
        """How the last turn ended."""
        return self.traces[-1].stop_reason if self.traces else "error"

    @property
    def steps(self) -> int:
        """Model calls over all turns."""
        return sum(len(trace.steps) for trace in self.traces)

    @property
    def usage(self) -> Usage:
        """Tokens over all turns."""
        total = Usage()
        for trace in self.traces:
            total = total + trace.usage
        return total

    @property
    def cost(self) -> float | None:
        """Cost over all turns, or ``None`` when a turn's cost is unknown."""
        costs = [trace.cost for trace in self.traces]
        if not costs or any(c is None for c in costs):
            return None
        return sum(c for c in costs if c is not None)

    @property
    def duration_ms(self) -> float:
        """Wall time over all turns."""
        return sum(trace.duration_ms for trace in self.traces)

    def state(self) -> dict[str, Any] | None:
        """The merged ``state`` of the trial's stateful mocks (``None`` when there are none)."""
        found = False
        merged: dict[str, Any] = {}
        for mock in self.mocks:
            state = getattr(mock, "state", None)
            if isinstance(state, dict):
                found = True
                merged.update(state)
        return merged if found else None


Evaluator = Callable[
    [SessionRecord], tuple[CheckStatus, str] | tuple[CheckStatus, str, dict[str, Any]]
]
#: A judged check's grader: ``(judge model, record, metadata, cache, inconclusive)`` ->
#: ``(result, whether the judge model was called)``; the runner awaits it with the judge.
Grader = Callable[..., Awaitable[tuple["CheckResult", bool]]]


@dataclass(frozen=True, slots=True)
class Check:
    """One compiled objective check.

    Attributes:
        name: The ``expect`` key it comes from.
        describe: What it expects, in words (shown with ``--list``).
        evaluate: Computes the status and reason from a session record.
        turn: For per-turn checks, the 1-based turn it reads.
        grade: For a judged check, its grader (the runner calls it with the judge model
            after the objective checks; ``evaluate`` is not called).
    """

    name: str
    describe: str
    evaluate: Evaluator
    turn: int | None = None
    grade: Grader | None = None
    user: bool = False

    def __call__(self, record: SessionRecord) -> CheckResult:
        """Run the check on the whole session, or on its turn for per-turn checks."""
        scoped = self._scope(record)
        if isinstance(scoped, CheckResult):
            return scoped
        return self._result(self.evaluate(scoped))

    def _scope(self, record: SessionRecord) -> SessionRecord | CheckResult:
        """The record the check reads (its turn's), or its failure when that turn did not run."""
        if self.turn is None:
            return record
        if len(record.traces) < self.turn:
            return CheckResult(
                self.name,
                "fail",
                f"turn {self.turn} did not run (the session stopped after "
                f"{len(record.traces)} turns)",
                turn=self.turn,
            )
        return SessionRecord([record.traces[self.turn - 1]], record.mocks)

    def _result(self, outcome: tuple[Any, ...]) -> CheckResult:
        status, reason = outcome[0], outcome[1]
        metrics = outcome[2] if len(outcome) > 2 else None  # (status, reason, figures)
        return CheckResult(self.name, status, reason, turn=self.turn, metrics=metrics)


#: Seconds a check of yours may take when its case sets no ``timeout`` (with one, the check
#: has what is left of the trial's time).
CHECK_TIMEOUT = 60.0


def check_timeout(check: Check, bound: str) -> CheckResult:
    """The failure of a check that did not finish within ``bound`` (words)."""
    return CheckResult(
        check.name,
        "fail",
        f"the check {check.name!r} did not finish within {bound}; it was left running in "
        "its thread",
        turn=check.turn,
    )


async def run_check(check: Check, record: SessionRecord, bound: float | None) -> CheckResult:
    """Run one check; a check of yours runs in a thread of its own, within ``bound`` seconds.

    The event loop goes on while it runs, so the trial's timeout interrupts it too
    (``bound=None``: only that timeout). A check that does not finish cannot be stopped: it
    is left in its thread (a daemon thread, which never holds up the end of the process)
    and the check fails naming its bound. An ``async def`` check runs to completion on an
    event loop of its own in that thread.

    Raises:
        Exception: What the check raised (the trial fails naming it).
    """
    scoped = check._scope(record)
    if not check.user or isinstance(scoped, CheckResult):
        return check(record)
    import threading

    loop = asyncio.get_running_loop()
    done: asyncio.Future[tuple[Any, ...]] = loop.create_future()

    def settle(outcome: tuple[Any, ...] | None, error: BaseException | None) -> None:
        if done.done():
            return  # the bound passed first
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(outcome or ())

    def work() -> None:
        try:
            outcome: tuple[Any, ...] | None = check.evaluate(scoped)
            error: BaseException | None = None
        except BaseException as exc:  # delivered to the trial, which fails naming it
            outcome, error = None, exc
        with contextlib.suppress(RuntimeError):  # the run ended (its loop closed) meanwhile
            loop.call_soon_threadsafe(settle, outcome, error)

    threading.Thread(target=work, name=f"toolproof check {check.name}", daemon=True).start()
    try:
        outcome = await asyncio.wait_for(done, bound)
    except asyncio.TimeoutError:
        assert bound is not None
        return check_timeout(check, f"{bound:g} s (a check's bound when its case sets no timeout)")
    return check._result(outcome)


# -- compiling ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckContext:
    """What the validators of a check's ``spec`` can read while a suite loads.

    A validator taking pydantic's ``ValidationInfo`` finds it in ``info.context`` (read it
    with :meth:`of`): built-in checks use it to refuse tool and argument names the agent does
    not have, and to read the keys that modify them (``args_mode``, ``order``).

    Attributes:
        tools: The agent's tools by name; ``None`` when they are unknown (the agent did not
            load), in which case names are not checked and every other problem is reported.
        expect: The whole ``expect`` mapping the value was written in.
    """

    tools: Mapping[str, Tool[..., Any]] | None = None
    expect: Mapping[str, Any] = field(default_factory=dict)

    @staticmethod
    def of(info: Any) -> CheckContext:
        """The context of a validation (``info``: pydantic's ``ValidationInfo``)."""
        context = getattr(info, "context", None)
        return context if isinstance(context, CheckContext) else CheckContext()

    def knows(self, name: Any) -> bool:
        """Whether ``name`` may be one of the agent's tools."""
        return isinstance(name, str) and (self.tools is None or name in self.tools)

    def unknown_tool(self, name: Any) -> str:
        """The message for a tool the agent does not have."""
        known = sorted(self.tools or ())
        hint = did_you_mean(name, known) if isinstance(name, str) else ""
        return f"unknown tool {name!r}{hint}; the agent's tools are: {', '.join(known) or '(none)'}"

    def params(self, tool: str) -> list[str]:
        """The argument names of ``tool``'s schema (none when the tools are unknown)."""
        if self.tools is None or tool not in self.tools:
            return []
        properties = self.tools[tool].parameters.get("properties", {})
        return list(properties) if isinstance(properties, dict) else []


#: Stands for the document path in the messages of a matcher compiled by a spec validator
#: (``compile_value_matcher(spec, where=HERE)``); the loader writes the path in its place.
HERE = "\x00"


def compile_expect(
    expect: Any,
    *,
    tools: Mapping[str, Tool[..., Any]] | None,
    problems: Problems,
    path: DocPath,
    turn: int | None = None,
    key_paths: Mapping[str, DocPath] | None = None,
) -> list[Check]:
    """Compile an ``expect:`` mapping into checks, recording every problem.

    Args:
        expect: The mapping as written in the suite.
        tools: The agent's tools by name (expectations may only name these).
        problems: Where problems go (each with file and line).
        path: The mapping's path in the document.
        key_paths: For a merged mapping (suite defaults under a case's own keys), the
            path of the mapping each key was written in, so problems point at that line.
        turn: For a turn's own ``expect``, the 1-based turn.

    Returns:
        The checks, in the order they were registered; bad entries are left out.
    """
    if expect is None:
        return []
    if not isinstance(expect, Mapping):
        problems.add(path, f"expected a mapping of checks, got {_type(expect)}")
        return []
    vocabulary = registered()
    paths = key_paths or {}

    def at(key: Any, *keys: Any) -> DocPath:
        return (*paths.get(key, path), key, *keys)

    for key in expect:
        if key not in vocabulary:
            problems.add(at(key), unknown_key_message(key, vocabulary))
    context = CheckContext(tools, expect)
    checks: list[Check] = []
    for key, definition in list(vocabulary.items()):
        if key not in expect:
            continue
        check = definition.compile(expect[key], context, problems, at)
        if check is not None:
            checks.append(dataclasses.replace(check, turn=turn) if turn is not None else check)
    return checks


def _report(
    definition: CheckDefinition,
    exc: Any,
    value: Any,
    problems: Problems,
    at: Callable[..., DocPath],
) -> None:
    """Record the problems of a check's value that its spec refused."""
    from toolproof._filemodel import PROBLEM, problems_of

    name = definition.name
    worded = problems_of(exc)
    if any(error["type"] != PROBLEM for error in exc.errors()):
        if definition.expected is not None:  # the spec says in words what it accepts
            problems.add(at(name), definition.expected.message(value))
            return
        where = ", ".join(
            ".".join(map(str, loc)) + ": " + message if loc else message
            for loc, message in worded[:3]
        )
        problems.add(at(name), f"expected {definition.accepts}, got {value!r} ({where})")
        return
    for loc, message in worded:
        place = at(name, *loc)
        if message.startswith(HERE):  # a matcher's message, which continues the path
            line = problems.locator.line(place)
            problems.add((), format_path(place) + message[len(HERE) :], line=line)
        else:
            problems.add(place, message)


# -- call listings in reasons -------------------------------------------------------------------


def calls_listing(calls: Sequence[ToolCall], limit: int = 6) -> str:
    if not calls:
        return "no tool calls"
    shown = [call.signature() for call in calls[:limit]]
    more = f" and {len(calls) - limit} more" if len(calls) > limit else ""
    return ", ".join(shown) + more


def times_text(n: int) -> str:
    return "1 time" if n == 1 else f"{n} times"


def answer_text(text: str | None, limit: int = 200) -> str:
    if text is None:
        return "(no final answer)"
    return repr(clip(text, limit))


def __getattr__(name: str) -> Any:
    # ``EXPECT_KEYS``: the built-in checks (name -> what the value must be), read from the
    # registry when first asked for.
    if name == "EXPECT_KEYS":
        return {key: d.accepts for key, d in registered().items() if d.builtin}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- the vocabulary: checks registered by name --------------------------------------------------

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class CheckDefinition:
    """A registered check: what :func:`check` was given.

    Attributes:
        name: The ``expect`` key.
        accepts: What its value must be, in words (shown in messages and the JSON Schema).
        function: Computes the outcome from a session record and the validated value.
        spec: The type its value must have (``None``: any value).
        expected: The spec's :class:`~toolproof._filemodel.Expected` words, if it has them.
        describe: What the check expects, in words: text, or a function of the value.
        grade: For a judged check, builds its grader from the validated value.
        module: The module that registered it.
        builtin: Whether toolproof ships it.
    """

    name: str
    accepts: str
    function: Callable[..., Any]
    spec: Any
    expected: Expected | None
    describe: Callable[[Any], str] | str | None
    grade: Callable[[Any], Grader] | None
    module: str
    builtin: bool

    @property
    def adapter(self) -> Any:
        """Validates the value: a pydantic ``TypeAdapter`` of the spec (``None``: any value).

        Built when first needed: a suite uses a few of the registered checks.
        """
        if self.spec is None:
            return None
        if self.name not in _ADAPTERS:
            from pydantic import TypeAdapter

            _ADAPTERS[self.name] = TypeAdapter(self.spec)
        return _ADAPTERS[self.name]

    @property
    def schema(self) -> dict[str, Any] | None:
        """The JSON Schema of its value (``None``: any value)."""
        if self.adapter is None:
            return None
        schema: dict[str, Any] = self.adapter.json_schema()
        return schema

    def compile(
        self,
        value: Any,
        context: CheckContext,
        problems: Problems,
        at: Callable[..., DocPath],
    ) -> Check | None:
        """The check of ``value``, or ``None`` (problems recorded, or the check is off)."""
        spec_value = value
        if self.spec is not None:
            from pydantic import ValidationError

            try:
                spec_value = self.adapter.validate_python(value, strict=True, context=context)
            except ValidationError as exc:
                _report(self, exc, value, problems, at)
                return None
            if spec_value is None:  # `grounded: false`, or a key that modifies another
                return None
        if callable(self.describe):
            text = self.describe(spec_value)
        else:
            text = self.describe or f"{self.name}: {clip(repr(value), 60)}"
        name, function = self.name, self.function

        def evaluate(record: SessionRecord) -> tuple[Any, ...]:
            result = function(record, spec_value)
            if inspect.isawaitable(result):  # an ``async def`` check, in its own thread
                result = asyncio.run(_awaited(result))
            return _outcome(name, result)

        grade = self.grade(spec_value) if self.grade is not None else None
        return Check(name, text, evaluate, grade=grade, user=not self.builtin)


_REGISTRY: dict[str, CheckDefinition] = {}
_ADAPTERS: dict[str, Any] = {}  # by check name, built on first use


def registered() -> dict[str, CheckDefinition]:
    """Every registered check by name: the built-ins first, in their documented order.

    The built-ins register when ``toolproof.evals`` is imported (its suite loader imports
    them), so they always come before your own.
    """
    return _REGISTRY


def accepts(name: str) -> str:
    """What the value of check ``name`` must be, in words."""
    return registered()[name].accepts


def unregister(name: str) -> None:
    """Forget a user check (tests register checks and clean up after themselves)."""
    found = _REGISTRY.get(name)
    if found is not None and not found.builtin:
        del _REGISTRY[name]
        _ADAPTERS.pop(name, None)


def check(
    name: str,
    *,
    spec: Any = None,
    accepts: str | None = None,
    describe: Callable[[Any], str] | str | None = None,
    grade: Callable[[Any], Grader] | None = None,
) -> Callable[[F], F]:
    """Register the decorated function as the check ``name`` (see the module docstring).

    Args:
        name: The key written under ``expect:``.
        spec: The type its value must have (a pydantic model, ``int``, ``list[str]``,
            an ``Annotated`` type with validators...); ``None`` accepts any value. Its
            validators may read the agent's tools and the whole ``expect`` mapping
            (:class:`CheckContext`); a value it validates to ``None`` adds no check.
        accepts: What the value must be, in words (for messages); defaults to the spec's
            :class:`~toolproof._filemodel.Expected` words or description.
        describe: What the check expects, in words, for reports: text, or a function of the
            validated value.
        grade: For toolproof's judged checks: builds, from the validated value, the grader
            the runner awaits with the judge model (the function then runs only where no
            judge does).

    Returns:
        The decorator; the function is returned unchanged.

    Raises:
        UserError: The name is taken by a built-in check or by another module.
    """

    def decorate(function: F) -> F:
        expected = _expected(spec)
        words = accepts or (expected.text if expected is not None else None)
        built = None
        if not words and spec is not None:  # the words of a spec model's description
            from pydantic import TypeAdapter

            built = TypeAdapter(spec)
            words = built.json_schema().get("description")
        module = getattr(function, "__module__", "?")
        definition = CheckDefinition(
            name=name,
            accepts=words or _spec_words(spec),
            function=function,
            spec=spec,
            expected=expected,
            describe=describe,
            grade=grade,
            module=module,
            builtin=module.startswith("toolproof."),
        )
        found = _REGISTRY.get(name)
        if found is not None and (found.builtin or found.module != module):
            raise UserError(
                f"a check named {name!r} is already registered by {found.module}; "
                "choose another name"
            )
        _REGISTRY[name] = definition
        _ADAPTERS.pop(name, None)
        if built is not None:
            _ADAPTERS[name] = built
        return function

    return decorate


def _expected(spec: Any) -> Expected | None:
    """The :class:`Expected` words of an ``Annotated`` spec."""
    if get_origin(spec) is not Annotated:
        return None
    return next((m for m in get_args(spec)[1:] if isinstance(m, Expected)), None)


def _spec_words(spec: Any) -> str:
    if spec is None:
        return "any value"
    if get_origin(spec) is Annotated:
        return _spec_words(get_args(spec)[0])
    args = get_args(spec)
    if args:
        return " or ".join(_spec_words(arg) for arg in args)
    return getattr(spec, "__name__", repr(spec))


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


_STATUSES = ("pass", "fail", "skip", "inconclusive")


def _outcome(name: str, result: Any) -> tuple[Any, ...]:
    if result is True:
        return "pass", f"{name} passed"
    if result is False:
        return "fail", f"{name} failed"
    if (
        isinstance(result, tuple)
        and len(result) in (2, 3)
        and result[0] in _STATUSES
        and isinstance(result[1], str)
        and (len(result) == 2 or result[2] is None or isinstance(result[2], dict))
    ):
        return result
    raise TypeError(
        f"check {name!r} returned {clip(repr(result), 80)}; a check returns True, False, or "
        "(status, reason) with status 'pass', 'fail', 'skip' or 'inconclusive' (and a "
        "mapping of figures as a third item, if you measure any)"
    )
