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

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

import toolproof.evals._builtins  # noqa: F401 (registers the built-in checks)
from toolproof._filemodel import unknown_key_message, valid_part, validate
from toolproof._yaml import DocPath, Locator, Problems, load_yaml
from toolproof._yaml import describe_type as _type
from toolproof.errors import ConfigError, UserError
from toolproof.evals._cases import (
    AgentSpec,
    Case,
    CaseConfig,
    MockSpec,
    PassRule,
    Suite,
    Turn,
    external_agent,
)
from toolproof.evals._checks import Check, compile_expect
from toolproof.evals._resolve import Resolver
from toolproof.evals._script import parse_script
from toolproof.evals._script import unknown_tool as _unknown_tool
from toolproof.evals._suite_model import (
    CASE_KEYS,
    DEFAULT_KEYS,
    SETTINGS_KEYS,
    SUITE_KEYS,
    CaseEntry,
    CaseSettings,
    SuiteFile,
    TurnEntry,
)

if TYPE_CHECKING:
    from toolproof.evals._costs import CostGates
    from toolproof.models.fake import ScriptItem

__all__ = [
    "CASE_KEYS",
    "DEFAULT_KEYS",
    "SETTINGS_KEYS",
    "SUITE_KEYS",
    "AgentSpec",
    "Builder",
    "Case",
    "CaseConfig",
    "MockSpec",
    "PassRule",
    "Resolver",
    "Suite",
    "Turn",
    "discover_suite_files",
    "is_suite_file",
    "load_suite",
    "load_suites",
    "select_cases",
]

_SUITE_NAME_LINE = re.compile(r"^suite\s*:", re.MULTILINE)
_CASES_LINE = re.compile(r"^(cases|datasets)\s*:", re.MULTILINE)
SUITE_PATTERNS = ("*.eval.yaml", "*.eval.yml")


# -- discovery ----------------------------------------------------------------------------------


def is_suite_file(path: Path) -> bool:
    """Whether a file is an eval suite.

    A suite is a YAML file named ``*.eval.yaml`` / ``*.eval.yml``, or any ``.yaml`` /
    ``.yml`` file whose top level has both ``suite:`` and ``cases:`` (or ``datasets:``) keys.
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
    resolver = Resolver()
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
    return _load(Path(path), Resolver())


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


def _load(file: Path, resolver: Resolver) -> Suite:
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
    suite = Builder(file, locator, problems, resolver).suite(data)
    formatted = structural + problems.formatted()
    if formatted or suite is None:
        formatted = formatted or [f"{file}:1: not a suite"]
        raise ConfigError(_summary(formatted), formatted)
    return suite


@dataclass(frozen=True, slots=True)
class _SuiteParts:
    """What every case of a suite starts from: the suite's keys, as validated."""

    name: str
    settings: dict[str, Any]
    expect: dict[Any, Any]
    judge: list[str]
    tags: list[str]
    metadata: dict[Any, Any]

    @classmethod
    def of(cls, entry: SuiteFile) -> _SuiteParts:
        return cls(
            name=entry.suite,
            settings=entry.own_settings(),
            expect=dict(entry.expect or {}),
            judge=list(entry.judge or []),
            tags=list(entry.tags or []),
            metadata=dict(entry.metadata or {}),
        )


