"""What a loaded suite is made of: cases, their settings, agents, mocks and pass rules."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toolproof._messages import ModelSettings
from toolproof.errors import UserError
from toolproof.evals._checks import Check

if TYPE_CHECKING:
    from toolproof._agent import Runnable
    from toolproof._tools import Tool
    from toolproof._toolset import Toolset
    from toolproof.evals._attacks import AttackPlan
    from toolproof.evals._costs import CostGates
    from toolproof.evals._users import UserPlan
    from toolproof.models.fake import ScriptItem

__all__ = [
    "AgentSpec",
    "Case",
    "CaseConfig",
    "MockSpec",
    "PassRule",
    "Suite",
    "Turn",
    "external_agent",
]

# -- data ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PassRule:
    """How a case's trials become its verdict.

    Attributes:
        kind: ``"all"``, ``"any"``, ``"at_least"`` or ``"rate"``.
        value: ``N`` for ``at_least``, the minimum pass rate for ``rate``.
    """

    kind: Literal["all", "any", "at_least", "rate"] = "all"
    value: float = 0.0

    def describe(self) -> str:
        """The rule as written in a suite (``"at_least: 2"``)."""
        if self.kind in ("all", "any"):
            return self.kind
        if self.kind == "at_least":
            return f"at_least: {int(self.value)}"
        return f"rate: {self.value:g}"

    def needed(self, trials: int) -> int:
        """How many passing trials out of ``trials`` the rule needs."""
        if self.kind == "all":
            return trials
        if self.kind == "any":
            return 1
        if self.kind == "at_least":
            return int(self.value)
        return max(1, math.ceil(self.value * trials - 1e-9))

    def decide(self, trials: int, passes: int, failures: int) -> Literal["pass", "fail", None]:
        """The verdict, or ``None`` when trials without a result (errors) could change it.

        Args:
            trials: Trials the case was to run.
            passes: Trials that passed.
            failures: Trials that failed (agent failures, not infrastructure errors).
        """
        needed = self.needed(trials)
        unknown = trials - passes - failures
        if passes >= needed:
            return "pass"
        if passes + unknown < needed:
            return "fail"
        return None


@dataclass(frozen=True, slots=True)
class MockSpec:
    """One entry of ``mocks:``; :meth:`create` builds fresh providers for each trial.

    Attributes:
        source: As written (a file path or an import path).
        kind: ``"file"`` (ToolMock fixtures) or ``"factory"`` (a callable or class).
        target: The resolved file path or callable.
    """

    source: str
    kind: Literal["file", "factory"]
    target: Any

    def create(self) -> list[Any]:
        """New mock providers (fixture mocks, stateful mocks, or tool-name mappings)."""
        if self.kind == "file":
            from toolproof._mocks import ToolMock

            return [ToolMock.from_file(self.target)]
        return _providers(self.target(), self.source)


@dataclass(slots=True)
class AgentSpec:
    """A resolved ``agent:`` entry.

    Attributes:
        source: The import path as written.
        target: The factory ``(model, tools, **options) -> Agent``, or an ``Agent``.
        options: ``agent_options``.
        toolset: The agent's own toolset, learned by building it once.
        external: An agent toolproof did not build (``{command: ...}`` or ``{http: ...}``):
            its tools are its own, so checks may name any tool.
    """

    source: str
    target: Any
    options: dict[str, Any]
    toolset: Toolset
    external: bool = False

    @property
    def tools(self) -> dict[str, Tool[..., Any]]:
        """The agent's tools by name."""
        return dict(self.toolset.tools)

    def build(self, model: Any, toolset: Toolset) -> Runnable:
        """An agent for one trial, with ``model`` and ``toolset``.

        Raises:
            UserError: The factory failed or did not return an ``Agent``.
            MockBypassed: The agent does not use ``toolset`` (the factory ignored it).
        """
        from toolproof._agent import Runnable

        if isinstance(self.target, Runnable):
            agent = copy.copy(self.target)
            agent.model = model
            agent.toolset = toolset
            return agent
        agent = self.target(model, toolset, **self.options)
        if not isinstance(agent, Runnable):
            raise UserError(
                f"agent factory {self.source} returned {type(agent).__name__}, not an Agent"
            )
        from toolproof._toolset import check_uses_tools

        check_uses_tools(agent.toolset, toolset, self.source)
        return agent


