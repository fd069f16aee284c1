"""Every report format of a replay says what the JSON report says, in both modes.

``toolproof replay`` with ``--no-log`` (so nothing but the reports asks for the new runs)
and all four formats: the mode, the samples and their grades agree between JSON, JUnit,
Markdown and HTML; in model mode the HTML shows the new run's calls beside the recorded
ones and never calls itself tools mode, and calls and findings show as their text, not as
escaped JSON strings.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CONVERSATIONS = [
    [
        {"role": "user", "content": f"What is {a} times 3?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"c{a}",
                    "type": "function",
                    "function": {
                        "name": "multiply_numbers",
                        "arguments": json.dumps({"a": a, "b": 3}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"c{a}", "content": str(a * 3)},
        {"role": "assistant", "content": f"{a} times 3 is {a * 3}."},
    ]
    for a in (2, 4)
]

NEW_MODEL = """\
from toolproof.models import ModelResponse
from toolproof.testing import FunctionModel, call


def answer(messages, info):
    if messages[-1].role == "tool":
        return "I think it is seven."
    return ModelResponse.from_calls([call("multiply_numbers", a=7, b=1)])


MODEL = FunctionModel(answer, name="new-model")
"""


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args],
        cwd=cwd,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(cwd), str(ROOT), str(ROOT / "src")]),
            "NO_COLOR": "1",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("replay-formats")
    (root / "chats.json").write_text(
        json.dumps([{"messages": m} for m in CONVERSATIONS]), encoding="utf-8"
    )
    (root / "newmodel.py").write_text(NEW_MODEL, encoding="utf-8")
    result = cli(root, "traces", "import", "chats.json", "--store", "store.db")
    assert result.returncode == 0, result.stderr
    return root


@pytest.mark.timeout(200)
@pytest.mark.parametrize("mode", ["model", "tools"])
def test_every_format_agrees_with_the_json_report(workspace: Path, mode: str) -> None:
    out = workspace / mode
    extra = ["--model", "newmodel:MODEL"] if mode == "model" else []
    result = cli(
        workspace,
        "replay",
        "--mode",
        mode,
        "--store",
        "store.db",
        "--agent",
        "examples.hr_assistant.agent:build_agent",
        *extra,
        "--no-log",
        *[f"--report={fmt}:{out}.{fmt}" for fmt in ("json", "junit", "markdown", "html")],
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    data = json.loads(Path(f"{out}.json").read_text(encoding="utf-8"))
    assert data["mode"] == mode
    grades = [sample["grade"] for sample in data["results"]]
    assert len(grades) == 2
    if mode == "model":
        assert "fail" in grades or "warn" in grades, grades

    suite = ET.parse(f"{out}.junit").getroot()
    cases = suite.findall(".//testcase")
    assert len(cases) == len(grades)
    assert len(suite.findall(".//failure")) == grades.count("fail")

    markdown = Path(f"{out}.markdown").read_text(encoding="utf-8")
    assert f"## toolproof replay ({mode})" in markdown
    row = markdown.split("| --- |")[1].splitlines()[0] if "| --- |" in markdown else ""
    assert row, markdown
    counts = re.findall(r"\| *(\d+) *", markdown.split("|" + "---", 1)[0] + row)
    expected = [str(grades.count(g)) for g in ("pass", "warn", "fail", "error")]
    assert counts[:5] == [str(len(grades)), *expected]

    page = Path(f"{out}.html").read_text(encoding="utf-8")
    assert f"toolproof replay report ({mode})" in page
    assert re.findall(r'data-verdict="(\w+)"', page) == sorted(
        grades, key=lambda g: {"fail": 0, "error": 1, "warn": 2, "pass": 3}[g]
    )
    if mode == "model":
        assert "tools mode replays these calls" not in page
        assert "tool calls: recorded run and new run" in page
        assert "multiply_numbers" in page and "transcript of the new run" in markdown
    shown = page.split("<script", 1)[0]  # (the data block for the page's script is JSON)
    assert "\\&quot;" not in shown and "&quot;{" not in shown  # no JSON string shown escaped
