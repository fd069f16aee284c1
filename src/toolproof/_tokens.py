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


#: The last message estimated, the parts the estimate reads, and the estimate: the agent and
#: a fake model estimate the same message one after the other (the answer the model gave,
#: then the run's record of it), so the second is a lookup. One tuple, replaced whole.
_last: tuple[object, object, object, object, int] = (None, None, None, None, 0)


def estimate_message_tokens(message: Message) -> int:
    """Estimate the tokens a message takes in a request (content, tool calls, overhead)."""
    global _last
    content, calls, reasoning = message.content, message.tool_calls, message.reasoning
    last = _last
    if last[0] is message and last[1] is content and last[2] is calls and last[3] is reasoning:
        return last[4]  # the same message with the same parts (rebuilt parts are new objects)
    if not content:
        tokens = MESSAGE_OVERHEAD
    elif content.isascii():  # the common case, inline: this runs for every message of a run
        tokens = MESSAGE_OVERHEAD + (len(content) + 3) // 4
    else:
        tokens = MESSAGE_OVERHEAD + estimate_tokens(content)
    for call in calls:
        # repr() of the arguments is as long as their JSON to within a few characters, and
        # much cheaper to produce on the hot path.
        args = call.raw_arguments if call.raw_arguments is not None else repr(call.arguments)
        name = call.name
        if name.isascii() and args.isascii():
            tokens += MESSAGE_OVERHEAD + (len(name) + 3) // 4 + (len(args) + 3) // 4
        else:
            tokens += MESSAGE_OVERHEAD + estimate_tokens(name) + estimate_tokens(args)
    if reasoning:
        tokens += estimate_tokens(reasoning)
    _last = (message, content, calls, reasoning, tokens)
    return tokens
