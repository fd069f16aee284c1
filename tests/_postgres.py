"""A real PostgreSQL server for the store tests (session-wide), and a fresh schema per test.

``TOOLPROOF_TEST_POSTGRES`` (a URL) points the tests at a server you run; otherwise, when
PostgreSQL's ``initdb`` and ``pg_ctl`` are found, a throwaway server is started on
127.0.0.1 (as the ``postgres`` user when the tests run as root: initdb refuses root) and
stopped at the end; otherwise the PostgreSQL tests are skipped with the reason.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from _processes import register, unregister

__all__ = ["pg_url", "postgres_server"]


def _binaries() -> Path | None:
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True):
        return Path(candidate).parent
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def local_server() -> Iterator[str]:
    """Start a throwaway PostgreSQL server; yields its URL (``pytest.skip`` if impossible)."""
    bindir = _binaries()
    if bindir is None:
        pytest.skip("PostgreSQL tests: no initdb/pg_ctl found and TOOLPROOF_TEST_POSTGRES unset")
    user: Any = None
    root = tempfile.mkdtemp(prefix="toolproof-pg-")
    if os.geteuid() == 0:  # initdb refuses to run as root
        import pwd

        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("PostgreSQL tests run as root need a 'postgres' user for the server")
        os.chown(root, account.pw_uid, account.pw_gid)
        user = account.pw_uid
    data, port = os.path.join(root, "data"), _free_port()

    def run(*command: str) -> None:
        done = subprocess.run(command, user=user, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}")

    run(
        str(bindir / "initdb"),
        "-D", data, "-U", "toolproof", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync",
    )  # fmt: skip
    options = (
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=120 "
        "-c shared_buffers=32MB -c fsync=off -c full_page_writes=off"
    )
    run(str(bindir / "pg_ctl"), "-D", data, "-l", os.path.join(root, "log"), "-w", "-o", options,
        "start")  # fmt: skip

    def alive() -> bool:
        done = subprocess.run([str(bindir / "pg_ctl"), "-D", data, "status"], user=user,
                              capture_output=True, timeout=60)  # fmt: skip
        return done.returncode == 0

    def stop() -> None:
        subprocess.run(
            [str(bindir / "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"],
            user=user, capture_output=True, timeout=60,
        )  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)

    # pg_ctl leaves the server running on its own: the session's safety net stops it if the
    # finally below never runs
    key = register(f"PostgreSQL on 127.0.0.1:{port}", alive, stop)
    try:
        yield f"postgresql://toolproof@127.0.0.1:{port}/postgres"
    finally:
        unregister(key)
        stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a PostgreSQL server for this test session."""
    pytest.importorskip("psycopg", reason="PostgreSQL tests need psycopg (the dev extra)")
    given = os.environ.get("TOOLPROOF_TEST_POSTGRES")
    if given:
        yield given
        return
    with local_server() as url:
        yield url


@pytest.fixture
def pg_url(postgres_server: str) -> Iterator[str]:
    """A URL whose tables live in a fresh schema of their own (dropped afterwards)."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    joiner = "&" if "?" in postgres_server else "?"
    yield f"{postgres_server}{joiner}options={quote(f'-csearch_path={schema}')}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
