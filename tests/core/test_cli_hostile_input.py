"""Hostile files given to the CLI: always exit 2 with one error line, never a traceback.

The files are generated (random bytes, random text, random JSON and YAML values) and handed
to every command that reads a user file, in process (a hang fails by the test's timeout).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.cli import main
from toolproof.replay import TraceStore

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

CONTENTS = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(str.encode),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    # Suite- and snapshot-shaped values ("agent" is left out: a random import path could name
    # any installed module, and importing it is what the user asked for, not hostile input).
    st.dictionaries(
        st.sampled_from(["suite", "cases", "model", "tools", "format", "version", "trials"]),
        JSON_VALUES,
        max_size=5,
    ).map(lambda v: json.dumps(v).encode()),
)


def call(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    return code, err.getvalue()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile")
    TraceStore(path / "t.db").close()
    return path


@pytest.mark.timeout(300)  # a hang on any input fails here, not in CI's time limit
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=CONTENTS)
def test_hostile_files_are_one_line_errors(folder: Path, content: bytes) -> None:
    commands = {
        "s.eval.yaml": ["run", "{file}", "--model", "scripted", "-q"],
        "old.json": ["schema", "diff", "{file}", "{file}"],
        "snap.json": ["schema", "check", "examples.hr_assistant.tools", "{file}"],
        "tools.json": ["replay", "--store", str(folder / "t.db"), "--schemas", "{file}"],
        "rules.yaml": ["replay", "--store", str(folder / "t.db"), "--rules", "{file}"],
    }
    for name, argv in commands.items():
        file = folder / name
        file.write_bytes(content)
        code, err = call(*(a.replace("{file}", str(file)) for a in argv))
        assert "Traceback" not in err, (argv, content, err)
        if code == 2:
            assert err.startswith("toolproof: error: "), err
            _head, *rest = err.rstrip("\n").split("\n")
            # A config error lists its problems below its first line, each naming the file.
            assert all(line.startswith("  ") for line in rest), err
        else:
            # A valid file can happen (an empty OpenAI list replays nothing: 5; a diff with
            # no changes: 0; rules with nothing in them: 5), never a crash.
            assert code in (0, 1, 5), (argv, content, code, err)


def test_a_bug_in_toolproof_itself_exits_4_with_its_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No frame of the user's code: the error is toolproof's own, and a bug report needs the
    # traceback (exit 4 keeps it apart from "a check failed").
    import toolproof.cli._schema as schema_command

    monkeypatch.setattr(schema_command, "run_diff", json.loads)  # raises TypeError in json
    code, err = call("schema", "diff", "a.json", "b.json")
    assert code == 4
    assert err.startswith("Traceback (most recent call last):")
    assert (
        err.rstrip("\n")
        .splitlines()[-1]
        .startswith("toolproof: internal error: TypeError: the JSON object must be str")
    )


def test_a_bug_in_the_users_code_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolproof.cli._schema as schema_command

    monkeypatch.delenv("TOOLPROOF_TRACEBACK", raising=False)

    def buggy(args: object) -> int:
        return {}["missing"]  # type: ignore[no-any-return]

    monkeypatch.setattr(schema_command, "run_diff", buggy)
    code, err = call("schema", "diff", "a.json", "b.json")
    here = Path(__file__)
    line = (
        here.read_text()
        .splitlines()
        .index('        return {}["missing"]  # type: ignore[no-any-return]')
        + 1
    )
    shown = os.path.relpath(here)  # relative to the working folder when below it
    shown = str(here) if shown.startswith("..") else shown
    assert (code, err) == (2, f"toolproof: error: KeyError: 'missing' ({shown}:{line} in buggy)\n")
    code, err = call("--traceback", "schema", "diff", "a.json", "b.json")
    assert code == 2
    assert f'File "{here}", line {line}, in buggy' in err
    assert "cli/__init__.py" not in err
    assert "TOOLPROOF_TRACEBACK" not in os.environ  # the flag held for that call only
