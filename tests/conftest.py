"""Shared test configuration. Helpers for the vendored ``tests/data`` live in ``_shared.py``."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

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


def pytest_configure(config: pytest.Config) -> None:
    # With pytest-xdist (-n N), the tests of one xdist_group ("ray", "llama") run in one worker,
    # so one local cluster or server starts per run, not one per worker; the rest is spread.
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadgroup"


# A real PostgreSQL server for the store tests (skipped with the reason when there is none).
from _postgres import pg_url, postgres_server  # noqa: E402, F401
