"""Redaction and replay rule files that cannot be read or parsed give one clear ConfigError."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolproof.errors import ConfigError
from toolproof.replay import Redactor, ReplayRules

LOADERS: list[tuple[str, Callable[[Path], Any]]] = [
    ("redaction rules", Redactor.from_file),
    ("replay rules", ReplayRules.from_file),
]

#: Text that is not YAML, each in a different way.
BROKEN = [
    "fields: {user_id: mask",
    "a: b\n  c: d\n",
    "- one\n two: 2\n",
    "key: 'unterminated\n",
    "[1, 2\n",
    "---\na: 1\n---\nb: 2\n",
    "\t- tab indented\n",
    "a: @reserved\n",
]


@pytest.mark.parametrize(("what", "load"), LOADERS)
def test_a_missing_file_names_the_file_and_what_it_was(
    tmp_path: Path, what: str, load: Callable[[Path], Any]
) -> None:
    path = tmp_path / "absent" / "rules.yaml"
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value) == f"cannot read {what} {path}: No such file or directory"


@pytest.mark.parametrize(("what", "load"), LOADERS)
def test_a_directory_is_refused_as_unreadable(
    tmp_path: Path, what: str, load: Callable[[Path], Any]
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path)
    assert str(info.value).startswith(f"cannot read {what} {tmp_path}: ")


@pytest.mark.parametrize("text", BROKEN)
@pytest.mark.parametrize(("what", "load"), LOADERS)
def test_text_that_is_not_yaml_is_named_invalid_yaml(
    tmp_path: Path, what: str, load: Callable[[Path], Any], text: str
) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}: invalid YAML (")
    assert "Traceback" not in str(info.value)


@pytest.mark.parametrize(
    "data", [b"fields: {user_id: \xff}\n", b"\xfe\xff\x00a", b"a: '\xc3'\n", b"\x80" * 64]
)
@pytest.mark.parametrize(("what", "load"), LOADERS)
def test_bytes_that_are_not_utf8_are_named_so(
    tmp_path: Path, what: str, load: Callable[[Path], Any], data: bytes
) -> None:
    path = tmp_path / "rules.yaml"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}: not UTF-8 text (")
