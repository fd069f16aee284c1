"""The command line's own behaviour: help, version, exit codes, closed pipes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from _processes import running
from toolproof import __version__
from toolproof.cli import main


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"toolproof {__version__}"
    assert main([]) == 2  # no command: help, usage exit code
    out = capsys.readouterr().out
    for command in ("run", "chat", "schema", "mocks", "traces", "replay"):
        assert f"    {command} " in out


def test_a_closed_pipe_ends_quietly() -> None:
    # `toolproof ... | head -1`: the reader is gone before we write.
    with running(
        [sys.executable, "-m", "toolproof", "schema", "snapshot", "examples.hr_assistant.tools"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()
        stderr = process.stderr.read().decode()
        assert process.wait(timeout=60) == 141
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr
