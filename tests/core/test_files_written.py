"""Every file toolproof writes for the user keeps its promises, whatever the path names.

The writers: ``run --report FMT:PATH`` (json, junit, markdown, html), ``replay --report``,
``traces export -o``, ``schema snapshot -o``, ``schema suite -o``, ``evaluate(reports=...)``
and ``assert_schema_snapshot(update=True)`` (what ``--toolproof-update-snapshots`` calls in
pytest). The targets: a FIFO with a reader, a character device (``/dev/null`` is opened for
writing, never replaced), a symbolic link to a regular file, a folder, a path in a missing
folder, a read-only file, and a regular file with its own mode. A device or FIFO is written
in place and stays what it was; a link stays a link; a folder or a read-only file is one
clear error (exit 2, no traceback); a regular file keeps its mode.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from toolproof._reporting import open_output
from toolproof.errors import UserError

ROOT = Path(__file__).resolve().parents[2]

SUITE = """\
suite: files
agent: examples.hr_assistant.agent:build_agent
model: scripted
cases:
  - name: a
    input: What is 12 times 8?
    script:
      - call: {name: multiply_numbers, arguments: {a: 12, b: 8}}
      - 12 times 8 is 96.
"""

CONVERSATION = [
    {"role": "user", "content": "What is 2 times 3?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "multiply_numbers", "arguments": '{"a": 2, "b": 3}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "6"},
    {"role": "assistant", "content": "6"},
]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")]),
        "NO_COLOR": "1",
        "TOOLPROOF_LOG_DIR": str(cwd / "runs"),
    }
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite, and a store holding one imported conversation (for replay and export)."""
    root = tmp_path_factory.mktemp("files")
    (root / "files.eval.yaml").write_text(SUITE, encoding="utf-8")
    (root / "chat.json").write_text(json.dumps([{"messages": CONVERSATION}]), encoding="utf-8")
    result = cli("traces", "import", "chat.json", "--store", "store.db", cwd=root)
    assert result.returncode == 0, result.stderr
    return root


#: Each writer: (name, the command that writes PATH, or a Python call).
WRITERS: dict[str, Callable[[Path, str], tuple[int, str]]] = {}


def writer(name: str) -> Callable[[Callable[[Path, str], tuple[int, str]]], None]:
    def register(function: Callable[[Path, str], tuple[int, str]]) -> None:
        WRITERS[name] = function

    return register


def _run_cli(cwd: Path, *args: str) -> tuple[int, str]:
    result = cli(*args, cwd=cwd)
    return result.returncode, result.stdout + result.stderr


for _format in ("json", "junit", "markdown", "html"):

    @writer(f"run --report {_format}")
    def _run_report(cwd: Path, path: str, fmt: str = _format) -> tuple[int, str]:
        return _run_cli(cwd, "run", "files.eval.yaml", "--report", f"{fmt}:{path}")

    @writer(f"replay --report {_format}")
    def _replay_report(cwd: Path, path: str, fmt: str = _format) -> tuple[int, str]:
        return _run_cli(
            cwd,
            "replay",
            "--store",
            "store.db",
            "--agent",
            "examples.hr_assistant.agent:build_agent",
            "--report",
            f"{fmt}:{path}",
        )


@writer("traces export -o")
def _export(cwd: Path, path: str) -> tuple[int, str]:
    return _run_cli(cwd, "traces", "export", "--store", "store.db", "-o", path)


@writer("schema snapshot -o")
def _snapshot(cwd: Path, path: str) -> tuple[int, str]:
    return _run_cli(cwd, "schema", "snapshot", "examples.hr_assistant.tools", "-o", path)


@writer("schema suite -o")
def _suite_schema(cwd: Path, path: str) -> tuple[int, str]:
    return _run_cli(cwd, "schema", "suite", "-o", path)


@writer("evaluate(reports=...)")
def _evaluate(cwd: Path, path: str) -> tuple[int, str]:
    from toolproof.evals import evaluate

    try:
        report = evaluate([cwd / "files.eval.yaml"], reports=[f"markdown:{path}"])
    except UserError as exc:
        return 2, str(exc)
    return report.exit_code, "\n".join(report.unwritten)


