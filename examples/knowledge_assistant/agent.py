"""The knowledge assistant: a ``search_knowledge_base`` tool over the handbook, and the agent.

``build_agent(model, tools, retriever="bm25", chunk_size=400, chunk_overlap=80)`` is the
suite's factory: ``retriever`` is ``"bm25"`` (SQLite FTS5) or ``"embedding"`` (the
deterministic :func:`~examples.knowledge_assistant.retrieval.hashing_embedding`; pass your own
``Retriever`` to :func:`search_tool` for a real embedding model).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from examples.knowledge_assistant.retrieval import (
    BM25Index,
    EmbeddingIndex,
    Retriever,
    hashing_embedding,
    load_chunks,
)
from toolproof import Agent, Tool, Toolset, tool
from toolproof.models import Model

SYSTEM_PROMPT = (
    "You are Fernhill Instruments' handbook assistant. Answer only from the handbook: call "
    "search_knowledge_base first, then answer in one or two sentences using only what the "
    "results say, and cite each page you used as [page-id] (the doc_id of the result). Never "
    "add numbers or facts that are not in the results. If the results do not answer the "
    "question, say exactly: I could not find this in the handbook."
)


@cache
def retriever(kind: str = "bm25", chunk_size: int = 400, chunk_overlap: int = 80) -> Retriever:
    """The handbook's retriever (built once per process and settings)."""
    chunks = load_chunks(size=chunk_size, overlap=chunk_overlap)
    if kind == "bm25":
        return BM25Index(chunks)
    if kind == "embedding":
        return EmbeddingIndex(chunks, hashing_embedding())
    raise ValueError(f"retriever must be 'bm25' or 'embedding', got {kind!r}")


def search_tool(index: Retriever) -> Tool[..., Any]:
    """The ``search_knowledge_base`` tool over ``index``."""

    @tool(name="search_knowledge_base")
    def search_knowledge_base(query: str, top_k: int = 5) -> dict[str, Any]:
        """Search the company handbook.

        Args:
            query: What to look for, in a few words or the user's question.
            top_k: How many passages to return (1 to 10).
        """
        hits = index.search(query, max(1, min(top_k, 10)))
        return {
            "results": [
                {
                    "doc_id": h.chunk.doc_id,
                    "chunk_id": h.chunk.chunk_id,
                    "title": h.chunk.title,
                    "text": h.chunk.text,
                    "score": h.score,
                }
                for h in hits
            ]
        }

    return search_knowledge_base


def build_agent(
    model: Model | str,
    tools: Toolset | Sequence[Tool[..., Any]] | None = None,
    *,
    retriever_kind: str = "bm25",
    chunk_size: int = 400,
    chunk_overlap: int = 80,
    **options: Any,
) -> Agent:
    """Build the knowledge assistant.

    Args:
        model: The model, or a model string such as ``"deepseek:deepseek-chat"``.
        tools: The tools (the suite's toolset); defaults to the handbook search.
        retriever_kind: ``"bm25"`` or ``"embedding"``.
        chunk_size: Characters per chunk.
        chunk_overlap: Characters shared by consecutive chunks.
        **options: Other ``Agent`` options.
    """
    if tools is None:
        tools = [search_tool(retriever(retriever_kind, chunk_size, chunk_overlap))]
    return Agent(model, tools, system_prompt=SYSTEM_PROMPT, max_steps=4, **options)