class Builder:
    def __init__(self, file: Path, locator: Locator, problems: Problems, resolver: Resolver):
        self.file = file
        self.locator = locator
        self.problems = problems
        self.resolver = resolver
        self.suite_checks: dict[int, list[Check]] = {}
        self.inherited: tuple[CaseConfig, AgentSpec | None] | None = None  # see settings()

    def add(self, path: DocPath, message: str) -> None:
        self.problems.add(path, message)

    def unknown_keys(
        self, data: Mapping[Any, Any], allowed: Mapping[str, str], path: DocPath
    ) -> None:
        for key in data:
            if key not in allowed:
                self.add((*path, key), unknown_key_message(key, allowed))

    # -- suite ----------------------------------------------------------------------------------

    def suite(self, data: Any) -> Suite | None:
        if not isinstance(data, Mapping):
            self.add(
                (), f"a suite file must be a mapping with 'suite' and 'cases', got {_type(data)}"
            )
            return None
        entry, bad = validate(SuiteFile, data, self.problems)
        if "cases" not in data and "datasets" not in data:
            self.add((), SuiteFile.missing["cases"])
        entry = entry or valid_part(SuiteFile, data, bad, **_name_fill(data, bad, self.file.stem))
        self.import_checks(entry.checks or [])
        parts = _SuiteParts.of(entry)
        cases: list[Case] = []
        seen: dict[str, int] = {}
        for index, item in enumerate(entry.cases or []):
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
            case = self.case(item, index, parts)
            if case is not None and not duplicate:
                cases.append(case)
        if entry.datasets:
            # Cases from `datasets:` (toolproof.evals._dataset): each row of a file through a
            # template; problems name the file, the row and the key.
            from toolproof.evals._dataset import dataset_cases

            taken = {*seen, *(case.name for case in cases)}
            for case in dataset_cases(self, entry.datasets, parts):
                if case.name in taken:
                    self.add(("datasets",), f"case name {case.name!r} is used twice in the suite")
                else:
                    taken.add(case.name)
                    cases.append(case)
        statistics = entry.statistics.model_dump(exclude_unset=True) if entry.statistics else None
        suite = Suite(entry.suite, self.file, cases, entry.description, statistics, _gates(entry))
        if entry.attacks is not None:
            from toolproof.evals._attacks import attack_cases

            # Each case, template and goal of `attacks:` adds an attack case.
            suite.cases = attack_cases(
                data["attacks"],
                suite.cases,
                add=self.add,
                problems=self.problems,
                file=self.file,
                resolver=self.resolver,
            )
        return suite

    # -- case -----------------------------------------------------------------------------------

    def case(self, data: Any, index: int, suite: _SuiteParts) -> Case | None:
        path: DocPath = ("cases", index)
        if not isinstance(data, Mapping):
            self.add(path, f"a case must be a mapping with 'name' and 'input', got {_type(data)}")
            return None
        before = len(self.problems)
        both = "input" in data and "turns" in data
        checked = {k: v for k, v in data.items() if not (both and k in ("input", "turns"))}
        entry, bad = validate(CaseEntry, checked, self.problems, path)
        fill = _name_fill(data, bad, f"case-{index + 1}", key="name")
        entry = entry or valid_part(CaseEntry, checked, bad, **fill)
        config, agent = self.settings(entry, path, suite)
        if both:
            self.add((*path, "turns"), "give either 'input' or 'turns', not both")
        elif "input" not in data and "turns" not in data and "user" not in data:
            self.add(path, f"case {entry.name!r} needs an 'input' (or 'turns' for a conversation)")
        tools = agent.tools if agent is not None and not agent.external else None
        checks = self.checks(entry, path, suite, agent, tools)
        turns = self.turns(entry, checked.get("turns"), path, tools)
        user = None
        if "user" in data:
            from toolproof.evals._users import parse_user

            if turns:
                self.add((*path, "user"), "give 'input', 'turns' or 'user', not several")
            user = parse_user(self, data["user"], (*path, "user"), tools)
        script = (
            parse_script(self, data["script"], (*path, "script"), tools)
            if "script" in data
            else None
        )
        if config is None or len(self.problems) > before:
            return None
        own_tags = [tag for tag in entry.tags or [] if tag not in suite.tags]
        return Case(
            suite=suite.name,
            name=entry.name,
            file=self.file,
            line=self.locator.line(path),
            turns=turns,
            checks=checks,
            judge=entry.judge or suite.judge,
            script=script,
            tags=[*suite.tags, *dict.fromkeys(own_tags)],
            metadata={**suite.metadata, **(entry.metadata or {})},
            config=config,
            description=entry.description,
            skip="skipped in the suite" if entry.skip is True else (entry.skip or None),
            user=user,
        )

    def checks(
        self,
        entry: CaseEntry,
        path: DocPath,
        suite: _SuiteParts,
        agent: AgentSpec | None,
        tools: Mapping[str, Any] | None,
    ) -> list[Check]:
        """The case's checks: the suite's expectations under the case's own."""
        expect = {**suite.expect, **(entry.expect or {})}
        if agent is None:
            # The agent did not load: still report every other problem of the expectations.
            compile_expect(expect, tools=None, problems=self.problems, path=(*path, "expect"))
            return []
        if entry.expect:
            # One merged mapping (keys depend on each other: `order` reads `tools_called`);
            # each key's problems point at the line where it was written.
            key_paths: dict[str, DocPath] = dict.fromkeys(suite.expect, ("expect",))
            key_paths.update(dict.fromkeys(entry.expect, (*path, "expect")))
            checks = compile_expect(
                expect,
                tools=tools,
                problems=self.problems,
                path=(*path, "expect"),
                key_paths=key_paths,
            )
            return _in_order(checks, expect)
        if not suite.expect:
            return []
        # Only the suite's checks: compiled and ordered once per agent (checks are immutable).
        if id(agent) not in self.suite_checks:
            compiled = compile_expect(expect, tools=tools, problems=self.problems, path=("expect",))
            self.suite_checks[id(agent)] = _in_order(compiled, expect)
        return list(self.suite_checks[id(agent)])

    def turns(
        self, entry: CaseEntry, raw: Any, path: DocPath, tools: Mapping[str, Any] | None
    ) -> list[Turn]:
        """The case's user messages, each turn with its own checks.

        When a turn has a problem, the checks of the others are still compiled (``raw``:
        the turns as written), so that their problems are reported too.
        """
        if entry.input is not None:
            return [Turn(entry.input)]
        items = entry.turns if entry.turns is not None else _good_turns(raw)
        turns: list[Turn] = []
        for number, item in enumerate(items, 1):
            if item is None:
                continue
            if isinstance(item, str):
                turns.append(Turn(item))
                continue
            checks: list[Check] = []
            if "expect" in item.model_fields_set and tools is not None:
                checks = compile_expect(
                    item.expect,
                    tools=tools,
                    problems=self.problems,
                    path=(*path, "turns", number - 1, "expect"),
                    turn=number,
                )
            turns.append(Turn(item.input, checks))
        return turns

    # -- settings -------------------------------------------------------------------------------

    def settings(
        self, entry: CaseEntry, path: DocPath, suite: _SuiteParts
    ) -> tuple[CaseConfig | None, AgentSpec | None]:
        """The case's settings (``None`` when invalid) and its agent (when it resolved).

        The suite's settings and the case's own, merged, validated in one step; a case that
        sets none of its own shares the suite's, checked by the first such case.
        """
        own = entry.own_settings()
        if not own and self.inherited is not None:
            return self.inherited
        origin: dict[str, DocPath] = {key: (key,) for key in suite.settings}
        origin.update({key: (*path, key) for key in own})
        # No agent is reported where the case is (an agent is required).
        values = {"agent": None, **suite.settings, **own}
        settled = len(self.problems)
        config, agent = self.config(values, origin, path)
        if not own and config is not None and len(self.problems) == settled:
            self.inherited = (config, agent)
        return config, agent

    def config(
        self, values: dict[str, Any], origin: dict[str, DocPath], path: DocPath
    ) -> tuple[CaseConfig | None, AgentSpec | None]:
        """The settings of ``values`` checked, then their agent, tools and mocks resolved."""

        def remap(loc: DocPath) -> DocPath:
            key = loc[0] if loc else None
            return (*origin[key], *loc[1:]) if key in origin else path

        before = len(self.problems)
        valid, bad = validate(CaseSettings, values, self.problems, remap=remap)
        checked = valid or valid_part(CaseSettings, values, bad)
        agent = None if "agent" in bad else self.agent(checked, origin.get("agent", path))
        ok = self.tool_names(checked, bad, agent, origin)
        mocks = self._mocks(checked.mocks, origin.get("mocks", path), agent)
        rule = checked.pass_rule
        trials = checked.trials.max
        if rule.kind == "at_least" and "trials" not in bad and rule.value > trials:
            self.add(
                origin.get("pass_rule", path),
                f"at_least: {int(rule.value)} can never pass with trials: {trials}; "
                "raise trials or lower N",
            )
            ok = False
        if not ok or valid is None or agent is None or mocks is None:
            return None, agent
        if len(self.problems) > before:
            return None, agent
        return _config(valid, agent, tuple(mocks)), agent

    def agent(self, settings: CaseSettings, where: DocPath) -> AgentSpec | None:
        """The agent the settings name, built once to learn its tools."""
        if isinstance(settings.agent, Mapping):
            try:
                return external_agent(settings.agent, self.file)
            except UserError as exc:  # (a command with an unclosed quote)
                self.add(where, str(exc))
                return None
        resolved = self.resolver.agent(settings.agent, dict(settings.agent_options), self.file)
        if isinstance(resolved, str):
            self.add(where, resolved)
            return None
        return resolved

    def tool_names(
        self,
        settings: CaseSettings,
        bad: set[Any],
        agent: AgentSpec | None,
        origin: Mapping[str, DocPath],
    ) -> bool:
        """Whether ``tool_modes`` and ``real_tools`` name the agent's tools (problems added)."""
        ok = True
        where = origin.get("tool_modes", ())
        for tool_name, mode in settings.tool_modes.items():
            if agent is not None and tool_name not in agent.tools:
                self.add((*where, tool_name), _unknown_tool(tool_name, agent.tools))
                ok = False
            if mode not in ("real", "mock"):
                self.add((*where, tool_name), f"expected real or mock, got {mode!r}")
                ok = False
        where = origin.get("real_tools", ())
        for position, tool_name in enumerate(settings.real_tools):
            if agent is not None and tool_name not in agent.tools:
                self.add((*where, position), _unknown_tool(tool_name, agent.tools))
                ok = False
        return ok

    def _script(self, value: Any, path: DocPath) -> list[ScriptItem] | None:
        """A script file's responses (``toolproof chat --model script.yaml``)."""
        return parse_script(self, value, path)

    def import_checks(self, modules: list[str]) -> None:
        """Import the modules a suite's ``checks:`` names (they register checks)."""
        for index, module in enumerate(modules):
            try:
                self.resolver.load_module(module, self.file)
            except UserError as exc:
                self.add(("checks", index), str(exc))

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


