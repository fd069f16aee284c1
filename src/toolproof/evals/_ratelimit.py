"""Client-side rate limits: requests and tokens per minute, shared by concurrent trials.

Each limit is a virtual schedule (GCRA, the "leaky bucket as a meter"): a request of cost
``c`` is given the next ``c / rate`` seconds of the budget, and waits until at most one
second of budget is booked ahead of now. Tokens are booked from an estimate before the
request and corrected with the provider's count after it, so long answers slow the next
requests down rather than overshooting the provider's limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["RateLimiter"]

_BURST_S = 1.0


class _Schedule:
    def __init__(self, per_minute: float, clock: Callable[[], float]) -> None:
        self.rate = per_minute / 60.0
        self.clock = clock
        self.booked_until = 0.0

    def book(self, cost: float) -> float:
        """Book ``cost`` units; return how long to wait before using them."""
        now = self.clock()
        start = max(self.booked_until, now)
        self.booked_until = start + cost / self.rate
        return max(0.0, self.booked_until - _BURST_S - now) if cost else 0.0

    def correct(self, delta: float) -> None:
        """Book ``delta`` more units (or give back, when negative) after the fact."""
        self.booked_until += delta / self.rate


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits for one model.

    Args:
        requests_per_minute: Most requests per minute (``None``: no limit).
        tokens_per_minute: Most input plus output tokens per minute (``None``: no limit).
        clock: A monotonic clock (for tests).
    """

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (
            ("requests_per_minute", requests_per_minute),
            ("tokens_per_minute", tokens_per_minute),
        ):
            if value is not None and not value > 0:  # NaN is not a limit either
                raise ValueError(f"{name} must be positive, got {value!r}")
        self.requests = _Schedule(requests_per_minute, clock) if requests_per_minute else None
        self.tokens = _Schedule(tokens_per_minute, clock) if tokens_per_minute else None
        self.waited_s = 0.0

    def book(self, estimated_tokens: int) -> float:
        """Book one request of about ``estimated_tokens``; return the seconds to wait first."""
        wait = 0.0
        if self.requests is not None:
            wait = max(wait, self.requests.book(1))
        if self.tokens is not None:
            wait = max(wait, self.tokens.book(estimated_tokens))
        self.waited_s += wait
        return wait

    async def acquire(self, estimated_tokens: int) -> None:
        """Wait until one request of about ``estimated_tokens`` fits the limits."""
        wait = self.book(estimated_tokens)
        if wait > 0:
            import asyncio

            await asyncio.sleep(wait)

    def settle(self, estimated_tokens: int, actual_tokens: int) -> None:
        """Correct the token booking with the provider's count."""
        if self.tokens is not None and actual_tokens != estimated_tokens:
            self.tokens.correct(actual_tokens - estimated_tokens)
