"""The published JSON Schema of suite files: generated from the models, and true to them.

The committed file must equal what the models generate; every suite of the examples, the
tests and the docs must validate against it; and the mistakes the loader refuses must be
refused by the schema too (a schema that accepts everything would pass the first tests).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from toolproof.cli._formats import suite_schema_text
from toolproof.evals._checks import registered
from toolproof.evals._suite_model import SCHEMA_URL

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "src" / "toolproof" / "schemas" / "suite.schema.json"


def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_committed_schema_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == suite_schema_text(), (
        "regenerate it: toolproof schema suite -o src/toolproof/schemas/suite.schema.json"
    )
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert schema["$id"] == SCHEMA_URL
    builtin = {name for name, d in registered().items() if d.builtin}
    assert set(schema["$defs"]["Expect"]["properties"]) == builtin


def suite_files() -> list[Path]:
    return sorted(p for root in ("examples", "tests") for p in (ROOT / root).rglob("*.eval.y*ml"))


@pytest.mark.parametrize("path", suite_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_suite_file_validates(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator().iter_errors(data)]
    assert errors == []


def doc_suites() -> list[tuple[str, Any]]:
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for block in re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            try:
                data = yaml.safe_load(block)
            except yaml.YAMLError:
                continue
            if isinstance(data, dict) and "suite" in data and "cases" in data:
                found.append((page.name, data))
    return found


def test_every_suite_in_the_docs_validates() -> None:
    suites = doc_suites()
    assert len(suites) >= 3
    check = validator()
    for page, data in suites:
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in check.iter_errors(data)]
        assert errors == [], (page, data.get("suite"))


GOOD: dict[str, Any] = {
    "suite": "s",
    "agent": "pkg.agent:build",
    "cases": [{"name": "a", "input": "hi", "expect": {"tools_called": ["x"]}}],
}


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"gatee": "block"}, "top"),
        ({"trials": 0}, "top"),
        ({"trials": True}, "top"),
        ({"pass_rule": {"at_least": 0}}, "top"),
        ({"pass_rule": "most"}, "top"),
        ({"tools": "fake"}, "top"),
        ({"settings": {"top_p": 1}}, "top"),
        ({"settings": {"temperature": "hot"}}, "top"),
        ({"agent": {"command": "x", "shell": True}}, "top"),
        ({"agent": {"http": "ftp://x"}}, "top"),
        ({"cases": []}, "top"),
        ({"inptu": "hi"}, "case"),
        ({"name": 3}, "case"),
        ({"skip": 3}, "case"),
        ({"expect": {"order": "sideways"}}, "case"),
        ({"expect": {"max_steps": 0}}, "case"),
        ({"expect": {"stop_reason": "done"}}, "case"),
        ({"expect": {"tools_called": {"x": {"min": -1}}}}, "case"),
        ({"expect": {"grounded": {"check_numbers": True}}}, "case"),
        ({"datasets": []}, "top"),
        ({"datasets": [{"file": "q.jsonl"}]}, "top"),
        ({"datasets": [{"file": "q.jsonl", "template": {}, "rows": 3}]}, "top"),
        ({"expect": {"retrieval": {"tool": "x"}}}, "case"),
        ({"expect": {"retrieval": {"tool": "x", "relevant": ["a"], "min_recall": 2}}}, "case"),
        ({"expect": {"retrieval": {"tool": "x", "relevant": ["a"], "k": 0}}}, "case"),
        ({"expect": {"retrieval_grounded": {"tool": "x", "quote": True}}}, "case"),
        ({"expect": {"faithfulness": {"tool": "x", "max_hallucination_rate": -0.1}}}, "case"),
    ],
)
def test_the_schema_refuses_what_the_loader_refuses(change: dict[str, Any], where: str) -> None:
    check = validator()
    assert list(check.iter_errors(GOOD)) == []
    data = json.loads(json.dumps(GOOD))
    target = data if where == "top" else data["cases"][0]
    target.update(change)
    assert list(check.iter_errors(data)), change


def test_the_cli_prints_the_schema_with_your_own_checks(tmp_path: Path) -> None:
    (tmp_path / "shoutchecks.py").write_text(
        "from pydantic import BaseModel\n\n"
        "from toolproof.evals import check\n\n"
        "class Inner(BaseModel):\n"
        "    n: int\n\n"
        "class Loud(BaseModel):\n"
        "    inner: Inner\n\n"
        "@check('shouts', spec=bool, accepts='true or false')\n"
        "def shouts(record, value):\n"
        "    return (record.output or '').isupper() == value\n\n"
        "@check('loud', spec=Loud)\n"
        "def loud(record, value):\n"
        "    return True\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    plain = subprocess.run(
        [sys.executable, "-m", "toolproof", "schema", "suite"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == SCHEMA_FILE.read_text(encoding="utf-8")
    own = subprocess.run(
        [sys.executable, "-m", "toolproof", "schema", "suite", "--checks", "shoutchecks"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert own.returncode == 0, own.stderr
    expect = json.loads(own.stdout)["$defs"]["Expect"]
    assert expect["additionalProperties"] is False
    assert expect["properties"]["shouts"] == {"type": "boolean", "description": "true or false"}
    schema = json.loads(own.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    check = jsonschema.Draft202012Validator(schema)
    suite = {**GOOD, "cases": [{"name": "a", "input": "hi", "expect": {"loud": {"inner": {}}}}]}
    assert [e.message for e in check.iter_errors(suite)] == ["'n' is a required property"]
    suite["cases"][0]["expect"] = {"loud": {"inner": {"n": 1}}, "shouts": True}
    assert list(check.iter_errors(suite)) == []
    suite["cases"][0]["expect"] = {"lowd": {}}
    assert list(check.iter_errors(suite))
    missing = subprocess.run(
        [sys.executable, "-m", "toolproof", "schema", "suite", "--checks", "nochecks"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2
    assert "cannot import 'nochecks'" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_suite_needs_its_own_cases_or_datasets(tmp_path: Path) -> None:
    from toolproof.errors import ConfigError
    from toolproof.evals import load_suite

    check = validator()
    neither = {k: v for k, v in GOOD.items() if k != "cases"}
    assert list(check.iter_errors(neither))
    rows = {**neither, "datasets": [{"file": "q.jsonl", "template": {"input": "{q}"}}]}
    assert list(check.iter_errors(rows)) == []
    path = tmp_path / "neither.eval.yaml"
    path.write_text("suite: s\nagent: pkg.agent:build\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    assert caught.value.problems == [
        f"{path}:1: missing 'cases': a list of cases, each with a 'name' and an 'input'"
    ]
