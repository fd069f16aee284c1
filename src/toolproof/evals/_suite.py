"""Suites: the YAML schema, loading, and validation of the whole file before anything runs.

A suite file is checked completely — unknown keys, wrong types, tools the agent does not
have, arguments its tools do not take, bad matcher specs, factories that do not import —
and every problem is reported with its file and line in one :class:`ConfigError`.

Example:
    ```yaml
    suite: hr-assistant
    agent: examples.hr_assistant.agent:build_agent   # factory(model, tools) -> Agent
    model: deepseek:deepseek-chat
    tools: mock
    trials: 3
    cases:
      - name: multiply
        input: "12乘以8是多少"
        expect:
          tools_called: [multiply_numbers]
          final_contains: ["96"]
    ```
"""

from __future__ import annotations

import copy
import difflib
import fnmatch
import importlib
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toolproof._messages import ModelSettings, ToolCall
from toolproof.errors import ConfigError, UserError
from toolproof.evals._checks import Check, compile_expect
from toolproof.evals._yaml import DocPath, Locator, Problems, load_yaml
from toolproof.evals._yaml import describe_type as _type

if TYPE_CHECKING:
    from toolproof._agent import Agent
    from toolproof._tools import Tool
    from toolproof._toolset import Toolset
    from toolproof.models.fake import ScriptItem

__all__ = [
    "CASE_KEYS",
    "SUITE_KEYS",
    "AgentSpec",
    "Case",
    "CaseConfig",
    "MockSpec",
    "PassRule",
    "Suite",
    "Turn",
    "discover_suite_files",
    "is_suite_file",
    "load_suite",
    "load_suites",
    "select_cases",
]

ToolModeName = Literal["real", "mock"]
Gate = Literal["block", "advise"]
JudgeWhen = Literal["objective_pass", "always"]

#: Keys that set a default for every case of a suite; each case may override any of them.
DEFAULT_KEYS: dict[str, str] = {
    "agent": "an import path 'module:factory' of a function (model, tools) -> Agent, an Agent, "
    "or an agent you did not build: {command: 'python my_agent.py'} or {http: URL}",
    "agent_options": "a mapping of keyword arguments passed to the agent factory",
    "model": "a model string such as 'deepseek:deepseek-chat', or 'scripted'",
    "judge_model": "a model string for the judged checks",
    "tools": "real or mock",
    "tool_modes": "a mapping of tool name to real or mock",
    "real_tools": "a list of tool names that run their real code although tools are mocked",
    "mocks": (
        "a fixture file (.yaml, .yml, .json), an import path 'module:factory' returning mock "
        "providers, or a list of them"
    ),
    "trials": "a positive integer",
    "pass_rule": "all, any, {at_least: N} or {rate: R} with 0 < R <= 1",
    "gate": "block or advise",
    "judge_when": "objective_pass or always",
    "judge_inconclusive": "fail or pass",
    "settings": (
        "model settings: temperature, max_tokens, seed, stop, tool_choice, parallel_tool_calls, "
        "extra"
    ),
    "retries": "a non-negative integer (retries of a trial after infrastructure errors)",
    "timeout": "seconds per trial (a positive number)",
}

SUITE_KEYS: dict[str, str] = {
    "suite": "the suite's name",
    "description": "a string",
    "cases": "a list of cases",
    "expect": "checks applied to every case (a case's own keys win)",
    "judge": "rubric lines applied to every case without its own 'judge'",
    "tags": "a list of tags given to every case",
    "metadata": "a mapping merged into every case's metadata",
    **DEFAULT_KEYS,
}

CASE_KEYS: dict[str, str] = {
    "name": "the case's name, unique in the suite",
    "description": "a string",
    "input": "the user's message",
    "turns": "user messages of a multi-turn conversation (strings or {input, expect})",
    "expect": "objective checks",
    "judge": "rubric lines for the judge model (a string or a list of strings)",
    "script": "responses of the scripted model: text, {call: {name, arguments}}, a list of calls",
    "tags": "a list of strings",
    "metadata": "a mapping (context for the run and the judge)",
    "skip": "true or a reason: the case is reported as skipped",
    **DEFAULT_KEYS,
}

SETTINGS_KEYS = (
    "temperature",
    "max_tokens",
    "seed",
    "stop",
    "tool_choice",
    "parallel_tool_calls",
    "extra",
)

_DEFAULTS: dict[str, Any] = {
    "agent": None,
    "agent_options": {},
    "model": None,
    "judge_model": None,
    "tools": "mock",
    "tool_modes": {},
    "real_tools": [],
    "mocks": [],
    "trials": 1,
    "pass_rule": "all",
    "gate": "block",
    "judge_when": "objective_pass",
    "judge_inconclusive": "fail",
    "settings": None,
    "retries": 2,
    "timeout": None,
}

