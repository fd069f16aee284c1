"""The usage a scripted model reports is the estimate of the whole request, on every request.

The model estimates only the messages it has not seen in the previous request; these tests
try to make that shortcut report something other than the full estimate.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Agent, Message, tool
from toolproof._messages import ModelSettings, ToolCall
from toolproof._tokens import estimate_message_tokens
from toolproof.models.fake import ScriptedModel
from toolproof.testing import call


def _ask(model: ScriptedModel, messages: list[Message]) -> int:
    response = asyncio.run(model.request(messages, [], ModelSettings()))
    return response.usage.input_tokens


def _full(messages: list[Message]) -> int:
    return sum(estimate_message_tokens(m) for m in messages)


def test_a_message_edited_in_place_is_estimated_again() -> None:
    model = ScriptedModel(["a", "b", "c"])
    messages = [Message.user("short"), Message.assistant("x")]
    assert _ask(model, messages) == _full(messages)
    messages[0].content = "a much longer question than the first one " * 10
    assert _ask(model, messages) == _full(messages)
    messages[1].tool_calls = [ToolCall("lookup", {"query": "y" * 200}, "c1")]
    assert _ask(model, messages) == _full(messages)


texts = st.text(max_size=40)


ACTIONS = ["append", "drop", "edit", "new", "answer", "answer edited", "answer twice"]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(ACTIONS), texts), max_size=12))
def test_the_estimate_equals_the_full_estimate_whatever_the_requests(
    steps: list[tuple[str, str]],
) -> None:
    # The model remembers its last answer as the likely next message: requests that repeat
    # it, repeat it edited, or repeat it twice must still be estimated in full.
    script: list[Any] = ["ok", call("lookup", query="x" * 30)] * (len(steps) + 1)
    model = ScriptedModel(script)
    messages = [Message.user("start")]

    def ask() -> Message:
        response = asyncio.run(model.request(messages, [], ModelSettings()))
        assert response.usage.input_tokens == _full(messages)
        assert response.usage.output_tokens == estimate_message_tokens(response.message) - 4
        return response.message

    answer = ask()
    for action, text in steps:
        if action == "append":
            messages = [*messages, Message.user(text)]
        elif action == "drop" and len(messages) > 1:
            messages = messages[1:]
        elif action == "edit":
            messages[-1].content = text
        elif action == "new":
            messages = [Message.user(text), *messages[1:]]
        elif action == "answer":
            messages = [*messages, answer]
        elif action == "answer edited":
            answer.content = text
            messages = [*messages, answer]
        else:
            messages = [*messages, answer, answer]
        answer = ask()


def test_a_run_estimates_each_message_once_not_once_per_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolproof.models.fake as fake

    @tool
    def multiply_numbers(a: float, b: float) -> float:
        """Multiply two numbers."""
        return a * b

    counted = 0
    estimate = fake.estimate_message_tokens

    def counting(message: Message) -> int:
        nonlocal counted
        counted += 1
        return estimate(message)

    monkeypatch.setattr(fake, "estimate_message_tokens", counting)
    steps = 30
    model = ScriptedModel([*(call("multiply_numbers", a=1, b=i) for i in range(steps)), "done"])
    result = Agent(
        model, [multiply_numbers], system_prompt="Be brief.", max_steps=steps + 1
    ).run_sync("go")
    assert result.stop_reason == "final"
    messages = len(model.requests[-1].messages)  # system, input, and 2 per tool step
    # Each message once when first seen (an answer when it is given, not again when the next
    # request repeats it), plus the final answer: linear, where estimating the whole request
    # every time would be about steps**2 (~1,000 here).
    assert counted <= messages + 1, counted
    assert result.usage.input_tokens == sum(
        sum(estimate(m) for m in request.messages) for request in model.requests
    )