def _in_order(checks: list[Check], expect: Mapping[str, Any]) -> list[Check]:
    """``checks`` sorted in place in the order their keys were written in ``expect``."""
    order = {key: position for position, key in enumerate(expect)}
    checks.sort(key=lambda c: order.get(c.name, 0))
    return checks


def _good_turns(raw: Any) -> list[str | TurnEntry | None]:
    """Each turn as written that is valid on its own (``None`` for the others)."""
    good: list[str | TurnEntry | None] = []
    for item in raw if isinstance(raw, list) else []:
        try:
            good.append(item if isinstance(item, str) else TurnEntry.model_validate(item))
        except ValidationError:
            good.append(None)
    return good


def _name_fill(
    data: Mapping[str, Any], bad: set[Any], default: str, key: str = "suite"
) -> dict[str, Any]:
    """The name a suite or case goes on with when its own has a problem."""
    return {key: default} if key in bad or key not in data else {}


def _gates(entry: SuiteFile) -> CostGates | None:
    """The suite's ``cost_gates:``, or ``None``."""
    from toolproof.evals._costs import gate_settings

    return None if entry.cost_gates is None else gate_settings(entry.cost_gates)


def _config(settings: CaseSettings, agent: AgentSpec, mocks: tuple[MockSpec, ...]) -> CaseConfig:
    """The config of validated ``settings``, with their agent and mocks resolved."""
    values = {name: getattr(settings, name) for name in CaseSettings.model_fields}
    values.update(agent=agent, mocks=mocks, real_tools=tuple(settings.real_tools))
    values.update(trials=settings.trials.max, until=settings.trials.until)
    return CaseConfig(**values)