_SUITE_NAME_LINE = re.compile(r"^suite\s*:", re.MULTILINE)
_CASES_LINE = re.compile(r"^cases\s*:", re.MULTILINE)
SUITE_PATTERNS = ("*.eval.yaml", "*.eval.yml")


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
            from toolproof.testing import ToolMock

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

    def build(self, model: Any, toolset: Toolset) -> Agent:
        """An agent for one trial, with ``model`` and ``toolset``.

        Raises:
            UserError: The factory failed or did not return an ``Agent``.
            MockBypassed: The agent does not use ``toolset`` (the factory ignored it).
        """
        from toolproof._agent import Agent

        if isinstance(self.target, Agent):
            agent = copy.copy(self.target)
            agent.model = model
            agent.toolset = toolset
            return agent
        agent = self.target(model, toolset, **self.options)
        if not isinstance(agent, Agent):
            raise UserError(
                f"agent factory {self.source} returned {type(agent).__name__}, not an Agent"
            )
        from toolproof._toolset import check_uses_tools

        check_uses_tools(agent.toolset, toolset, self.source)
        return agent


@dataclass(frozen=True, slots=True)
class CaseConfig:
    """A case's settings after suite defaults and its own overrides.

    Attributes:
        agent: The agent factory.
        model: The model string (``None`` when neither the suite nor the case sets one).
        judge_model: The judge's model string.
        tools: ``"mock"`` or ``"real"``.
        tool_modes: Per-tool modes over ``tools``.
        real_tools: With ``tools: mock``, the tools that run their real code on purpose (a
            ``real`` entry of ``tool_modes`` counts too); every other tool with side
            effects never does.
        mocks: Mock providers to create for each trial.
        trials: How many times the case runs.
        pass_rule: How trials become the verdict.
        gate: ``"block"`` (a failure fails the run) or ``"advise"`` (reported only).
        judge_when: ``"objective_pass"`` or ``"always"``.
        judge_inconclusive: What an inconclusive judge counts as: ``"fail"`` or ``"pass"``.
        settings: Model settings for every request.
        retries: Retries of a trial after infrastructure errors.
        timeout: Seconds a trial may take.
    """

    agent: AgentSpec
    model: str | None = None
    judge_model: str | None = None
    tools: ToolModeName = "mock"
    tool_modes: Mapping[str, ToolModeName] = field(default_factory=dict)
    real_tools: tuple[str, ...] = ()
    mocks: tuple[MockSpec, ...] = ()
    trials: int = 1
    pass_rule: PassRule = field(default_factory=PassRule)
    gate: Gate = "block"
    judge_when: JudgeWhen = "objective_pass"
    judge_inconclusive: Literal["fail", "pass"] = "fail"
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
    """

    name: str
    file: Path
    cases: list[Case]
    description: str | None = None


# -- discovery ----------------------------------------------------------------------------------


def is_suite_file(path: Path) -> bool:
    """Whether a file is an eval suite.

    A suite is a YAML file named ``*.eval.yaml`` / ``*.eval.yml``, or any ``.yaml`` /
    ``.yml`` file whose top level has both ``suite:`` and ``cases:`` keys.
    """
    name = path.name
    if any(fnmatch.fnmatch(name, pattern) for pattern in SUITE_PATTERNS):
        return True
    if path.suffix.lower() not in (".yaml", ".yml"):
        return False
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return bool(_SUITE_NAME_LINE.search(text) and _CASES_LINE.search(text))


def discover_suite_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand files and directories into suite files (directories are searched recursively).

    Raises:
        UserError: A path does not exist, or a directory holds no suite.
    """
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
                and is_suite_file(p)
            )
            if not files:
                raise UserError(
                    f"{path}: no eval suites found (suites are *.eval.yaml files, or YAML files "
                    "with top-level 'suite:' and 'cases:' keys)"
                )
            found.extend(files)
        elif path.is_file():
            found.append(path)
        else:
            raise UserError(f"{path}: no such file or directory")
    unique: list[Path] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique


def load_suites(paths: Iterable[str | Path]) -> list[Suite]:
    """Load every suite under ``paths``, checking all of them before returning.

    Raises:
        ConfigError: Any file has problems; ``problems`` lists all of them, from all files.
        UserError: A path does not exist.
    """
    suites: list[Suite] = []
    problems: list[str] = []
    resolver = _Resolver()
    for file in discover_suite_files(paths):
        try:
            suites.append(_load(file, resolver))
        except ConfigError as exc:
            problems.extend(exc.problems or [str(exc)])
    names: dict[str, Path] = {}
    for suite in suites:
        if suite.name in names and names[suite.name] != suite.file:
            problems.append(
                f"{suite.file}:1: suite name {suite.name!r} is also used by {names[suite.name]}; "
                "suite names must be unique in a run"
            )
        names[suite.name] = suite.file
    if problems:
        raise ConfigError(_summary(problems), problems)
    return suites


def load_suite(path: str | Path) -> Suite:
    """Load and check one suite file.

    Raises:
        ConfigError: The file has problems; ``problems`` lists each as ``file:line: message``.
    """
    return _load(Path(path), _Resolver())


