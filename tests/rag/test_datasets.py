"""Cases from datasets: JSONL and CSV rows through a case template, and how they go wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.errors import ConfigError
from toolproof.evals import _dataset as dataset
from toolproof.evals import evaluate, load_suite
from toolproof.evals._dataset import expand, read_rows

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

SUITE = """\
suite: qa
agent: ragagents:build_agent
tools: real
datasets:
  - file: {file}
    template:
      input: "{{question}}"
      tags: "{{tags}}"
      metadata: {{row: "q-{{id}} of {{{{set}}}}"}}
      expect:
        retrieval: {{tool: search_docs, relevant: "{{relevant}}", k: 3}}
"""

ROWS = [
    {"id": 1, "question": "leave", "relevant": ["doc-3"], "tags": ["leave"]},
    {"id": 2, "question": "travel", "relevant": {"doc-5": 2}, "tags": ["travel"]},
    {"id": 3, "question": "nothing", "relevant": [], "tags": ["unanswerable"]},
]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def suite_for(tmp_path: Path, file: str, extra: str = "") -> Path:
    return write(tmp_path, "qa.eval.yaml", SUITE.format(file=file) + textwrap.dedent(extra))


def problems(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    return "\n".join(caught.value.problems or [str(caught.value)])


def test_each_row_is_a_case_and_a_whole_placeholder_keeps_its_type(tmp_path: Path):
    write(tmp_path, "qa.jsonl", jsonl(ROWS) + "\n")
    suite = load_suite(suite_for(tmp_path, "qa.jsonl"))
    assert [c.name for c in suite.cases] == ["1", "2", "3"]
    first = suite.cases[0]
    assert first.turns[0].input == "leave"
    assert first.tags == ["leave"]
    assert first.metadata == {"row": "q-1 of {set}"}
    assert first.description == "qa.jsonl row 1 (line 1)"
    assert [c.name for c in first.checks] == ["retrieval"]
    report = evaluate(suite_for(tmp_path, "qa.jsonl"), model=_model(), cache=False)
    statuses = [c.trials[0].checks[-1].status for c in report.cases]
    assert statuses == ["pass", "pass", "skip"]
    (quality,) = report.summary()["quality"]
    assert quality["retrieval"][0]["queries"] == 3
    assert quality["retrieval"][0]["undefined"] == 1


def _model():
    import ragagents

    return ragagents.model()


def test_csv_rows_with_json_cells_and_cases_beside_the_yaml_ones(tmp_path: Path):
    write(
        tmp_path,
        "qa.csv",
        'id,question,relevant,tags\n1,leave,"[""doc-3""]",leave\n2,travel,"{""doc-5"": 1}",x\n',
    )
    extra = """\
    cases:
      - {name: by-hand, input: leave}
    """
    suite = load_suite(suite_for(tmp_path, "qa.csv", extra))
    assert [c.name for c in suite.cases] == ["by-hand", "1", "2"]
    assert suite.cases[1].tags == ["leave"]
    expect = expand({"r": "{relevant}", "s": "ids {relevant}"}, {"relevant": ["a"]})
    assert expect == {"r": ["a"], "s": 'ids ["a"]'}


def test_a_missing_column_names_the_file_the_row_and_the_key(tmp_path: Path):
    rows = [*ROWS[:1], {"id": 2, "question": "travel", "tags": []}]
    write(tmp_path, "qa.jsonl", jsonl(rows))
    found = problems(suite_for(tmp_path, "qa.jsonl"))
    where = "qa.jsonl:2: row 2: template.expect.retrieval.relevant"
    assert f"{where}: no column 'relevant' in the row" in found
    assert "(columns: id, question, tags)" in found


def test_a_bad_value_in_one_row_names_that_row(tmp_path: Path):
    rows = [*ROWS[:1], {**ROWS[1], "relevant": [True]}]
    write(tmp_path, "qa.jsonl", jsonl(rows))
    found = problems(suite_for(tmp_path, "qa.jsonl"))
    assert "qa.jsonl:2: row 2: expect.retrieval.relevant: expected the relevant ids" in found
    assert "row 1" not in found


def test_a_template_mistake_is_reported_once_not_per_row(tmp_path: Path):
    write(tmp_path, "qa.jsonl", jsonl([{**r, "id": n} for n, r in enumerate(ROWS * 20)]))
    text = SUITE.format(file="qa.jsonl").replace("k: 3", "k: 0")
    found = problems(write(tmp_path, "qa.eval.yaml", text))
    assert found.count("expected a positive integer, got 0") == 1
    assert "and 59 more problems in its rows" in found


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("qa.jsonl", '{"id": 1}\n{"id": 2,\n', "qa.jsonl:2: invalid JSON at column 10"),
        ("qa.jsonl", '{"id": 1}\n[1, 2]\n', "qa.jsonl:2: a row is a JSON object, got a list"),
        ("qa.jsonl", "\n\n", "qa.jsonl: the dataset has no rows"),
        ("qa.jsonl", "[" * 100_000 + "\n", "qa.jsonl:1: JSON nested too deep"),
        ("qa.csv", "id,question\n1\n", "qa.csv:2: 1 cells, the header has 2 columns"),
        ("qa.csv", "id,id\n1,2\n", "qa.csv:1: header repeats id"),
        ("qa.csv", 'id,question\n1,"[oops"\n', "qa.csv:2: column 'question': a cell starting"),
        ("qa.csv", 'id,question\n1,"open\n', "qa.csv:2: malformed CSV"),
        ("qa.txt", "id\n", "a dataset is a .jsonl or .csv file"),
    ],
)
def test_malformed_files_give_one_clear_error(
    tmp_path: Path, name: str, content: str, message: str
):
    write(tmp_path, name, content)
    found = problems(suite_for(tmp_path, name))
    assert message in found, found


def test_bounds_size_rows_lines_and_encoding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as handle:  # sparse: the size is checked before anything is read
        handle.truncate(dataset.MAX_BYTES + 1)
    read: list[Path] = []
    read_text = Path.read_text

    def counting_read_text(path: Path, *args: Any, **kwargs: Any) -> str:
        read.append(path)
        return read_text(path, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(Path, "read_text", counting_read_text)
        assert "over the limit of" in problems(suite_for(tmp_path, "huge.jsonl"))
    # the suite was read, the dataset's bytes never were
    assert read and all(path.name != huge.name for path in read), read
    write(tmp_path, "long.jsonl", '{"q": "' + "x" * (dataset.MAX_CELL + 1) + '"}\n')
    assert "long.jsonl:1: the line is over" in problems(suite_for(tmp_path, "long.jsonl"))
    (tmp_path / "latin.jsonl").write_bytes(b'{"q": "caf\xe9"}\n')
    assert "latin.jsonl: not UTF-8 text" in problems(suite_for(tmp_path, "latin.jsonl"))
    monkeypatch.setattr(dataset, "MAX_ROWS", 2)
    write(tmp_path, "many.jsonl", jsonl(ROWS))
    assert "many.jsonl: more than 2 rows" in problems(suite_for(tmp_path, "many.jsonl"))
    assert "absent.jsonl: cannot read: No such file" in problems(
        suite_for(tmp_path, "absent.jsonl")
    )


@pytest.mark.timeout(300)
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=400), suffix=st.sampled_from([".jsonl", ".csv"]))
def test_any_bytes_load_or_fail_with_a_config_error(tmp_path: Path, content: bytes, suffix: str):
    file = tmp_path / f"data{suffix}"
    file.write_bytes(content)
    outcome: str | list
    try:
        outcome = read_rows(file)
    except dataset.DatasetError as exc:
        outcome = str(exc)
    if isinstance(outcome, str):
        assert outcome.startswith(str(file))
    else:
        assert all(isinstance(row, dict) for _, row in outcome)


def test_the_cli_exits_2_naming_the_row(tmp_path: Path):
    write(tmp_path, "qa.jsonl", jsonl([*ROWS[:2], {**ROWS[2], "relevant": 3.5}]))
    suite = suite_for(tmp_path, "qa.jsonl")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT / "src")])}
    done = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", str(suite), "--model", "ragagents:model"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "qa.jsonl:3: row 3: expect.retrieval.relevant" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("datasets: []", "datasets: expected a list of {file, template}, got an empty list"),
        (
            "datasets: [{template: {input: hi}}]",
            "datasets[0]: missing 'file': a .jsonl or .csv file (relative to the suite file)",
        ),
        (
            "datasets: [{file: ' ', template: {input: hi}}]",
            "datasets[0].file: expected a .jsonl or .csv file (relative to the suite file)",
        ),
        (
            "datasets: [{file: q.jsonl}]",
            "datasets[0]: missing 'template': a case with {column} placeholders",
        ),
        (
            "datasets: [{file: q.jsonl, templat: {input: hi}}]",
            "datasets[0].templat: unknown key 'templat' (did you mean 'template'?); "
            "allowed: file, template",
        ),
    ],
)
def test_a_bad_datasets_entry_is_reported_with_its_line(
    tmp_path: Path, entry: str, message: str
) -> None:
    path = write(tmp_path, "bad.eval.yaml", f"suite: s\nagent: ragagents:build_agent\n{entry}\n")
    assert f"{path}:3: {message}" in problems(path)
