"""Shared test configuration. Helpers for the vendored ``tests/data`` live in ``_shared.py``."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from _processes import no_process_left_behind, no_process_left_by_the_test, pytest_runtest_setup
from _shared import ROOT, SHARED, shared_path

__all__ = [
    "ROOT",
    "SHARED",
    "no_process_left_behind",
    "no_process_left_by_the_test",
    "pytest_runtest_setup",
    "shared_path",
]

# Property tests must not fail because a CI machine is busy: no per-example deadline.
settings.register_profile("toolproof", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("toolproof")

# Every `toolproof run` / `replay` writes a run log under the current directory by default.
# Tests (and the subprocesses they start, which inherit the environment) write theirs to a
# temporary folder instead, so a test run never litters the checkout; the run-log tests
# remove the variable to test the default.
if not os.environ.get("TOOLPROOF_LOG_DIR"):
    _LOGS = tempfile.mkdtemp(prefix="toolproof-test-runs-")
    os.environ["TOOLPROOF_LOG_DIR"] = _LOGS
    atexit.register(shutil.rmtree, _LOGS, ignore_errors=True)


#: Test files whose tests share one costly server for the session (a local Ray cluster,
#: llama.cpp's server): with pytest-xdist (-n N) each runs in one worker, so the server starts
#: once per run instead of once per worker.
ONE_WORKER_FILES = ("tests/scale/test_ray_executor.py", "tests/live_local/test_llama_server.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """(pytest-xdist) ``-n N``: tests spread one by one, but each file above stays together."""
    if config.getvalue("dist") != "load":
        return None  # another --dist mode was asked for
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path in ONE_WORKER_FILES else nodeid

    return Scheduling(config, log)


# A real PostgreSQL server for the store tests (skipped with the reason when there is none).
from _postgres import pg_url, postgres_server  # noqa: E402, F401
