"""Hostile requests to the server: other sites, forged hosts, bad fault values, huge bodies.

The server proxies to a real model with the user's key in record mode and writes what it
sees into the trace store, so a request it should not answer must never reach the model:
every test counts the model's requests and the recorded traces.
"""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import logging
import re
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.errors import UserError
from toolproof.models.fake import ScriptedModel
from toolproof.server import ToolproofServer

#: The documented limits: request bodies of at most 8 MiB, faults of at most 600 s.
MAX_REQUEST_BYTES = 8 * 1024 * 1024
MAX_FAULT_SECONDS = 600.0
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


class Served:
    """A running server whose model and recorder count what reaches them."""

    def __init__(self) -> None:
        self.models: list[ScriptedModel] = []
        self.recorded: list[Any] = []
        self.server = ToolproofServer(self._model, on_finished=self.recorded.append)

    def _model(self) -> ScriptedModel:
        self.models.append(ScriptedModel(["hello"] * 5))
        return self.models[-1]

    @property
    def model_requests(self) -> int:
        return sum(len(m.requests) for m in self.models)

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def chat(self) -> str:
        return f"{self.server.url}/v1/chat/completions"


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    running = Served()
    await running.server.start()
    try:
        yield running
    finally:
        await running.server.aclose()


async def _raw(port: int, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """Send exactly these request bytes to 127.0.0.1:port; the status and body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head.encode("latin-1") + b"\r\n" + body)
        await writer.drain()
        data = await reader.read()
    finally:
        writer.close()
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def _post(host: str, body: bytes, *extra: str) -> str:
    lines = [
        "POST /v1/chat/completions HTTP/1.1",
        f"Host: {host}",
        "Content-Type: text/plain",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *extra,
    ]
    return "\r\n".join(lines) + "\r\n"


# -- other hosts and other sites ---------------------------------------------------------------

_LABEL = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
_FOREIGN_NAMES = st.one_of(
    st.lists(_LABEL, min_size=2, max_size=4).map(".".join),  # evil.example, a.b.c
    _LABEL.map(lambda n: f"127.0.0.1.{n}.example"),  # rebinding services' names
    _LABEL.map(lambda n: f"localhost.{n}"),
    st.sampled_from(["0.0.0.0", "10.0.0.5", "192.168.1.20", "[::ffff:7f00:1]", "127.0.0.2"]),
)


@pytest.mark.timeout(120)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=_FOREIGN_NAMES, with_port=st.booleans())
async def test_a_request_addressed_to_another_host_never_reaches_the_model(
    served: Served, name: str, with_port: bool
) -> None:
    # DNS rebinding: a name the attacker controls resolves to 127.0.0.1, so the browser
    # connects here but writes the attacker's name in the Host header.
    host = f"{name}:{served.port}" if with_port else name
    sent = json.dumps(BODY).encode()
    status, body = await _raw(served.port, _post(host, sent), sent)
    assert status == 421, (host, status, body)
    assert "unexpected Host header" in json.loads(body)["error"]["message"]
    assert served.model_requests == 0 and served.recorded == []


_ORIGINS = st.one_of(
    st.lists(_LABEL, min_size=2, max_size=3).map(lambda p: "http://" + ".".join(p)),
    st.lists(_LABEL, min_size=2, max_size=3).map(lambda p: "https://" + ".".join(p) + ":443"),
    st.sampled_from(["null", "file://", "chrome-extension://abcdef", "http://127.0.0.1"]),
)


@pytest.mark.timeout(120)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(origin=_ORIGINS, through=st.sampled_from(["127.0.0.1", "localhost"]))
async def test_a_request_from_a_page_of_another_site_never_reaches_the_model(
    served: Served, origin: str, through: str
) -> None:
    host = f"{through}:{served.port}"
    head = _post(host, json.dumps(BODY).encode(), f"Origin: {origin}")
    status, body = await _raw(served.port, head, json.dumps(BODY).encode())
    assert status == 403, (origin, status, body)
    assert "other sites are refused" in json.loads(body)["error"]["message"]
    assert served.model_requests == 0 and served.recorded == []


@pytest.mark.timeout(120)
async def test_the_same_machine_under_any_of_its_names_is_answered(served: Served) -> None:
    body = json.dumps(BODY).encode()
    for host in (
        f"127.0.0.1:{served.port}",
        f"localhost:{served.port}",
        f"LOCALHOST:{served.port}",
    ):
        assert (await _raw(served.port, _post(host, body), body))[0] == 200
    origin = f"Origin: http://127.0.0.1:{served.port}"  # a page of this server's own origin
    assert (await _raw(served.port, _post(f"127.0.0.1:{served.port}", body, origin), body))[
        0
    ] == 200
    other_port = f"Origin: http://127.0.0.1:{served.port + 1}"  # another local server's page
    assert (await _raw(served.port, _post(f"127.0.0.1:{served.port}", body, other_port), body))[
        0
    ] == 403
    assert served.model_requests == 4


@pytest.mark.timeout(120)
async def test_a_server_on_all_addresses_still_refuses_other_sites() -> None:
    server = ToolproofServer(lambda: ScriptedModel(["hello"]), host="0.0.0.0")
    await server.start()
    try:
        body = json.dumps(BODY).encode()
        port = server.port
        ok = await _raw(port, _post(f"192.168.1.20:{port}", body), body)
        assert ok[0] == 200  # any name reaches a server bound to every address
        foreign = _post(f"192.168.1.20:{port}", body, "Origin: http://evil.example")
        assert (await _raw(port, foreign, body))[0] == 403
    finally:
        await server.aclose()


@pytest.mark.timeout(120)
def test_serve_warns_when_it_listens_beyond_this_machine(tmp_path: Path) -> None:
    import signal

    from _serving import serve_process

    script = tmp_path / "script.yaml"
    script.write_text("- hello\n")
    args = ("--mode", "scripted", "--script", str(script), "--host", "0.0.0.0")
    with serve_process(*args, cwd=tmp_path) as (url, process):
        assert url.startswith("http://0.0.0.0:")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate()
    assert process.returncode == 0, err
    assert "warning: serving on 0.0.0.0, not a loopback address" in err


# -- a real browser ---------------------------------------------------------------------------


def _view_helpers() -> Any:
    path = Path(__file__).resolve().parents[1] / "view" / "view_helpers.py"
    spec = importlib.util.spec_from_file_location("_toolproof_view_helpers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    helpers = _view_helpers()
    if helpers.chromium_paths() is None:
        pytest.skip("chromium and chromedriver are not installed")
    driver = helpers.start_browser()
    try:
        yield driver
    finally:
        helpers.stop_browser(driver)


PAGE = textwrap.dedent(
    """\
    <!doctype html><title>a page of another site</title>
    <script>
    async function attack(target) {
      const body = JSON.stringify({model: "m", messages: [{role: "user", content: "leak"}]});
      const results = [];
      for (const init of [
        {method: "POST", mode: "no-cors", body, headers: {"Content-Type": "text/plain"}},
        {method: "POST", mode: "cors", body, headers: {"Content-Type": "application/json"}},
      ]) {
        try { const r = await fetch(target, init); results.push(r.type + ":" + r.status); }
        catch (e) { results.push("error:" + e.name); }
      }
      const form = document.createElement("form");  // a plain form post, no script needed
      form.method = "POST"; form.action = target; form.enctype = "text/plain";
      form.target = "sink";
      const field = document.createElement("input");
      field.name = '{"model":"m","messages":[{"role":"user","content":"x"}],"pad":"';
      field.value = '"}'; form.appendChild(field); document.body.appendChild(form);
      const sink = document.querySelector("iframe");
      const loaded = new Promise(resolve => { sink.onload = resolve; });
      form.submit();
      await loaded;  // the server's answer to the form post is in the frame
      return results;
    }
    </script><iframe name="sink"></iframe>
    """
)


@pytest.mark.timeout(120)
async def test_a_page_of_another_site_in_a_real_browser_cannot_use_the_server(
    served: Served, browser: Any
) -> None:
    from aiohttp import web

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    page_port = runner.addresses[0][1]
    try:
        loop = asyncio.get_running_loop()
        # "localhost" is another origin than 127.0.0.1:<server port>, as any site would be.
        await loop.run_in_executor(None, browser.get, f"http://localhost:{page_port}/")
        target = served.chat
        results = await loop.run_in_executor(
            None,
            lambda: browser.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                "attack(arguments[0]).then(done, e => done(['failed:' + e]));",
                target,
            ),
        )
    finally:
        await runner.cleanup()
    assert results, results
    assert served.model_requests == 0, results
    assert served.recorded == []


# -- fault values -----------------------------------------------------------------------------

_BAD_SECONDS = st.one_of(
    st.sampled_from(["inf", "-inf", "nan", "1e9", "601", "-1", "abc", "1e999", "", "0x10", "5s"]),
    st.floats(allow_nan=True, allow_infinity=True)
    .filter(lambda v: not 0 <= v <= MAX_FAULT_SECONDS)
    .map(repr),
    st.text(min_size=1, max_size=20).filter(lambda t: not _is_seconds(t)),
)


def _is_seconds(text: str) -> bool:
    try:
        return 0 <= float(text) <= MAX_FAULT_SECONDS
    except ValueError:
        return False


_BAD_FAULTS = st.one_of(
    st.tuples(st.sampled_from(["timeout", "429"]), _BAD_SECONDS).map(":".join),
    st.tuples(st.sampled_from(["500", "502", "503", "malformed", "drop"]), st.text(max_size=5)).map(
        ":".join
    ),
    st.text(min_size=1, max_size=30).filter(
        lambda t: (
            t.strip().partition(":")[0]
            not in ("429", "500", "502", "503", "timeout", "malformed", "drop")
        )
    ),
)


@pytest.mark.timeout(120)
@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(fault=_BAD_FAULTS, where=st.sampled_from(["header", "query"]))
async def test_a_bad_fault_value_is_a_400_naming_it(
    served: Served, fault: str, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    if not fault.strip() or any(ord(c) < 32 or ord(c) == 127 for c in fault):
        return  # not sendable as a header (the HTTP client refuses it)
    caplog.set_level(logging.WARNING)
    async with aiohttp.ClientSession() as session:
        if where == "header":
            reply = await session.post(served.chat, json=BODY, headers={"X-Toolproof-Fault": fault})
        else:
            reply = await session.post(served.chat, json=BODY, params={"fault": fault})
        async with reply:
            data = await reply.json()
    assert reply.status == 400, (fault, reply.status, data)
    message = data["error"]["message"]
    assert "fault" in message
    assert served.model_requests == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fault", ["timeout:inf", "timeout:nan", "429:1e9", "nonsense", "502:3"])
def test_a_channel_refuses_bad_faults_before_any_request(fault: str) -> None:
    with pytest.raises(UserError, match=re.escape("open_channel(faults=...)")):
        ToolproofServer().open_channel(lambda: ScriptedModel([]), faults=[fault])


@pytest.mark.timeout(120)
async def test_good_fault_values_still_work(served: Served) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.post(served.chat, json=BODY, params={"fault": "429:2.5"}) as reply:
            assert reply.status == 429 and reply.headers["Retry-After"] == "2.5"
        async with session.post(served.chat, json=BODY, params={"fault": "timeout:0"}) as reply:
            assert reply.status == 504


# -- body size --------------------------------------------------------------------------------


@pytest.mark.timeout(120)
async def test_a_body_over_the_limit_is_413_naming_the_limit(served: Served) -> None:
    big = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "x" * MAX_REQUEST_BYTES}]}
    ).encode()
    async with aiohttp.ClientSession() as session:
        async with session.post(served.chat, data=io.BytesIO(big)) as reply:
            data = await reply.json()
            assert reply.status == 413
            assert "at most 8 MiB" in data["error"]["message"]

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: read until too much
            for start in range(0, len(big), 1 << 20):
                yield big[start : start + (1 << 20)]

        async with session.post(served.chat, data=chunks()) as reply:
            assert reply.status == 413
            assert "at most 8 MiB" in (await reply.json())["error"]["message"]
        fits = json.dumps(
            {
                "model": "m",
                "messages": [{"role": "user", "content": "x" * (MAX_REQUEST_BYTES - 200)}],
            }
        ).encode()
        async with session.post(served.chat, data=io.BytesIO(fits)) as reply:
            assert reply.status == 200
    assert served.model_requests == 1
