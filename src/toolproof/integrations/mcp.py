"""MCP (Model Context Protocol): toolproof tools served over MCP, and MCP servers' tools as Tools.

Install with ``pip install "toolproof[mcp]"``. This module imports the ``mcp`` SDK.

- :func:`serve_mcp` (and ``toolproof mcp serve``) exposes a :class:`~toolproof.Toolset` as an
  MCP server over stdio or streamable HTTP. Every call goes through the toolset, so mock mode,
  fixture mocks, stateful mocks and faults answer an external agent's calls exactly as they
  answer toolproof's own agent, and a side-effecting tool without a mock is refused with an
  error result naming it (its real code never runs in mock mode). Each client session
  becomes a :class:`~toolproof.Trace` of its tool calls, for grading.
- :func:`mcp_tools` connects to an MCP server (a command run over stdio, or a streamable
  HTTP URL) and yields its tools as toolproof :class:`~toolproof.Tool` objects: their schemas
  come from ``tools/list``, calls go through the session, and an error result (``isError``)
  comes back to the model as a ``ToolError``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import shlex
import sys
import threading
import time
import uuid
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.server.lowlevel import Server

from toolproof._messages import Message, ToolCall, ToolResult
from toolproof._tools import ArgumentsInvalid, Tool
from toolproof._toolset import Toolset, as_toolset, error_result, mock_context
from toolproof._trace import Trace
from toolproof._trace_build import TraceBuilder, utc_now
from toolproof._version import __version__
from toolproof.errors import (
    MissingFixture,
    MockBypassed,
    ToolCrashed,
    ToolError,
    UnmockedToolCall,
    UserError,
)

if TYPE_CHECKING:
    import socket

    from toolproof.testing import Fault

__all__ = ["McpSessions", "load_mcp_tools", "mcp_server", "mcp_tools", "serve_mcp"]

Transport = Literal["stdio", "http"]

logger = logging.getLogger("toolproof.mcp")

#: Seconds a served call may take when its tool sets no ``timeout``.
DEFAULT_TOOL_TIMEOUT = 60.0

#: How long :func:`mcp_tools` waits for a server to start and list its tools, by default.
DEFAULT_CONNECT_TIMEOUT = 10.0

#: Seconds without a call after which an HTTP session is over (its trace is written).
DEFAULT_SESSION_IDLE = 600.0

#: How a mocked MCP server's user names a tool to run for real.
_REAL_HOW = "--real {0} (Python: serve_mcp(..., real_tools=['{0}']))"
_WHERE = "the MCP server (mock mode)"


# -- toolproof tools served over MCP ---------------------------------------------------------


@dataclass
class _Session:
    key: str
    started_at: str = field(default_factory=utc_now)
    started: float = field(default_factory=time.perf_counter)
    last: float = field(default_factory=time.monotonic)
    build: TraceBuilder = field(
        default_factory=lambda: TraceBuilder(Trace(id=uuid.uuid4().hex, input=""))
    )
    """The session's trace: each answered call is a step."""
    tools: Toolset | None = None
    """The session's own toolset (its own fault counters), when faults are served."""


