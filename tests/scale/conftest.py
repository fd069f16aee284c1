"""A local Ray cluster for the executor tests: 2 CPUs, a small object store, no dashboard."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    """Ray started for this module, stopped after it (skipped with the reason without Ray)."""
    ray = pytest.importorskip("ray", reason="the Ray executor tests need ray (the dev extra)")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=100 * 1024 * 1024,
        log_to_driver=False,
        configure_logging=False,
        # workers import the tests' modules (the functions they run are defined there)
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}},
    )
    try:
        yield ray
    finally:
        ray.shutdown()
