"""Models whose pass rates the statistics tests control, and the agent their suites name.

A case's input says its pass rate: ``"rate 0.70 #3"``. The model answers ``PASS`` or ``FAIL``
(the suites check ``final_contains: PASS``), drawing each answer from a random stream seeded by
the model's seed, the input and how many times it was asked that input: runs of one model
with different seeds are independent runs of the same agent; ``shift`` moves every case's
rate (a worse model). These are models, not scripted fakes, so the runs count in the run's
statistics as a real model's would.

Suites name them as ``--model statmodels:same_a`` (tests put this folder on the import path).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from toolproof import Agent, Message
from toolproof.models import Model, ModelResponse, ModelSettings, ToolDefinition


class RateModel(Model):
    """Answers PASS with the rate written in the user's message (plus ``shift``)."""

    def __init__(self, name: str, seed: int, shift: float = 0.0) -> None:
        self.name = name
        self.seed = seed
        self.shift = shift
        self.asked: Counter[str] = Counter()

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        text = next(m.content for m in reversed(messages) if m.role == "user") or ""
        found = re.search(r"rate ([0-9.]+)", str(text))
        rate = float(found.group(1)) if found else 0.5
        number = self.asked[str(text)]
        self.asked[str(text)] += 1
        draw = random.Random(f"{self.seed}|{text}|{number}").random()
        answer = "PASS" if draw < rate + self.shift else "FAIL"
        return ModelResponse(message=Message.assistant(answer))


def build_agent(model: Model | str, tools: Any = None, **options: Any) -> Agent:
    """An agent without tools: the model's answer is the final answer."""
    return Agent(model, [] if tools is None else tools, system_prompt="Answer PASS or FAIL.")


#: Two independent runs of the same agent (an A/A comparison).
same_a = RateModel("rate-a", seed=1)
same_b = RateModel("rate-b", seed=2)
#: The same agent, every case 50 points less likely to pass.
worse = RateModel("rate-worse", seed=3, shift=-0.5)
