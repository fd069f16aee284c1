"""The offline token estimator: counts a message's tokens without a tokenizer.

It sits in the data layer so models (usage of scripted models) and the agent (memory
budgets) share it without depending on each other.
"""

from __future__ import annotations

from toolproof._messages import Message

__all__ = ["MESSAGE_OVERHEAD", "estimate_message_tokens", "estimate_tokens"]

#: Tokens added per message for role and separators (OpenAI's chat format adds 3-4).
MESSAGE_OVERHEAD = 4


def estimate_tokens(text: str) -> int:
    """Estimate the tokens of ``text`` without a tokenizer.

    ASCII text counts one token per 4 characters (rounded up); every other character (CJK,
    kana, hangul, emoji, accents) counts one token. Chinese text with GPT-4o's and
    DeepSeek's tokenizers takes 0.6 to 1 token per character, so the estimate errs on the
    side of trimming early, which is the safe side for a context budget.
    """
    if text.isascii():
        return (len(text) + 3) // 4
    ascii_chars = len(text.encode("ascii", "ignore"))
    return (ascii_chars + 3) // 4 + (len(text) - ascii_chars)


def estimate_message_tokens(message: Message) -> int:
    """Estimate the tokens a message takes in a request (content, tool calls, overhead)."""
    content = message.content
    if not content:
        tokens = MESSAGE_OVERHEAD
    elif content.isascii():  # the common case, inline: this runs for every message of a run
        tokens = MESSAGE_OVERHEAD + (len(content) + 3) // 4
    else:
        tokens = MESSAGE_OVERHEAD + estimate_tokens(content)
    for call in message.tool_calls:
        # repr() of the arguments is as long as their JSON to within a few characters, and
        # much cheaper to produce on the hot path.
        args = call.raw_arguments if call.raw_arguments is not None else repr(call.arguments)
        tokens += MESSAGE_OVERHEAD + estimate_tokens(call.name) + estimate_tokens(args)
    if message.reasoning:
        tokens += estimate_tokens(message.reasoning)
    return tokens
