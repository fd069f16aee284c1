"""The example's retrieval: chunking, the SQLite FTS5 index and the embedding index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from examples.knowledge_assistant.retrieval import (
    BM25Index,
    Chunk,
    EmbeddingIndex,
    chunk_text,
    hashing_embedding,
    load_chunks,
)
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "examples" / "knowledge_assistant" / "questions.jsonl"
WORDS = ["leave", "days", "salary", "the", "a", "travel.", "x" * 30, "\n\n"]
# Each word numbered, so a chunk is found at exactly one place in the text.
texts = st.lists(st.sampled_from(WORDS), max_size=300).map(
    lambda words: " ".join(w if w == "\n\n" else f"{w}{n}" for n, w in enumerate(words))
)


@settings(max_examples=80)
@given(text=texts, size=st.integers(50, 400), overlap=st.integers(0, 49))
def test_chunks_cover_the_text_in_order_without_gaps(text: str, size: int, overlap: int):
    chunks = chunk_text(text, size, overlap)
    assert all(len(c) <= size for c in chunks)
    assert bool(chunks) == bool(text.strip())
    # Each chunk is a piece of the text; the next one starts at or before the end of the last.
    stripped = text.strip()
    start = end = 0
    for chunk in chunks:
        found = stripped.find(chunk, start)
        assert found != -1
        assert stripped[end:found].strip() == ""  # no text is skipped
        start, end = found + 1, found + len(chunk)
    assert stripped[end:].strip() == ""
    if overlap == 0:
        assert " ".join(chunks).split() == text.split()


def test_chunk_settings_are_checked():
    with pytest.raises(ValueError, match="overlap"):
        chunk_text("text", 100, 100)
    assert len(load_chunks(size=200, overlap=40)) > len(load_chunks(size=800, overlap=40))


def test_both_indexes_find_the_labelled_page_for_most_questions():
    chunks = load_chunks(size=400, overlap=80)
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]
    labelled = [r for r in rows if r["relevant_ids"]]
    assert len(rows) >= 40 and len(labelled) < len(rows)
    for index, least in (
        (BM25Index(chunks), 0.95),
        (EmbeddingIndex(chunks, hashing_embedding()), 0.7),
    ):
        found = 0
        for row in labelled:
            pages = {hit.chunk.doc_id for hit in index.search(row["question"], 5)}
            found += bool(pages & set(row["relevant_ids"]))
        assert found / len(labelled) >= least, type(index).__name__


def test_the_embedding_index_ranks_by_cosine_and_is_deterministic():
    chunks = [Chunk("a", "a#0", "Leave", "annual leave days"), Chunk("b", "b#0", "Cars", "mileage")]
    index = EmbeddingIndex(chunks, hashing_embedding(64))
    hits = index.search("how many leave days", 2)
    assert hits[0].chunk.doc_id == "a"
    assert hits == EmbeddingIndex(chunks, hashing_embedding(64)).search("how many leave days", 2)
    assert BM25Index(chunks).search("the and of") == []  # only common words: nothing to match


def test_hostile_queries_are_plain_text_to_fts5(tmp_path: Path):
    index = BM25Index(load_chunks(), path=str(tmp_path / "index.sqlite"))
    for query in ['" OR 1=1 --', "leave* NEAR(a b)", "annual) AND (", "x" * 10_000, "假期"]:
        assert isinstance(index.search(query, 3), list)
