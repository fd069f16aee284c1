"""Start ``toolproof serve`` as a real process on 127.0.0.1 and read its URL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _processes import running

SRC = Path(__file__).resolve().parents[2] / "src"


@contextmanager
def serve_process(*args: str, cwd: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``toolproof serve ARGS --port 0`` running; yields its ``/v1`` base URL and the process.

    The process group is stopped on the way out, however the block ends.
    """
    env = dict(os.environ, PYTHONPATH=str(SRC), PYTHONUNBUFFERED="1")
    with running(
        [sys.executable, "-m", "toolproof", "serve", *args, "--port", "0"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"toolproof serve did not start: {process.stderr.read()}")
        yield line.rsplit(" ", 1)[-1].strip(), process


@contextmanager
def serving(*args: str, cwd: Path, stop: int = signal.SIGINT) -> Iterator[str]:
    """``toolproof serve ARGS --port 0``; yields its ``/v1`` base URL, stops it with ``stop``.

    A stop that does not end the process cleanly (exit status 0) fails the test.
    """
    with serve_process(*args, cwd=cwd) as (url, process):
        try:
            yield url
        finally:
            process.send_signal(stop)
            try:
                _, err = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                raise AssertionError("toolproof serve did not stop within 30 s") from None
            assert process.returncode == 0, f"toolproof serve exited {process.returncode}: {err}"
