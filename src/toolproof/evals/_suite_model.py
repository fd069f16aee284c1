"""The suite file format as pydantic models: what each key accepts, and in what words.

The loader (``toolproof.evals._suite``) validates a suite's mappings with these models and
reports their problems with file and line; what needs the agent (tool names, argument
names, scripted calls, mocks) is checked there against the loaded agent. The same models
generate the published JSON Schema (:func:`suite_json_schema`).

Each setting of a case is one field of :class:`CaseSettings`: its type, its default, and
what it accepts in words. A suite sets defaults, a case its own values; the loader
validates them merged (the case's over the suite's), each problem reported where the value
was written (a suite default that every case overrides is never used, so never reported),
and the validated settings are the case's :class:`~toolproof.evals.CaseConfig` once the
agent and the mocks are resolved.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    WithJsonSchema,
    create_model,
    field_validator,
)

from toolproof._filemodel import Expected, FileModel, problem, problems_of
from toolproof._messages import ModelSettings
from toolproof._yaml import describe_type, format_path
from toolproof.errors import UserError
from toolproof.evals._attacks import AttacksSpec
from toolproof.evals._cases import PassRule

__all__ = [
    "CASE_KEYS",
    "DATASET_KEYS",
    "DEFAULT_KEYS",
    "SCHEMA_URL",
    "SETTINGS_KEYS",
    "SUITE_KEYS",
    "CaseEntry",
    "CaseSettings",
    "DatasetEntry",
    "ExternalAgentSpec",
    "PassRule",
    "SettingsSpec",
    "StatisticsSpec",
    "SuiteFile",
    "Trials",
    "suite_json_schema",
]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Deferred(FileModel):
    """A suite model built at its first use, not at import.

    A run validates three of these models (the suite, its cases, their settings); the
    others (agents you did not build, datasets) and the shared bases are never built unless
    a suite uses them.
    """

    model_config = ConfigDict(defer_build=True)


# -- pass rules ---------------------------------------------------------------------------------


_PASS_RULE_WORDS = "all, any, {at_least: N} or {rate: R} with 0 < R <= 1"
_PASS_RULE_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"enum": ["all", "any"]},
        {
            "type": "object",
            "properties": {"at_least": {"type": "integer", "minimum": 1}},
            "required": ["at_least"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}},
            "required": ["rate"],
            "additionalProperties": False,
        },
    ],
}


def _pass_rule(value: Any) -> PassRule:
    if value in ("all", "any"):
        return PassRule(value)
    if isinstance(value, Mapping) and len(value) == 1:
        ((kind, number),) = value.items()
        if kind == "at_least" and isinstance(number, int) and not isinstance(number, bool):
            if number >= 1:
                return PassRule("at_least", number)
        elif kind == "rate" and _is_number(number) and 0 < number <= 1:
            return PassRule("rate", float(number))
    raise problem(f"expected {_PASS_RULE_WORDS}, got {value!r}")


# -- trials -------------------------------------------------------------------------------------


class Trials(NamedTuple):
    """``trials:`` as validated: how many trials at most, and whether all of them run.

    Attributes:
        max: How many times the case runs (at most, with ``until: decided``).
        until: ``"all"`` (every trial runs) or ``"decided"`` (trials stop as soon as the
            pass rule's verdict is known at the run's confidence level).
    """

    max: int
    until: Literal["all", "decided"] = "all"


_TRIALS_WORDS = "a positive integer, or {max: N, until: decided}"
_TRIALS_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "integer", "minimum": 1},
        {
            "type": "object",
            "properties": {
                "max": {"type": "integer", "minimum": 1},
                "until": {"enum": ["decided", "all"]},
            },
            "required": ["max"],
            "additionalProperties": False,
        },
    ],
}


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _trials(value: Any) -> Trials:
    if _count(value):
        return Trials(value)
    if isinstance(value, Mapping) and set(value) <= {"max", "until"}:
        until = value.get("until", "decided")
        if _count(value.get("max")) and until in ("decided", "all"):
            return Trials(value["max"], until)
    raise problem(f"expected {_TRIALS_WORDS}, got {value!r}")


# -- model settings -----------------------------------------------------------------------------


def _typed(*kinds: type) -> Expected:
    return Expected(" or ".join(kind.__name__ for kind in kinds))


class SettingsSpec(_Deferred):
    """``settings:``: model settings sent with every request."""

    temperature: Annotated[float | None, _typed(int, float)] = None
    max_tokens: Annotated[int | None, _typed(int)] = None
    seed: Annotated[int | None, _typed(int)] = None
    stop: Annotated[list[Any] | str | None, _typed(list, str)] = None
    tool_choice: Annotated[str | None, _typed(str)] = None
    parallel_tool_calls: Annotated[bool | None, _typed(bool)] = None
    extra: Annotated[dict[str, Any] | None, _typed(dict)] = None


SETTINGS_KEYS = tuple(SettingsSpec.model_fields)
_SETTINGS_WORDS = f"model settings: {', '.join(SETTINGS_KEYS)}"


def _model_settings(value: Any) -> ModelSettings | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise problem(f"expected {_SETTINGS_WORDS}, got {describe_type(value)}")
    clean = SettingsSpec.model_validate(value).model_dump(exclude_unset=True)
    if isinstance(clean.get("stop"), str):
        clean["stop"] = [clean["stop"]]
    return ModelSettings(**clean)


# -- agents you did not build -------------------------------------------------------------------

_EXTERNAL_KEYS = {
    "command": "the program to run: a command line ('python my_agent.py'), or a list",
    "http": "the URL each input is POSTed to as JSON {input, base_url, api_key}",
    "timeout": "seconds a run may take",
    "env": "extra environment variables for the program",
    "cwd": "the program's working directory (relative to the suite file)",
}


def _unknown_agent_key(key: Any, allowed: list[str]) -> str:
    return f"unknown key {key!r} in agent; known: {', '.join(allowed)}"


def _env_values(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(
        isinstance(v, (str, int, float)) for v in value.values()
    ):
        raise problem("expected a mapping of variable names to values")
    return value


class ExternalAgentSpec(_Deferred):
    """``agent: {command: ...}`` or ``agent: {http: ...}``: an agent toolproof did not build."""

    command: Annotated[
        str | list[str] | None,
        Field(description=_EXTERNAL_KEYS["command"]),
        Expected("a command line or a list of strings"),
    ] = None
    http: Annotated[
        str | None,
        Field(description=_EXTERNAL_KEYS["http"], pattern="^https?://"),
        Expected("an http:// or https:// URL"),
    ] = None
    timeout: Annotated[
        float | None,
        Field(description=_EXTERNAL_KEYS["timeout"], gt=0),
        Expected("a positive number of seconds"),
    ] = None
    env: Annotated[
        dict[Any, Any] | None,
        Field(description=_EXTERNAL_KEYS["env"]),
        WithJsonSchema(
            {
                "type": "object",
                "additionalProperties": {"type": ["string", "number"]},
                "description": _EXTERNAL_KEYS["env"],
            }
        ),
        BeforeValidator(_env_values),
    ] = None
    cwd: Annotated[
        str | None, Field(description=_EXTERNAL_KEYS["cwd"]), Expected("a folder path")
    ] = None

    unknown_key: ClassVar[Any] = staticmethod(_unknown_agent_key)

    @field_validator("command", mode="after")
    @classmethod
    def _command(cls, value: Any) -> Any:
        if value is not None and (not value or (isinstance(value, str) and not value.strip())):
            raise problem(f"expected a command line or a list of strings, got {value!r}")
        return value

    @classmethod
    def first_problem(cls, spec: Mapping[str, Any]) -> str | None:
        """The first problem of ``spec`` as the suite reports it (``agent.http: ...``)."""
        unknown = sorted(set(map(str, spec)) - set(_EXTERNAL_KEYS))
        if unknown:
            return _unknown_agent_key(unknown[0], list(_EXTERNAL_KEYS))
        if (spec.get("command") is None) == (spec.get("http") is None):
            return "an agent mapping needs exactly one of 'command' (a program) or 'http' (a URL)"
        try:
            cls.model_validate(spec)
        except ValidationError as exc:
            path, message = problems_of(exc)[0]
            return f"agent.{format_path(path)}: {message}"
        return None


_AGENT_WORDS = (
    "an import path 'module:factory' of a function (model, tools) -> Agent, an Agent, "
    "or an agent you did not build: {command: 'python my_agent.py'} or {http: URL}"
)


def _agent(value: Any) -> Any:
    if value is None:
        raise problem(
            "no 'agent': set it in the suite (or the case) to 'module:factory', a function "
            "(model, tools) -> Agent"
        )
    if isinstance(value, Mapping):
        found = ExternalAgentSpec.first_problem(value)
        if found is not None:
            raise problem(found)
        return value
    if not isinstance(value, str):
        raise problem(f"expected {_AGENT_WORDS}, got {describe_type(value)}")
    return value


def _agent_schema(schema: dict[str, Any]) -> None:
    external = ExternalAgentSpec.model_json_schema()
    external.pop("title", None)
    external["anyOf"] = [{"required": ["command"]}, {"required": ["http"]}]
    schema.update(anyOf=[{"type": "string", "pattern": r"^[\w.]+[:.]\w+$"}, external])


# -- a case's settings --------------------------------------------------------------------------


def _schema(value: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """``json_schema_extra`` that sets the schema of a field whose type a validator decides."""

    def fill(schema: dict[str, Any]) -> None:
        schema.pop("anyOf", None)
        schema.update(value)

    return fill


class CaseSettings(_Deferred):
    """The settings of a case: each field is one key a suite (its default) or a case sets.

    A field's description says what the key accepts; it is the wording of the key's
    problems, of the editors' completion and of the JSON Schema. A new setting is one field
    here: the loader merges, validates and hands it to the case's config as it is.
    """

    agent: Annotated[Any, BeforeValidator(_agent)] = Field(
        None, description=_AGENT_WORDS, json_schema_extra=_agent_schema
    )
    agent_options: Annotated[dict[Any, Any], Expected("a mapping of keyword arguments", "type")] = (
        Field(
            default_factory=dict,
            description="a mapping of keyword arguments passed to the agent factory",
        )
    )
    model: Annotated[str | None, Field(min_length=1), Expected(got="type")] = Field(
        None, description="a model string such as 'deepseek:deepseek-chat', or 'scripted'"
    )
    judge_model: Annotated[str | None, Field(min_length=1), Expected(got="type")] = Field(
        None, description="a model string for the judged checks"
    )
    tools: Annotated[Literal["real", "mock"], Expected()] = Field(
        "mock", description="real or mock"
    )
    tool_modes: Annotated[dict[str, Any], Expected(got="type")] = Field(
        default_factory=dict,
        description="a mapping of tool name to real or mock",
        json_schema_extra=_schema(
            {"type": "object", "additionalProperties": {"enum": ["real", "mock"]}}
        ),
    )
    real_tools: Annotated[list[str], Expected(got="type")] = Field(
        default_factory=list,
        description="a list of tool names that run their real code although tools are mocked",
    )
    mocks: Any = Field(
        default_factory=list,
        description=(
            "a fixture file (.yaml, .yml, .json), an import path 'module:factory' returning "
            "mock providers, or a list of them"
        ),
        json_schema_extra=_schema(
            {
                "anyOf": [
                    {"type": "string", "minLength": 1},
                    {"type": "array", "items": {"type": "string", "minLength": 1}},
                ]
            }
        ),
    )
    trials: Annotated[Trials, BeforeValidator(_trials), WithJsonSchema(_TRIALS_SCHEMA)] = Field(
        Trials(1), description=_TRIALS_WORDS
    )
    pass_rule: Annotated[
        PassRule, BeforeValidator(_pass_rule), WithJsonSchema(_PASS_RULE_SCHEMA)
    ] = Field(PassRule(), description=_PASS_RULE_WORDS)
    gate: Annotated[Literal["block", "advise"], Expected()] = Field(
        "block", description="block or advise"
    )
    judge_when: Annotated[Literal["objective_pass", "always"], Expected()] = Field(
        "objective_pass", description="objective_pass or always"
    )
    judge_inconclusive: Annotated[Literal["fail", "pass"], Expected()] = Field(
        "fail", description="fail or pass"
    )
    judge_sees_agent: Annotated[bool, Expected("true or false")] = Field(
        True, description="true or false: show the judge the agent's system prompt and tools"
    )
    settings: Annotated[
        ModelSettings | None,
        PlainValidator(_model_settings, json_schema_input_type=SettingsSpec | None),
    ] = Field(None, description=_SETTINGS_WORDS)
    retries: Annotated[int, Field(ge=0), Expected("a non-negative integer")] = Field(
        2, description="a non-negative integer (retries of a trial after infrastructure errors)"
    )
    timeout: Annotated[float | None, Field(gt=0), Expected("a positive number of seconds")] = Field(
        None, description="seconds per trial (a positive number)"
    )

    @field_validator("real_tools", mode="after")
    @classmethod
    def _once(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


#: The settings keys: a suite's defaults for every case, which each case may override.
DEFAULT_KEYS: dict[str, str] = {
    name: field.description or "" for name, field in CaseSettings.model_fields.items()
}


# -- suites and cases ---------------------------------------------------------------------------

#: Where the published suite schema lives (the file shipped in ``toolproof/schemas/``).
SCHEMA_URL = (
    "https://raw.githubusercontent.com/toolproof/toolproof/main/src/toolproof/schemas/"
    "suite.schema.json"
)

_JUDGE = "a rubric line or a list of them (strings)"
_TAGS = "a list of tags (strings)"


def _judge_lines(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(t, str) and t.strip() for t in value)
    ):
        raise problem(f"expected {_JUDGE}, got {describe_type(value)}")
    return list(value)


def _tag_list(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(t, str) and t for t in value):
        raise problem(f"expected {_TAGS}, got {describe_type(value)}")
    return list(value)


def _only(test: Callable[[Any], bool], words: str) -> BeforeValidator:
    """A validator refusing a value that fails ``test``: ``{words}, got {its type}``."""

    def check(value: Any) -> Any:
        if not test(value):
            raise problem(f"{words}, got {describe_type(value)}")
        return value

    return BeforeValidator(check)


def _optional(kind: type) -> Callable[[Any], bool]:
    return lambda value: value is None or isinstance(value, kind)


def _filled_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value)


_STRINGS = {"type": "array", "items": {"type": "string"}}
Judge = Annotated[
    list[str] | None,
    BeforeValidator(_judge_lines),
    WithJsonSchema({"description": _JUDGE, "anyOf": [{"type": "string"}, _STRINGS]}),
]
Tags = Annotated[
    list[str] | None,
    BeforeValidator(_tag_list),
    WithJsonSchema({"description": _TAGS, "anyOf": [{"type": "string"}, _STRINGS]}),
]
ExpectSpec = Annotated[
    dict[Any, Any] | None,
    _only(_optional(Mapping), "expected a mapping of checks"),
    WithJsonSchema({"x-ref": "Expect"}),  # becomes a $ref in suite_json_schema()
]
Description = Annotated[str | None, _only(_optional(str), "expected a string")]
Metadata = Annotated[dict[Any, Any] | None, _only(_optional(Mapping), "expected a mapping")]


def _setting_schema(key: str) -> Callable[[dict[str, Any]], None]:
    """The JSON Schema of setting ``key`` as :class:`CaseSettings` describes it."""

    def fill(schema: dict[str, Any]) -> None:
        settings = CaseSettings.model_json_schema()
        prop = dict(settings["properties"][key])
        prop.pop("default", None)
        prop.pop("title", None)
        text = json.dumps(prop)
        for name, definition in settings.get("$defs", {}).items():
            # Inline the definitions of the settings (the suite schema has its own).
            ref = json.dumps({"$ref": f"#/$defs/{name}"})
            definition = {k: v for k, v in definition.items() if k != "title"}
            text = text.replace(ref, json.dumps(definition))
        schema.update(json.loads(text))

    return fill


class _WithSettings(_Deferred):
    def own_settings(self) -> dict[str, Any]:
        """The settings written in this mapping, as written."""
        return {key: getattr(self, key) for key in DEFAULT_KEYS if key in self.model_fields_set}


#: The settings as keys of a suite (defaults) or of a case (its own). They take any value
#: here: :class:`CaseSettings` checks them once merged (a suite default that every case
#: overrides is never used). The JSON Schema still says what each accepts.
_Defaults: type[_WithSettings] = create_model(
    "_Defaults",
    __base__=_WithSettings,
    **{  # type: ignore[call-overload]
        key: (Any, Field(None, json_schema_extra=_setting_schema(key))) for key in DEFAULT_KEYS
    },
)


def _turn(value: Any) -> str | TurnEntry:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return TurnEntry.model_validate(value)
    raise problem(f"a turn is a string or {{input, expect}}, got {describe_type(value)}")


class TurnEntry(_Deferred):
    """One turn of ``turns:`` written as a mapping."""

    input: str = Field(description="the user's message")
    expect: ExpectSpec = Field(None, description="checks of this turn")

    missing: ClassVar[dict[str, str]] = {"input": "a turn needs an 'input' string"}

    @field_validator("input", mode="before")
    @classmethod
    def _input(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise problem("a turn needs an 'input' string", parent=True)
        return value


CASE_KEYS: dict[str, str] = {
    "name": "the case's name, unique in the suite",
    "description": "a string",
    "input": "the user's message",
    "turns": "user messages of a multi-turn conversation (strings or {input, expect})",
    "user": (
        "a user who converses with the agent: persona, instructions, knows, user_model, "
        "max_turns, script (fixed, function and simulated turns)"
    ),
    "expect": "objective checks",
    "judge": "rubric lines for the judge model (a string or a list of strings)",
    "script": "responses of the scripted model: text, {call: {name, arguments}}, a list of calls",
    "tags": "a list of strings",
    "metadata": "a mapping (context for the run and the judge)",
    "skip": "true or a reason: the case is reported as skipped",
    **DEFAULT_KEYS,
}


def _skip(value: Any) -> Any:
    if value is True or value is False or (isinstance(value, str) and value.strip()):
        return value
    raise problem(f"expected true or a reason, got {value!r}")


def _case_name(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise problem("each case needs a 'name' (a non-empty string)")
    return value


class CaseEntry(_Defaults):  # type: ignore[misc,valid-type]
    """One entry of ``cases:``."""

    name: Annotated[str, BeforeValidator(_case_name)] = Field(description=CASE_KEYS["name"])
    description: Description = Field(None, description=CASE_KEYS["description"])
    input: Annotated[
        str | None, _only(lambda value: isinstance(value, str), "'input' must be a string")
    ] = Field(
        None, json_schema_extra=_schema({"type": "string", "description": CASE_KEYS["input"]})
    )
    turns: Annotated[
        list[Annotated[str | TurnEntry, PlainValidator(_turn)]] | None,
        _only(_filled_list, "'turns' must be a non-empty list"),
    ] = Field(
        None,
        json_schema_extra=_schema(
            {
                "type": "array",
                "minItems": 1,
                "items": {"anyOf": [{"type": "string"}, {"x-ref": "TurnEntry"}]},
                "description": CASE_KEYS["turns"],
            }
        ),
    )
    user: Any = Field(None, json_schema_extra={"x-ref": "UserEntry"})
    expect: ExpectSpec = Field(None, description=CASE_KEYS["expect"])
    judge: Judge = None
    script: Any = Field(
        None,
        json_schema_extra=_schema(
            {"type": "array", "minItems": 1, "description": CASE_KEYS["script"]}
        ),
    )
    tags: Tags = None
    metadata: Metadata = Field(None, description=CASE_KEYS["metadata"])
    skip: Annotated[bool | str | None, BeforeValidator(_skip)] = Field(
        None, description=CASE_KEYS["skip"]
    )

    missing: ClassVar[dict[str, str]] = {"name": "each case needs a 'name' (a non-empty string)"}

    @classmethod
    def allowed_keys(cls) -> list[str]:
        """The keys of a case, in the order of :data:`CASE_KEYS`."""
        return list(CASE_KEYS)


#: The keys of one entry of ``datasets:`` (toolproof.evals._dataset reads the files).
DATASET_KEYS: dict[str, str] = {
    "file": "a .jsonl or .csv file (relative to the suite file)",
    "template": "a case with {column} placeholders, filled from each row",
}


class DatasetEntry(_Deferred):
    """One entry of a suite's ``datasets:``: a file of rows and the case each row becomes."""

    file: str = Field(description=DATASET_KEYS["file"])
    template: dict[Any, Any] = Field(description=DATASET_KEYS["template"])

    missing: ClassVar[dict[str, str]] = {
        "file": f"missing 'file': {DATASET_KEYS['file']}",
        "template": f"missing 'template': {DATASET_KEYS['template']}",
    }

    @field_validator("file", mode="before")
    @classmethod
    def _file(cls, value: Any) -> Any:
        if not isinstance(value, str) or not value.strip():
            raise problem(f"expected {DATASET_KEYS['file']}, got {describe_type(value)}")
        return value

    @field_validator("template", mode="before")
    @classmethod
    def _template(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise problem(f"expected {DATASET_KEYS['template']}, got {describe_type(value)}")
        return value


SUITE_KEYS: dict[str, str] = {
    "suite": "the suite's name",
    "description": "a string",
    "cases": "a list of cases",
    "datasets": "cases from JSONL or CSV files: a list of {file, template}",
    "expect": "checks applied to every case (a case's own keys win)",
    "judge": "rubric lines applied to every case without its own 'judge'",
    "tags": "a list of tags given to every case",
    "metadata": "a mapping merged into every case's metadata",
    "checks": "modules that register your own checks (import paths such as 'mypkg.checks')",
    "statistics": "intervals and the eval gate: {confidence, interval, max_failure_rate, "
    "gate_mode}",
    "attacks": "attacks through tool results: injections, goals, templates (see attacks.md)",
    "cost_gates": "how much the p95 latency and the cost per case may grow over the baseline "
    "run: {p95_latency: 20%, cost_per_case: 10%}",
    **DEFAULT_KEYS,
}


def _list_of(entry: str, key: str) -> Callable[[dict[str, Any]], None]:
    def fill(schema: dict[str, Any]) -> None:
        schema.pop("default", None)
        schema.pop("anyOf", None)
        schema.update(type="array", minItems=1, items={"x-ref": entry}, description=SUITE_KEYS[key])

    return fill


def _cases_or_datasets(schema: dict[str, Any]) -> None:
    # A suite has its own cases, cases from datasets, or both.
    schema["anyOf"] = [{"required": ["cases"]}, {"required": ["datasets"]}]


class StatisticsSpec(_Deferred):
    """``statistics:``: the level and method of the intervals, and the eval gate."""

    confidence: Annotated[
        float | None, Field(gt=0, lt=1), Expected("a number between 0 and 1 (e.g. 0.95)")
    ] = None
    interval: Annotated[
        Literal["wilson", "clopper-pearson"] | None, Expected("wilson or clopper-pearson")
    ] = None
    max_failure_rate: Annotated[
        float | None, Field(ge=0, le=1), Expected("a rate between 0 and 1 (e.g. 0.1)")
    ] = None
    gate_mode: Annotated[Literal["advisory", "release"] | None, Expected("advisory or release")] = (
        None
    )


def _cost_gates(value: Any) -> Any:
    from toolproof.evals._costs import gate_settings

    try:
        gate_settings(value)
    except ValueError as exc:
        raise problem(str(exc)) from None
    return value


def _suite_name(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise problem("'suite' must be the suite's name (a non-empty string)")
    return value


def _datasets(value: Any) -> Any:
    if not isinstance(value, list) or not value:
        got = "an empty list" if value == [] else describe_type(value)
        raise problem(f"expected a list of {{file, template}}, got {got}")
    return value


def _check_modules(value: Any) -> Any:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise problem(
            f"expected a list of module import paths ('mypkg.checks'), got {describe_type(value)}"
        )
    return value


class SuiteFile(_Defaults):  # type: ignore[misc,valid-type]
    """A suite file (``*.eval.yaml``)."""

    model_config = ConfigDict(json_schema_extra=_cases_or_datasets)

    suite: Annotated[str, BeforeValidator(_suite_name)] = Field(description=SUITE_KEYS["suite"])
    description: Description = Field(None, description=SUITE_KEYS["description"])
    # Required unless `datasets` is given: the loader reports a suite with neither.
    cases: Annotated[
        list[Any] | None, _only(_filled_list, "'cases' must be a non-empty list of cases")
    ] = Field(None, json_schema_extra=_list_of("CaseEntry", "cases"))
    datasets: Annotated[list[DatasetEntry] | None, BeforeValidator(_datasets)] = Field(
        None, json_schema_extra=_list_of("DatasetEntry", "datasets")
    )
    expect: ExpectSpec = Field(None, description=SUITE_KEYS["expect"])
    judge: Judge = None
    tags: Tags = None
    metadata: Metadata = Field(None, description=SUITE_KEYS["metadata"])
    checks: Annotated[list[str] | None, BeforeValidator(_check_modules)] = Field(
        None, description=SUITE_KEYS["checks"]
    )
    statistics: StatisticsSpec | None = Field(None, description=SUITE_KEYS["statistics"])
    attacks: AttacksSpec | None = Field(None, description=SUITE_KEYS["attacks"])
    cost_gates: Annotated[dict[str, Any] | None, BeforeValidator(_cost_gates)] = Field(
        None, description=SUITE_KEYS["cost_gates"]
    )

    missing: ClassVar[dict[str, str]] = {
        "suite": "'suite' must be the suite's name (a non-empty string)",
        "cases": "missing 'cases': a list of cases, each with a 'name' and an 'input'",
    }

    @classmethod
    def allowed_keys(cls) -> list[str]:
        """The keys of a suite, in the order of :data:`SUITE_KEYS`."""
        return list(SUITE_KEYS)


def suite_json_schema(*, strict_checks: bool = False) -> dict[str, Any]:
    """The JSON Schema of a suite file, generated from these models and the check registry.

    Args:
        strict_checks: Refuse ``expect`` keys that are not registered checks. The published
            file allows them (your own checks are registered by your modules), and types
            every built-in check.
    """
    from toolproof.evals._checks import registered
    from toolproof.evals._users import UserEntry

    schema = SuiteFile.model_json_schema()
    definitions: dict[str, Any] = dict(schema.pop("$defs", {}))
    for model in (CaseEntry, TurnEntry, DatasetEntry, UserEntry):
        part = model.model_json_schema()
        definitions.update(part.pop("$defs", {}))
        definitions[model.__name__] = part
    checks: dict[str, Any] = {}
    for name, definition in registered().items():
        if strict_checks or definition.builtin:
            entry = dict(definition.schema or {})
            # A spec model's own definitions move to the root, where its $refs point.
            for model, part in entry.pop("$defs", {}).items():
                if definitions.setdefault(model, part) != part:
                    raise UserError(
                        f"the spec of check {name!r} names a model {model!r} like another part "
                        "of the suite schema; rename the model"
                    )
            entry.setdefault("description", definition.accepts)
            checks[name] = entry
    definitions["Expect"] = {
        "title": "Expect",
        "description": "objective checks: each key is a registered check",
        "type": "object",
        "properties": checks,
        "additionalProperties": not strict_checks,
    }
    out: dict[str, Any] = _refs(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": SCHEMA_URL,
            **schema,
            "title": "toolproof eval suite",
            "$defs": dict(sorted(definitions.items())),
        }
    )
    return out


def _refs(node: Any) -> Any:
    """``{"x-ref": "Name"}`` placeholders as ``$ref`` to the schema's definitions."""
    if isinstance(node, dict):
        if set(node) == {"x-ref"}:
            return {"$ref": f"#/$defs/{node['x-ref']}"}
        if "x-ref" in node:
            rest = {k: _refs(v) for k, v in node.items() if k != "x-ref"}
            return {"$ref": f"#/$defs/{node['x-ref']}", **rest}
        return {k: _refs(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_refs(item) for item in node]
    return node
