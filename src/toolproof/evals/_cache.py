"""The response cache: unchanged cases cost nothing on re-runs.

Model responses and judge verdicts are stored in one SQLite file under ``.toolproof/``,
keyed by a hash of everything that decides them. A model response's key covers the model,
the messages, the tools offered, the settings and the **trial index**, so the trials of a
case stay independent (trial 2 never reuses trial 1's answer) while a re-run of an
unchanged case replays each trial's own answers. A judge verdict's key covers the judge
model, the prompt version and the prompt: it is cached by content.

Writes are batched (a commit every few dozen entries and at close), so caching costs the
eval loop little; the WAL journal lets several processes share a cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolproof._messages import Message, ModelResponse, ModelSettings, ToolDefinition

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["CACHE_VERSION", "ResponseCache", "decode_response", "encode_response", "request_key"]

#: Part of every key: bump it when the key or the stored form changes meaning.
CACHE_VERSION = 1

_BATCH = 64


class ResponseCache:
    """A key-value store of model responses and judge verdicts in a SQLite file.

    Args:
        directory: The cache directory (created, with a ``.gitignore`` that ignores it all).
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# created by toolproof: caches and run data\n*\n")
        self.path = self.directory / "cache.sqlite"
        if not self.path.exists():
            # It holds model responses as they came (not redacted: a cached run must be the
            # run it replays): readable by its owner only, and SQLite's side files alike.
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        self._db = sqlite3.connect(self.path, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS entries "
            "(key TEXT PRIMARY KEY, kind TEXT NOT NULL, value BLOB NOT NULL, created REAL NOT NULL)"
        )
        self._db.commit()
        self._pending: dict[str, tuple[str, bytes]] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> bytes | None:
        """The stored value, or ``None``."""
        pending = self._pending.get(key)
        if pending is not None:
            self.hits += 1
            return pending[1]
        row = self._db.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        value: bytes = row[0]
        return value

    def put(self, key: str, value: bytes, *, kind: str = "response") -> None:
        """Store a value (written in batches; :meth:`close` writes the rest)."""
        self._pending[key] = (kind, value)
        if len(self._pending) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        """Write pending entries."""
        if not self._pending:
            return
        now = time.time()
        rows = [(key, kind, value, now) for key, (kind, value) in self._pending.items()]
        self._pending.clear()
        self._db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)", rows)
        self._db.commit()

    def __len__(self) -> int:
        self.flush()
        row = self._db.execute("SELECT COUNT(*) FROM entries").fetchone()
        return int(row[0])

    def close(self) -> None:
        """Write pending entries and close the file."""
        try:
            self.flush()
        finally:
            self._db.close()


def _message_key(message: Message) -> list[Any]:
    return [
        message.role,
        message.content,
        [[c.name, c.arguments_json(), c.id] for c in message.tool_calls],
        message.tool_call_id,
        message.name,
        message.reasoning,
    ]


def request_key(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    settings: ModelSettings,
    *,
    trial: int,
) -> str:
    """The cache key of one model request in one trial."""
    payload = [
        CACHE_VERSION,
        model,
        trial,
        settings.to_dict(),
        _tools_key(tuple(tools)),
        [_message_key(m) for m in messages],
    ]
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _tools_key(tools: tuple[ToolDefinition, ...]) -> str:
    # The same definitions list is offered on every step of every trial: hash it once.
    key = tuple(id(t) for t in tools)
    found = _TOOL_HASHES.get(key)
    if found is not None and found[0] == tools:
        return found[1]
    text = json.dumps(
        [[t.name, t.description, t.parameters] for t in tools], sort_keys=True, default=str
    )
    digest = hashlib.sha256(text.encode()).hexdigest()
    if len(_TOOL_HASHES) > 256:
        _TOOL_HASHES.clear()
    _TOOL_HASHES[key] = (tools, digest)
    return digest


_TOOL_HASHES: dict[tuple[int, ...], tuple[tuple[ToolDefinition, ...], str]] = {}


@cache
def _adapter() -> TypeAdapter[ModelResponse]:
    from pydantic import TypeAdapter

    return TypeAdapter(ModelResponse)


def encode_response(response: ModelResponse) -> bytes:
    """A model response as stored in the cache."""
    return _adapter().dump_json(response)


def decode_response(data: bytes) -> ModelResponse:
    """A model response read back from the cache."""
    return _adapter().validate_json(data)