class McpSessions:
    """The tool calls an MCP server answered, one :class:`~toolproof.Trace` per client session.

    A session is an MCP session: the whole connection over stdio, an ``Mcp-Session-Id`` over
    streamable HTTP (the server issues one to every client). A session's trace is finished
    when the client ends the session, when it has made no call for ``idle`` seconds, or
    when the server stops, and is handed to each sink: a
    :class:`~toolproof.replay.Recorder` (which redacts before writing), a JSONL file
    (redacted with the default :class:`~toolproof.replay.Redactor`), or a callable.

    Args:
        toolset: The tools served (their schemas go into each trace).
        recorder: Records each finished trace into its store.
        trace_file: Appends each finished trace to this JSONL file, one trace a line.
        on_trace: Called with each finished trace.
        label: What the server serves, for the traces' metadata.
        idle: Seconds without a call after which an HTTP session's trace is finished
            (``None``: only when it ends); a later call of that session starts a new trace.
        keep: How many finished traces :attr:`traces` keeps (the most recent).

    Attributes:
        traces: The most recent finished traces, in the order they finished.
    """

    def __init__(
        self,
        toolset: Toolset,
        *,
        recorder: Any = None,
        trace_file: str | Path | None = None,
        on_trace: Callable[[Trace], None] | None = None,
        label: str = "",
        idle: float | None = DEFAULT_SESSION_IDLE,
        keep: int = 1000,
    ) -> None:
        self.toolset = toolset
        self.recorder = recorder
        self.trace_file = Path(trace_file) if trace_file is not None else None
        self.on_trace = on_trace
        self.label = label
        self.idle = idle
        self.keep = keep
        self.traces: list[Trace] = []
        self._open: dict[str, _Session] = {}
        self._lock = threading.Lock()
        self._redactor: Any = None

    def _session(self, key: str) -> _Session:
        session = self._open.get(key)
        if session is None:
            session = self._open[key] = _Session(key)
        session.last = time.monotonic()
        return session

    def tools_of(self, key: str, make: Callable[[], Toolset]) -> Toolset:
        """The toolset answering the session ``key``, made by ``make`` at its first call."""
        with self._lock:
            session = self._session(key)
            if session.tools is None:
                session.tools = make()
            return session.tools

    def add(self, key: str, call: ToolCall, result: ToolResult) -> None:
        """Add one answered call to the session ``key``."""
        with self._lock:
            session = self._session(key)
            session.build.step(
                Message(role="assistant", tool_calls=[call]),
                offset_ms=max(0.0, (time.perf_counter() - session.started) * 1000),
            )
            session.build.result(result)

    def end(self, key: str) -> Trace | None:
        """Finish the session ``key``; its trace goes to the sinks (``None``: no calls)."""
        with self._lock:
            session = self._open.pop(key, None)
        if session is None or not session.build.trace.steps:
            return None
        return self._finish(session)

    def end_idle(self) -> None:
        """Finish every session without a call for ``idle`` seconds."""
        if self.idle is None:
            return
        since = time.monotonic() - self.idle
        with self._lock:
            keys = [key for key, session in self._open.items() if session.last <= since]
        for key in keys:
            self.end(key)

    def end_all(self) -> None:
        """Finish every open session (the server is stopping)."""
        with self._lock:
            keys = list(self._open)
        for key in keys:
            self.end(key)

    def _finish(self, session: _Session) -> Trace:
        trace = session.build.trace
        calls = len(trace.steps)  # (one call a step)
        trace.input = f"MCP session: {calls} tool call{'s' if calls != 1 else ''}"
        trace.started_at, trace.ended_at = session.started_at, utc_now()
        trace.model, trace.tools = "mcp-client", self.toolset.infos()
        trace.tool_mode, trace.tags = self.toolset.mode, ["mcp"]
        trace.duration_ms = (time.perf_counter() - session.started) * 1000
        trace.metadata = {"source": "toolproof mcp serve", "served": self.label}
        # (the server sees calls only: a session that ended has nothing pending)
        session.build.finish("final")
        self.traces.append(trace)
        del self.traces[: max(0, len(self.traces) - self.keep)]
        sinks: list[tuple[str, Callable[[Trace], Any]]] = []
        if self.recorder is not None:
            sinks.append(("the recorder", self.recorder.record))
        if self.trace_file is not None:
            sinks.append((str(self.trace_file), self._append))
        if self.on_trace is not None:
            sinks.append(("on_trace", self.on_trace))
        for where, sink in sinks:
            try:
                sink(trace)
            except Exception:  # one failing sink must not lose the trace for the others
                logger.exception("the trace of an MCP session could not go to %s", where)
        return trace

    def _append(self, trace: Trace) -> None:
        assert self.trace_file is not None
        if self._redactor is None:
            from toolproof.replay import Redactor

            self._redactor = Redactor()
        line = self._redactor.redact_trace(trace).to_json()
        self.trace_file.parent.mkdir(parents=True, exist_ok=True)
        with self.trace_file.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _mcp_tool(t: Tool[..., Any]) -> types.Tool:
    return types.Tool(
        name=t.name,
        description=t.description,
        input_schema=t.parameters,
        annotations=types.ToolAnnotations(read_only_hint=not t.side_effects),
    )


