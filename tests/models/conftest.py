"""Fixtures of the model adapter tests: a real local OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _openai_server import FakeOpenAIServer

import toolproof.models


@pytest.fixture(scope="session")
def _openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def server(_openai_server: FakeOpenAIServer, allow_requests: None) -> Iterator[FakeOpenAIServer]:
    """The local server, emptied for this test; real requests are allowed while it runs."""
    _openai_server.reset()
    yield _openai_server
    _openai_server.reset()


@pytest.fixture
def allow_requests() -> Iterator[None]:
    """Allow real model requests (the toolproof plugin blocks them for the session)."""
    with toolproof.models.override_allow_model_requests(True):
        yield
