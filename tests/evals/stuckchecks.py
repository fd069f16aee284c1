"""Checks of yours that never finish on their own (the suites of test_check_bounds name them).

Each waits for :data:`RELEASE`, which the tests set when they end, so no thread they leave
keeps running (or spinning) in the test process; a separate process never sets it and must
still exit.
"""

from __future__ import annotations

import asyncio
import threading

from toolproof.evals import SessionRecord, check

RELEASE = threading.Event()


@check("stuck_sync", spec=bool, describe="a synchronous check that blocks")
def stuck_sync(record: SessionRecord, value: bool) -> bool:
    RELEASE.wait()
    return True


@check("stuck_async", spec=bool, describe="an async check that awaits forever")
async def stuck_async(record: SessionRecord, value: bool) -> bool:
    while not RELEASE.is_set():  # noqa: ASYNC110 (a thread's event: the tests release it)
        await asyncio.sleep(0.01)
    return True


@check("stuck_async_blocking", spec=bool, describe="an async check that blocks its loop")
async def stuck_async_blocking(record: SessionRecord, value: bool) -> bool:
    RELEASE.wait()
    return True


@check("spinning", spec=bool, describe="a synchronous check that spins the CPU")
def spinning(record: SessionRecord, value: bool) -> bool:
    while not RELEASE.is_set():
        pass
    return True
