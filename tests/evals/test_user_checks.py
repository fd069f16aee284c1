"""Your own checks: the worked example of docs/evals.md, through the CLI and the Python API.

The example's two files are read from the docs, so the page and the test cannot drift.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolproof.errors import ConfigError
from toolproof.evals import evaluate, load_suite
from toolproof.evals._checks import registered, unregister

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "evals.md"


def example_files() -> dict[str, str]:
    """The files of the worked example, by the name in their first line."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("<!-- worked example:")
    blocks = re.findall(r"```(?:python|yaml)\n(.*?)```", text[start:], re.S)[:2]
    return {block.splitlines()[0].lstrip("# ").strip(): block for block in blocks}


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    files = example_files()
    assert set(files) == {"mychecks.py", "words.eval.yaml"}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(ROOT))  # examples.hr_assistant
    yield tmp_path / "words.eval.yaml"
    unregister("answer_words")
    sys.modules.pop("mychecks", None)


def test_the_example_runs_from_the_python_api(example: Path) -> None:
    report = evaluate([example])
    assert report.exit_code == 0, [c.reason for c in report.cases]
    results = report.cases[0].trials[0].checks
    words = next(r for r in results if r.check == "answer_words")
    assert (words.status, words.reason) == ("pass", "the answer has 5 words")
    assert registered()["answer_words"].module == "mychecks"


def test_the_example_fails_when_its_check_fails(example: Path) -> None:
    example.write_text(example.read_text().replace("{max: 8}", "{max: 3}"), encoding="utf-8")
    report = evaluate([example])
    assert report.exit_code == 1
    words = next(r for r in report.cases[0].trials[0].checks if r.check == "answer_words")
    assert (words.status, words.reason) == (
        "fail",
        "the answer has 5 words, expected 0 to 3",
    )


def test_the_example_runs_from_the_cli(example: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")]),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    env.pop("DEEPSEEK_API_KEY", None)
    done = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", example.name],
        cwd=example.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "short_answer" in done.stdout
    bad = example.with_name("bad.eval.yaml")
    bad.write_text(
        example.read_text().replace("answer_words: {max: 8}", "answer_word: {max: 0}"),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", bad.name],
        cwd=example.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "unknown key 'answer_word' (did you mean 'answer_words'?)" in done.stdout + done.stderr


def test_bad_values_and_misspelt_names_are_reported_with_their_line(example: Path) -> None:
    text = example.read_text()
    example.write_text(text.replace("{max: 8}", "{max: 0}"), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_suite(example)
    assert info.value.problems == [
        f"{example}:11: cases[0].expect.answer_words: expected {{max: N, min: M}}, got "
        "{'max': 0} (max: Input should be greater than 0)"
    ]
    example.write_text(text.replace("answer_words:", "answer_word:"), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_suite(example)
    (problem,) = info.value.problems
    assert problem.startswith(
        f"{example}:11: cases[0].expect.answer_word: unknown key 'answer_word' (did you mean "
        "'answer_words'?); allowed: tools_called, "
    )
    assert problem.endswith(", state, retrieval, retrieval_grounded, faithfulness, answer_words")


def test_a_suite_naming_a_missing_check_module_says_so(tmp_path: Path) -> None:
    suite = tmp_path / "s.eval.yaml"
    suite.write_text(
        "suite: s\nchecks: [no_such_checks]\nagent: examples.hr_assistant.agent:build_agent\n"
        "cases: [{name: a, input: hi}]\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_suite(suite)
    assert info.value.problems[0] == (
        f"{suite}:2: checks[0]: cannot import 'no_such_checks' for no_such_checks: No module "
        "named 'no_such_checks'"
    )


def test_a_user_check_cannot_take_a_built_in_name() -> None:
    from toolproof.errors import UserError
    from toolproof.evals import check

    with pytest.raises(UserError, match="'final_contains' is already registered"):
        check("final_contains")(lambda record, value: True)