def _call_result(result: ToolResult) -> types.CallToolResult:
    """What a client receives for a call the toolset answered."""
    text = types.TextContent(type="text", text=result.content)
    if not result.ok:
        return types.CallToolResult(content=[text], is_error=True)
    # Structured content is an object: other values are wrapped as the MCP SDK does.
    structured = result.value if isinstance(result.value, dict) else {"result": result.value}
    return types.CallToolResult(content=[text], structured_content=structured, is_error=False)


def _session_key(ctx: Any) -> str:
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    if headers is not None:
        session_id = headers.get("mcp-session-id")
        if session_id:
            return str(session_id)
        return "http"
    return "stdio"


def mcp_server(
    tools: Toolset | Tool[..., Any] | Iterable[Tool[..., Any]],
    *,
    sessions: McpSessions | None = None,
    name: str = "toolproof",
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    faults: Sequence[Fault] = (),
    real_tools: Iterable[str] = (),
) -> Server[Any]:
    """A low-level MCP ``Server`` whose tools are ``tools``, each call run by the toolset.

    ``tools/list`` answers each tool's name, description and JSON Schema exactly as toolproof
    describes them to a model (``readOnlyHint`` is false for side-effecting tools). A call is
    validated and run by the :class:`~toolproof.Toolset`; errors the model can act on
    (invalid arguments, an unknown tool, a declared error, a refused side-effecting tool, a
    call no fixture answers, a tool that crashed) come back as error results
    (``isError: true``): the server keeps serving.

    A toolset in mock mode is served as a mocked run, the same one eval suites with
    ``tools: mock`` and replay use: a tool with side effects runs its real code only when
    named in ``real_tools`` (the toolset's own ``"real"`` overrides do not count), and a
    real call through any other toolset is refused.

    Args:
        tools: A toolset (its mode, mocks and faults apply) or tools (run for real).
        sessions: Collects each session's calls as a trace.
        name: The server name announced to clients.
        tool_timeout: Seconds a call may take when its tool sets no ``timeout`` (then the
            client receives a "timed out" error result); ``None``: no limit.
        faults: Faults to inject, counted per client session (``on_call=1`` fails each
            session's first call).
        real_tools: In mock mode, the side-effecting tools that run their real code.

    Returns:
        The server; run it with :func:`serve_mcp`, or connect to it in-process with
        ``mcp.Client(server)``.

    Raises:
        UserError: ``real_tools`` or a fault names a tool that is not served.
    """
    toolset = as_toolset(tools)
    listed = [_mcp_tool(t) for t in toolset]
    real = tuple(real_tools)
    with mock_context(toolset, where=_WHERE, how=_REAL_HOW, real=real):
        pass  # the names are checked now, not at the first call
    faulted = list(faults)
    if faulted:
        from toolproof.testing import with_faults

        with_faults(toolset, *faulted)  # checked now too
    registry = sessions if sessions is not None else McpSessions(toolset, keep=0)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        from toolproof.testing import with_faults

        call = ToolCall(
            params.name, dict(params.arguments or {}), id=f"mcp_{uuid.uuid4().hex[:12]}"
        )
        key = _session_key(ctx)
        served = toolset
        if faulted:  # each session counts its own calls
            served = registry.tools_of(key, lambda: with_faults(toolset, *faulted))
        result = await _execute(served, call, tool_timeout, real)
        if sessions is not None:
            sessions.add(key, call, result)
        return _call_result(result)

    return Server(
        name,
        version=__version__,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _execute(
    toolset: Toolset, call: ToolCall, timeout: float | None, real: tuple[str, ...]
) -> ToolResult:
    """Run one call (a mocked run in mock mode); refusals and crashes become error results."""
    started = time.perf_counter()
    try:
        if toolset.mode != "mock":
            return await toolset.execute(call, timeout=timeout)
        with mock_context(toolset, where=_WHERE, how=_REAL_HOW, real=real) as handed:
            return await handed.execute(call, timeout=timeout)
    except (UnmockedToolCall, MockBypassed) as exc:
        error_type, text = type(exc).__name__, f"Tool '{call.name}' was not run: {exc}"
    except MissingFixture as exc:
        error_type, text = (
            "MissingFixture",
            f"Tool '{call.name}' has no fixture for this call: {exc}",
        )
    except ToolCrashed as exc:
        error_type, text = "ToolCrashed", str(exc)
    except Exception as exc:  # a server must keep serving whatever one call does
        error_type = "ToolCrashed"
        text = f"tool '{call.name}' failed: {type(exc).__name__}: {exc}"
    if toolset.mode == "mock":
        mocked = call.name not in real
    else:
        mocked = call.name in toolset and toolset.mode_of(call.name) == "mock"
    return error_result(call, error_type, text, started, mocked)


async def serve_mcp(
    tools: Toolset | Tool[..., Any] | Iterable[Tool[..., Any]],
    *,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    sessions: McpSessions | None = None,
    name: str = "toolproof",
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    on_ready: Callable[[str], None] | None = None,
    faults: Sequence[Fault] = (),
    real_tools: Iterable[str] = (),
) -> None:
    """Serve ``tools`` over MCP until the client disconnects (stdio) or the task is cancelled.

    Over HTTP every client gets a session (an ``Mcp-Session-Id``, from the session
    handshake, which clients fall back to when offered), its own trace and its own fault
    counts. A session's trace is written when the client ends the session (``DELETE``),
    after ``sessions.idle`` seconds without a call, or when the server stops.

    Args:
        tools: A toolset (its mode, mocks and faults apply) or tools (run for real).
        transport: ``"stdio"`` (the process's stdin and stdout) or ``"http"`` (streamable
            HTTP at ``http://HOST:PORT/mcp``).
        host: The HTTP address to bind (default ``127.0.0.1``: this machine only).
        port: The HTTP port (``0`` picks a free one; ``on_ready`` receives the URL).
        sessions: Collects each session's calls as a trace; open sessions are finished
            when the server stops.
        name: The server name announced to clients.
        tool_timeout: Seconds a call may take when its tool sets no ``timeout``.
        on_ready: Called with the URL (or ``"stdio"``) once the server accepts clients.
        faults: Faults to inject, counted per session (see :func:`mcp_server`).
        real_tools: In mock mode, the side-effecting tools that run their real code.

    Raises:
        UserError: Unknown transport, the HTTP port cannot be bound, or ``real_tools`` or
            a fault names a tool that is not served.
    """
    toolset = as_toolset(tools)
    if sessions is None:
        sessions = McpSessions(toolset, keep=0)
    server = mcp_server(
        toolset,
        sessions=sessions,
        name=name,
        tool_timeout=tool_timeout,
        faults=faults,
        real_tools=real_tools,
    )
    try:
        if transport == "stdio":
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read, write):
                if on_ready is not None:
                    on_ready("stdio")
                await server.run(read, write, server.create_initialization_options())
        elif transport == "http":
            await _serve_http(server, host, port, sessions, on_ready)
        else:
            raise UserError(f"transport must be 'stdio' or 'http', got {transport!r}")
    finally:
        sessions.end_all()


