"""Bad input is one clear error: exit 2 with one line naming the file or field, never a
traceback and never exit 4.

Generated conversation files shaped like imports but wrong in one place (deep arrays,
arguments, tool calls and parameters of the wrong type, lone surrogates), dataset rows with
huge integers, suites whose matchers hold hostile numbers, and command lines whose paths no
file system takes, each through the CLI in process.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.cli import main

ROOT = Path(__file__).resolve().parents[2]

ODD = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.just("\ud800"),
    st.just(json.loads("[" * 300 + "]" * 300)),
)


@st.composite
def conversations(draw: st.DrawFn) -> Any:
    """An OpenAI-format conversation with one field replaced by something odd."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    record: dict[str, Any] = {"messages": messages, "task_id": 1}
    places: list[tuple[Any, Any]] = [
        (record, "messages"),
        (record, "task_id"),
        *[(message, key) for message in messages for key in list(message)],
        (call, "function"),
        (call, "id"),
        (call["function"], "name"),
        (call["function"], "arguments"),
        (messages[2], "tool_calls"),
    ]
    holder, key = draw(st.sampled_from(places))
    holder[key] = draw(ODD)
    return [record]


def call(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    return code, err.getvalue()


def clear(code: int, err: str) -> None:
    assert code in (0, 2), err
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 2:
        assert len(err.strip().splitlines()) >= 1 and err.startswith("toolproof: error: "), err


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conversation=conversations())
def test_a_malformed_import_file_is_one_clear_error(tmp_path: Path, conversation: Any) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(conversation), encoding="utf-8")
    code, err = call("traces", "import", str(path), "--store", str(tmp_path / "t.db"))
    clear(code, err)
    if code == 2:
        assert "chat.json" in err, err


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"messages": ' + "[" * 50_000 + "]" * 50_000 + "}",
        json.dumps(
            [
                {
                    "messages": [
                        {"role": "user", "content": "x"},
                        {"role": "assistant", "tool_calls": 5},
                    ]
                }
            ]
        ),
        '[{"messages": [{"role": "user", "content": "\\ud800"}, '
        '{"role": "assistant", "content": "\\udc00 done"}]}]',
    ],
)
def test_hostile_import_files_are_clear_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "chat.json"
    path.write_text(text, encoding="utf-8")
    clear(*call("traces", "import", str(path), "--store", str(tmp_path / "t.db")))


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parameters=ODD,
    description=st.one_of(st.text(max_size=5), st.integers()),
)
def test_hostile_tool_schemas_for_an_import_are_clear_errors(
    tmp_path: Path, parameters: Any, description: Any
) -> None:
    tools = tmp_path / "tools.json"
    spec = {"name": "f", "description": description, "parameters": parameters}
    tools.write_text(json.dumps([{"type": "function", "function": spec}]), encoding="utf-8")
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"messages": [{"role": "user", "content": "x"}]}]))
    clear(*call("traces", "import", str(chat), "--tools", str(tools), "--store",
                str(tmp_path / "t.db")))  # fmt: skip


@pytest.fixture
def examples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(digits=st.integers(min_value=4301, max_value=20_000), where=st.sampled_from(["q", "n"]))
def test_a_dataset_row_with_a_huge_integer_is_one_clear_error(
    tmp_path: Path, examples: None, digits: int, where: str
) -> None:
    number = "9" * digits
    row = '{"id": "a", "q": "x", "n": 1}'.replace('"x"' if where == "q" else "1", number)
    (tmp_path / "rows.jsonl").write_text(row + "\n", encoding="utf-8")
    suite = tmp_path / "d.eval.yaml"
    suite.write_text(
        "suite: d\nagent: examples.hr_assistant.agent:build_agent\nmodel: scripted\n"
        "datasets: [{file: rows.jsonl, template: {name: '{id}', input: hi, script: [ok]}}]\n",
        encoding="utf-8",
    )
    code, err = call("run", str(suite), "--no-log")
    clear(code, err)
    assert code == 2 and "rows.jsonl:1: " in err and "digits" in err, err


HOSTILE_NUMBERS = st.one_of(
    st.integers().map(lambda n: n * 10**400),
    st.integers(min_value=300, max_value=2000).map(lambda n: 10**n),
    st.floats(allow_nan=False),
    st.integers(),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    low=HOSTILE_NUMBERS,
    high=HOSTILE_NUMBERS,
    form=st.sampled_from(["range", "minmax", "approx"]),
)
def test_hostile_matcher_numbers_are_clear_errors_or_work(
    tmp_path: Path, examples: None, low: Any, high: Any, form: str
) -> None:
    spec = {
        "range": f"{{range: [{json.dumps(low)}, {json.dumps(high)}]}}",
        "minmax": f"{{min: {json.dumps(low)}, max: {json.dumps(high)}}}",
        "approx": f"{{approx: {json.dumps(low)}, tol: {json.dumps(abs(high))}}}",
    }[form]
    suite = tmp_path / "m.eval.yaml"
    suite.write_text(
        "suite: m\nagent: examples.hr_assistant.agent:build_agent\nmodel: scripted\n"
        "cases:\n  - name: a\n    input: hi\n"
        f"    expect: {{args: {{multiply_numbers: {{a: {spec}}}}}}}\n"
        "    script:\n      - call: {name: multiply_numbers, arguments: {a: 2, b: 3}}\n"
        "      - done\n",
        encoding="utf-8",
    )
    code, err = call("run", str(suite), "--no-log", "-q")
    assert code in (0, 1, 2), err
    assert "Traceback" not in err and "internal error" not in err, err


@pytest.mark.parametrize("command", ["run", "traces list --store", "replay --store",
                                     "schema suite -o", "traces export -o"])  # fmt: skip
@pytest.mark.parametrize("path", ["a" * 5000 + ".eval.yaml", "a/" * 3000 + "x.db"])
def test_a_path_no_file_system_takes_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, path: str
) -> None:
    monkeypatch.chdir(tmp_path)
    words = command.split()
    extra = ["--agent", "x:y"] if words[0] == "replay" else []
    code, err = call(*words, path, *extra)
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(err.strip().splitlines()) == 1, err
