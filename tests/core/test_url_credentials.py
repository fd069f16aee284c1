"""Credentials in URLs never reach a file toolproof writes nor its console.

One function (``toolproof._text.mask_urls``) masks the password of a URL's user information
and the values of secret parameters (``api_key``, ``token``, ``password``, ``secret``...),
in URLs and in model strings' options. Generated URLs go through it, then through a whole
``toolproof run`` whose model's base URL and whose command line carry them: every field of
``meta.json``, ``report.json``, the ``--report`` files of every format, stdout and stderr are
searched for the secrets.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof._text import mask_urls

ROOT = Path(__file__).resolve().parents[2]

# (a secret starts with a capital letter, which nothing else of a generated URL holds)
SECRET = st.text(
    alphabet="abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789", min_size=7
).map(lambda text: "S" + text)
PARAM = st.sampled_from(
    ["api_key", "apikey", "key", "token", "access_token", "password", "secret", "client_secret",
     "X-Amz-Signature", "sig", "auth"]
)  # fmt: skip
SCHEME = st.sampled_from(["http", "https", "postgresql", "postgres", "redis", "amqp"])
USER = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=12)
HOST = st.sampled_from(["127.0.0.1:9", "db.internal:5432", "[::1]:8000", "example.com"])


@st.composite
def urls(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A URL with a password and secret parameters, and the secrets it holds."""
    secrets = []
    userinfo = ""
    if draw(st.booleans()):
        password = draw(SECRET)
        secrets.append(password)
        userinfo = f"{draw(USER)}:{password}@"
    params = []
    for name in draw(st.lists(PARAM, max_size=3, unique=True)):
        value = draw(SECRET)
        secrets.append(value)
        params.append(f"{name}={value}")
    params.insert(draw(st.integers(0, len(params))), "page=2")
    query = "?" + "&".join(params)
    return f"{draw(SCHEME)}://{userinfo}{draw(HOST)}/v1{query}", secrets


@given(urls(), st.text(max_size=20), st.text(max_size=20))
def test_every_secret_of_a_url_is_masked_wherever_it_stands(
    url: tuple[str, list[str]], before: str, after: str
) -> None:
    text, secrets = url
    masked = mask_urls(f"{before} {text} {after}")
    for secret in secrets:
        assert secret not in masked
    assert "page=2" in masked
    assert mask_urls(masked) == masked  # masking twice changes nothing


@pytest.mark.parametrize(
    "text",
    ["openai-compatible:m?base_url=http://h/v1&api_key_env=MY_KEY", "monkey=banana", "a=b", ""],
)
def test_what_is_not_a_secret_is_kept(text: str) -> None:
    assert mask_urls(text) == text


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@settings(max_examples=4, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(user=USER, password=SECRET, name=PARAM, value=SECRET)
@pytest.mark.timeout(300)
def test_no_file_and_no_console_line_of_a_run_holds_a_urls_secret(
    tmp_path_factory: pytest.TempPathFactory, user: str, password: str, name: str, value: str
) -> None:
    # (one parameter: a model string's options are split at '&')
    secrets = [password, value]
    base_url = f"http://{user}:{password}@127.0.0.1:{_closed_port()}/v1?{name}={value}"
    work = tmp_path_factory.mktemp("urls")
    (work / "u.eval.yaml").write_text(
        "suite: u\nagent: examples.hr_assistant.agent:build_agent\ncases: [{name: a, input: hi}]\n",
        encoding="utf-8",
    )
    reports = [f"{fmt}:{work / ('r.' + fmt)}" for fmt in ("json", "junit", "markdown", "html")]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolproof",
            "run",
            "u.eval.yaml",
            "--no-cache",
            "--model",
            f"openai-compatible:m?base_url={base_url}&api_key_env=HOME&max_retries=0",
            *[arg for spec in reports for arg in ("--report", spec)],
        ],
        cwd=work,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")]),
            "TOOLPROOF_LOG_DIR": str(work / "runs"),
        },
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode in (1, 3), result.stdout + result.stderr
    written = [p for p in work.rglob("*") if p.is_file() and p.suffix != ".yaml"]
    assert {p.name for p in written} >= {"meta.json", "report.json", "r.json", "r.html"}
    for secret in secrets:
        assert secret not in result.stdout + result.stderr
        for path in written:
            assert secret not in path.read_text(encoding="utf-8", errors="replace"), path
