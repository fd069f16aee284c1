"""`toolproof view`: the real server on 127.0.0.1, its pages, and what it refuses."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from view_helpers import env_with_src

from _processes import start, stop
from toolproof.view._server import Runs, make_app


@pytest.fixture
async def client(runs_dir: Path, replay_reports: dict[str, Any]) -> Any:
    from aiohttp.test_utils import TestClient, TestServer

    app = make_app(Runs(root=runs_dir), str(replay_reports["store"]))
    async with TestClient(TestServer(app, host="127.0.0.1")) as test_client:
        yield test_client


async def get(client: Any, path: str, **options: Any) -> tuple[int, str]:
    response = await client.get(path, **options)
    return response.status, await response.text()


async def test_run_list_run_page_and_json(client: Any, runs_dir: Path) -> None:
    status, text = await get(client, "/")
    assert status == 200
    for name in ("20261201T090000Z-run-aaaaaa", "20261201T092000Z-replay-cccccc"):
        assert f'href="/runs/{name}"' in text
    assert "&lt;b&gt;suite&lt;/b&gt;" in text and "<b>suite" not in text  # meta.json is escaped
    assert text.index("092000Z") < text.index("091000Z") < text.index("090000Z")  # newest first
    status, text = await get(client, "/runs/20261201T091000Z-run-bbbbbb")
    assert status == 200 and "toolproof eval report" in text and 'href="/traces"' in text
    status, text = await get(client, "/runs/20261201T092000Z-replay-cccccc")  # no meta.json
    assert status == 200 and "toolproof replay report" in text
    response = await client.get("/runs/20261201T091000Z-run-bbbbbb/report.json")
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("application/json")
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]


@pytest.mark.parametrize(
    "path",
    [
        "/runs/..%2F..%2Fetc%2Fpasswd",
        "/runs/../../etc/passwd",
        "/runs/%2E%2E",
        "/runs/..",
        "/runs/.%2E/report.json",
        "/runs/20261201T090000Z-run-aaaaaa%2F..%2F..%2Fsecret/report.json",
        "/traces/..%2F..%2Fetc",
        "/static/../../../etc/passwd",
        "/runs/%00",
    ],
)
async def test_no_path_leaves_the_runs_folder(client: Any, runs_dir: Path, path: str) -> None:
    secret = runs_dir.parent.parent / "secret"
    secret.mkdir(exist_ok=True)
    (secret / "report.json").write_text('{"cases": [], "marker": "SECRET-MARKER"}')
    # sent as raw bytes, so no client tidies the dots away first
    reader, writer = await asyncio.open_connection(client.host, client.port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    raw = (await reader.read()).decode("utf-8", "replace")
    writer.close()
    status = int(raw.split(" ", 2)[1])
    assert status in (400, 404) or (status == 200 and "toolproof runs" in raw), raw[:300]
    assert "SECRET-MARKER" not in raw and "root:" not in raw


async def test_compare_two_runs(client: Any) -> None:
    status, text = await get(
        client, "/compare?a=20261201T090000Z-run-aaaaaa&b=20261201T091000Z-run-bbbbbb"
    )
    assert status == 200
    # different suites: every case of the first is gone, every case of the second is new
    assert re.search(r'id="cmp-summary">7 gone · 3 new<', text)
    assert "&lt;script&gt;window.__pwned=4" in text and "<script>window.__pwned" not in text
    assert 'href="/runs/20261201T091000Z-run-bbbbbb#case-0">open</a>' in text
    status, _ = await get(client, "/compare?a=nope&b=20261201T091000Z-run-bbbbbb")
    assert status == 404


async def test_trace_store_filters_and_one_trace(
    client: Any, replay_reports: dict[str, Any]
) -> None:
    status, text = await get(client, "/traces")
    assert status == 200 and 'id="trace-count">3 traces<' in text
    ids = re.findall(r'href="/traces/([0-9a-f]+)"', text)
    assert len(ids) == 3
    status, text = await get(client, "/traces?tool=lookup_user&limit=2")
    assert 'id="trace-count">2 of 3 traces<' in text
    status, text = await get(client, "/traces?status=failed")
    assert 'id="trace-count">0 traces<' in text
    status, text = await get(client, "/traces?since=not-a-time")
    assert status == 400 and 'class="err"' in text
    status, text = await get(client, "/traces?limit=%3Cb%3E")
    assert status == 400 and "<b>" not in text.split("<main>")[1].split("</form>")[1]
    status, text = await get(client, f"/traces/{ids[0]}")
    assert status == 200 and 'data-trace="1"' in text and "&lt;script&gt;window.__pwned=1" in text
    status, _ = await get(client, "/traces/ffffffffffffff")
    assert status == 404


async def test_only_reads_and_checks_the_host(
    runs_dir: Path, replay_reports: dict[str, Any]
) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    app = make_app(Runs(root=runs_dir), str(replay_reports["store"]), allowed_hosts={"ok:1"})
    async with TestClient(TestServer(app, host="127.0.0.1")) as test_client:
        assert (await test_client.get("/", headers={"Host": "ok:1"})).status == 200
        assert (await test_client.get("/", headers={"Host": "evil.example:80"})).status == 421
        assert (await test_client.post("/", headers={"Host": "ok:1"})).status == 405


def start_view(*argv: str, cwd: Path | None = None) -> tuple[subprocess.Popen[str], str]:
    """``toolproof view ARGV`` and the URL it serves; the caller stops it (``stop``)."""
    process = start(
        [sys.executable, "-m", "toolproof", "view", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env_with_src(),
        cwd=cwd,
    )
    try:  # a view that never prints its URL fails by the test's timeout, and is stopped
        assert process.stdout is not None
        for line in process.stdout:
            match = re.search(r"open (http://\S+)", line)
            if match:
                return process, match.group(1)
        process.wait(30)
        error = process.stderr.read() if process.stderr else ""
    except BaseException:
        stop(process)
        raise
    stop(process)
    raise AssertionError(f"toolproof view did not start ({process.returncode}): {error}")


@pytest.fixture
def served(
    runs_dir: Path, replay_reports: dict[str, Any]
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process, url = start_view(str(runs_dir), "--store", str(replay_reports["store"]), "--port", "0")
    try:
        yield process, url
    finally:
        stop(process)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
async def test_the_command_serves_on_loopback_and_stops_on_ctrl_c_or_sigterm(
    served: tuple[subprocess.Popen[str], str], stop: int
) -> None:
    process, url = served
    assert url.startswith("http://127.0.0.1:")
    async with aiohttp.ClientSession() as session:
        async with session.get(url) as response:
            assert response.status == 200
            assert "toolproof runs" in await response.text()
        async with session.get(url + "traces") as response:
            assert response.status == 200
    process.send_signal(stop)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert "toolproof view: stopped" in err and "Traceback" not in err


def test_bad_arguments_exit_2_with_one_line(tmp_path: Path) -> None:
    from toolproof.cli import main

    assert main(["view", str(tmp_path / "missing")]) == 2
    not_report = tmp_path / "x.json"
    not_report.write_text("[1, 2]")
    assert main(["view", str(not_report)]) == 2
    assert main(["view", "--port", "70000"]) == 2


def test_a_taken_port_is_one_clear_error(runs_dir: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "toolproof", "view", str(runs_dir), "--port", str(port)],
            capture_output=True,
            text=True,
            env=env_with_src(),
            timeout=60,
        )
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_non_loopback_host_is_used_only_when_given_and_warns(runs_dir: Path) -> None:
    process, url = start_view(str(runs_dir), "--host", "0.0.0.0", "--port", "0")
    try:
        assert url.startswith("http://0.0.0.0:")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        stop(process)
    assert "not a loopback address" in err
    assert process.returncode == 130


def test_one_report_file(eval_reports: dict[str, Any]) -> None:
    process, url = start_view(str(eval_reports["json"]), "--port", "0")
    try:
        import urllib.request

        with urllib.request.urlopen(url) as response:
            assert 'href="/runs/report"' in response.read().decode()
        with urllib.request.urlopen(url + "runs/report") as response:
            assert "toolproof eval report" in response.read().decode()
    finally:
        stop(process)
