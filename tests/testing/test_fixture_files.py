"""Loading fixture files raises only ``ConfigError`` (file and line where possible), quickly,
and never imports code named in a ``raises:``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof import ToolError
from toolproof.errors import ConfigError, MissingFixture
from toolproof.testing import ToolMock


def load(tmp_path: Path, text: str | bytes, name: str = "f.yaml") -> ToolMock:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return ToolMock.from_file(path)


def test_dotted_raises_never_imports_a_module(tmp_path: Path, monkeypatch: Any) -> None:
    marker = tmp_path / "imported.txt"
    (tmp_path / "side_effect_mod.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\nclass Boom(Exception):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    text = "fixtures:\n  - tool: t\n    raises: side_effect_mod.Boom\n"
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    assert not marker.exists()
    assert "side_effect_mod" not in sys.modules
    (problem,) = info.value.problems
    assert problem.startswith(f"{tmp_path / 'f.yaml'}:2: 'side_effect_mod.Boom' names a module")
    assert "never import code" in problem


def test_dotted_raises_of_an_imported_module_and_toolproof_errors(tmp_path: Path) -> None:
    text = (
        "fixtures:\n"
        "  - {tool: a, raises: 'json.JSONDecodeError'}\n"  # json is imported: but needs args
        "  - {tool: b, raises: 'toolproof.errors.ToolError: down'}\n"
        "  - {tool: c, raises: 'MissingFixture'}\n"
        "  - {tool: d, raises: 'builtins.LookupError: gone'}\n"
        "  - {tool: e, raises: 'os.getcwd'}\n"
        "  - {tool: f, raises: 'json.NoSuchThing'}\n"
    )
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    path = tmp_path / "f.yaml"
    problems = info.value.problems
    assert [p.split(" (TypeError: ")[0] for p in problems] == [
        f"{path}:2: 'json.JSONDecodeError' cannot be created from a message",
        f"{path}:4: 'MissingFixture' cannot be created from a message",
        f"{path}:6: 'os.getcwd' is not an exception class",
        f"{path}:7: module 'json' has no 'NoSuchThing'",
    ]
    assert "missing" in problems[0] and "required" in problems[1]
    good = load(
        tmp_path,
        "fixtures:\n"
        "  - {tool: b, raises: 'toolproof.errors.ToolError: down'}\n"
        "  - {tool: d, raises: 'builtins.LookupError: gone'}\n"
        "  - {tool: g, raises: 'UserError: fix it'}\n",
    )
    kinds = [(type(f.raises).__name__, str(f.raises)) for f in good.fixtures]
    assert kinds == [("ToolError", "down"), ("LookupError", "gone"), ("UserError", "fix it")]
    assert isinstance(good.fixtures[0].raises, ToolError)


def test_builtin_exceptions_that_need_arguments_are_a_problem_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r":2: 'UnicodeDecodeError' cannot be created"):
        load(tmp_path, "fixtures:\n  - {tool: t, raises: UnicodeDecodeError}\n")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mask: [1, 2]\nfixtures: []\n", "'mask' must be a list of argument names"),
        ("mask: abc\nfixtures: []\n", "'mask' must be a list of argument names"),
        ("key_args: [a]\nfixtures: []\n", "'key_args' must map tool names"),
        ("key_args: {t: 5}\nfixtures: []\n", "'key_args' must map tool names"),
        ("strict: maybe\nfixtures: []\n", "'strict' must be true or false"),
        ("assert_all_used: 1\nfixtures: []\n", "'assert_all_used' must be true or false"),
        (b"fixtures: [\xff\xfe]\n", "not UTF-8 text"),
    ],
)
def test_bad_settings_and_shapes_are_config_errors(
    tmp_path: Path, text: str | bytes, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        load(tmp_path, text)
    assert str(tmp_path / "f.yaml") in str(info.value)


def test_deeply_nested_fixture_files(tmp_path: Path) -> None:
    text = '{"fixtures": [{"tool": "t", "returns": ' + "[" * 100_000 + "]" * 100_000 + "}]}"
    with pytest.raises(ConfigError, match="nests too deeply"):
        load(tmp_path, text, "f.json")
    with pytest.raises(ConfigError, match=r"f\.yaml"):
        load(tmp_path, "fixtures:\n  - " + "[" * 1200 + "]" * 1200 + "\n")


def test_a_named_error_the_tool_does_not_declare_fails_at_the_call() -> None:
    mock = ToolMock.from_dict({"fixtures": [{"tool": "t", "raises": "NotDeclared"}]})
    assert mock.fixtures[0].raises is not None
    assert not isinstance(mock.fixtures[0].raises, MissingFixture)


# -- fuzz ------------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=10)
    | st.sampled_from(
        ["KeyError", "KeyError: x", "os.path", "json.JSONDecodeError", "ToolError", "a.b.C", ""]
    )
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=6) | st.integers(), children, max_size=3)
    ),
    max_leaves=12,
)
fixture_keys = st.sampled_from(["tool", "arguments", "match", "returns", "raises", "times", "x"])
fixtures = st.dictionaries(fixture_keys, values, max_size=5)
documents = st.one_of(
    values,
    st.fixed_dictionaries(
        {"fixtures": st.lists(fixtures, max_size=4)},
        optional={
            "key_args": values,
            "mask": values,
            "strict": values,
            "assert_all_used": values,
            "version": values,
            "other": values,
        },
    ),
)


def check_loader(path: Path) -> None:
    try:
        ToolMock.from_file(path)
    except ConfigError as exc:
        message = str(exc)
        assert message  # one clear error, never empty


@pytest.mark.timeout(300)  # a loader that hangs on a generated file fails here
@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document=documents, as_json=st.booleans())
def test_fuzz_fixture_files(tmp_path: Path, document: Any, as_json: bool) -> None:
    if as_json:
        path = tmp_path / "fuzz.json"
        try:
            path.write_text(json.dumps(document, default=str), encoding="utf-8")
        except ValueError:
            return
    else:
        path = tmp_path / "fuzz.yaml"
        path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    check_loader(path)


@pytest.mark.timeout(300)  # a loader that hangs on a generated file fails here
@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(
        alphabet=st.sampled_from(list("fixtures:- {}[]&*!|>'\"\n tool:raises1.")), max_size=80
    )
)
def test_fuzz_fixture_text(tmp_path: Path, text: str) -> None:
    for name in ("fuzz.yaml", "fuzz.json"):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        check_loader(path)