@dataclass(frozen=True, slots=True)
class CaseConfig:
    """A case's settings after suite defaults and its own overrides.

    Each attribute is the validated value of the :class:`CaseSettings` field of its name
    (what it accepts, its default and its words are declared there, once); the agent and
    the mocks are resolved, and ``trials`` is split into its count and ``until``. The
    loader passes every validated field on, so a setting added to :class:`CaseSettings`
    needs only its attribute here (a test guards that they match).

    Attributes:
        agent: The agent factory.
        mocks: Mock providers to create for each trial.
        trials: How many times the case runs (at most, with ``until: decided``).
        until: ``"all"`` (every trial runs) or ``"decided"`` (trials stop as soon as the
            pass rule's verdict is known at the run's confidence level).
    """

    agent: AgentSpec
    agent_options: Mapping[Any, Any] = field(default_factory=dict)
    model: str | None = None
    judge_model: str | None = None
    tools: Literal["real", "mock"] = "mock"
    tool_modes: Mapping[str, Literal["real", "mock"]] = field(default_factory=dict)
    real_tools: tuple[str, ...] = ()
    mocks: tuple[MockSpec, ...] = ()
    trials: int = 1
    until: Literal["all", "decided"] = "all"
    pass_rule: PassRule = field(default_factory=PassRule)
    gate: Literal["block", "advise"] = "block"
    judge_when: Literal["objective_pass", "always"] = "objective_pass"
    judge_inconclusive: Literal["fail", "pass"] = "fail"
    judge_sees_agent: bool = True
    settings: ModelSettings | None = None
    retries: int = 2
    timeout: float | None = None

    @property
    def named_real_tools(self) -> tuple[str, ...]:
        """With ``tools: mock``, the tools that run their real code on purpose, for reports."""
        if self.tools != "mock":
            return ()
        named = [*self.real_tools, *(n for n, m in self.tool_modes.items() if m == "real")]
        return tuple(dict.fromkeys(named))


@dataclass(slots=True)
class Turn:
    """One user message of a case, with the checks of that turn alone.

    Attributes:
        input: The user's message.
        checks: Checks that read this turn's trace only.
    """

    input: str
    checks: list[Check] = field(default_factory=list)


@dataclass(slots=True)
class Case:
    """One eval case: inputs, checks, judge rubric, and its effective settings.

    Attributes:
        suite: The suite's name.
        name: The case's name.
        file: The suite file.
        line: The line where the case starts.
        turns: The user messages (one for single-turn cases).
        checks: Objective checks over the whole conversation.
        judge: Rubric lines for the judge model.
        script: Responses of the scripted model, when the case has a script.
        tags: Tags (suite tags included).
        metadata: Context for the run and the judge (suite metadata included).
        config: Effective settings.
        description: A description.
        skip: Why the case is skipped, when it is.
        attack: In a suite with ``attacks:``, what the case plants in its tool results
            (an attack case: the template, the goal and the payload).
        user: The user who converses with the agent, when the case has one (``turns``
            then stays empty).
    """

    suite: str
    name: str
    file: Path
    line: int
    turns: list[Turn]
    checks: list[Check]
    judge: list[str]
    script: list[ScriptItem] | None
    tags: list[str]
    metadata: dict[str, Any]
    config: CaseConfig
    description: str | None = None
    skip: str | None = None
    attack: AttackPlan | None = None
    user: UserPlan | None = None

    @property
    def id(self) -> str:
        """``suite::name``."""
        return f"{self.suite}::{self.name}"

    @property
    def location(self) -> str:
        """``file:line`` of the case."""
        return f"{self.file}:{self.line}"


@dataclass(slots=True)
class Suite:
    """A loaded suite.

    Attributes:
        name: The suite's name.
        file: Its file.
        cases: Its cases, in file order.
        description: Its description.
        statistics: Its ``statistics:`` mapping (confidence, interval, max_failure_rate,
            gate_mode), when it has one.
        cost_gates: How much latency and cost may grow over a baseline run (``cost_gates:``).
    """

    name: str
    file: Path
    cases: list[Case]
    description: str | None = None
    statistics: dict[str, Any] | None = None
    cost_gates: CostGates | None = None


def _providers(created: Any, source: str) -> list[Any]:
    """Normalize what a mock factory returned into a list of providers."""
    from toolproof._toolset import MockProvider

    if isinstance(created, (MockProvider, Mapping)):
        return [created]
    if isinstance(created, (list, tuple)) and all(
        isinstance(p, (MockProvider, Mapping)) for p in created
    ):
        return list(created)
    raise UserError(
        f"{source} returned {type(created).__name__}; a mock factory returns a mock provider "
        "(an object with mock_for(tool), such as ToolMock or a StatefulMock), a mapping of tool "
        "name to function, or a list of them"
    )


def external_agent(spec: Mapping[str, Any], near: Path) -> AgentSpec:
    """The spec of ``agent: {command: ...}`` or ``agent: {http: ...}`` (already checked)."""
    from toolproof.models.fake import ScriptedModel
    from toolproof.server._external import ExternalAgent

    command, http = spec.get("command"), spec.get("http")
    timeout = spec.get("timeout")
    env = spec.get("env") or {}
    cwd = spec.get("cwd")
    base = near.parent if near.suffix else near
    agent = ExternalAgent(
        ScriptedModel([], name="toolproof-probe"),
        command=command,
        http=http,
        timeout=float(timeout) if timeout is not None else None,
        env={str(k): str(v) for k, v in env.items()},
        cwd=(base / cwd) if cwd is not None else base,
        name=str(command if command is not None else http),
    )
    source = f"command {command!r}" if command is not None else f"http {http!r}"
    return AgentSpec(source, agent, {}, agent.toolset, external=True)
