"""A run's usage is the sum of its steps' usage, field by field, as ``Usage.__add__`` sums."""

from __future__ import annotations

import functools
import operator

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Agent, Budget, Message, Usage, tool
from toolproof._messages import ModelResponse
from toolproof.testing import ScriptedModel, call


@tool
def echo(text: str) -> str:
    """Echo the text.

    Args:
        text: The text.
    """
    return text


counts = st.integers(min_value=0, max_value=2**40)
usages = st.builds(
    Usage,
    counts,
    counts,
    counts,
    counts,
    st.integers(min_value=1, max_value=3),  # a scripted usage of 0 requests is estimated
    st.booleans(),
    st.dictionaries(st.sampled_from(["audio", "cache_write", "x"]), counts, max_size=2),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(usages, min_size=1, max_size=6))
def test_the_run_usage_is_the_sum_of_the_steps(steps: list[Usage]) -> None:
    script = [
        ModelResponse(Message.assistant(None, [call("echo", text=str(i))]), usage)
        for i, usage in enumerate(steps[:-1])
    ]
    script.append(ModelResponse(Message.assistant("done"), steps[-1]))
    agent = Agent(ScriptedModel(script), [echo], max_steps=10, max_repeated_calls=None)
    result = agent.run_sync("go", budget=Budget())
    assert result.stop_reason == "final"
    expected = functools.reduce(operator.add, steps)
    assert result.usage == expected
    assert [s.usage for s in result.trace.steps] == steps
    # The token budget reads the same running total: a limit just under the first step's
    # tokens stops the run before its first tool runs.
    first = steps[0].input_tokens + steps[0].output_tokens
    if len(steps) > 1 and first > 0:
        limited = Agent(ScriptedModel(script), [echo], max_steps=10, max_repeated_calls=None)
        stopped = limited.run_sync("go", budget=Budget(max_tokens=first - 1))
        assert stopped.stop_reason == "budget"
        assert stopped.stop_detail == f"token budget exceeded ({first} > {first - 1} tokens)"
        assert stopped.usage == steps[0] and stopped.trace.tool_results == []