#: The answer to a request of the sessionless protocol era: clients fall back to the
#: session handshake, so each one gets an ``Mcp-Session-Id`` (and a trace of its own).
_SESSIONS_ONLY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": "toolproof mcp serve keeps a trace per client session: connect with "
            "the session handshake (initialize), which issues an Mcp-Session-Id",
        },
    }
).encode()


def _per_session(app: Any, sessions: McpSessions) -> Callable[[Any, Any, Any], Awaitable[None]]:
    """``app`` (the SDK's streamable HTTP app) serving sessions only, ending each on DELETE."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    async def per_session(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        if version and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await send(
                {
                    "type": "http.response.start",
                    "status": 400,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": _SESSIONS_ONLY})
            return
        await app(scope, receive, send)
        key = headers.get(b"mcp-session-id")
        if scope.get("method") == "DELETE" and key:  # the client ended its session
            sessions.end(key.decode("latin-1"))

    return per_session


def _listening(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (``0``: a free port).

    Raises:
        UserError: The address cannot be bound.
    """
    import socket

    try:
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


async def _serve_http(
    server: Server[Any],
    host: str,
    port: int,
    sessions: McpSessions,
    on_ready: Callable[[str], None] | None,
) -> None:
    import uvicorn

    app = server.streamable_http_app(host=host, session_idle_timeout=sessions.idle)
    sock = _listening(host, port)
    bound = sock.getsockname()[1]

    class _Server(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            # Signals are the caller's: uvicorn would re-raise them after shutting down,
            # killing the process before the open sessions' traces are written.
            yield

    config = uvicorn.Config(_per_session(app, sessions), log_level="warning", lifespan="on")
    uv = _Server(config)
    url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}/mcp"

    async def announce() -> None:
        while not uv.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
            await asyncio.sleep(0.02)
        if on_ready is not None:
            on_ready(url)

    async def reap() -> None:  # sessions a client left without ending them
        assert sessions.idle is not None
        while True:
            await asyncio.sleep(min(sessions.idle / 4, 30.0))
            sessions.end_idle()

    watchers = [asyncio.ensure_future(announce())]
    if sessions.idle is not None:
        watchers.append(asyncio.ensure_future(reap()))
    serving = asyncio.ensure_future(uv.serve(sockets=[sock]))
    try:
        await asyncio.shield(serving)
    except asyncio.CancelledError:
        # Stopped from outside: shut down gracefully (open sessions end, the port is freed).
        uv.should_exit = True
        await asyncio.gather(serving, return_exceptions=True)
        raise
    finally:
        for watcher in watchers:
            watcher.cancel()
        sock.close()


