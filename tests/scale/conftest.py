"""A local Ray cluster for the executor tests: 2 CPUs, a small object store, no dashboard."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from _processes import register, unregister


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    """Ray started for the Ray tests' file, stopped after (skipped with the reason without Ray).

    Its tests run in one xdist worker (tests/conftest.py), so one cluster starts per run. It
    stops when the file is done, and the SIGTERM handler Ray's driver installs is put back: the
    tests that run after it in the same worker fork (pools ended by SIGTERM), and a forked
    pool worker of a Ray driver was seen not to end on it, hanging its pool.
    """
    ray = pytest.importorskip("ray", reason="the Ray executor tests need ray (the dev extra)")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    on_sigterm = signal.getsignal(signal.SIGTERM)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=100 * 1024 * 1024,
        log_to_driver=False,
        configure_logging=False,
        # workers import the tests' modules (the functions they run are defined there)
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}},
    )
    # the cluster's processes are Ray's: the session's safety net shuts it down if this
    # finalizer never runs
    key = register("a local Ray cluster", ray.is_initialized, ray.shutdown)
    try:
        yield ray
    finally:
        unregister(key)
        ray.shutdown()
        signal.signal(signal.SIGTERM, on_sigterm)
