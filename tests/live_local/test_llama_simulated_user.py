"""A real local model plays the simulated user (llama.cpp, Gemma 3 270M).

The model is far too weak to be graded: this checks the user simulator's plumbing against a
real OpenAI-compatible server (its requests accepted, its text becoming user turns, turns
and model calls counted, the conversation ended and checked), not what it says.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import LlamaServer
from toolproof import Message
from toolproof.evals import evaluate, load_suite
from toolproof.models import Model, ModelResponse, ModelSettings, OpenAIChatModel, ToolDefinition
from toolproof.testing import FunctionModel

pytestmark = pytest.mark.usefixtures("allow_requests")


class _Seen(Model):
    """The local model, with every request it was sent kept."""

    def __init__(self, real: Model) -> None:
        self.real = real
        self.name = real.name
        self.sent: list[tuple[list[Message], list[ToolDefinition]]] = []

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        self.sent.append((list(messages), list(tools)))
        capped = settings.merged(ModelSettings(max_tokens=32, temperature=0.0, seed=1))
        return await self.real.request(messages, tools, capped)

    async def aclose(self) -> None:
        await self.real.aclose()


def _agent(messages: list[Message], info: Any) -> str:
    return "Thanks. What is your booking code?"


@pytest.mark.timeout(400)
def test_a_local_model_plays_the_user(llama_server: LlamaServer, tmp_path: Path) -> None:
    path = tmp_path / "live.eval.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            suite: live-user
            agent: examples.airline.agent:build_agent
            mocks: [examples.airline.mocks:Airline]
            cases:
              - name: talk
                user:
                  persona: Mia, a passenger.
                  instructions: You want to move your flight to an earlier one.
                  knows: {booking_code: ABC123}
                  reveal_when_asked: [booking_code]
                  max_turns: 3
            """
        ),
        encoding="utf-8",
    )
    user = _Seen(OpenAIChatModel("gemma-3-270m", base_url=llama_server.base_url, retry=0))
    report = evaluate(
        [load_suite(path)],
        model=FunctionModel(_agent),
        user_model=user,
        keep_traces=True,
        cache=False,
    )
    [case] = report.cases
    trial = case.trials[0]
    assert trial.status != "error", trial.error
    traces = trial.traces or []
    assert 1 <= len(traces) <= 3
    assert all(t.input.strip() and "###DONE###" not in t.input for t in traces)
    assert traces[-1].metadata["conversation"]["ended_by"] in ("user", "max_turns")
    assert len(user.sent) in (len(traces), len(traces) + 1)
    for messages, tools in user.sent:
        assert tools == []
        assert messages[0].role == "system"
        assert "Maple Air" not in "".join(m.content or "" for m in messages)  # the agent's prompt
        assert all(m.role in ("system", "user", "assistant") and not m.tool_calls for m in messages)
    assert any(c.check == "simulated_user" for c in trial.checks)
