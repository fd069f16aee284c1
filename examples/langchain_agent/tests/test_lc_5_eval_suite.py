"""The eval suite runs against the LangChain agent from the command line, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "examples" / "langchain_agent" / "leave.eval.yaml"


def test_toolproof_run_passes_the_suite_in_mock_mode(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    env.pop("DEEPSEEK_API_KEY", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolproof",
            "run",
            str(SUITE),
            "--model",
            "scripted",
            "--report",
            f"json:{report}",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(report.read_text())
    verdicts = {case["name"]: case["verdict"] for case in data["cases"]}
    assert verdicts == {
        "multiply": "pass",
        "leave_balance": "pass",
        "unknown_employee": "pass",
        "greeting_needs_no_tool": "pass",
    }
    (unknown,) = [c for c in data["cases"] if c["name"] == "unknown_employee"]
    (result,) = unknown["trials"][0]["traces"][0]["steps"][0]["tool_results"]
    assert result["status"] == "error" and result["mocked"] is True
    assert result["content"] == "employee not found"
