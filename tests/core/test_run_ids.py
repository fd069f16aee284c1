"""Trace ids are random version-4 UUIDs, never repeated: across runs, threads and forks.

The random bytes are read for 64 ids at a time; these tests try to get one id twice.
"""

from __future__ import annotations

import os
import threading
import uuid

import pytest

from toolproof import Agent
from toolproof._run import _run_id
from toolproof.testing import ScriptedModel


def test_ids_are_version_4_uuids_as_32_hex_digits() -> None:
    ids = [_run_id() for _ in range(1000)]
    assert len(set(ids)) == len(ids)
    for value in ids:
        parsed = uuid.UUID(hex=value)
        assert parsed.hex == value and len(value) == 32
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
    # Every variant digit appears: the bits around the fixed ones stay random.
    assert {value[16] for value in ids} == set("89ab")


def test_threads_never_share_an_id() -> None:
    found: list[list[str]] = []

    def take() -> None:
        found.append([_run_id() for _ in range(500)])

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [value for ids in found for value in ids]
    assert len(every) == 4000 and len(set(every)) == 4000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")
def test_a_forked_child_never_repeats_its_parents_ids() -> None:
    agent = Agent(ScriptedModel(["ok"] * 10))
    agent.run_sync("x")  # the parent has read ids it has not used yet
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, through the pipe
        try:
            os.close(reader)
            child = [agent.run_sync("x").trace.id for _ in range(3)]
            os.write(writer, ",".join(child).encode())
        finally:
            os._exit(0)
    os.close(writer)
    parent = [agent.run_sync("x").trace.id for _ in range(3)]
    with os.fdopen(reader) as pipe:
        child = pipe.read().split(",")
    os.waitpid(pid, 0)
    assert len(child) == 3 and not set(child) & set(parent), (child, parent)
