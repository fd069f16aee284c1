"""Agents toolproof did not build, run as programs or HTTP services against the server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolproof._agent import BaseAgent, RunOptions, RunResult
from toolproof._messages import Message
from toolproof.errors import AgentRunError, UserError
from toolproof.models.fake import ScriptedModel
from toolproof.server._conversation import UNSEEN

if TYPE_CHECKING:
    from toolproof._trace import Trace
    from toolproof.models._base import Model

__all__ = ["ExternalAgent"]

NOT_USED = "the base URL was not used: does your client read OPENAI_BASE_URL?"

#: The most an agent may answer: what a ``command`` agent prints on stdout, or the body of
#: an ``http`` agent's answer. More fails the case naming this limit.
MAX_OUTPUT = 1024 * 1024
#: Errors of a scripted model that mean the script does not fit the agent's requests.
_SCRIPT_ERRORS = ("ScriptExhausted", "UserError")
#: How much of a program's stderr is kept (its end) to say why it failed.
_STDERR_TAIL = 64 * 1024
#: Seconds a program's output pipes may stay open after it exited (a child holding them).
_GRACE = 2.0

#: What a ``command`` agent inherits from toolproof's environment: what programs need to
#: start and find their files, never credentials. Everything else it gets is named: the
#: server's address and key, and the suite's ``env:``.
INHERITED = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "TZ",
    "LANG",
    "LANGUAGE",
    "TMPDIR",
    "TEMP",
    "TMP",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "NODE_PATH",
    # Windows
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "USERPROFILE",
    "USERNAME",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "PROCESSOR_ARCHITECTURE",
    "NUMBER_OF_PROCESSORS",
)


class ExternalAgent(BaseAgent):
    """An agent written with any framework or language, tested through its model endpoint.

    Each run starts a toolproof server on 127.0.0.1 (a free port) answered by this agent's
    model (a suite's scripted model, a real model, or replay), gives the run its own base
    URL, runs the agent, and grades the trajectory read off the wire.

    The contract of a ``command`` agent: it gets the user input on stdin (or as the
    ``{input}`` argument when its command has one), and the earlier turns of a
    conversation as a JSON file named by ``TOOLPROOF_HISTORY_FILE`` (a list of ``{role,
    content}``, empty on the first turn), reads ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY`` (also ``TOOLPROOF_BASE_URL``) from its environment, prints the final
    answer on stdout (at most ``MAX_OUTPUT`` bytes) and exits 0. Its environment holds only
    the variables in ``INHERITED`` (and ``LC_*``), the server's, and ``env``: no credential
    of toolproof's environment reaches it. When the run ends (answered, failed or timed
    out), every process it started in its process group is killed. An ``http`` agent gets
    ``POST {"input": ..., "history": [...], "base_url": ..., "api_key": ...}`` (also the headers
    ``X-Toolproof-Base-Url`` and ``X-Toolproof-Api-Key``) and answers JSON with an
    ``output`` field, or plain text (at most ``MAX_OUTPUT`` bytes).

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
        try:
            self.command = shlex.split(command) if isinstance(command, str) else list(command or [])
        except ValueError as exc:  # an unclosed quote
            raise UserError(f"ExternalAgent(command={command!r}): {exc}") from None
        if command is not None and not self.command:
            raise UserError("ExternalAgent(command=...) is empty")
        self.http = http
        self.timeout = timeout
        self.env = dict(env or {})
        for name, value in self.env.items():
            if "\x00" in name or "\x00" in value or "=" in name or not name:
                raise UserError(
                    f"ExternalAgent(env=...): {name!r} cannot be an environment variable"
                )
        self.cwd = Path(cwd) if cwd is not None else None

    async def run_with(self, input: str, options: RunOptions) -> RunResult:
        """Run the external agent on one user message; see :meth:`toolproof.Agent.run`.

        Raises:
            AgentRunError: The program failed, timed out, printed nothing, or never called
                the server; ``error.trace`` holds what was seen on the wire.
        """
        from toolproof.server._app import ToolproofServer

        model, _ = self.resolve(input)
        limit = self.timeout or (options.budget or self.budget).max_seconds
        server = ToolproofServer()
        await server.start()
        channel = server.open_channel(lambda: model)
        base_url = server.base_url(channel)
        key = f"tp-{channel.id}"
        problem: str | None = None
        output: str | None = None
        earlier = _history(options.history)
        try:
            if self.http is not None:
                output, problem = await self._post(input, earlier, base_url, key, limit)
            else:
                output, problem = await self._spawn(input, earlier, base_url, key, limit)
        finally:
            await server.aclose()
        traces = channel.traces()
        trace = _merge(traces, input, model)
        trace.metadata.update(dict(options.metadata or {}))
        trace.metadata.update(UNSEEN)  # (whatever the case's metadata says)
        if self.name:
            trace.metadata.setdefault("agent", self.name)
        trace.tags = list(options.tags)
        scripted = [t.error for t in traces if t.error and t.error.type in _SCRIPT_ERRORS]
        if scripted and isinstance(model, ScriptedModel):  # whatever the program made of it
            problem = f"the script does not fit the agent: {scripted[0].message}"
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
        conversation = [*options.history, Message("user", input), Message("assistant", output)]
        return RunResult(output, trace.stop_reason, trace, conversation)

    def _environment(self, base_url: str, key: str) -> dict[str, str]:
        env = {
            name: value
            for name, value in os.environ.items()
            if name.upper() in INHERITED or name.upper().startswith("LC_")
        }
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
        self,
        input: str,
        history: list[dict[str, str]],
        base_url: str,
        key: str,
        limit: float | None,
    ) -> tuple[str | None, str | None]:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="toolproof-history-") as folder:
            file = Path(folder) / "history.json"
            file.write_text(json.dumps(history, ensure_ascii=False), encoding="utf-8")
            env = self._environment(base_url, key)
            env["TOOLPROOF_HISTORY_FILE"] = str(file)
            return await self._run_program(input, env, limit)

    async def _run_program(
        self, input: str, env: dict[str, str], limit: float | None
    ) -> tuple[str | None, str | None]:
        as_argument = any("{input}" in part for part in self.command)
        if as_argument and "\x00" in input:
            return None, (
                "the input holds a NUL character, which a command-line argument cannot carry: "
                "read the input from stdin (drop {input} from the command)"
            )
        try:
            data = b"" if as_argument else input.encode("utf-8")
        except UnicodeEncodeError as exc:
            return None, f"the input is not valid text at character {exc.start}: {exc.reason}"
        argv = [part.replace("{input}", input) for part in self.command]
        loop = asyncio.get_running_loop()
        try:
            transport, program = await loop.subprocess_exec(
                _Program,
                *argv,
                env=env,
                cwd=self.cwd,
                start_new_session=os.name == "posix",  # its own group: killed whole at the end
            )
        except (OSError, ValueError, UnicodeEncodeError) as exc:
            return None, f"could not start {argv[0]!r}: {exc}"
        try:
            return await asyncio.wait_for(program.talk(transport, data, argv[0]), limit)
        except asyncio.TimeoutError:
            return None, f"{argv[0]} did not finish within {limit:g} s"
        finally:
            program.kill(transport)  # and whatever it left running
            try:  # its exit is awaited, so no process object is dropped while it runs
                await asyncio.wait((program.exited,), timeout=_GRACE)
            finally:
                transport.close()

    async def _post(
        self,
        input: str,
        history: list[dict[str, str]],
        base_url: str,
        key: str,
        limit: float | None,
    ) -> tuple[str | None, str | None]:
        import aiohttp

        assert self.http is not None
        body = {"input": input, "history": history, "base_url": base_url, "api_key": key}
        headers = {"X-Toolproof-Base-Url": base_url, "X-Toolproof-Api-Key": key}
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=limit)) as session,
                session.post(self.http, json=body, headers=headers) as response,
            ):
                raw = b""
                async for chunk in response.content.iter_chunked(65536):
                    raw += chunk
                    if len(raw) > MAX_OUTPUT:
                        return None, f"{self.http} answered more than {_limit_text()}"
                text = raw.decode(response.charset or "utf-8", errors="replace")
                if response.status >= 400:
                    return None, f"{self.http} answered HTTP {response.status}: {text[-300:]}"
                if response.content_type == "application/json":
                    data = json.loads(text)
                    if isinstance(data, dict) and "output" in data:
                        return str(data["output"] or ""), None
                    return None, f"{self.http} answered JSON without an 'output' field"
                return text.strip(), None
        except asyncio.TimeoutError:
            return None, f"{self.http} did not answer within {limit:g} s"
        except (aiohttp.ClientError, ValueError) as exc:
            return None, f"could not reach {self.http}: {type(exc).__name__}: {exc}"


