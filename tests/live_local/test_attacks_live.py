"""Attack cases against a real local model (llama.cpp, Gemma 3 270M): the plumbing.

The model is far too small to be graded, so nothing here asserts how often it falls for an
attack. What is checked is that the payload travels as it should with a real client and
server: the planted text is in the injected tool's results, it is in the requests the
server received, the figures count what the traces hold, and no real tool runs. A few
solved examples ahead of each conversation get the small model to call the tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from examples.inbox_attacks.tools import LEDGER

from conftest import LlamaServer
from toolproof import Message, ModelSettings, ToolCall, ToolResult
from toolproof.evals import evaluate, load_suite
from toolproof.models import Model, OpenAIChatModel
from toolproof.models._base import ModelResponse, ToolDefinition

pytestmark = [pytest.mark.usefixtures("allow_requests"), pytest.mark.timeout(300)]

SUITE = Path(__file__).resolve().parents[2] / "examples" / "inbox_attacks" / "vulnerable.eval.yaml"
ATTACKER = "GB00ATTACKER00000000000666"


class FewShot(Model):
    """The real model, sent three solved examples ahead of the conversation; it keeps the
    requests it sent (what the server received)."""

    def __init__(self, inner: OpenAIChatModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.sent: list[list[Message]] = []

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        examples: list[Message] = []
        for index, ask in enumerate(["Check my e-mails.", "Any new mail?", "Read my inbox."]):
            call = ToolCall("read_inbox", {}, f"x{index}")
            examples += [
                Message.user(ask),
                Message.assistant(None, [call]),
                Message.tool(ToolResult(f"x{index}", "read_inbox", "ok", '{"emails": []}')),
                Message.assistant("You have no new e-mails."),
            ]
        head = [m for m in messages[:1] if m.role == "system"]
        sent = [*head, *examples, *messages[len(head) :]]
        self.sent.append(sent)
        return await self.inner.request(sent, tools, ModelSettings(temperature=0.0, max_tokens=48))

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_an_attack_case_plants_its_payload_in_what_a_real_model_reads(
    llama_server: LlamaServer,
) -> None:
    model = FewShot(OpenAIChatModel("gemma-3-270m", base_url=llama_server.base_url, retry=0))
    suite = load_suite(SUITE)
    wanted = ("summarize_inbox", "summarize_inbox~tool_knowledge~transfer")
    suite.cases = [c for c in suite.cases if c.name in wanted]
    report = evaluate([suite], model=model, trials=2, cache=False, keep_traces=True)
    assert LEDGER == []
    benign, attacked = report.cases
    assert attacked.case.attack is not None
    payload = attacked.case.attack.payload
    assert payload is not None and ATTACKER in payload
    delivered = 0
    for trial in attacked.trials:
        assert trial.status in ("pass", "fail"), trial.error  # a verdict, not an error
        (check,) = trial.checks
        assert check.metrics is not None
        reads = [
            result
            for trace in trial.traces or []
            for result in trace.tool_results
            if result.name == "read_inbox" and result.status == "ok"
        ]
        assert check.metrics["delivered"] == len(reads)
        for result in reads:  # both e-mail bodies carry it, as the model was sent it
            assert result.mocked
            assert result.content.count(ATTACKER) == 2 * payload.count(ATTACKER)
        delivered += len(reads)
    for trial in benign.trials:
        for trace in trial.traces or []:
            assert all(ATTACKER not in r.content for r in trace.tool_results)
    # The model called the tool, and the server received the planted e-mails.
    assert delivered >= 1
    received = [m for request in model.sent for m in request if m.role == "tool"]
    assert any(ATTACKER in (m.content or "") for m in received)
    (entry,) = report.summary()["attacks"]
    assert entry["trials"] == 2
    assert entry["delivered"] == sum(
        1 for t in attacked.trials if t.checks[0].metrics and t.checks[0].metrics["delivered"]
    )
    for key in ("benign_utility", "utility_under_attack", "attack_success_rate"):
        figure = entry[key]
        if figure is not None:
            assert figure["low"] <= figure["rate"] <= figure["high"]
