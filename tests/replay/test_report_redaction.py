"""What an eval run writes is redacted like what the recorder stores.

Generated secrets of every class the guide promises to catch (e-mail addresses, phone
numbers, card numbers, API keys, values of hashed fields) are planted in every field of an
eval run: the case's name, description, input and metadata, a tool's arguments, a tool's
result, a tool's error, the answer and a check's reason that quotes it. ``toolproof run``
with the documented rules (``--redact``) writes the JSON, JUnit, Markdown and HTML reports
and its run log; every byte of every file written, and the console, is searched for every
secret, plain, JSON-escaped and URL-encoded. ``--no-redact`` keeps them (the test would see
them), and the default rules keep the classes they cover out too.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redaction_secrets import DOCUMENTED_RULES, SECRET, Planted, _Planter, leaks

ROOT = Path(__file__).resolve().parents[2]

MODULE = """\
from toolproof import Agent, ToolError, tool


@tool
def lookup(key: str, user_id: str) -> str:
    \"\"\"Look a key up.

    Args:
        key: The key.
        user_id: The user.
    \"\"\"
    return "real"


@tool
def failing(key: str) -> str:
    \"\"\"Fail.

    Args:
        key: The key.
    \"\"\"
    return "real"


def build_agent(model, tools=None, **options):
    return Agent(model, [lookup, failing] if tools is None else tools, max_steps=5)


def _failing(key):
    raise ToolError({error!r})


def mocks():
    return [{{"lookup": lambda key, user_id: {result!r}, "failing": _failing}}]
"""


def _workspace(root: Path, seed: int) -> Planted:
    planted = Planted()
    plant = _Planter(random.Random(seed), planted)
    (root / "plantagent.py").write_text(
        MODULE.format(result=json.dumps(plant.data(1)), error=plant.text()), encoding="utf-8"
    )
    case = {
        "name": "case " + plant.secret(),
        "description": plant.text(),
        "input": plant.text(),
        "metadata": {"note": plant.text(1), "user_id": plant.user()},
        "script": [
            {
                "call": {
                    "name": "lookup",
                    "arguments": {"key": plant.text(1), "user_id": plant.user()},
                }
            },
            {"call": {"name": "failing", "arguments": {"key": plant.secret()}}},
            plant.text(),
        ],
        "expect": {"final_contains": "never said"},  # its reason quotes the answer
    }
    suite = {
        "suite": "planted",
        "agent": "plantagent:build_agent",
        "model": "scripted",
        "tools": "mock",
        "mocks": ["plantagent:mocks"],
        "cases": [case],
    }
    (root / "planted.eval.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    (root / "rules.yaml").write_text(yaml.safe_dump(DOCUMENTED_RULES), encoding="utf-8")
    return planted


def _run(root: Path, *extra: str) -> tuple[subprocess.CompletedProcess[bytes], list[Path]]:
    out = root / "out"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolproof",
            "run",
            "planted.eval.yaml",
            "--no-cache",
            "-v",
            *[f"--report={fmt}:{out}/r.{fmt}" for fmt in ("json", "junit", "markdown", "html")],
            *extra,
        ],
        cwd=root,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(root), str(ROOT / "src")]),
            "TOOLPROOF_LOG_DIR": str(out / "runs"),
            "TOOLPROOF_REDACTION_SECRET": SECRET,
            "NO_COLOR": "1",
        },
        capture_output=True,
        timeout=120,
    )
    return result, [p for p in out.rglob("*") if p.is_file()]


@settings(max_examples=5, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6))
@pytest.mark.timeout(300)
def test_no_planted_secret_reaches_a_report_the_run_log_or_the_console(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    root = tmp_path_factory.mktemp("planted")
    planted = _workspace(root, seed)
    result, files = _run(root, "--redact", "rules.yaml")
    assert result.returncode == 1, result.stderr.decode(errors="replace")
    names = {p.name for p in files}
    assert {"r.json", "r.junit", "r.markdown", "r.html", "meta.json", "report.json"} <= names
    blobs = [p.read_bytes() for p in files]
    assert leaks(planted, *blobs, result.stdout, result.stderr) == []
    assert planted.count >= 15


def test_no_redact_keeps_what_the_run_saw(tmp_path: Path) -> None:
    planted = _workspace(tmp_path, 7)
    result, files = _run(tmp_path, "--no-redact")
    assert result.returncode == 1, result.stderr.decode(errors="replace")
    report = next(p for p in files if p.name == "r.json").read_bytes()
    assert leaks(planted, report)  # the secrets are there: the search finds them


def test_the_default_rules_keep_the_classes_they_cover_out(tmp_path: Path) -> None:
    planted = _workspace(tmp_path, 11)
    result, files = _run(tmp_path)
    assert result.returncode == 1, result.stderr.decode(errors="replace")
    covered = Planted({k: v for k, v in planted.by_class.items() if k != "hashed"})
    assert leaks(covered, *(p.read_bytes() for p in files), result.stdout) == []
