"""Run ``toolproof ARGS`` in this process, as ``python -m toolproof ARGS`` would run it.

A new interpreter per command costs a second or more; tests whose point is what the command
writes, prints and returns (not signals or the process itself) call :func:`toolproof.cli.main`
here instead, with what the subprocess would have had: the working directory (on
``sys.path``, as ``-m`` puts it), the environment, extra import paths, and stdout/stderr
captured as text. Everything is restored afterwards, and the modules the command imported
from the working directory are forgotten, so the next test's files of the same name load.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    before = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


def run_cli(
    *args: str, cwd: Path, env: Mapping[str, str], paths: Sequence[str | Path] = ()
) -> subprocess.CompletedProcess[str]:
    """``toolproof ARGS`` run by :func:`toolproof.cli.main` in ``cwd`` with exactly ``env``."""
    from toolproof.cli import main

    out, err = io.StringIO(), io.StringIO()
    before_path, before_modules = list(sys.path), set(sys.modules)
    before_cwd = os.getcwd()
    folder = Path(cwd).resolve()
    sys.path[:0] = [str(folder), *map(str, paths)]
    try:
        os.chdir(folder)
        with (
            _environment(env),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            try:
                code = main(list(args))
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else 1
    finally:
        os.chdir(before_cwd)
        sys.path[:] = before_path
        for name in set(sys.modules) - before_modules:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if file and Path(file).resolve().is_relative_to(folder):
                del sys.modules[name]
    return subprocess.CompletedProcess(
        ["toolproof", *args], code, stdout=out.getvalue(), stderr=err.getvalue()
    )
