"""The handbook's retrieval: load the pages, chunk them, and search them.

Two retrievers implement one protocol (:class:`Retriever`), so the agent's tool does not
care which one answers:

- :class:`BM25Index`, a SQLite FTS5 index (BM25 ranking; the standard library's ``sqlite3``,
  nothing to download) — the default;
- :class:`EmbeddingIndex`, cosine similarity over vectors from any embedding function you pass
  (a sentence-transformers model, an API...). :func:`hashing_embedding` is a small
  deterministic one (hashed word and character-trigram counts) for tests and offline demos.
"""

from __future__ import annotations

import hashlib
import math
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

HANDBOOK = Path(__file__).parent / "handbook"

Embedding = Callable[[Sequence[str]], list[list[float]]]


@dataclass(frozen=True)
class Chunk:
    """A piece of a handbook page.

    Attributes:
        doc_id: The page (its file name without ``.md``).
        chunk_id: ``doc_id#n``.
        title: The page's title.
        text: The chunk's text.
    """

    doc_id: str
    chunk_id: str
    title: str
    text: str


@dataclass(frozen=True)
class Hit:
    """A chunk found by a search, with its score (higher is better)."""

    chunk: Chunk
    score: float


class Retriever(Protocol):
    """Anything that finds the chunks that best answer a query."""

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The ``k`` best chunks, best first."""
        ...


def chunk_text(text: str, size: int = 600, overlap: int = 120) -> list[str]:
    """Split ``text`` into chunks of about ``size`` characters, overlapping by ``overlap``.

    Chunks end at a paragraph or sentence end when one is near, and never cut a word.
    """
    if size < 50 or not 0 <= overlap < size:
        raise ValueError(f"chunk size must be >= 50 and 0 <= overlap < size: {size}, {overlap}")
    text = text.strip()
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            window = text[start:end]
            cut = max(window.rfind("\n\n"), window.rfind(". "))
            if cut > size // 2:
                end = start + cut + 1
            else:
                space = window.rfind(" ")
                end = start + space if space > 0 else end
        piece = text[start:end].strip()
        if piece:
            chunks.append(piece)
        if end >= len(text):
            break
        first = start + (len(text[start:end]) - len(text[start:end].lstrip()))
        following = max(end - overlap, first + 1)
        while following < end and not text[following - 1].isspace():
            following += 1  # start the next chunk at a word, after this chunk's first word
        start = following
    return chunks


def load_chunks(folder: Path = HANDBOOK, size: int = 600, overlap: int = 120) -> list[Chunk]:
    """Every page of ``folder`` (``*.md``), chunked."""
    chunks: list[Chunk] = []
    for page in sorted(folder.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        title = text.splitlines()[0].lstrip("# ").strip() if text.strip() else page.stem
        body = text.split("\n", 1)[1] if "\n" in text else text
        for number, piece in enumerate(chunk_text(body, size, overlap)):
            chunks.append(Chunk(page.stem, f"{page.stem}#{number}", title, piece))
    return chunks


_WORD = re.compile(r"[A-Za-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "my",
        "of",
        "on",
        "or",
        "the",
        "to",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        "much",
        "many",
        "there",
        "this",
        "that",
        "if",
    ]
)


def terms(text: str) -> list[str]:
    """The searchable words of ``text`` (lower case, without common words)."""
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in _STOP]


class BM25Index:
    """Chunks in a SQLite FTS5 table, ranked by BM25.

    Args:
        chunks: The chunks to index.
        path: A SQLite file to keep the index in (default: in memory).
    """

    def __init__(self, chunks: Iterable[Chunk], path: str = ":memory:") -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("DROP TABLE IF EXISTS chunks")
        self._db.execute(
            "CREATE VIRTUAL TABLE chunks USING fts5("
            "doc_id UNINDEXED, chunk_id UNINDEXED, title, text, tokenize='porter unicode61')"
        )
        self._db.executemany(
            "INSERT INTO chunks VALUES (?, ?, ?, ?)",
            [(c.doc_id, c.chunk_id, c.title, c.text) for c in chunks],
        )
        self._db.commit()

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The ``k`` best chunks for ``query`` (any of its words), best first."""
        words = terms(query)
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in dict.fromkeys(words))
        with self._lock:
            rows = self._db.execute(
                "SELECT doc_id, chunk_id, title, text, bm25(chunks, 0, 0, 2.0, 1.0) AS rank "
                "FROM chunks WHERE chunks MATCH ? ORDER BY rank, chunk_id LIMIT ?",
                (match, k),
            ).fetchall()
        return [Hit(Chunk(d, c, t, x), round(-rank, 6)) for d, c, t, x, rank in rows]


class EmbeddingIndex:
    """Chunks ranked by the cosine similarity of their embeddings to the query's.

    Args:
        chunks: The chunks to index.
        embed: Turns texts into vectors (one per text).
    """

    def __init__(self, chunks: Iterable[Chunk], embed: Embedding) -> None:
        self._chunks = list(chunks)
        self._embed = embed
        self._vectors = [_unit(v) for v in embed([f"{c.title}. {c.text}" for c in self._chunks])]

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The ``k`` chunks most similar to ``query``, best first."""
        (vector,) = self._embed([query])
        q = _unit(vector)
        scored = [
            (sum(a * b for a, b in zip(q, v, strict=True)), n) for n, v in enumerate(self._vectors)
        ]
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [Hit(self._chunks[n], round(score, 6)) for score, n in scored[:k] if score > 0]


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else list(vector)


def hashing_embedding(dimensions: int = 512) -> Embedding:
    """A deterministic embedding: hashed counts of words and character trigrams.

    No model, no download: good enough to test the embedding path and for offline demos.
    """

    def embed(texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vector = [0.0] * dimensions
            words = terms(text)
            features = words + [w[i : i + 3] for w in words for i in range(max(1, len(w) - 2))]
            for feature in features:
                digest = hashlib.blake2b(feature.encode(), digest_size=4).digest()
                vector[int.from_bytes(digest, "big") % dimensions] += 1.0
            out.append(vector)
        return out

    return embed
