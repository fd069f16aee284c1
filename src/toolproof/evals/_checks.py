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
returns ``True``/``False``, or ``(status, reason)`` with status ``"pass"``, ``"fail"`` or
``"skip"``.

Built-in checks need more than the value (the agent's tools, the other keys of the
mapping): they are registered with :meth:`check.compiler` and build a :class:`Check`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

from toolproof._filemodel import did_you_mean, unknown_key_message
from toolproof._messages import ToolCall, ToolResult, Usage
from toolproof._text import clip
from toolproof._trace import Trace
from toolproof.errors import ConfigError, UserError
from toolproof.evals._yaml import DocPath, Problems, format_path
from toolproof.evals._yaml import describe_type as _type

if TYPE_CHECKING:
    from toolproof._matching import Matcher
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
CALL_KEYS = {"name": "", "arguments": "", "mode": ""}
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


@dataclass(slots=True)
class CheckContext:
    """What a check compiler reads while a suite loads.

    Attributes:
        tools: The agent's tools; ``None`` when they are unknown (the factory failed to
            load), in which case every other problem is still reported and tool names are
            not checked.
        problems: Where problems go, each with its file and line.
        path: The path of the ``expect`` mapping in the document.
        key_paths: For a merged mapping, the path of the mapping each key was written in.
    """

    tools: Mapping[str, Tool[..., Any]] | None
    problems: Problems
    path: DocPath
    key_paths: Mapping[str, DocPath] = field(default_factory=dict)

    def at(self, *keys: Any) -> DocPath:
        """The document path of an entry (keys start with the ``expect`` key)."""
        base = self.key_paths.get(keys[0], self.path) if keys else self.path
        return (*base, *keys)

    def tool(self, name: Any, *keys: Any) -> bool:
        """Whether ``name`` is one of the agent's tools (records a problem if not)."""
        if isinstance(name, str) and (self.tools is None or name in self.tools):
            return True
        known = sorted(self.tools or ())
        hint = did_you_mean(name, known) if isinstance(name, str) else ""
        self.problems.add(
            self.at(*keys),
            f"unknown tool {name!r}{hint}; the agent's tools are: {', '.join(known) or '(none)'}",
        )
        return False

    def knows(self, name: Any) -> bool:
        """Whether ``name`` may be a tool (without recording anything)."""
        return isinstance(name, str) and (self.tools is None or name in self.tools)

    def params(self, tool: str) -> list[str]:
        """The argument names of ``tool``'s schema."""
        if self.tools is None:
            return []
        properties = self.tools[tool].parameters.get("properties", {})
        return list(properties) if isinstance(properties, dict) else []


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
    ctx = CheckContext(tools, problems, path, key_paths or {})
    for key in expect:
        if key not in vocabulary:
            unknown_key(ctx, key, vocabulary)
    checks: list[Check] = []
    for key, definition in list(vocabulary.items()):
        if key not in expect:
            continue
        check = definition.compile(ctx, expect[key], expect)
        if check is not None:
            checks.append(dataclasses.replace(check, turn=turn) if turn is not None else check)
    if "args_mode" in expect and "args" not in expect:
        problems.add(ctx.at("args_mode"), "args_mode applies to 'args', which is not set")
    elif "args_mode" in expect and expect["args_mode"] not in ARG_MODES:
        problems.add(
            ctx.at("args_mode"),
            f"expected one of {', '.join(ARG_MODES)}, got {expect['args_mode']!r}",
        )
    if (
        "order" in expect
        and "calls" not in expect
        and not isinstance(expect.get("tools_called"), list)
    ):
        problems.add(
            ctx.at("order"),
            "order needs the expected sequence: give 'tools_called' as a list, or 'calls'",
        )
    return checks


def unknown_key(ctx: CheckContext, key: Any, allowed: Mapping[str, Any] | Sequence[str]) -> None:
    ctx.problems.add(ctx.at(key), unknown_key_message(key, allowed))


