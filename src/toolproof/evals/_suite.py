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

import difflib
import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import toolproof.evals._builtins  # noqa: F401 (registers the built-in checks)
from toolproof._filemodel import validate
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
    _external_agent,
    _model_settings,
    _pass_rule,
)
from toolproof.evals._checks import Check, compile_expect
from toolproof.evals._resolve import _Resolver
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
    from toolproof.models.fake import ScriptItem

__all__ = [
    "CASE_KEYS",
    "DEFAULT_KEYS",
    "SETTINGS_KEYS",
    "SUITE_KEYS",
    "AgentSpec",
    "Case",
    "CaseConfig",
    "MockSpec",
    "PassRule",
    "Suite",
    "Turn",
    "_Builder",
    "_Resolver",
    "discover_suite_files",
    "is_suite_file",
    "load_suite",
    "load_suites",
    "select_cases",
]

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
    "judge_sees_agent": True,
    "settings": None,
    "retries": 2,
    "timeout": None,
}

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
        self.inherited: tuple[CaseConfig, AgentSpec | None] | None = None  # see case()

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
        _, bad = validate(SuiteFile, data, self.problems)
        if "cases" not in data and "datasets" not in data:
            self.add((), SuiteFile.missing["cases"])
        data = {key: value for key, value in data.items() if key not in bad}
        name = data.get("suite", self.file.stem)
        description = data.get("description")
        statistics = data.get("statistics")
        self.import_checks(data.get("checks") or [])
        defaults = dict(_DEFAULTS)
        for key in DEFAULT_KEYS:
            if key in data:
                defaults[key] = data[key]
        suite_origin = {key: ("suite", key) for key in DEFAULT_KEYS if key in data}
        suite_expect = data.get("expect")
        suite_judge = _lines(data.get("judge")) if "judge" in data else []
        suite_tags = _lines(data.get("tags")) if "tags" in data else []
        suite_metadata = dict(data.get("metadata") or {})
        cases_data = data.get("cases") or []
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
        # Cases from `datasets:` (toolproof.evals._dataset): each row of a file through a
        # template; problems name the file, the row and the key.
        if data.get("datasets") is None:
            return self.attacked(
                Suite(name, self.file, cases, description, statistics, _gates(data)), data
            )
        from toolproof.evals._dataset import dataset_cases

        case_args = (name, defaults, suite_origin, suite_expect or {}, suite_judge, suite_tags)
        taken = {*seen, *(case.name for case in cases)}
        for case in dataset_cases(self, data, (*case_args, suite_metadata)):
            if case.name in taken:
                self.add(("datasets",), f"case name {case.name!r} is used twice in the suite")
            else:
                taken.add(case.name)
                cases.append(case)
        return self.attacked(
            Suite(name, self.file, cases, description, statistics, _gates(data)), data
        )

    def attacked(self, suite: Suite, data: Mapping[str, Any]) -> Suite:
        """The suite with an attack case per case, template and goal of its ``attacks:``."""
        if data.get("attacks") is None:
            return suite
        from toolproof.evals._attacks import attack_cases

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
        _, bad = validate(CaseEntry, data, self.problems, path)
        name = data.get("name") if "name" not in bad else None
        if not isinstance(name, str):
            name = f"case-{index + 1}"
        own = [key for key in DEFAULT_KEYS if key in data]
        config: CaseConfig | None
        if not own and self.inherited is not None:
            # A case setting none of its own: the suite's, as the first such case checked them.
            config, agent = self.inherited
        else:
            values = dict(suite_defaults)
            origin = dict(suite_origin)
            for key in own:
                values[key] = data[key]
                origin[key] = (*path, key)
            settled = len(self.problems)
            config, agent = self.config(values, origin, path)
            if not own and config is not None and len(self.problems) == settled:
                self.inherited = (config, agent)

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
        elif "user" not in data:
            self.add(path, f"case {name!r} needs an 'input' (or 'turns' for a conversation)")
        tools = agent.tools if agent is not None and not agent.external else None
        user = None
        if "user" in data:
            from toolproof.evals._users import parse_user

            if turns_data:
                self.add((*path, "user"), "give 'input', 'turns' or 'user', not several")
            user = parse_user(self, data["user"], (*path, "user"), tools)

        # Checks: suite expectations under the case's own.
        expect = dict(suite_expect)
        case_expect = data.get("expect") if "expect" not in bad else None
        expect.update(case_expect or {})
        checks: list[Check] = []
        if agent is None:
            # The agent did not load: still report every other problem of the expectations.
            compile_expect(expect, tools=None, problems=self.problems, path=(*path, "expect"))
        elif case_expect:
            # One merged mapping (keys depend on each other: `order` reads `tools_called`);
            # each key's problems point at the line where it was written.
            key_paths: dict[str, DocPath] = dict.fromkeys(suite_expect, ("expect",))
            key_paths.update(dict.fromkeys(case_expect, (*path, "expect")))
            checks = compile_expect(
                expect,
                tools=tools,
                problems=self.problems,
                path=(*path, "expect"),
                key_paths=key_paths,
            )
            _in_order(checks, expect)
        elif suite_expect:
            # Only the suite's checks: compiled and ordered once per agent (checks are
            # immutable).
            if id(agent) not in self.suite_checks:
                compiled = compile_expect(
                    expect, tools=tools, problems=self.problems, path=("expect",)
                )
                self.suite_checks[id(agent)] = _in_order(compiled, expect)
            checks = list(self.suite_checks[id(agent)])

        turns: list[Turn] = []
        for number, item in enumerate(turns_data, 1):
            turn_path: DocPath = (
                (*path, "turns", number - 1) if "turns" in data else (*path, "input")
            )
            if isinstance(item, str):
                turns.append(Turn(item))
            elif isinstance(item, Mapping):
                validate(TurnEntry, item, self.problems, turn_path)
                text = item.get("input")
                if not isinstance(text, str):
                    continue  # the model reported it
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

        judge = _lines(data["judge"]) if "judge" in data and "judge" not in bad else suite_judge
        script = (
            parse_script(self, data["script"], (*path, "script"), tools)
            if "script" in data
            else None
        )
        tags = list(suite_tags)
        own_tags = _lines(data["tags"]) if "tags" in data and "tags" not in bad else []
        tags.extend(tag for tag in own_tags if tag not in tags)
        metadata = {
            **suite_metadata,
            **(dict(data.get("metadata") or {}) if "metadata" not in bad else {}),
        }
        description = data.get("description") if "description" not in bad else None
        skip: str | None = None
        value = data.get("skip", False) if "skip" not in bad else False
        if value is True:
            skip = "skipped in the suite"
        elif isinstance(value, str):
            skip = value
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
            user=user,
        )

    # -- settings -------------------------------------------------------------------------------

    def config(
        self, values: dict[str, Any], origin: dict[str, DocPath], path: DocPath
    ) -> tuple[CaseConfig | None, AgentSpec | None]:
        """The case's settings (``None`` when invalid) and its agent (when it resolved)."""

        def where_of(key: Any) -> DocPath:
            where = origin.get(key, path)
            return where[1:] if where[:1] == ("suite",) else where

        def remap(loc: DocPath) -> DocPath:
            key = loc[0] if loc else None
            return (*where_of(key), *loc[1:]) if key in origin else path

        before = len(self.problems)
        valid, bad = validate(CaseSettings, values, self.problems, remap=remap)
        ok = valid is not None
        checked = valid or _valid_part(values, bad)
        agent: AgentSpec | None = None
        agent_source = values["agent"]
        if "agent" not in bad:
            options = checked.agent_options if "agent_options" not in bad else {}
            if isinstance(agent_source, Mapping):
                try:
                    agent = _external_agent(agent_source, self.file)
                except UserError as exc:  # (a command with an unclosed quote)
                    self.add(where_of("agent"), str(exc))
                    ok = False
            else:
                resolved = self.resolver.agent(agent_source, dict(options), self.file)
                if isinstance(resolved, str):
                    self.add(where_of("agent"), resolved)
                    ok = False
                else:
                    agent = resolved
        tool_modes = checked.tool_modes if "tool_modes" not in bad else {}
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
        real_tools = checked.real_tools if "real_tools" not in bad else []
        if agent is not None:
            for position, tool_name in enumerate(real_tools):
                if tool_name not in agent.tools:
                    self.add(
                        (*where_of("real_tools"), position), _unknown_tool(tool_name, agent.tools)
                    )
                    ok = False
        mocks = self._mocks(values["mocks"], where_of("mocks"), agent)
        trials_spec = checked.trials if "trials" not in bad else None
        until: Literal["all", "decided"] = "all"
        if isinstance(trials_spec, Mapping):
            trials, until = trials_spec["max"], trials_spec["until"]
        else:
            trials = trials_spec
        rule = None if "pass_rule" in bad else _pass_rule(values["pass_rule"])
        if (
            rule is not None
            and rule.kind == "at_least"
            and trials is not None
            and rule.value > trials
        ):
            self.add(
                where_of("pass_rule"),
                f"at_least: {int(rule.value)} can never pass with trials: {trials}; "
                "raise trials or lower N",
            )
            rule = None
        settings = _model_settings(checked.settings) if "settings" not in bad else None
        if (
            not ok
            or len(self.problems) > before
            or agent is None
            or rule is None
            or mocks is None
            or valid is None
            or trials is None
        ):
            return None, agent
        config = CaseConfig(
            agent=agent,
            model=valid.model,
            judge_model=valid.judge_model,
            tools=valid.tools,
            tool_modes=dict(tool_modes),
            real_tools=tuple(dict.fromkeys(real_tools)),
            mocks=tuple(mocks),
            trials=trials,
            until=until,
            pass_rule=rule,
            gate=valid.gate,
            judge_when=valid.judge_when,
            judge_inconclusive=valid.judge_inconclusive,
            judge_sees_agent=valid.judge_sees_agent,
            settings=settings,
            retries=valid.retries,
            timeout=valid.timeout,
        )
        return config, agent

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


def _valid_part(values: dict[str, Any], bad: set[Any]) -> CaseSettings:
    """The settings without the keys that have problems (so the others are still checked)."""
    from pydantic import ValidationError

    try:
        return CaseSettings.model_validate({k: v for k, v in values.items() if k not in bad})
    except ValidationError:  # each problem is under one top-level key: not expected
        return CaseSettings.model_validate({})


def _in_order(checks: list[Check], expect: Mapping[str, Any]) -> list[Check]:
    """``checks`` sorted in place in the order their keys were written in ``expect``."""
    order = {key: position for position, key in enumerate(expect)}
    checks.sort(key=lambda c: order.get(c.name, 0))
    return checks


def _lines(value: Any) -> list[str]:
    """Judge lines or tags as written: a string or a list of them (already checked)."""
    return [value] if isinstance(value, str) else list(value)


def _gates(data: Mapping[str, Any]) -> Any:
    """The suite's ``cost_gates:`` (a ``CostGates``), or ``None``."""
    from toolproof.evals._costs import gate_settings

    return None if data.get("cost_gates") is None else gate_settings(data["cost_gates"])
