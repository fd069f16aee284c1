"""The eval runner's trial models (counted, cached, rate limited) and infrastructure errors."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolproof._messages import Message, ModelResponse, ModelSettings, ToolDefinition, Usage
from toolproof._toolset import Toolset, mock_context
from toolproof.errors import (
    AgentRunError,
    MissingAPIKey,
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelRequestsDisabled,
    UnexpectedModelOutput,
)
from toolproof.evals._suite import Case
from toolproof.models._base import Model

if TYPE_CHECKING:
    from toolproof._tools import Tool
    from toolproof.evals._cache import ResponseCache
    from toolproof.evals._ratelimit import RateLimiter

__all__ = [
    "SCRIPTED",
    "Counters",
    "Infra",
    "LimitedModel",
    "MappingMocks",
    "Metered",
    "Slot",
    "TrialModel",
    "Waiting",
    "infrastructure_error",
    "trial_tools",
]

SCRIPTED = "scripted"


# -- models -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Counters:
    """What one attempt of a trial sent: model requests, cached responses, the judge's."""

    model_calls: int = 0
    cached_calls: int = 0
    judge: Metered | None = None  # the judge's usage, cost and time in this attempt


@dataclass(slots=True)
class Slot:
    """One model shared by every trial that uses it, with its rate limits."""

    model: Model
    limiter: RateLimiter | None = None
    owned: bool = True


class Waiting:
    """Counts the trials waiting for the model; when every worker is, runs ``idle`` once.

    With every trial waiting for a response the event loop has nothing else to do, so
    work the trials need later (building the trace codec for the report) costs no time
    there.
    """

    __slots__ = ("idle", "now", "workers")

    def __init__(self, workers: int, idle: Callable[[], None] | None) -> None:
        self.workers = workers
        self.idle = idle
        self.now = 0

    def enter(self) -> None:
        self.now += 1
        if self.idle is not None and self.now >= self.workers:
            idle, self.idle = self.idle, None
            asyncio.get_running_loop().call_soon(idle)

    def leave(self) -> None:
        self.now -= 1


