"""Agents toolproof did not build, run as programs or HTTP services against the server."""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolproof._agent import Agent, Budget, RunResult
from toolproof._messages import Message, ModelSettings
from toolproof.errors import AgentRunError, UserError

if TYPE_CHECKING:
    from toolproof._trace import Trace
    from toolproof.models._base import Model

__all__ = ["ExternalAgent"]

NOT_USED = "the base URL was not used: does your client read OPENAI_BASE_URL?"


class ExternalAgent(Agent):
    """An agent written with any framework or language, tested through its model endpoint.

    Each run starts a toolproof server on 127.0.0.1 (a free port) answered by this agent's
    model (a suite's scripted model, a real model, or replay), gives the run its own base
    URL, runs the agent, and grades the trajectory read off the wire.

    The contract of a ``command`` agent: it gets the user input on stdin (or as the
    ``{input}`` argument when its command has one), reads ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY`` (also ``TOOLPROOF_BASE_URL``) from its environment, prints the final
    answer on stdout and exits 0. An ``http`` agent gets ``POST {"input": ..., "base_url":
    ..., "api_key": ...}`` (also the headers ``X-Toolproof-Base-Url`` and
    ``X-Toolproof-Api-Key``) and answers JSON with an ``output`` field, or plain text.

    Args:
        model: The model answering the agent's requests.
        command: The program to run (a command line, split like a shell would).
        http: The URL to POST each input to.
        timeout: Seconds a run may take (default: the budget's ``max_seconds``).
        env: Extra environment variables for the program.
        cwd: The program's working directory.
        name: Recorded in trace metadata.
    """

    def __init__(
        self,
        model: Model | str,
        *,
        command: str | Sequence[str] | None = None,
        http: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        name: str | None = None,
    ) -> None:
        if (command is None) == (http is None):
            raise UserError("ExternalAgent needs exactly one of command=... or http=...")
        super().__init__(model, name=name)
        self.command = shlex.split(command) if isinstance(command, str) else list(command or [])
        if command is not None and not self.command:
            raise UserError("ExternalAgent(command=...) is empty")
        self.http = http
        self.timeout = timeout
        self.env = dict(env or {})
        self.cwd = Path(cwd) if cwd is not None else None

    async def run(
        self,
        input: str,
        *,
        history: Sequence[Message] = (),
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        settings: ModelSettings | None = None,
        memory_state: Any = None,
        budget: Budget | None = None,
    ) -> RunResult:
        """Run the external agent on one user message; see :meth:`toolproof.Agent.run`.

        Raises:
            AgentRunError: The program failed, timed out, printed nothing, or never called
                the server; ``error.trace`` holds what was seen on the wire.
        """
        from toolproof._agent import _overrides
        from toolproof.server._app import ToolproofServer

        if not isinstance(input, str):
            raise UserError(f"Agent.run(input=...) must be a string, got {type(input).__name__}")
        override = (_overrides.get() or {}).get(id(self))
        model = override.model if override and override.model else self.model
        limit = self.timeout or (budget or self.budget).max_seconds
        server = ToolproofServer()
        await server.start()
        channel = server.open_channel(lambda: model)
        base_url = server.base_url(channel)
        key = f"tp-{channel.id}"
        problem: str | None = None
        output: str | None = None
        try:
            if self.http is not None:
                output, problem = await self._post(input, base_url, key, limit)
            else:
                output, problem = await self._spawn(input, base_url, key, limit)
        finally:
            await server.aclose()
        traces = channel.traces()
        trace = _merge(traces, input, model)
        trace.metadata.update(dict(metadata or {}))
        if self.name:
            trace.metadata.setdefault("agent", self.name)
        trace.tags = list(tags)
        if problem is None and not traces:
            problem = NOT_USED
        if problem is None and not output:
            problem = "the agent printed no answer (the final answer goes to stdout)"
        if problem is not None:
            trace.stop_reason = "error"
            trace.stop_detail = problem
            trace.output = None
            raise AgentRunError(problem, trace=trace, step=len(trace.steps))
        trace.output = output
        if trace.stop_reason == "error" and trace.error is None:
            trace.stop_reason, trace.stop_detail = "final", None
        conversation = [*history, Message("user", input), Message("assistant", output)]
        return RunResult(output, trace.stop_reason, trace, conversation)

    def _environment(self, base_url: str, key: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.env)
        env.update(
            {
                "OPENAI_BASE_URL": base_url,
                "OPENAI_API_BASE": base_url,
                "OPENAI_API_KEY": key,
                "TOOLPROOF_BASE_URL": base_url,
                "TOOLPROOF_API_KEY": key,
                "OPENAI_AGENTS_DISABLE_TRACING": "1",
            }
        )
        return env

    async def _spawn(
        self, input: str, base_url: str, key: str, limit: float | None
    ) -> tuple[str | None, str | None]:
        argv = [part.replace("{input}", input) for part in self.command]
        stdin = None if any("{input}" in part for part in self.command) else input.encode()
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._environment(base_url, key),
                cwd=self.cwd,
            )
        except OSError as exc:
            return None, f"could not start {argv[0]!r}: {exc}"
        try:
            out, err = await asyncio.wait_for(process.communicate(stdin or b""), limit)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()
            return None, f"{argv[0]} did not finish within {limit:g} s"
        except asyncio.CancelledError:
            process.kill()
            raise
        if process.returncode != 0:
            tail = err.decode(errors="replace").strip()[-400:].replace("\n", " | ")
            return (
                None,
                f"{argv[0]} exited with status {process.returncode}: {tail or '(no stderr)'}",
            )
        return out.decode(errors="replace").strip(), None

    async def _post(
        self, input: str, base_url: str, key: str, limit: float | None
    ) -> tuple[str | None, str | None]:
        import aiohttp

        assert self.http is not None
        body = {"input": input, "base_url": base_url, "api_key": key}
        headers = {"X-Toolproof-Base-Url": base_url, "X-Toolproof-Api-Key": key}
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=limit)) as session,
                session.post(self.http, json=body, headers=headers) as response,
            ):
                text = await response.text()
                if response.status >= 400:
                    return None, f"{self.http} answered HTTP {response.status}: {text[-300:]}"
                if response.content_type == "application/json":
                    import json

                    data = json.loads(text)
                    if isinstance(data, dict) and "output" in data:
                        return str(data["output"] or ""), None
                    return None, f"{self.http} answered JSON without an 'output' field"
                return text.strip(), None
        except asyncio.TimeoutError:
            return None, f"{self.http} did not answer within {limit:g} s"
        except (aiohttp.ClientError, ValueError) as exc:
            return None, f"could not reach {self.http}: {type(exc).__name__}: {exc}"


def _merge(traces: list[Trace], input: str, model: Any) -> Trace:
    """One trace of the run: its conversations' steps in order."""
    from toolproof._trace import Trace

    if not traces:
        return Trace(id=_new_id(), input=input, model=getattr(model, "name", ""))
    first = traces[-1] if len(traces) == 1 else traces[0]
    if len(traces) == 1:
        return first
    steps = [s for t in traces for s in t.steps]
    for index, step in enumerate(steps, 1):
        step.index = index
    first.steps = steps
    first.usage = sum((t.usage for t in traces[1:]), first.usage)
    last = traces[-1]
    first.output, first.stop_reason, first.stop_detail = (
        last.output,
        last.stop_reason,
        last.stop_detail,
    )
    first.ended_at = last.ended_at
    return first


def _new_id() -> str:
    import uuid

    return uuid.uuid4().hex
