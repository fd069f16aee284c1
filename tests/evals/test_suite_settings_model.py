"""A setting of a case is one field of ``CaseSettings``, and that field is enough.

Every field must be a key of suites and cases, be listed with its words in the published
JSON Schema, and reach the loaded case's config as written: from the suite (a default) and
from the case (its own value), validated once.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolproof.cli._formats import suite_schema_text
from toolproof.errors import ConfigError
from toolproof.evals import load_suite
from toolproof.evals._cases import CaseConfig
from toolproof.evals._suite_model import (
    CASE_KEYS,
    DEFAULT_KEYS,
    SUITE_KEYS,
    CaseEntry,
    CaseSettings,
    SuiteFile,
)

HERE = Path(__file__).resolve().parent

#: A value other than the default for each setting (the agent and its mocks resolve to
#: objects, checked apart). A new setting needs a sample here: the test names it.
SAMPLES: dict[str, Any] = {
    "agent_options": {"max_steps": 3},
    "model": "scripted",
    "judge_model": "scripted",
    "tools": "real",
    "tool_modes": {"multiply_numbers": "real"},
    "real_tools": ["multiply_numbers", "multiply_numbers"],
    "trials": {"max": 3, "until": "decided"},
    "pass_rule": {"rate": 0.5},
    "gate": "advise",
    "judge_when": "always",
    "judge_inconclusive": "pass",
    "judge_sees_agent": False,
    "settings": {"temperature": 0.5, "stop": "END"},
    "retries": 0,
    "timeout": 12.5,
}
RESOLVED = {"agent", "mocks"}
SETTINGS = sorted(set(CaseSettings.model_fields) - RESOLVED)


def test_every_setting_has_a_sample() -> None:
    assert sorted(SAMPLES) == SETTINGS, "give each setting of CaseSettings a sample above"


@pytest.mark.parametrize("key", sorted(CaseSettings.model_fields))
def test_every_setting_is_a_key_of_suites_and_cases_in_the_schema(key: str) -> None:
    words = CaseSettings.model_fields[key].description
    assert words, f"{key}: say in the field's description what it accepts"
    assert DEFAULT_KEYS[key] == SUITE_KEYS[key] == CASE_KEYS[key] == words
    schema = json.loads(suite_schema_text())
    for where in (schema["properties"], schema["$defs"]["CaseEntry"]["properties"]):
        assert where[key]["description"] == words
    assert key in {f.name for f in dataclasses.fields(CaseConfig)}


def test_the_config_has_an_attribute_for_every_setting_and_no_other() -> None:
    # `trials` also gives `until`; every other attribute is the setting of its name.
    attributes = {f.name for f in dataclasses.fields(CaseConfig)}
    assert attributes == {*CaseSettings.model_fields, "until"}


def _load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suite: dict[str, Any]) -> Any:
    monkeypatch.syspath_prepend(str(HERE))
    document = {
        "suite": "s",
        "agent": "evalagents:build_agent",
        **suite,
        "cases": [
            {"name": "inherits", "input": "hi"},
            {"name": "own", "input": "hi", **suite.get("own", {})},
        ],
    }
    document.pop("own", None)
    path = tmp_path / "s.eval.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    return load_suite(path)


@pytest.mark.parametrize("key", SETTINGS)
def test_every_setting_reaches_the_config_from_the_suite_and_from_the_case(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = SAMPLES[key]
    expected = _as_config(key, getattr(CaseSettings.model_validate({key: value}), key))
    default = _as_config(key, getattr(CaseSettings.model_validate({}), key))
    assert expected != default, f"{key}: the sample must differ from the default"
    # From the suite: every case gets it.
    inherits, own = _load(tmp_path, monkeypatch, {key: value}).cases
    assert _read(inherits.config, key) == expected
    assert _read(own.config, key) == expected
    # From a case: only that case.
    inherits, own = _load(tmp_path, monkeypatch, {"own": {key: value}}).cases
    assert _read(inherits.config, key) == default
    assert _read(own.config, key) == expected


def _as_config(key: str, validated: Any) -> Any:
    """A validated setting as the config holds it (tuples for lists, trials as a pair)."""
    return tuple(validated) if isinstance(validated, list) else validated


def _read(config: CaseConfig, key: str) -> Any:
    if key == "trials":
        return (config.trials, config.until)
    return getattr(config, key)


def test_the_agent_and_the_mocks_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = _load(tmp_path, monkeypatch, {"mocks": "evalagents:order_mocks"})
    config = suite.cases[0].config
    assert config.agent.source == "evalagents:build_agent"
    assert "multiply_numbers" in config.agent.tools
    assert [spec.source for spec in config.mocks] == ["evalagents:order_mocks"]


@pytest.mark.parametrize(
    ("model", "keys", "where"),
    [(SuiteFile, SUITE_KEYS, ()), (CaseEntry, CASE_KEYS, ("$defs", "CaseEntry"))],
    ids=["suite", "case"],
)
def test_every_key_of_suites_and_cases_is_a_field_listed_in_the_schema(
    model: Any, keys: dict[str, str], where: tuple[str, ...]
) -> None:
    assert sorted(model.model_fields) == sorted(keys)
    schema = json.loads(suite_schema_text())
    for part in where:
        schema = schema[part]
    assert sorted(schema["properties"]) == sorted(keys)


@pytest.mark.parametrize(
    ("key", "value", "loaded"),
    [
        ("statistics", {"confidence": 0.9, "gate_mode": "release"}, None),
        ("cost_gates", {"p95_latency": "20%"}, "p95_latency=0.2"),
    ],
)
def test_suite_keys_that_are_not_settings_reach_the_loaded_suite(
    key: str, value: Any, loaded: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert getattr(_load(tmp_path, monkeypatch, {}), key) is None
    got = getattr(_load(tmp_path, monkeypatch, {key: value}), key)
    assert got == value if loaded is None else loaded in repr(got)


def test_a_case_user_reaches_the_loaded_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    path = tmp_path / "s.eval.yaml"
    path.write_text(
        "suite: s\nagent: evalagents:build_agent\ncases:\n"
        "  - {name: talks, user: {script: [hi, thanks]}}\n  - {name: plain, input: hi}\n",
        encoding="utf-8",
    )
    talks, plain = load_suite(path).cases
    assert talks.user is not None and talks.turns == []
    assert plain.user is None and [t.input for t in plain.turns] == ["hi"]


@pytest.mark.parametrize("bad", [{"input": 1}, {"inptu": "hi"}, 3, {"input": "hi", "x": 1}])
def test_a_bad_turn_does_not_hide_the_problems_of_the_others(
    bad: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    turns = [bad, {"input": "then", "expect": {"tools_called": ["no_such_tool"]}}]
    document = {
        "suite": "s",
        "agent": "evalagents:build_agent",
        "cases": [{"name": "talk", "turns": turns}],
    }
    path = tmp_path / "s.eval.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_suite(path)
    problems = raised.value.problems or []
    assert any("cases[0].turns[0]" in p for p in problems), problems
    assert any(
        "turns[1].expect.tools_called[0]: unknown tool 'no_such_tool'" in p for p in problems
    )
