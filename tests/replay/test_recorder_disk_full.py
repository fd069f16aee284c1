"""A store the disk refuses to grow: the error names the cause and the store, nothing is lost.

Each case runs a real recorder in a child process whose writes start failing partway: past
the process's file size limit (``RLIMIT_FSIZE``, always), and on a real full disk (a tiny
tmpfs in a private mount namespace, where the machine allows one). Trace sizes and batch
sizes vary, so the failure lands at different points of the writer's work (a statement, a
commit, a checkpoint). The child then reads its store back: every trace the recorder said
was written is there, no other, and every other trace is counted as dropped with the cause.
Before, SQLite's own rollback of the failed transaction made the store's rollback fail, and
that error ("cannot rollback - no transaction is active") was all a user saw.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from replay_helpers import user_trace

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="file size limits are POSIX"),
    pytest.mark.timeout(300),
]

#: The child: records traces in groups, flushing after each, until a flush reports a loss
#: and two more groups were recorded; then reads the store back and prints what it found.
CHILD = r"""
import json, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
from toolproof import Agent
from toolproof.testing import ScriptedModel
from toolproof.replay import Recorder, TraceStore

path, limit, size, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
acknowledged = []
recorder = Recorder(
    path, batch_size=batch, flush_interval=0.01, retries=1, on_written=acknowledged.extend
)
assert recorder._started.wait(60)
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
agent = Agent(ScriptedModel(["x" * size] * 1_000_000), recorder=recorder)
flushes, after = [], 0
for group in range(2_000):
    for i in range(batch):
        agent.run_sync(f"question {group} {i}")
    flushes.append(recorder.flush(60))
    if False in flushes:
        after += 1
        if after > 2:
            break
closed = recorder.close(60)
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
with TraceStore(path, create=False) as store:
    stored = sorted(trace.id for trace in store.query())
    integrity = store.integrity_check()
stats = recorder.stats
print(json.dumps({
    "acknowledged": sorted(acknowledged), "stored": stored, "integrity": integrity,
    "flushes": flushes, "closed": closed, "received": stats.received,
    "written": stats.written, "dropped_failed": stats.dropped_failed,
    "dropped_other": stats.dropped_full + stats.dropped_closed + stats.dropped_exit,
    "pending": stats.pending, "last_error": stats.last_error,
}))
"""


def run_child(command: list[str], *, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in its own process group, killed with its children on any way out."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def private_tmpfs_works(folder: Path) -> bool:
    """Whether this machine lets a process mount a tmpfs in a mount namespace of its own."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        return False
    folder.mkdir(exist_ok=True)
    probe = [unshare, "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {folder}"]
    try:
        return run_child(probe, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


#: (trace text size, batch size, file size limit in bytes), drawn once from a fixed seed.
_DRAW = random.Random(20261202)
LIMITED = [
    (_DRAW.choice([300, 2_000, 9_000]), _DRAW.choice([1, 7, 40]), _DRAW.randrange(300_000, 900_000))
    for _ in range(4)
]
FULL_DISKS = [(_DRAW.choice([500, 4_000]), _DRAW.choice([3, 25]), size) for size in (400, 900)]


def check(found: dict[str, Any], store: str, cause: str) -> None:
    assert found["acknowledged"], "nothing was written before the disk refused: no test"
    assert found["dropped_failed"] > 0, "nothing failed: no test"
    # Every trace the recorder said was written is in the store, and no other.
    assert found["stored"] == found["acknowledged"]
    assert found["written"] == len(found["acknowledged"])
    assert found["integrity"] == "ok"
    # Every other trace is counted as dropped, and the caller was told (flush said False).
    assert found["written"] + found["dropped_failed"] == found["received"]
    assert found["dropped_other"] == 0 and found["pending"] == 0
    assert False in found["flushes"]
    # The error says why, and where.
    error = found["last_error"]
    assert cause in error and store in error, error
    assert "rollback" not in error


@pytest.mark.parametrize(("size", "batch", "limit"), LIMITED)
def test_past_the_file_size_limit_the_error_says_so_and_nothing_acknowledged_is_lost(
    tmp_path: Path, size: int, batch: int, limit: int
) -> None:
    store = str(tmp_path / "traces.db")
    result = run_child([sys.executable, "-c", CHILD, store, str(limit), str(size), str(batch)])
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.splitlines()[-1])
    check(found, store, "file too large")
    assert f"file size limit of {limit:,} bytes" in found["last_error"]
    assert "file too large" in result.stderr  # the writer's warning names the cause too
    # The parent reads the same store: the acknowledged traces, whole.
    from toolproof.replay import TraceStore

    with TraceStore(store, create=False) as reopened:
        assert sorted(trace.id for trace in reopened.query()) == found["acknowledged"]


@pytest.mark.parametrize(("size", "batch", "disk_kib"), FULL_DISKS)
def test_on_a_full_disk_the_error_says_so_and_nothing_acknowledged_is_lost(
    tmp_path: Path, size: int, batch: int, disk_kib: int
) -> None:
    disk = tmp_path / "disk"
    if not private_tmpfs_works(disk):
        pytest.skip("no tmpfs of our own here (needs unshare -rm and mount permission)")
    store = str(disk / "traces.db")
    command = [
        "unshare",
        "-rm",
        "sh",
        "-c",
        f'mount -t tmpfs -o size={disk_kib}k tmpfs "{disk}" && exec "$@"',
        "sh",
        sys.executable,
        "-c",
        CHILD,
        store,
        "0",
        str(size),
        str(batch),
    ]
    result = run_child(command)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.splitlines()[-1])
    check(found, store, "the disk is full")


def test_an_import_past_the_file_size_limit_is_one_clear_error(tmp_path: Path) -> None:
    """``toolproof traces import`` on a store that cannot grow: exit 2, the cause, no traceback."""
    export = tmp_path / "export.jsonl"
    traces = [user_trace(n, metadata={"padding": "p" * 2_000}) for n in range(300)]
    export.write_text("".join(trace.to_json() + "\n" for trace in traces))
    store = tmp_path / "traces.db"
    script = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "from toolproof.replay import TraceStore\n"
        "TraceStore(sys.argv[2]).close()\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, resource.RLIM_INFINITY))\n"
        "from toolproof.cli import main\n"
        "sys.exit(main(['traces', 'import', sys.argv[1], '--store', sys.argv[2]]))\n"
    )
    result = run_child([sys.executable, "-c", script, str(export), str(store)])
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"cannot write to trace store {store}: file too large" in result.stderr
    assert "rollback" not in result.stderr