class TrialModel(Model):
    """The model as one trial sees it: cached per trial index, rate limited, counted."""

    def __init__(
        self,
        slot: Slot,
        trial: int,
        counters: Counters,
        cache: ResponseCache | None,
        waiting: Waiting | None = None,
    ) -> None:
        self.slot = slot
        self.inner = slot.model
        self.name = slot.model.name
        # The endpoint is part of the cache key: the same model name served elsewhere (a
        # local vLLM standing in for OpenAI) must not reuse the other's answers.
        endpoint = getattr(slot.model, "base_url", None)
        self.cache_name = f"{self.name} @ {endpoint}" if endpoint else self.name
        self.trial = trial
        self.counters = counters
        self.cache = cache
        self.waiting = waiting

    async def _sent(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        waiting = self.waiting
        if waiting is None:
            return await _limited_request(self.slot, messages, tools, settings)
        waiting.enter()
        try:
            return await _limited_request(self.slot, messages, tools, settings)
        finally:
            waiting.leave()

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        if self.cache is None:
            response = await self._sent(messages, tools, settings)
            self.counters.model_calls += 1
            return response
        from toolproof.evals._cache import decode_response, encode_response, request_key

        key = request_key(self.cache_name, messages, tools, settings, trial=self.trial)
        stored = self.cache.get(key)
        if stored is not None:
            self.counters.cached_calls += 1
            return decode_response(stored)
        response = await self._sent(messages, tools, settings)
        self.counters.model_calls += 1
        self.cache.put(key, encode_response(response))
        return response


class LimitedModel(Model):
    """A shared model behind its rate limits (used for the judge, which caches by content)."""

    def __init__(self, slot: Slot) -> None:
        self.slot = slot
        self.name = slot.model.name

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        return await _limited_request(self.slot, messages, tools, settings)


class Metered(LimitedModel):
    """The judge of one trial: its requests' tokens, cost (at the known list price) and time."""

    def __init__(self, slot: Slot) -> None:
        super().__init__(slot)
        self.usage = Usage()
        self.cost: float | None = None
        self.ms = 0.0

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        import time

        from toolproof._pricing import DEFAULT_PRICES, find_price

        started = time.perf_counter()
        try:
            response = await super().request(messages, tools, settings)
        finally:
            self.ms += (time.perf_counter() - started) * 1000
        used = response.usage
        self.usage = self.usage + (used if used.requests else used + Usage(requests=1))
        price = find_price(DEFAULT_PRICES, self.name, response.model_name)
        if price is not None:
            self.cost = (self.cost or 0.0) + price.cost(used)
        return response


async def _limited_request(
    slot: Slot,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    settings: ModelSettings,
) -> ModelResponse:
    limiter = slot.limiter
    if limiter is None:
        return await slot.model.request(messages, tools, settings)
    from toolproof._tokens import estimate_message_tokens

    estimate = sum(estimate_message_tokens(m) for m in messages) + (settings.max_tokens or 0)
    await limiter.acquire(estimate)
    response = await slot.model.request(messages, tools, settings)
    limiter.settle(estimate, response.usage.total_tokens or estimate)
    return response


class MappingMocks:
    """A ``{tool name: function}`` mapping from a mock factory, as a mock provider."""

    def __init__(self, functions: Mapping[str, Callable[..., Any]]) -> None:
        self.functions = dict(functions)

    def mock_for(self, tool: Tool[..., Any]) -> Callable[..., Any] | None:
        return self.functions.get(tool.name)


def trial_tools(case: Case, providers: list[Any]) -> contextlib.AbstractContextManager[Toolset]:
    """The toolset of one trial; with ``tools: mock`` the trial is a mocked run.

    An attack case (``case.attack``) runs mocks only, whatever its settings say, with the
    attacker's text planted in the injected tools' results.
    """
    config = case.config
    attacked = case.attack is not None and case.attack.attacked
    tools: contextlib.AbstractContextManager[Toolset]
    if config.tools == "real" and not attacked:
        toolset = config.agent.toolset.with_mode(
            "real", overrides=config.tool_modes or None, mocks=providers or None
        )
        toolset._lineage = object()  # the trial's own: an agent ignoring it is caught
        tools = contextlib.nullcontext(toolset)
    else:
        tools = mock_context(
            config.agent.toolset,
            where=f"the attack case {case.id}"
            if attacked
            else f"the eval case {case.id} (tools: mock)",
            how="real_tools: [{}] in the suite or the case",
            real=config.real_tools,
            overrides=config.tool_modes or None,
            mocks=providers or None,
            factory=config.agent.source,
            only_mocks=attacked,
        )
    if case.attack is None:
        return tools
    from toolproof.evals._attacks import plant_tools

    return plant_tools(case, tools)


# -- errors -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Infra:
    """An infrastructure error: what it was, and whether retrying may help."""

    error_type: str
    message: str
    retryable: bool
    retry_after: float | None = None


def infrastructure_error(exc: BaseException) -> Infra | None:
    """Classify an exception: ``None`` when it is the agent's (or its tools') failure.

    Only failures of the model provider or the network are infrastructure errors
    (unreachable, timeouts, HTTP errors, unreadable bodies); 429 and 5xx responses,
    connection errors and unreadable bodies are worth retrying. A bug in user code (a tool,
    an agent factory, a mock, a model written in Python) is a failure of the case, and
    configuration problems (a missing key) are found before anything runs.
    """
    from toolproof.errors import ScriptExhausted

    root = exc.__cause__ if isinstance(exc, AgentRunError) and exc.__cause__ else exc
    name = type(root).__name__
    if isinstance(root, ScriptExhausted):
        return None  # the scripted conversation does not fit the agent: a case failure
    if isinstance(root, ModelHTTPError):
        return Infra(name, str(root), root.retryable, root.retry_after)
    if isinstance(
        root, (ModelConnectionError, UnexpectedModelOutput, asyncio.TimeoutError, OSError)
    ):
        return Infra(name, str(root) or "timed out", True)
    if isinstance(root, (MissingAPIKey, ModelRequestsDisabled, ModelError)):
        return Infra(name, str(root), False)
    return None