def _history(history: Sequence[Message]) -> list[dict[str, str]]:
    """The earlier turns an agent is given: the user's messages and the agent's answers."""
    return [
        {"role": m.role, "content": m.content or ""}
        for m in history
        if m.role in ("user", "assistant") and m.content
    ]


def _limit_text() -> str:
    return f"{MAX_OUTPUT // 1024} KiB (the limit of an agent's answer)"


class _Program(asyncio.SubprocessProtocol):
    """A command agent's process: its output kept (bounded), its exit and its pipes watched.

    The exit is seen when the program exits, even while a child it left keeps its output
    pipes open (``asyncio``'s own ``Process.wait`` waits for the pipes too).
    """

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.out = bytearray()
        self.err = bytearray()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.overflow: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            room = MAX_OUTPUT + 1 - len(self.out)
            self.out += data[: max(0, room)]
            if len(self.out) > MAX_OUTPUT and not self.overflow.done():
                self.overflow.set_result(None)
        else:
            self.err += data
            del self.err[: max(0, len(self.err) - _STDERR_TAIL)]

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    async def talk(
        self, transport: asyncio.SubprocessTransport, data: bytes, name: str
    ) -> tuple[str | None, str | None]:
        """Feed the input, read the answer until the program exits (or prints too much)."""
        stdin = transport.get_pipe_transport(0)
        if stdin is not None:
            with contextlib.suppress(OSError):  # (a program that never reads its input)
                stdin.write(data)  # type: ignore[attr-defined]
                stdin.close()
        await asyncio.wait((self.exited, self.overflow), return_when=asyncio.FIRST_COMPLETED)
        if self.overflow.done():
            return None, f"{name} printed more than {_limit_text()} on stdout"
        self.kill(transport)  # its children may hold the pipes open: they end with it
        await asyncio.wait((self.closed,), timeout=_GRACE)
        if len(self.out) > MAX_OUTPUT:
            return None, f"{name} printed more than {_limit_text()} on stdout"
        code = transport.get_returncode()
        if code != 0:
            tail = self.err.decode(errors="replace").strip()[-400:].replace("\n", " | ")
            return None, f"{name} exited with status {code}: {tail or '(no stderr)'}"
        return self.out.decode(errors="replace").strip(), None

    def kill(self, transport: asyncio.SubprocessTransport) -> None:
        """Kill the program and every process of its group (where there are groups)."""
        if os.name == "posix":
            with contextlib.suppress(OSError):
                os.killpg(transport.get_pid(), signal.SIGKILL)
        if transport.get_returncode() is None:
            with contextlib.suppress(OSError):
                transport.kill()


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
