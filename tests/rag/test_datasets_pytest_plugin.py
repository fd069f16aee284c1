"""A dataset suite under pytest: every row is a test item; scripted rows run offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml  # noqa: F401  (kept loaded across inner runs)

import toolproof.evals
import toolproof.evals._dataset
import toolproof.evals._retrieval
import toolproof.models
import toolproof.testing
import toolproof.testing._suites  # noqa: F401

pytest_plugins = ["pytester"]

HERE = Path(__file__).resolve().parent

SUITE = """\
suite: rows
agent: ragagents:build_agent
model: deepseek:deepseek-chat
tools: real
datasets:
  - file: rows.jsonl
    template:
      input: "{question}"
      script:
        - {call: {name: search_docs, arguments: {query: "{question}"}}}
        - "{answer}"
      expect:
        retrieval: {tool: search_docs, relevant: "{relevant}", k: 2, min_recall: 1}
        retrieval_grounded: search_docs
"""

ROWS = [
    {"id": "found", "question": "leave", "answer": "25 days [doc-3].", "relevant": ["doc-3"]},
    {"id": "missed", "question": "leave", "answer": "25 days.", "relevant": ["doc-2"]},
    {"id": "invented", "question": "leave", "answer": "40 days.", "relevant": ["doc-3"]},
]


def test_each_row_is_an_item_that_passes_or_fails_with_its_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "addopts = --strict-markers -p no:cacheprovider\n"
    )
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    (pytester.path / "rows.eval.yaml").write_text(SUITE)
    (pytester.path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "rows.eval.yaml::found PASSED*",
            "rows.eval.yaml::missed FAILED*",
            "rows.eval.yaml::invented FAILED*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*fail: retrieval: recall@2 0.00 < 1: search_docs returned doc-9, doc-3; missing doc-2*"]
    )
    result.stdout.fnmatch_lines(["*fail: retrieval_grounded: the answer states '40'*"])
    assert "Traceback" not in result.stdout.str()
