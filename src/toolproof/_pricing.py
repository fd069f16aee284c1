"""Prices per million tokens, and the cost of a model call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from toolproof._messages import Usage

__all__ = ["DEFAULT_PRICES", "Price", "find_price"]


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens.

    Attributes:
        input: Price of prompt tokens that missed the provider's cache.
        output: Price of completion tokens (reasoning included).
        cached_input: Price of prompt tokens served from the cache (DeepSeek "cache hit",
            OpenAI "cached"); ``None`` means the same as ``input``.
    """

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage`` in USD."""
        cached = min(usage.cached_tokens, usage.input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return (
            (usage.input_tokens - cached) * self.input
            + cached * cached_price
            + usage.output_tokens * self.output
        ) / 1_000_000


#: Published list prices (USD per 1M tokens) as of 2025-12; override them with
#: ``Agent(prices={...})``. Keys are model names, with or without the ``provider:`` prefix.
DEFAULT_PRICES: Mapping[str, Price] = {
    "deepseek-chat": Price(input=0.28, output=0.42, cached_input=0.028),
    "deepseek-reasoner": Price(input=0.28, output=0.42, cached_input=0.028),
    "gpt-4o": Price(input=2.50, output=10.00, cached_input=1.25),
    "gpt-4o-mini": Price(input=0.15, output=0.60, cached_input=0.075),
    "gpt-4.1": Price(input=2.00, output=8.00, cached_input=0.50),
    "gpt-4.1-mini": Price(input=0.40, output=1.60, cached_input=0.10),
    "gpt-4.1-nano": Price(input=0.10, output=0.40, cached_input=0.025),
    "o3-mini": Price(input=1.10, output=4.40, cached_input=0.55),
    "o4-mini": Price(input=1.10, output=4.40, cached_input=0.275),
}


def find_price(prices: Mapping[str, Price], *names: str | None) -> Price | None:
    """The price of the first name found, trying each with and without its provider prefix.

    Model-string options (``"deepseek:deepseek-chat?protocol=text"``) are ignored.
    """
    for name in names:
        if not name:
            continue
        name = name.split("?", 1)[0]
        if name in prices:
            return prices[name]
        bare = name.split(":", 1)[-1]
        if bare in prices:
            return prices[bare]
    return None
