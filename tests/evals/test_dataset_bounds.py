"""Datasets load in linear work, refuse what is not a file, and name the row of a bad value.

Linear is checked by counting the Python calls a load makes (``sys.setprofile``) for n and
4n rows, never by timing. Files that are not regular files (a named pipe with no writer, a
link to ``/dev/zero``, a directory) are refused before a byte is read, under a pytest
timeout that a hang would trip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolproof.errors import ConfigError
from toolproof.evals import _dataset as dataset
from toolproof.evals import load_suite

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

SUITE = """\
suite: rows
agent: evalagents:build_agent
{cases}datasets:
  - file: {file}
    template:
      input: "{{question}}"
      expect: {{final_contains: "{{answer}}"}}
"""


def suite(tmp_path: Path, file: str, cases: str = "") -> Path:
    path = tmp_path / "rows.eval.yaml"
    path.write_text(SUITE.format(file=file, cases=cases), encoding="utf-8")
    return path


def rows(n: int) -> str:
    return "".join(
        json.dumps({"id": f"r{i}", "question": f"q {i}", "answer": str(i)}) + "\n" for i in range(n)
    )


def problems(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    return "\n".join(info.value.problems or [str(info.value)])


# -- linear work ---------------------------------------------------------------------------------


def calls_to_load(path: Path) -> int:
    """Python and C calls made while the suite loads (generator resumptions included)."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        suite_ = load_suite(path)
    finally:
        sys.setprofile(None)
    assert len(suite_.cases) > 0
    return count


@pytest.mark.timeout(300)
def test_loading_a_dataset_takes_work_linear_in_its_rows(tmp_path: Path) -> None:
    counts = {}
    for n in (100, 500, 2000):  # the first load warms the imports and the suite models
        folder = tmp_path / str(n)
        folder.mkdir()
        (folder / "q.jsonl").write_text(rows(n), encoding="utf-8")
        counts[n] = calls_to_load(suite(folder, "q.jsonl", "cases:\n  - {name: own, input: hi}\n"))
    ratio = counts[2000] / counts[500]
    # Linear is 4 (plus the fixed cost of one suite); comparing every row's name with the
    # rows before it made it about 9.
    assert ratio < 4.6, counts


def test_a_name_used_twice_is_still_found_among_many_rows(tmp_path: Path) -> None:
    text = rows(3000) + json.dumps({"id": "r17", "question": "again", "answer": "x"}) + "\n"
    (tmp_path / "q.jsonl").write_text(text, encoding="utf-8")
    found = problems(suite(tmp_path, "q.jsonl", "cases:\n  - {name: r5, input: hi}\n"))
    assert "case name 'r5' is used twice in the suite" in found
    assert "case name 'r17' is used twice in the suite" in found
    assert found.count("used twice") == 2


# -- files that are not files --------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.timeout(30)
def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "q.jsonl")
    found = problems(suite(tmp_path, "q.jsonl"))
    assert "q.jsonl: a named pipe (FIFO); a dataset is a regular .jsonl or .csv file" in found


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ["q.jsonl", "q.csv"])
def test_a_link_to_a_device_is_refused_before_reading(tmp_path: Path, name: str) -> None:
    (tmp_path / name).symlink_to("/dev/zero")
    found = problems(suite(tmp_path, name))
    assert f"{name}: a character device; a dataset is a regular .jsonl or .csv file" in found


def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "q.jsonl").mkdir()
    assert "q.jsonl: a directory; a dataset is" in problems(suite(tmp_path, "q.jsonl"))


def test_a_file_over_the_size_limit_is_refused_from_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = rows(50)
    (tmp_path / "q.jsonl").write_text(text, encoding="utf-8")
    monkeypatch.setattr(dataset, "MAX_BYTES", 100)
    found = problems(suite(tmp_path, "q.jsonl"))
    assert f"q.jsonl: {len(text)} bytes is over the limit of 100 bytes" in found


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs a file that lies")
@pytest.mark.timeout(30)
def test_reading_stops_at_the_limit_when_the_file_claims_no_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A kernel file says it holds 0 bytes and holds more: the read itself is bounded.
    assert Path("/proc/self/maps").stat().st_size == 0
    (tmp_path / "q.jsonl").symlink_to("/proc/self/maps")
    monkeypatch.setattr(dataset, "MAX_BYTES", 100)
    found = problems(suite(tmp_path, "q.jsonl"))
    assert "q.jsonl: the file is over the limit of 100 bytes" in found


