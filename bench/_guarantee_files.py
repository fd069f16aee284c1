"""Guarantee figures: the files toolproof writes for the user.

``measure()`` returns rows (guarantee, what was tried, result) for ``bench_guarantees.py``:
secrets planted in every field of eval runs (the test's generator) and searched for in each
file the run wrote and on its console, and every report writer aimed at special files (a
FIFO with a reader, ``/dev/null``, a link to a regular file). Runs ``toolproof`` as a
subprocess, like a user; about two minutes. Prints nothing.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
_TESTS = _ROOT / "tests" / "replay"
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

from redaction_secrets import SECRET, Planted, leaks, merge  # noqa: E402
from test_report_redaction import _workspace  # noqa: E402

RUNS = 8
FORMATS = ("json", "junit", "markdown", "html")
SUITE = """\
suite: files
agent: examples.hr_assistant.agent:build_agent
model: scripted
cases: [{name: a, input: hi, script: [done]}]
"""


def _toolproof(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args],
        cwd=cwd,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(cwd), str(_ROOT), str(_ROOT / "src")]),
            "TOOLPROOF_LOG_DIR": str(cwd / "out" / "runs"),
            "TOOLPROOF_REDACTION_SECRET": SECRET,
            "NO_COLOR": "1",
        },
        capture_output=True,
        timeout=300,
    )


def _planted_secrets() -> tuple[str, str]:
    """Secrets planted in eval runs, searched for in each file written and the console."""
    found: dict[str, int] = {}
    planted: list[Planted] = []
    for seed in range(RUNS):
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            secrets = _workspace(root, seed)
            planted.append(secrets)
            out = root / "out"
            result = _toolproof(
                root,
                "run",
                "planted.eval.yaml",
                "-v",
                "--redact",
                "rules.yaml",
                *[f"--report={fmt}:{out}/r.{fmt}" for fmt in FORMATS],
            )
            files = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
            files["console"] = result.stdout + result.stderr
            cache = root / ".toolproof" / "cache.sqlite"
            if cache.exists():  # (scripted runs call no model: the cache stays empty)
                files["cache.sqlite"] = cache.read_bytes()
            for name, blob in files.items():
                found[name] = found.get(name, 0) + len(leaks(secrets, blob))
    total = merge(planted)
    classes = ", ".join(f"{len(v)} {k}" for k, v in sorted(total.by_class.items()))
    tried = (
        f"{total.count} secrets ({classes}) in {RUNS} eval runs: case name, description, input, "
        "metadata, tool arguments, results and errors, answer, a reason quoting it; "
        "documented rules"
    )
    result = ", ".join(f"{name} {count}" for name, count in sorted(found.items()))
    return tried, f"leaks per file: {result}"


def _special_targets() -> tuple[str, str]:
    """Every report format and the export aimed at a FIFO, /dev/null and a link."""
    kept = tried = 0
    before = os.stat(os.devnull)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "files.eval.yaml").write_text(SUITE, encoding="utf-8")
        for fmt in FORMATS:
            for kind in ("fifo", "devnull", "link"):
                tried += 1
                if kind == "fifo":
                    path = root / f"pipe-{fmt}"
                    os.mkfifo(path)
                    reader = threading.Thread(target=path.read_bytes, daemon=True)
                    reader.start()
                elif kind == "devnull":
                    path = Path(os.devnull)
                else:
                    target = root / f"target-{fmt}"
                    target.write_text("old")
                    path = root / f"link-{fmt}"
                    path.symlink_to(target)
                _toolproof(root, "run", "files.eval.yaml", "--report", f"{fmt}:{path}")
                mode = os.lstat(path).st_mode
                if kind == "fifo":
                    reader.join(timeout=10)
                    kept += stat.S_ISFIFO(mode)
                elif kind == "devnull":
                    after = os.stat(os.devnull)
                    kept += stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino
                else:
                    kept += stat.S_ISLNK(mode) and target.read_text() != "old"
    return (
        f"{tried} runs: --report of each of 4 formats aimed at a FIFO with a reader, "
        "/dev/null and a link to a regular file",
        f"{kept}/{tried} targets kept their kind (written in place, or through the link)",
    )


def measure() -> list[tuple[str, str, str]]:
    tried, result = _planted_secrets()
    special_tried, special_result = _special_targets()
    return [
        ("no planted secret reaches a file an eval run writes, nor its console", tried, result),
        ("a report never replaces a device, a FIFO or a link", special_tried, special_result),
    ]