def select_cases(
    suites: Sequence[Suite], *, cases: Sequence[str] = (), tags: Sequence[str] = ()
) -> list[Case]:
    """The cases of ``suites`` that match the filters, in order.

    Args:
        suites: Loaded suites.
        cases: Name patterns (``fnmatch``; ``suite::name`` also matches); any may match.
        tags: Tags; a case with any of them matches.

    Raises:
        UserError: The filters match no case.
    """
    selected = []
    for suite in suites:
        for case in suite.cases:
            if cases and not any(
                fnmatch.fnmatchcase(case.name, p) or fnmatch.fnmatchcase(case.id, p) for p in cases
            ):
                continue
            if tags and not set(tags) & set(case.tags):
                continue
            selected.append(case)
    if not selected and (cases or tags):
        filters = [f"--case {c}" for c in cases] + [f"--tag {t}" for t in tags]
        every = [c for s in suites for c in s.cases]
        names = ", ".join(c.name for c in every[:20]) + (" ..." if len(every) > 20 else "")
        known_tags = sorted({t for c in every for t in c.tags})
        raise UserError(
            f"no case matches {' '.join(filters)}; cases: {names or '(none)'}; tags: "
            f"{', '.join(known_tags) or '(none)'}"
        )
    return selected


def _summary(problems: list[str]) -> str:
    count = len(problems)
    head = f"invalid eval suite ({count} problem{'s' if count != 1 else ''}; nothing was run):"
    return head + "\n" + "\n".join(f"  {p}" for p in problems)


# -- loading ------------------------------------------------------------------------------------


class _Resolver:
    """Resolves and caches import paths and agents across the files of one load."""

    def __init__(self) -> None:
        self.agents: dict[tuple[str, str], AgentSpec | str] = {}
        self.imports: dict[tuple[str, Path], Any] = {}

    def import_object(self, spec: str, near: Path) -> Any:
        key = (spec, near)
        if key not in self.imports:
            self.imports[key] = _import(spec, near)
        return self.imports[key]

    def agent(self, spec: str, options: dict[str, Any], near: Path) -> AgentSpec | str:
        """The agent spec, or a problem message."""
        import json

        text = json.dumps(options, sort_keys=True, default=repr) if options else ""
        key = (spec, text + str(near))
        if key not in self.agents:
            self.agents[key] = self._agent(spec, options, near)
        return self.agents[key]

    def _agent(self, spec: str, options: dict[str, Any], near: Path) -> AgentSpec | str:
        from toolproof._agent import Agent
        from toolproof.models.fake import ScriptedModel

        try:
            target = self.import_object(spec, near)
        except UserError as exc:
            return str(exc)
        if isinstance(target, Agent):
            return AgentSpec(spec, target, {}, target.toolset)
        if not callable(target):
            return f"{spec} is {type(target).__name__}, not an agent factory or an Agent"
        probe = ScriptedModel([], name="toolproof-probe")
        try:
            agent = target(probe, None, **options)
        except Exception as exc:
            return (
                f"agent factory {spec} failed when called as {spec.split(':')[-1]}(model, None"
                f"{', **agent_options' if options else ''}): {type(exc).__name__}: {exc} "
                "(a factory "
                "takes (model, tools, **options) and builds its default tools when tools is None)"
            )
        if not isinstance(agent, Agent):
            return f"agent factory {spec} returned {type(agent).__name__}, not an Agent"
        return AgentSpec(spec, target, dict(options), agent.toolset)


_EXTERNAL_KEYS = {
    "command": "the program to run: a command line ('python my_agent.py'), or a list",
    "http": "the URL each input is POSTed to as JSON {input, base_url, api_key}",
    "timeout": "seconds a run may take",
    "env": "extra environment variables for the program",
    "cwd": "the program's working directory (relative to the suite file)",
}


def _external_agent(spec: Mapping[str, Any], near: Path) -> AgentSpec | str:
    """The spec of ``agent: {command: ...}`` or ``agent: {http: ...}``, or a problem."""
    from toolproof.models.fake import ScriptedModel
    from toolproof.server._external import ExternalAgent

    unknown = sorted(set(map(str, spec)) - set(_EXTERNAL_KEYS))
    if unknown:
        return f"unknown key {unknown[0]!r} in agent; known: {', '.join(_EXTERNAL_KEYS)}"
    command, http = spec.get("command"), spec.get("http")
    if (command is None) == (http is None):
        return "an agent mapping needs exactly one of 'command' (a program) or 'http' (a URL)"
    if command is not None and not (
        (isinstance(command, str) and command.strip())
        or (isinstance(command, list) and command and all(isinstance(c, str) for c in command))
    ):
        return f"agent.command: expected a command line or a list of strings, got {command!r}"
    if http is not None and not (
        isinstance(http, str) and http.startswith(("http://", "https://"))
    ):
        return f"agent.http: expected an http:// or https:// URL, got {http!r}"
    timeout = spec.get("timeout")
    if timeout is not None and (
        not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0
    ):
        return f"agent.timeout: expected a positive number of seconds, got {timeout!r}"
    env = spec.get("env") or {}
    if not isinstance(env, Mapping) or not all(
        isinstance(v, (str, int, float)) for v in env.values()
    ):
        return "agent.env: expected a mapping of variable names to values"
    cwd = spec.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        return f"agent.cwd: expected a folder path, got {cwd!r}"
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