# -- values that cannot be kept ------------------------------------------------------------------

LONG = "9" * 5000
HOSTILE: dict[str, tuple[str, str]] = {
    # kind: (JSON text of the value, what the message says)
    "long integer": (LONG, "an integer of 5000 digits; at most 1000 are read"),
    "long negative integer": ("-" + LONG, "an integer of 5000 digits"),
    "long integer in a list": (f"[1, {LONG}]", "an integer of 5000 digits"),
    "lone high surrogate": ('"\\ud800"', "holds a lone surrogate"),
    "lone low surrogate": ('"x\\udfffy"', "holds a lone surrogate"),
    "reversed pair": ('"\\ude00\\ud83d"', "holds a lone surrogate"),
    "surrogate in a list": ('["ok", "\\udc00"]', "holds a lone surrogate"),
    "surrogate in a key": ('{"\\ud800": 1}', "holds a lone surrogate"),
}


def hostile_files() -> Iterator[tuple[str, str, str, int, str]]:
    """(test id, file name, content, line of the bad row, expected words) for each row and kind."""
    for kind, (value, words) in HOSTILE.items():
        for position in (0, 2):  # the first row, a later row
            for column in ("id", "question"):
                good = [{"id": f"r{i}", "question": "q", "answer": "a"} for i in range(3)]
                lines = [json.dumps(row) for row in good]
                lines[position] = lines[position].replace(
                    json.dumps(good[position][column]), value, 1
                )
                yield (
                    f"jsonl-{kind}-row{position + 1}-{column}",
                    "q.jsonl",
                    "\n".join(lines) + "\n",
                    position + 1,
                    words,
                )
                if value.startswith(("[", "{")):  # a CSV cell is JSON only when it looks so
                    cells = [["r0", "q", "a"], ["r1", "q", "a"], ["r2", "q", "a"]]
                    cells[position][0 if column == "id" else 1] = value
                    text = "id,question,answer\n" + "".join(
                        ",".join('"' + c.replace('"', '""') + '"' for c in row) + "\n"
                        for row in cells
                    )
                    yield (
                        f"csv-{kind}-row{position + 1}-{column}",
                        "q.csv",
                        text,
                        position + 2,
                        words,
                    )


CASES = list(hostile_files())


@pytest.mark.parametrize(
    ("name", "content", "line", "words"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_a_value_that_cannot_be_kept_names_its_row(
    tmp_path: Path, name: str, content: str, line: int, words: str
) -> None:
    (tmp_path / name).write_text(content, encoding="utf-8")
    found = problems(suite(tmp_path, name))
    assert f"{name}:{line}: " in found and words in found, found
    assert found.count(words) == 1


def test_a_paired_surrogate_and_a_long_float_load(tmp_path: Path) -> None:
    line = '{"id": "smile-\\ud83d\\ude00", "question": "q", "answer": "1' + "0" * 1500 + '.5"}'
    (tmp_path / "q.jsonl").write_text(line + "\n", encoding="utf-8")
    [case] = load_suite(suite(tmp_path, "q.jsonl")).cases
    assert case.name == "smile-\N{GRINNING FACE}"


def test_the_cli_exits_2_naming_the_row_of_a_long_integer(tmp_path: Path) -> None:
    bad = {"id": "r1", "question": "q", "answer": "a"}
    text = json.dumps(bad) + "\n" + json.dumps(bad).replace('"r1"', LONG) + "\n"
    (tmp_path / "q.jsonl").write_text(text, encoding="utf-8")
    path = suite(tmp_path, "q.jsonl")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT / "src")])}
    done = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", str(path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "q.jsonl:2: an integer of 5000 digits" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