@writer("assert_schema_snapshot(update=True)")
def _assert_snapshot(cwd: Path, path: str) -> tuple[int, str]:
    from examples.hr_assistant import tools

    from toolproof.testing import assert_schema_snapshot

    try:
        assert_schema_snapshot(tools, path, update=True)
    except UserError as exc:
        return 2, str(exc)
    return 0, ""


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[tuple[Path, list[bytes]]]:
    """A FIFO with a reader thread that keeps what it reads."""
    path = tmp_path / "pipe"
    os.mkfifo(path)
    received: list[bytes] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            with open(path, "rb") as handle:  # reopened: each writer opens and closes it
                received.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield path, received
    finally:
        stop.set()
        with open(path, "wb"):  # wakes the reader's open (or ends its read): it sees stop
            pass
        reader.join(timeout=10)
        assert not reader.is_alive(), "the FIFO's reader did not stop"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_fifo_is_written_in_place_and_stays_a_fifo(
    workspace: Path, fifo: tuple[Path, list[bytes]], name: str
) -> None:
    path, received = fifo
    code, output = WRITERS[name](workspace, str(path))
    assert code in (0, 1), output
    assert stat.S_ISFIFO(os.stat(path).st_mode)
    for _ in range(1000):  # (the reader thread takes the data a moment after the writer)
        if b"".join(received).strip():
            break
        time.sleep(0.01)
    assert b"".join(received).strip(), f"{name} wrote nothing into the FIFO"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_character_device_is_written_in_place_and_stays_one(workspace: Path, name: str) -> None:
    before = os.stat(os.devnull)
    assert stat.S_ISCHR(before.st_mode)
    code, output = WRITERS[name](workspace, os.devnull)
    assert code in (0, 1), output
    after = os.stat(os.devnull)
    assert stat.S_ISCHR(after.st_mode)
    assert (after.st_ino, after.st_rdev, stat.S_IMODE(after.st_mode)) == (
        before.st_ino,
        before.st_rdev,
        stat.S_IMODE(before.st_mode),
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_link_stays_a_link_and_its_target_is_written(
    workspace: Path, tmp_path: Path, name: str
) -> None:
    target = tmp_path / "target.out"
    target.write_text("old", encoding="utf-8")
    os.chmod(target, 0o640)
    link = tmp_path / "link.out"
    link.symlink_to(target)
    code, output = WRITERS[name](workspace, str(link))
    assert code in (0, 1), output
    assert link.is_symlink() and link.resolve() == target
    assert target.read_text(encoding="utf-8") not in ("", "old")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_folder_is_one_clear_error(workspace: Path, tmp_path: Path, name: str) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    code, output = WRITERS[name](workspace, str(folder))
    assert code == 2, output
    assert "Traceback" not in output
    assert f"cannot write {folder}: it is a folder" in output
    assert folder.is_dir() and not any(folder.iterdir())


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_missing_folder_is_created(workspace: Path, tmp_path: Path, name: str) -> None:
    path = tmp_path / "new" / "deeper" / "out.txt"
    code, output = WRITERS[name](workspace, str(path))
    assert code in (0, 1), output
    assert path.is_file() and path.stat().st_size > 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask()
    assert [p.name for p in path.parent.iterdir()] == ["out.txt"]  # no temporary left


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_regular_file_keeps_its_mode(workspace: Path, tmp_path: Path, name: str) -> None:
    path = tmp_path / "kept.out"
    path.write_text("old", encoding="utf-8")
    os.chmod(path, 0o604)
    code, output = WRITERS[name](workspace, str(path))
    assert code in (0, 1), output
    assert path.read_text(encoding="utf-8") != "old"
    assert stat.S_IMODE(path.stat().st_mode) == 0o604


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_read_only_file_is_one_clear_error(workspace: Path, tmp_path: Path, name: str) -> None:
    path = tmp_path / "locked.out"
    path.write_text("old", encoding="utf-8")
    os.chmod(path, 0o444)
    code, output = WRITERS[name](workspace, str(path))
    assert code == 2, output
    assert "read-only" in output and "Traceback" not in output
    assert path.read_text(encoding="utf-8") == "old"


def test_a_read_only_file_is_refused_whoever_writes(tmp_path: Path) -> None:
    """The check itself, for root too: ``os.access`` is what decides."""
    path = tmp_path / "locked.out"
    path.write_text("old", encoding="utf-8")
    os.chmod(path, 0o444)
    if os.access(path, os.W_OK):  # root: the file is writable, and is written in place
        with open_output(path) as out:
            out.write("new")
        assert (path.read_text(), stat.S_IMODE(path.stat().st_mode)) == ("new", 0o444)
        return
    with pytest.raises(UserError, match="read-only"), open_output(path) as out:
        out.write("new")


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