def _import(spec: str, near: Path) -> Any:
    """Import ``module:attribute`` (or ``module.attribute``).

    The module is imported from ``sys.path`` (the CLI puts the current directory first); if
    its top-level package is not found there, the nearest parent directory of ``near`` that
    holds it is added, so a suite runs from any working directory.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep:
        module_name, _, attribute = spec.rpartition(".")
    if not module_name or not attribute or not re.fullmatch(r"[\w.]+", module_name):
        raise UserError(f"{spec!r} is not an import path; write 'package.module:name'")
    top = module_name.split(".")[0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        root = _find_root(top, near)
        if exc.name not in (top, module_name) or root is None:
            raise UserError(f"cannot import {module_name!r} for {spec}: {exc}") from None
        sys.path.insert(0, str(root))
        try:
            module = importlib.import_module(module_name)
        except Exception as inner:
            raise UserError(
                f"cannot import {module_name!r} for {spec}: {type(inner).__name__}: {inner}"
            ) from None
    except Exception as exc:
        raise UserError(
            f"cannot import {module_name!r} for {spec}: {type(exc).__name__}: {exc}"
        ) from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        names = [n for n in dir(module) if not n.startswith("_")]
        close = difflib.get_close_matches(attribute, names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UserError(f"module {module_name!r} has no attribute {attribute!r}{hint}") from None


def _find_root(top: str, near: Path) -> Path | None:
    for parent in near.resolve().parents:
        if (parent / top / "__init__.py").is_file() or (parent / f"{top}.py").is_file():
            return parent
    return None


def _load(file: Path, resolver: _Resolver) -> Suite:
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such file", [f"{file}:1: no such file"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{file}: cannot read: {exc}", [f"{file}:1: cannot read: {exc}"]
        ) from None
    data, locator, structural = load_yaml(text, file)
    problems = Problems(locator)
    suite = _Builder(file, locator, problems, resolver).suite(data)
    formatted = structural + problems.formatted()
    if formatted or suite is None:
        formatted = formatted or [f"{file}:1: not a suite"]
        raise ConfigError(_summary(formatted), formatted)
    return suite


class _Builder:
    def __init__(self, file: Path, locator: Locator, problems: Problems, resolver: _Resolver):
        self.file = file
        self.locator = locator
        self.problems = problems
        self.resolver = resolver
        self.suite_checks: dict[int, list[Check]] = {}

    def add(self, path: DocPath, message: str) -> None:
        self.problems.add(path, message)

    def unknown_keys(
        self, data: Mapping[Any, Any], allowed: Mapping[str, str], path: DocPath
    ) -> None:
        for key in data:
            if key in allowed:
                continue
            close = difflib.get_close_matches(str(key), list(allowed), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.add((*path, key), f"unknown key {key!r}{hint}; allowed: {', '.join(allowed)}")

    # -- suite ----------------------------------------------------------------------------------

    def suite(self, data: Any) -> Suite | None:
        if not isinstance(data, Mapping):
            self.add(
                (), f"a suite file must be a mapping with 'suite' and 'cases', got {_type(data)}"
            )
            return None
        # `datasets:` (cases from files) is read by toolproof.evals._dataset.
        self.unknown_keys({k: v for k, v in data.items() if k != "datasets"}, SUITE_KEYS, ())
        name = data.get("suite")
        if not isinstance(name, str) or not name.strip():
            self.add(
                ("suite",) if "suite" in data else (),
                "'suite' must be the suite's name (a non-empty string)",
            )
            name = self.file.stem
        description = self._optional_str(data, "description", ())
        defaults = dict(_DEFAULTS)
        for key in DEFAULT_KEYS:
            if key in data:
                defaults[key] = data[key]
        suite_origin = {key: ("suite", key) for key in DEFAULT_KEYS if key in data}
        suite_expect = data.get("expect")
        if suite_expect is not None and not isinstance(suite_expect, Mapping):
            self.add(("expect",), f"expected a mapping of checks, got {_type(suite_expect)}")
            suite_expect = None
        suite_judge = self._judge(data.get("judge"), ("judge",)) if "judge" in data else []
        suite_tags = self._tags(data.get("tags"), ("tags",)) if "tags" in data else []
        suite_metadata = self._mapping(data, "metadata", ())
        cases_data = data.get("cases")
        if "cases" not in data and "datasets" in data:  # every case comes from datasets
            cases_data = []
        elif "cases" not in data:
            self.add((), "missing 'cases': a list of cases, each with a 'name' and an 'input'")
            cases_data = []
        elif not isinstance(cases_data, list) or not cases_data:
            self.add(
                ("cases",), f"'cases' must be a non-empty list of cases, got {_type(cases_data)}"
            )
            cases_data = []
        cases: list[Case] = []
        seen: dict[str, int] = {}
        for index, item in enumerate(cases_data):
            raw_name = item.get("name") if isinstance(item, Mapping) else None
            duplicate = isinstance(raw_name, str) and raw_name in seen
            if isinstance(raw_name, str) and duplicate:
                self.add(
                    ("cases", index, "name"),
                    f"case name {raw_name!r} is already used at line {seen[raw_name]}; "
                    "names must be unique in a suite",
                )
            elif isinstance(raw_name, str):
                seen[raw_name] = self.locator.line(("cases", index))
            case = self.case(
                item,
                index,
                name,
                defaults,
                suite_origin,
                suite_expect or {},
                suite_judge,
                suite_tags,
                suite_metadata,
            )
            if case is not None and not duplicate:
                cases.append(case)
        # Cases from datasets (toolproof.evals._dataset): a row of a file through a template.
        from toolproof.evals._dataset import dataset_cases

        case_args = (name, defaults, suite_origin, suite_expect or {}, suite_judge, suite_tags)
        for case in dataset_cases(self, data, (*case_args, suite_metadata)):
            if case.name in seen or any(c.name == case.name for c in cases):
                self.add(("datasets",), f"case name {case.name!r} is used twice in the suite")
            else:
                cases.append(case)
        return Suite(name=name, file=self.file, cases=cases, description=description)

    # -- case -----------------------------------------------------------------------------------

    def case(
        self,
        data: Any,
        index: int,
        suite_name: str,
        suite_defaults: dict[str, Any],
        suite_origin: dict[str, DocPath],
        suite_expect: Mapping[str, Any],
        suite_judge: list[str],
        suite_tags: list[str],
        suite_metadata: dict[str, Any],
    ) -> Case | None:
        path: DocPath = ("cases", index)
        if not isinstance(data, Mapping):
            self.add(path, f"a case must be a mapping with 'name' and 'input', got {_type(data)}")
            return None
        before = len(self.problems)
        self.unknown_keys(data, CASE_KEYS, path)
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            self.add(
                (*path, "name") if "name" in data else path,
                "each case needs a 'name' (a non-empty string)",
            )
            name = f"case-{index + 1}"
        values = dict(suite_defaults)
        origin = dict(suite_origin)
        for key in DEFAULT_KEYS:
            if key in data:
                values[key] = data[key]
                origin[key] = (*path, key)
        config, agent = self.config(values, origin, path)

        # Inputs.
        turns_data: list[Any] = []
        if "input" in data and "turns" in data:
            self.add((*path, "turns"), "give either 'input' or 'turns', not both")
        elif "input" in data:
            if not isinstance(data["input"], str):
                self.add((*path, "input"), f"'input' must be a string, got {_type(data['input'])}")
            else:
                turns_data = [data["input"]]
        elif "turns" in data:
            if not isinstance(data["turns"], list) or not data["turns"]:
                self.add(
                    (*path, "turns"),
                    f"'turns' must be a non-empty list, got {_type(data['turns'])}",
                )
            else:
                turns_data = data["turns"]
        else:
            self.add(path, f"case {name!r} needs an 'input' (or 'turns' for a conversation)")
        tools = agent.tools if agent is not None and not agent.external else None

        # Checks: suite expectations under the case's own.
        expect = dict(suite_expect)
        case_expect = data.get("expect")
        if case_expect is not None and not isinstance(case_expect, Mapping):
            self.add((*path, "expect"), f"expected a mapping of checks, got {_type(case_expect)}")
            case_expect = None
        expect.update(case_expect or {})
        checks: list[Check] = []
        if agent is None:
            # The agent did not load: still report every other problem of the expectations.
            compile_expect(expect, tools=None, problems=self.problems, path=(*path, "expect"))
        else:
            # One merged mapping (keys depend on each other: `order` reads `tools_called`);
            # each key's problems point at the line where it was written.
            key_paths: dict[str, DocPath] = dict.fromkeys(suite_expect, ("expect",))
            key_paths.update(dict.fromkeys(case_expect or {}, (*path, "expect")))
            if case_expect:
                checks = compile_expect(
                    expect,
                    tools=tools,
                    problems=self.problems,
                    path=(*path, "expect"),
                    key_paths=key_paths,
                )
            elif suite_expect:
                # Only the suite's checks: compiled once per agent (checks are immutable).
                if id(agent) not in self.suite_checks:
                    self.suite_checks[id(agent)] = compile_expect(
                        expect, tools=tools, problems=self.problems, path=("expect",)
                    )
                checks = list(self.suite_checks[id(agent)])
            order = {key: position for position, key in enumerate(expect)}
            checks.sort(key=lambda c: order.get(c.name, 0))

        turns: list[Turn] = []
        for number, item in enumerate(turns_data, 1):
            turn_path: DocPath = (
                (*path, "turns", number - 1) if "turns" in data else (*path, "input")
            )
            if isinstance(item, str):
                turns.append(Turn(item))
            elif isinstance(item, Mapping):
                self.unknown_keys(
                    item,
                    {"input": "the user's message", "expect": "checks of this turn"},
                    turn_path,
                )
                text = item.get("input")
                if not isinstance(text, str):
                    self.add(turn_path, "a turn needs an 'input' string")
                    continue
                turn_checks: list[Check] = []
                if "expect" in item and tools is not None:
                    turn_checks = compile_expect(
                        item["expect"],
                        tools=tools,
                        problems=self.problems,
                        path=(*turn_path, "expect"),
                        turn=number,
                    )
                turns.append(Turn(text, turn_checks))
            else:
                self.add(turn_path, f"a turn is a string or {{input, expect}}, got {_type(item)}")

        judge = (
            self._judge(data["judge"], (*path, "judge")) if "judge" in data else list(suite_judge)
        )
        script = (
            self._script(data["script"], (*path, "script"), tools) if "script" in data else None
        )
        tags = list(suite_tags)
        for tag in self._tags(data.get("tags"), (*path, "tags")) if "tags" in data else []:
            if tag not in tags:
                tags.append(tag)
        metadata = {**suite_metadata, **self._mapping(data, "metadata", path)}
        description = self._optional_str(data, "description", path)
        skip: str | None = None
        if "skip" in data:
            value = data["skip"]
            if value is True:
                skip = "skipped in the suite"
            elif isinstance(value, str) and value.strip():
                skip = value
            elif value is not False:
                self.add((*path, "skip"), f"expected true or a reason, got {value!r}")
        if config is None or len(self.problems) > before:
            return None
        return Case(
            suite=suite_name,
            name=name,
            file=self.file,
            line=self.locator.line(path),
            turns=turns,
            checks=checks,
            judge=judge,
            script=script,
            tags=tags,
            metadata=metadata,
            config=config,
            description=description,
            skip=skip,
        )

    # -- settings -------------------------------------------------------------------------------

    def config(
        self, values: dict[str, Any], origin: dict[str, DocPath], path: DocPath
    ) -> tuple[CaseConfig | None, AgentSpec | None]:
        """The case's settings (``None`` when invalid) and its agent (when it resolved)."""
        ok = True

        def bad(key: str, message: str) -> None:
            nonlocal ok
            ok = False
            where = origin.get(key, path)
            if where[:1] == ("suite",):
                where = where[1:]
            self.add(where, message)

        def where_of(key: str) -> DocPath:
            where = origin.get(key, path)
            return where[1:] if where[:1] == ("suite",) else where

        agent_source = values["agent"]
        options = values["agent_options"]
        if not isinstance(options, Mapping):
            bad("agent_options", f"expected a mapping of keyword arguments, got {_type(options)}")
            options = {}
        agent: AgentSpec | None = None
        if agent_source is None:
            bad(
                "agent",
                "no 'agent': set it in the suite (or the case) to 'module:factory', a function "
                "(model, tools) -> Agent",
            )
        elif isinstance(agent_source, Mapping):
            external = _external_agent(agent_source, self.file)
            if isinstance(external, str):
                bad("agent", external)
            else:
                agent = external
        elif not isinstance(agent_source, str):
            bad("agent", f"expected {DEFAULT_KEYS['agent']}, got {_type(agent_source)}")
        else:
            resolved = self.resolver.agent(agent_source, dict(options), self.file)
            if isinstance(resolved, str):
                bad("agent", resolved)
            else:
                agent = resolved
        for key in ("model", "judge_model"):
            value = values[key]
            if value is not None and (not isinstance(value, str) or not value.strip()):
                bad(key, f"expected {DEFAULT_KEYS[key]}, got {_type(value)}")
        tools_mode = values["tools"]
        if tools_mode not in ("real", "mock"):
            bad("tools", f"expected real or mock, got {tools_mode!r}")
        tool_modes = values["tool_modes"]
        if not isinstance(tool_modes, Mapping):
            bad("tool_modes", f"expected {DEFAULT_KEYS['tool_modes']}, got {_type(tool_modes)}")
            tool_modes = {}
        else:
            for tool_name, mode in tool_modes.items():
                if agent is not None and tool_name not in agent.tools:
                    self.add(
                        (*where_of("tool_modes"), tool_name), _unknown_tool(tool_name, agent.tools)
                    )
                    ok = False
                if mode not in ("real", "mock"):
                    self.add(
                        (*where_of("tool_modes"), tool_name), f"expected real or mock, got {mode!r}"
                    )
                    ok = False
        real_tools = values["real_tools"]
        if not isinstance(real_tools, list) or not all(isinstance(n, str) for n in real_tools):
            bad("real_tools", f"expected {DEFAULT_KEYS['real_tools']}, got {_type(real_tools)}")
            real_tools = []
        elif agent is not None:
            for position, tool_name in enumerate(real_tools):
                if tool_name not in agent.tools:
                    self.add(
                        (*where_of("real_tools"), position), _unknown_tool(tool_name, agent.tools)
                    )
                    ok = False
        mocks = self._mocks(values["mocks"], where_of("mocks"), agent)
        if mocks is None:
            ok = False
        trials = values["trials"]
        if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
            bad("trials", f"expected a positive integer, got {trials!r}")
            trials = None
        rule = self._pass_rule(values["pass_rule"], where_of("pass_rule"), trials)
        if rule is None:
            ok = False
        for key, allowed in (
            ("gate", ("block", "advise")),
            ("judge_when", ("objective_pass", "always")),
            ("judge_inconclusive", ("fail", "pass")),
        ):
            if values[key] not in allowed:
                bad(key, f"expected {' or '.join(allowed)}, got {values[key]!r}")
        settings = self._settings(values["settings"], where_of("settings"))
        if values["settings"] is not None and settings is None:
            ok = False
        retries = values["retries"]
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            bad("retries", f"expected a non-negative integer, got {retries!r}")
        timeout = values["timeout"]
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
        ):
            bad("timeout", f"expected a positive number of seconds, got {timeout!r}")
        if not ok or agent is None or rule is None or mocks is None or trials is None:
            return None, agent
        config = CaseConfig(
            agent=agent,
            model=values["model"],
            judge_model=values["judge_model"],
            tools=tools_mode,
            tool_modes=dict(tool_modes),
            real_tools=tuple(dict.fromkeys(real_tools)),
            mocks=tuple(mocks),
            trials=trials,
            pass_rule=rule,
            gate=values["gate"],
            judge_when=values["judge_when"],
            judge_inconclusive=values["judge_inconclusive"],
            settings=settings,
            retries=retries,
            timeout=None if timeout is None else float(timeout),
        )
        return config, agent

    def _pass_rule(self, value: Any, path: DocPath, trials: int | None) -> PassRule | None:
        rule: PassRule | None = None
        if value in ("all", "any"):
            rule = PassRule(value)
        elif isinstance(value, Mapping) and len(value) == 1:
            ((kind, number),) = value.items()
            if (
                kind == "at_least"
                and isinstance(number, int)
                and not isinstance(number, bool)
                and number >= 1
            ):
                rule = PassRule("at_least", number)
            elif (
                kind == "rate"
                and isinstance(number, (int, float))
                and not isinstance(number, bool)
                and 0 < number <= 1
            ):
                rule = PassRule("rate", float(number))
        if rule is None:
            self.add(path, f"expected {DEFAULT_KEYS['pass_rule']}, got {value!r}")
            return None
        if rule.kind == "at_least" and trials is not None and rule.value > trials:
            self.add(
                path,
                f"at_least: {int(rule.value)} can never pass with trials: {trials}; "
                "raise trials or lower N",
            )
            return None
        return rule

    def _settings(self, value: Any, path: DocPath) -> ModelSettings | None:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.add(path, f"expected {DEFAULT_KEYS['settings']}, got {_type(value)}")
            return None
        self.unknown_keys(value, dict.fromkeys(SETTINGS_KEYS, ""), path)
        kinds: dict[str, tuple[type, ...]] = {
            "temperature": (int, float),
            "max_tokens": (int,),
            "seed": (int,),
            "stop": (list, str),
            "tool_choice": (str,),
            "parallel_tool_calls": (bool,),
            "extra": (dict,),
        }
        clean: dict[str, Any] = {}
        ok = True
        for key, item in value.items():
            if key not in kinds:
                ok = False
                continue
            if not isinstance(item, kinds[key]) or (
                isinstance(item, bool) and bool not in kinds[key]
            ):
                expected = " or ".join(t.__name__ for t in kinds[key])
                self.add((*path, key), f"expected {expected}, got {item!r}")
                ok = False
                continue
            clean[key] = [item] if key == "stop" and isinstance(item, str) else item
        if not ok:
            return None
        return ModelSettings(**clean)

    def _mocks(self, value: Any, path: DocPath, agent: AgentSpec | None) -> list[MockSpec] | None:
        items = value if isinstance(value, list) else [value]
        specs: list[MockSpec] = []
        ok = True
        for index, item in enumerate(items):
            where = (*path, index) if isinstance(value, list) else path
            if not isinstance(item, str) or not item.strip():
                self.add(where, f"expected {DEFAULT_KEYS['mocks']}, got {_type(item)}")
                ok = False
                continue
            if Path(item).suffix.lower() in (".yaml", ".yml", ".json"):
                file = (self.file.parent / item) if not Path(item).is_absolute() else Path(item)
                spec = MockSpec(item, "file", file)
            else:
                try:
                    target = self.resolver.import_object(item, self.file)
                except UserError as exc:
                    self.add(where, str(exc))
                    ok = False
                    continue
                if not callable(target):
                    self.add(
                        where,
                        f"{item} is {type(target).__name__}; expected a class or function "
                        "returning mock providers",
                    )
                    ok = False
                    continue
                spec = MockSpec(item, "factory", target)
            try:
                providers = spec.create()
            except ConfigError as exc:
                for problem in exc.problems or [str(exc)]:
                    self.add(where, problem)
                ok = False
                continue
            except Exception as exc:
                self.add(where, f"creating mocks from {item} failed: {type(exc).__name__}: {exc}")
                ok = False
                continue
            if agent is not None:
                for provider in providers:
                    if isinstance(provider, Mapping):
                        for tool_name in provider:
                            if tool_name not in agent.tools:
                                self.add(where, f"{item}: {_unknown_tool(tool_name, agent.tools)}")
                                ok = False
            specs.append(spec)
        return specs if ok else None

    # -- small values ---------------------------------------------------------------------------

    def _optional_str(self, data: Mapping[str, Any], key: str, path: DocPath) -> str | None:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            self.add((*path, key), f"expected a string, got {_type(value)}")
            return None
        return value

    def _mapping(self, data: Mapping[str, Any], key: str, path: DocPath) -> dict[str, Any]:
        value = data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.add((*path, key), f"expected a mapping, got {_type(value)}")
            return {}
        return dict(value)

    def _tags(self, value: Any, path: DocPath) -> list[str]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(t, str) and t for t in value):
            self.add(path, f"expected a list of tags (strings), got {_type(value)}")
            return []
        return list(value)

    def _judge(self, value: Any, path: DocPath) -> list[str]:
        if isinstance(value, str):
            value = [value]
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(t, str) and t.strip() for t in value)
        ):
            self.add(
                path, f"expected a rubric line or a list of them (strings), got {_type(value)}"
            )
            return []
        return list(value)

    def _script(
        self, value: Any, path: DocPath, tools: Mapping[str, Tool[..., Any]] | None = None
    ) -> list[ScriptItem] | None:
        if not isinstance(value, list) or not value:
            self.add(
                path, f"expected a list of responses ({CASE_KEYS['script']}), got {_type(value)}"
            )
            return None
        items: list[ScriptItem] = []
        for index, item in enumerate(value):
            parsed = self._script_item(item, (*path, index), tools)
            if parsed is not None:
                items.append(parsed)
        return items

    def _script_item(
        self, item: Any, path: DocPath, tools: Mapping[str, Tool[..., Any]] | None
    ) -> ScriptItem | None:
        if isinstance(item, str):
            return item
        if isinstance(item, list):
            calls = [self._script_call(entry, (*path, i), tools) for i, entry in enumerate(item)]
            if not item:
                self.add(path, "a list of calls must not be empty")
                return None
            if any(c is None for c in calls):
                return None
            return [c for c in calls if c is not None]
        if isinstance(item, Mapping) and "raise" in item:
            return self._script_error(item, path)
        if isinstance(item, Mapping) and "call" in item:
            return self._script_call(item, path, tools)
        self.add(
            path,
            f"a script item is text, {{call: {{name, arguments}}}}, a list of calls (parallel), or "
            f"{{raise: ModelConnectionError}}; got {_type(item)}",
        )
        return None

    def _script_call(
        self, item: Any, path: DocPath, tools: Mapping[str, Tool[..., Any]] | None
    ) -> ToolCall | None:
        if not isinstance(item, Mapping) or set(item) != {"call"}:
            self.add(path, "expected {call: {name: ..., arguments: {...}}}")
            return None
        body = item["call"]
        if not isinstance(body, Mapping) or not isinstance(body.get("name"), str):
            self.add(
                (*path, "call"), "a call needs a 'name' (string) and optional 'arguments' (mapping)"
            )
            return None
        self.unknown_keys(
            body,
            {"name": "", "arguments": "", "id": "", "unchecked": "send it as written"},
            (*path, "call"),
        )
        arguments = body.get("arguments", {})
        call_id = str(body.get("id", ""))
        unchecked = body.get("unchecked", False)
        if not isinstance(unchecked, bool):
            self.add((*path, "call", "unchecked"), f"expected true or false, got {unchecked!r}")
            return None
        if isinstance(arguments, str):  # raw JSON text, possibly malformed on purpose
            return ToolCall.from_json_arguments(body["name"], arguments, call_id)
        if not isinstance(arguments, Mapping):
            self.add(
                (*path, "call", "arguments"),
                f"expected a mapping (or JSON text), got {_type(arguments)}",
            )
            return None
        if (
            tools is not None
            and not unchecked
            and not self._script_call_fits(body["name"], dict(arguments), tools, path)
        ):
            return None
        return ToolCall(body["name"], dict(arguments), call_id)

    def _script_call_fits(
        self,
        name: str,
        arguments: dict[str, Any],
        tools: Mapping[str, Tool[..., Any]],
        path: DocPath,
    ) -> bool:
        """Whether a scripted call fits the agent's tools (names and arguments).

        A call that is wrong on purpose says ``unchecked: true``.
        """
        from toolproof._tools import ArgumentsInvalid

        hint = " (to send it anyway, to test how the agent copes, add 'unchecked: true')"
        found = tools.get(name)
        if found is None:
            self.add((*path, "call", "name"), "script calls " + _unknown_tool(name, tools) + hint)
            return False
        try:
            found.validate(arguments)
        except ArgumentsInvalid as exc:
            self.add(
                (*path, "call", "arguments"),
                f"script call of {name!r} does not fit its schema: {exc}{hint}",
            )
            return False
        return True

    def _script_error(self, item: Mapping[str, Any], path: DocPath) -> ScriptItem | None:
        from toolproof import errors

        spec = item["raise"]
        allowed = ("ModelConnectionError", "ModelHTTPError", "UnexpectedModelOutput")
        if isinstance(spec, str):
            spec = {"type": spec}
        if not isinstance(spec, Mapping) or spec.get("type") not in allowed:
            self.add(
                (*path, "raise"),
                f"expected one of {', '.join(allowed)} (or {{type, status, message}})",
            )
            return None
        message = str(spec.get("message", f"scripted {spec['type']}"))
        if spec["type"] == "ModelHTTPError":
            status = spec.get("status", 503)
            if not isinstance(status, int) or isinstance(status, bool):
                self.add((*path, "raise", "status"), f"expected an HTTP status, got {status!r}")
                return None
            return errors.ModelHTTPError(message, status=status)
        if spec["type"] == "UnexpectedModelOutput":
            return errors.UnexpectedModelOutput(message)
        return errors.ModelConnectionError(message)


def _unknown_tool(name: Any, tools: Mapping[str, Any]) -> str:
    known = sorted(tools)
    close = difflib.get_close_matches(str(name), known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown tool {name!r}{hint}; the agent's tools are: {', '.join(known) or '(none)'}"


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