# -- MCP servers' tools as toolproof tools ---------------------------------------------------


class _McpTool(Tool[..., Any]):
    """A tool answered by an MCP server; arguments are checked against its JSON Schema."""

    _optional: dict[str, Any]

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        import jsonschema

        try:
            validator_class = jsonschema.validators.validator_for(self.parameters)
            validator = validator_class(self.parameters)
            errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
        except (jsonschema.SchemaError, TypeError, ValueError):
            errors = []  # the server's schema is not checkable here: the server validates
        if errors:
            problems = []
            for error in errors[:5]:
                where = ".".join(str(p) for p in error.absolute_path)
                problems.append(f"'{where}': {error.message}" if where else error.message)
            accepted = ", ".join(self.parameters.get("properties") or {}) or "no arguments"
            raise ArgumentsInvalid(
                f"Invalid arguments for tool '{self.name}': {'; '.join(problems)}. "
                f"This tool accepts: {accepted}."
            )
        # Mocks see every parameter, as with a Python tool (missing optional ones as defaults).
        full = dict(arguments)
        for name, default in self._optional.items():
            full.setdefault(name, default)
        return full


def _tool_from_mcp(
    spec: types.Tool,
    call: Callable[[str, dict[str, Any]], Any],
    *,
    side_effects: bool | None = None,
    timeout: float | None = None,
) -> Tool[..., Any]:
    """Make one MCP tool listing a toolproof :class:`~toolproof.Tool` calling ``call``.

    Args:
        spec: The tool as ``tools/list`` described it.
        call: ``await call(name, arguments)`` runs the tool on the server; it returns the
            tool's value or raises :class:`~toolproof.errors.ToolError`.
        side_effects: Whether the tool changes the outside world; ``None`` reads the server's
            ``readOnlyHint`` (a tool not marked read-only is treated as side-effecting, so
            mock mode never calls the server for it).
        timeout: Seconds one call may take.
    """
    parameters: dict[str, Any] = dict(spec.input_schema or {"type": "object", "properties": {}})
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    params = []
    optional: dict[str, Any] = {}
    for key, schema in properties.items():
        if not isinstance(key, str) or not key.isidentifier():
            continue
        default: Any = inspect.Parameter.empty
        if key not in required:
            default = schema.get("default") if isinstance(schema, dict) else None
            optional[key] = default
        params.append(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=default))
    given_defaults = {k for k, s in properties.items() if isinstance(s, dict) and "default" in s}
    name = spec.name

    async def run(**kwargs: Any) -> Any:
        # Optional parameters the model left out were filled with None for mocks: drop them.
        sent = {
            k: v
            for k, v in kwargs.items()
            if not (v is None and k in optional and k not in given_defaults)
        }
        return await call(name, sent)

    async def placeholder() -> Any:
        """Replaced below."""

    read_only = spec.annotations.read_only_hint if spec.annotations is not None else None
    made = _McpTool(
        placeholder,
        name=name,
        description=spec.description or spec.title or name,
        side_effects=(read_only is not True) if side_effects is None else side_effects,
        timeout=timeout,
        extra="ignore",
        _localns={},
        _parameters=parameters,
    )
    run.__name__ = made.name
    run.__doc__ = made.description
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    made.function = run
    made.is_async = True
    made.has_return_annotation = False
    made._optional = optional
    return made


