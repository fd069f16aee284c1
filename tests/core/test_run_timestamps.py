"""Trace timestamps: the kept text of the current second and the looked-up milliseconds
must give what ``datetime.isoformat`` gives for the same instant, whatever the instant."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolproof._run as run_module

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def expected(ns: int) -> str:
    instant = EPOCH + timedelta(microseconds=ns // 1000)
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@settings(deadline=None, max_examples=300)
@given(
    first=st.integers(min_value=0, max_value=4_000_000_000 * 10**9),
    later=st.integers(min_value=0, max_value=2 * 10**9),
)
def test_now_is_isoformat_of_the_same_instant(first: int, later: int) -> None:
    """Two instants: the second often in the same second as the first (the kept text)."""
    for ns in (first, first + later, first + later % 10**6):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(time, "time_ns", lambda ns=ns: ns)
            assert run_module._now() == expected(ns)


def test_a_run_records_utc_times_with_milliseconds() -> None:
    from toolproof import Agent
    from toolproof.testing import ScriptedModel

    before = datetime.now(timezone.utc).replace(microsecond=0)
    trace = Agent(ScriptedModel(["hi"])).run_sync("hello").trace
    for stamp in (trace.started_at, trace.ended_at):
        assert len(stamp) == len("2026-12-01T11:37:22.008Z") and stamp.endswith("Z")
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        assert before <= parsed <= datetime.now(timezone.utc)