def tool_names(ctx: CheckContext, value: Any, key: str) -> list[str] | None:
    """A list of tool names (a single name is accepted); problems recorded."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        ctx.problems.add(ctx.at(key), f"expected a list of tool names, got {_type(value)}")
        return None
    ok = [ctx.tool(name, key, index) for index, name in enumerate(value)]
    return value if all(ok) else None


def string_list(ctx: CheckContext, value: Any, key: str) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    ctx.problems.add(ctx.at(key), f"expected a string or a list of strings, got {_type(value)}")
    return None


def number_value(
    ctx: CheckContext, value: Any, key: str, *, integer: bool, minimum: float
) -> float | None:
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or value < minimum:
        ctx.problems.add(ctx.at(key), f"expected {accepts(key)}, got {value!r}")
        return None
    return float(value)


def value_matcher(ctx: CheckContext, spec: Any, path: DocPath) -> Matcher | None:
    from toolproof._matching import compile_value_matcher

    try:
        return compile_value_matcher(spec, where=format_path(path))
    except ConfigError as exc:
        for problem in exc.problems or [str(exc)]:
            ctx.problems.add((), problem, line=ctx.problems.locator.line(path))
        return None


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

#: Builds one check from its value: ``(context, value, the whole expect mapping)``.
Compiler = Callable[["CheckContext", Any, Mapping[str, Any]], "Check | None"]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class CheckDefinition:
    """A registered check.

    Attributes:
        name: The ``expect`` key.
        accepts: What its value must be, in words (shown in messages and the JSON Schema).
        compile: Builds the check from a value.
        schema: The JSON Schema of its value (``None``: any value).
        module: The module that registered it.
        builtin: Whether toolproof ships it.
    """

    name: str
    accepts: str
    compile: Compiler
    schema: dict[str, Any] | None
    module: str
    builtin: bool


_REGISTRY: dict[str, CheckDefinition] = {}


def registered() -> dict[str, CheckDefinition]:
    """Every registered check by name: the built-ins first, in their documented order.

    The built-ins register when ``toolproof.evals`` is imported (its suite loader imports
    them), so they always come before your own.
    """
    return _REGISTRY


def accepts(name: str) -> str:
    """What the value of check ``name`` must be, in words."""
    return registered()[name].accepts


def _register(definition: CheckDefinition) -> None:
    found = _REGISTRY.get(definition.name)
    if found is not None and (found.builtin or found.module != definition.module):
        raise UserError(
            f"a check named {definition.name!r} is already registered by {found.module}; "
            "choose another name"
        )
    _REGISTRY[definition.name] = definition


def unregister(name: str) -> None:
    """Forget a user check (tests register checks and clean up after themselves)."""
    found = _REGISTRY.get(name)
    if found is not None and not found.builtin:
        del _REGISTRY[name]


class _CheckDecorator:
    """:func:`check` and its :meth:`compiler` form."""

    def __call__(
        self,
        name: str,
        *,
        spec: Any = None,
        accepts: str | None = None,
        describe: Callable[[Any], str] | str | None = None,
    ) -> Callable[[F], F]:
        """Register the decorated function as the check ``name``.

        Args:
            name: The key written under ``expect:``.
            spec: The type its value must have (a pydantic model, ``int``,
                ``list[str]``...); ``None`` accepts any value.
            accepts: What the value must be, in words (for messages); defaults to the
                spec's description.
            describe: What the check expects, in words, for reports: text, or a function of
                the value.

        Returns:
            The decorator; the function is returned unchanged.
        """

        def decorate(function: F) -> F:
            adapter = _adapter(spec)
            schema = adapter.json_schema() if adapter is not None else None
            words = accepts or (schema or {}).get("description") or _spec_words(spec)
            _register(
                CheckDefinition(
                    name=name,
                    accepts=words,
                    compile=_user_compiler(name, function, adapter, describe),
                    schema=schema,
                    module=getattr(function, "__module__", "?"),
                    builtin=False,
                )
            )
            return function

        return decorate

    def compiler(
        self, name: str, *, accepts: str, schema: dict[str, Any] | None = None
    ) -> Callable[[F], F]:
        """Register a function that compiles the check ``name`` itself.

        The function takes ``(context, value, expect)`` — the :class:`CheckContext` (the
        agent's tools, where to record problems), the value, and the whole ``expect``
        mapping — and returns a :class:`Check`, or ``None`` after recording problems.
        """

        def decorate(function: F) -> F:
            module = getattr(function, "__module__", "?")
            _register(
                CheckDefinition(
                    name=name,
                    accepts=accepts,
                    compile=function,
                    schema=schema,
                    module=module,
                    builtin=module.startswith("toolproof."),
                )
            )
            return function

        return decorate


#: Registers a check under a name usable from ``expect:`` (see the module docstring).
check = _CheckDecorator()


def _adapter(spec: Any) -> Any:
    if spec is None:
        return None
    from pydantic import TypeAdapter

    return TypeAdapter(spec)


def _spec_words(spec: Any) -> str:
    if spec is None:
        return "any value"
    args = get_args(spec)
    if args:
        return " or ".join(_spec_words(arg) for arg in args)
    return getattr(spec, "__name__", repr(spec))


def _user_compiler(
    name: str,
    function: Callable[..., Any],
    adapter: Any,
    describe: Callable[[Any], str] | str | None,
) -> Compiler:
    def compile_check(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
        from pydantic import ValidationError

        from toolproof._filemodel import report

        spec_value = value
        if adapter is not None:
            try:
                spec_value = adapter.validate_python(value, strict=True)
            except ValidationError as exc:
                problems = [(e["loc"], e["msg"]) for e in exc.errors()]
                if all(e["type"] == "toolproof" for e in exc.errors()):
                    report(exc, ctx.problems, ctx.at(name))
                else:
                    words = registered()[name].accepts
                    where = ", ".join(
                        ".".join(map(str, loc)) + ": " + msg if loc else msg
                        for loc, msg in problems[:3]
                    )
                    ctx.problems.add(ctx.at(name), f"expected {words}, got {value!r} ({where})")
                return None
        if callable(describe):
            text = describe(spec_value)
        else:
            text = describe or f"{name}: {clip(repr(value), 60)}"

        def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
            result = function(record, spec_value)
            if inspect.isawaitable(result):  # an ``async def`` check, in its own thread
                result = asyncio.run(_awaited(result))
            return _outcome(name, result)

        return Check(name, text, evaluate, user=True)

    return compile_check


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _outcome(name: str, result: Any) -> tuple[CheckStatus, str]:
    if result is True:
        return "pass", f"{name} passed"
    if result is False:
        return "fail", f"{name} failed"
    if (
        isinstance(result, tuple)
        and len(result) == 2
        and result[0] in ("pass", "fail", "skip")
        and isinstance(result[1], str)
    ):
        return result[0], result[1]
    raise TypeError(
        f"check {name!r} returned {clip(repr(result), 80)}; a check returns True, False, or "
        "(status, reason) with status 'pass', 'fail' or 'skip'"
    )
