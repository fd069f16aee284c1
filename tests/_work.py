"""Growth of work with input size, measured so that a busy machine cannot fail a test.

Prefer counting work (calls, operations, bytes) where the code under test gives a unit to
count. Where the work happens inside C code (regular expressions, parsers in C), compare the
CPU time of the same work on a small and on a large input, in the same test: CPU time of this
thread does not grow when other processes take the cores, each size is measured several
times, interleaved, and the least time of each is kept, so a pause hits neither.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def growth(work: Callable[[T], object], small: T, big: T, *, repeat: int = 3) -> float:
    """How many times longer ``work(big)`` takes than ``work(small)``, in this thread's CPU time.

    Linear work on ten times the input gives about 10 and quadratic work about 100: assert
    well below the quadratic figure (say 40), which leaves a wide margin for noise.
    """
    fastest = [float("inf"), float("inf")]
    for _ in range(repeat):
        for index, given in enumerate((small, big)):
            started = time.thread_time()
            work(given)
            fastest[index] = min(fastest[index], time.thread_time() - started)
    # a clock tick is the floor: work too quick to measure counts as one tick
    tick = time.get_clock_info("thread_time").resolution
    return max(fastest[1], tick) / max(fastest[0], tick)