def _usable_name(name: str) -> bool:
    return bool(name) and name.replace("_", "a").replace("-", "a").isalnum()


def _result_value(result: types.CallToolResult) -> Any:
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    if result.is_error:
        raise ToolError("\n".join(texts) or "the MCP tool reported an error")
    if result.structured_content is not None:
        structured = result.structured_content
        # The SDK wraps non-object return values as {"result": value}.
        if set(structured) == {"result"} and len(texts) <= 1:
            return structured["result"]
        return structured
    others = [block for block in result.content if not isinstance(block, types.TextContent)]
    if others:
        return [
            block.model_dump(mode="json", by_alias=True, exclude_none=True)
            for block in result.content
        ]
    if len(texts) == 1:
        return texts[0]
    return "\n".join(texts)


def _server_source(
    server: str | Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> tuple[StdioServerParameters | str, str]:
    """A URL, a command line (``"python server.py"``) or an argv list, and a label."""
    if isinstance(server, str):
        text = server.strip()
        if text.startswith(("http://", "https://")):
            return text, text
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise UserError(f"MCP server command {server!r} cannot be read: {exc}") from None
    else:
        argv = [str(part) for part in server]
        text = shlex.join(argv)
    if not argv:
        raise UserError("the MCP server command is empty: give a command or an http(s):// URL")
    command = sys.executable if argv[0] in ("python", "python3") else argv[0]
    params = StdioServerParameters(
        command=command, args=argv[1:], env=dict(env) if env is not None else None, cwd=cwd
    )
    return params, text


@asynccontextmanager
async def mcp_tools(
    server: str | Sequence[str],
    *,
    mode: Literal["real", "mock"] = "real",
    mocks: Any = None,
    overrides: Mapping[str, Literal["real", "mock"]] | None = None,
    side_effects: bool | Iterable[str] | None = None,
    timeout: float | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> AsyncIterator[Toolset]:
    """Connect to an MCP server and yield its tools as a :class:`~toolproof.Toolset`.

    The connection stays open inside the block; every call of a tool (in real mode) is a
    ``tools/call`` on it. An error result (``isError``) becomes a ``ToolError`` the model
    reads. Arguments are checked against the tool's JSON Schema first, so an invalid call
    is reported to the model without reaching the server.

    Args:
        server: An ``http(s)://`` URL of a streamable HTTP server, a command line run as a
            stdio server (``"python server.py"``; ``python`` is this interpreter), or its
            argv list.
        mode: The toolset's mode (``"mock"`` answers from ``mocks``; a tool not marked
            read-only by the server never reaches it in mock mode).
        mocks: Mock providers or ``{name: function}`` (see :class:`~toolproof.Toolset`).
        overrides: Per-tool modes.
        side_effects: ``True``/``False`` for every tool, or the names of the tools that have
            side effects; ``None`` (default) trusts the server's ``readOnlyHint``.
        timeout: Seconds one tool call may take.
        connect_timeout: Seconds to wait for the server to start and list its tools.
        env: Environment variables for a stdio server, over the MCP SDK's safe defaults
            (which pass ``PATH``, ``HOME`` and a few others, not the whole environment).
        cwd: The working directory of a stdio server.

    Yields:
        The toolset (``mcp_tools(...).tools`` are :class:`~toolproof.Tool` objects).

    Raises:
        UserError: The server cannot be started or reached, exits, or does not answer within
            ``connect_timeout`` (one line naming the server).

    Example:
        ```python
        async with mcp_tools("python weather_server.py") as tools:
            agent = Agent(model, tools)
            result = await agent.run("weather in Paris?")
        ```
    """
    source, label = _server_source(server, env, cwd)
    async with _connected(source, label, connect_timeout) as client:

        async def call(name: str, arguments: dict[str, Any]) -> Any:
            try:
                result = await client.call_tool(name, arguments)
            except ToolError:
                raise
            except Exception as exc:
                raise ToolError(f"the MCP server {label} failed the call: {_reason(exc)}") from exc
            return _result_value(result)

        listed = await _list(client, label, connect_timeout)
        tools = _tools_listed(listed, call, label, side_effects, timeout)
        yield Toolset(tools, mode=mode, mocks=mocks, overrides=overrides)


def _tools_listed(
    listed: list[types.Tool],
    call: Callable[[str, dict[str, Any]], Any],
    label: str,
    side_effects: bool | Iterable[str] | None,
    timeout: float | None,
) -> list[Tool[..., Any]]:
    """The tools a server lists, as :func:`mcp_tools` describes them; unusable names left out.

    Raises:
        UserError: ``side_effects`` names a tool the server does not list.
    """
    named = None
    if side_effects is not None and not isinstance(side_effects, bool):
        named = set(side_effects)
        unknown = named - {t.name for t in listed}
        if unknown:
            raise UserError(
                f"side_effects names tools the MCP server {label} does not list: "
                f"{', '.join(sorted(unknown))}"
            )
    tools = []
    for spec in listed:
        if not _usable_name(spec.name):
            logger.warning(
                "the MCP server %s lists a tool named %r, which toolproof cannot offer "
                "to a model (tool names are letters, digits, '_' and '-'): left out",
                label,
                spec.name,
            )
            continue
        flag = side_effects if isinstance(side_effects, bool) else None
        if named is not None:
            flag = spec.name in named
        tools.append(_tool_from_mcp(spec, call, side_effects=flag, timeout=timeout))
    return tools


@asynccontextmanager
async def _connected(
    source: StdioServerParameters | str, label: str, limit: float
) -> AsyncIterator[Client]:
    """An open client; a task of its own owns the connection (anyio scopes stay in one task)."""
    ready = asyncio.Event()
    stop = asyncio.Event()
    state: dict[str, Any] = {}

    async def own() -> None:
        try:
            async with Client(source, mode="auto") as client:
                state["client"] = client
                ready.set()
                await stop.wait()
        except Exception as exc:
            state["error"] = exc
        finally:
            ready.set()

    task = asyncio.ensure_future(own())
    try:
        await asyncio.wait_for(ready.wait(), limit)
    except asyncio.TimeoutError:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise UserError(
            f"the MCP server {label} did not answer within {limit:g} s (is it an MCP server? "
            "does it start slowly?)"
        ) from None
    try:
        if "client" not in state:
            error = state.get("error")
            reason = _reason(error) if error is not None else "it closed the connection"
            hint = "" if isinstance(source, str) else " (did it exit? its error output is above)"
            raise UserError(f"cannot connect to the MCP server {label}: {reason}{hint}")
        yield state["client"]
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)


async def _list(client: Client, label: str, limit: float) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    try:
        for _ in range(1000):
            page = await asyncio.wait_for(client.list_tools(cursor=cursor), limit)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
    except asyncio.TimeoutError:
        raise UserError(
            f"the MCP server {label} did not list its tools within {limit:g} s"
        ) from None
    except Exception as exc:
        raise UserError(
            f"the MCP server {label} could not list its tools: {_reason(exc)}"
        ) from None
    return tools


def _reason(exc: BaseException) -> str:
    """One line saying why, digging through exception groups (anyio task groups)."""
    inner = getattr(exc, "exceptions", None)
    while isinstance(inner, tuple) and inner and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    if isinstance(exc, FileNotFoundError):
        return f"command not found ({exc.filename or first})"
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def load_mcp_tools(
    server: str | Sequence[str], *, timeout: float = DEFAULT_CONNECT_TIMEOUT
) -> list[Tool[..., Any]]:
    """The tools an MCP server lists (for schema snapshots); the connection is closed after.

    Raises:
        UserError: The server cannot be reached or does not answer within ``timeout``.
    """

    async def collect() -> list[Tool[..., Any]]:
        async with mcp_tools(server, connect_timeout=timeout) as toolset:
            return list(toolset)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(collect())
    raise UserError("load_mcp_tools() cannot run inside an event loop: use mcp_tools()")
