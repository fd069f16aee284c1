"""``toolproof mcp serve``: serve a module's tools over MCP, mocked, with faults, recorded.

An agent written with any framework that takes its tools from MCP is pointed at this server
instead of the real one: its calls are answered by mocks, fixtures or the real tools, faults
fire as told, a side-effecting tool without a mock is refused (an error result naming it;
its code never runs), and every session is recorded as a trace to grade.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from toolproof.cli import show_help
from toolproof.errors import ConfigError, UserError

if TYPE_CHECKING:
    from toolproof._toolset import Toolset
    from toolproof.testing import Fault

__all__ = ["register"]

_FAULT_KINDS = ("raises", "malformed", "timeout")
_FAULT_KEYS = ("tool", *_FAULT_KINDS, "on_call", "when")
_SERVE_EPILOG = """\
examples:
  toolproof mcp serve myapp.tools                       # stdio, mock mode
  toolproof mcp serve myapp/tools.py --fixtures fixtures.yaml --trace-file calls.jsonl
  toolproof mcp serve myapp.tools:TOOLS --http --port 8765 --faults faults.yaml
  toolproof mcp serve myapp.tools --mode real --record .toolproof/traces.db

a faults file (YAML or JSON):
  faults:
    - {tool: get_order, raises: 'ToolError: upstream down', on_call: 2}
    - {tool: get_weather, timeout: 0.5}
    - {tool: search_docs, malformed: '<html>502</html>', when: {query: refunds}}"""


def register(subparsers: Any) -> None:
    """Add the ``mcp`` command and its ``serve`` subcommand."""
    parser = subparsers.add_parser(
        "mcp",
        help="serve tools over MCP (mocked, with faults, recorded) for agents of any framework",
        description="MCP: serve toolproof tools to any agent that takes its tools from MCP.",
    )
    commands = parser.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    parser.set_defaults(handler=lambda args: show_help(parser))
    serve = commands.add_parser(
        "serve",
        help="serve a module's tools as an MCP server (stdio or streamable HTTP)",
        description="Serve the tools of MODULE (a Toolset, a list of tools, or every Tool in "
        "the module; MODULE:ATTR picks one) as an MCP server. In mock mode (the default) a "
        "side-effecting tool without a mock answers an error result and never runs. Every "
        "client session is recorded as a trace (--record, --trace-file).",
        epilog=_SERVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("module", metavar="MODULE", help="pkg.tools, path/tools.py or module:attr")
    serve.add_argument(
        "--mode",
        choices=("mock", "real"),
        default=None,
        help="mock (default): tools answer with their mocks; real: real implementations",
    )
    serve.add_argument(
        "--fixtures",
        metavar="FILE",
        help="a ToolMock fixture file (YAML/JSON) answering the calls (implies mock mode)",
    )
    serve.add_argument(
        "--mocks",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="a mock provider (a StatefulMock or ToolMock instance, or {tool: function}); "
        "repeatable, later ones win",
    )
    serve.add_argument("--faults", metavar="FILE", help="faults to inject (YAML/JSON, see below)")
    serve.add_argument(
        "--real",
        action="append",
        default=[],
        metavar="TOOL",
        help="in mock mode, run this tool's real code anyway (repeatable; the only way: "
        "the module's own 'real' overrides do not count in mock mode)",
    )
    serve.add_argument(
        "--http", action="store_true", help="streamable HTTP at http://HOST:PORT/mcp (not stdio)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000; 0: any)")
    serve.add_argument(
        "--record",
        metavar="STORE",
        help="record each session as a trace into this trace store (redacted)",
    )
    serve.add_argument(
        "--trace-file",
        metavar="PATH",
        help="append each session's trace to this JSONL file (redacted)",
    )
    serve.add_argument("--name", default="toolproof", help="the server name clients see")
    serve.add_argument(
        "--tool-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="limit of one call when its tool sets none (default 60; 0: no limit)",
    )
    serve.set_defaults(handler=run_serve)


def build_toolset(args: argparse.Namespace) -> tuple[Toolset, str, list[str], list[Fault]]:
    """What ``mcp serve`` serves, from its options (everything checked before serving).

    Returns:
        The toolset, its label, the tools named to run for real in mock mode (``--real``:
        the toolset's own ``"real"`` overrides do not count there), and the faults.
    """
    from toolproof._loading import load_target, tools_in
    from toolproof._toolset import ToolMode, Toolset

    value, label = load_target(args.module)
    if isinstance(value, ModuleType):  # a module holding one Toolset serves it (with its mocks)
        toolsets = {id(v): v for v in vars(value).values() if isinstance(v, Toolset)}
        if len(toolsets) == 1:
            value = next(iter(toolsets.values()))
    if isinstance(value, Toolset):
        base = value
    else:
        found = tools_in(value)
        if not found:
            raise UserError(
                f"no tools found in {label} (looked for a Toolset, a list of tools, or Tool "
                "objects; pick one with MODULE:ATTR)"
            )
        base = Toolset(found)
    mode: ToolMode = "real" if args.mode == "real" else "mock"
    if args.fixtures and mode == "real":
        raise UserError("--fixtures answers calls in mock mode: drop --mode real")
    if args.real and mode == "real":
        raise UserError("--real names tools to run for real in mock mode; --mode real runs all")
    for name in args.real:
        if name not in base:
            raise UserError(f"--real {name}: no such tool; tools: {', '.join(base.names)}")
    mocks: list[Any] = []
    if args.fixtures:
        from toolproof._mocks import ToolMock

        mocks.append(ToolMock.from_file(args.fixtures, assert_all_used=False))
    for spec in args.mocks:
        mocks.append(_load_mocks(spec, base))
    toolset = base.with_mode(mode)
    for provider in mocks:
        toolset = toolset.with_mode(mode, mocks=provider)
    faults = load_faults(args.faults, toolset) if args.faults else []
    return toolset, label, list(args.real), faults


def _load_mocks(spec: str, toolset: Toolset) -> Any:
    from toolproof._loading import load_target
    from toolproof._toolset import MockProvider

    value, label = load_target(spec)
    if isinstance(value, type):
        try:
            value = value()
        except Exception as exc:
            raise UserError(
                f"--mocks {spec}: {label}() raised {type(exc).__name__}: {exc}"
            ) from None
    if isinstance(value, MockProvider):
        return value
    if isinstance(value, Mapping):
        unknown = [str(k) for k in value if k not in toolset]
        if unknown:
            raise UserError(f"--mocks {spec}: no tool named {', '.join(unknown)}")
        return value
    raise UserError(
        f"--mocks {spec}: {label} is {type(value).__name__}, not a mock provider (a StatefulMock, "
        "a ToolMock) nor a mapping of tool names to functions"
    )


def load_faults(path: str | Path, toolset: Toolset) -> list[Fault]:
    """Faults from a YAML or JSON file: ``faults: [{tool, raises|malformed|timeout, ...}]``.

    ``raises`` is ``"ErrorType"``, ``"ErrorType: message"`` or ``{type, message}`` (as in a
    fixture file: a built-in exception, ``ToolError``, or an error the tool declares);
    ``malformed`` is the value returned instead (``true``: an HTML error page); ``timeout``
    is seconds to hang before timing out (``true`` or ``0``: at once). ``on_call`` (a call
    number or a list) and ``when`` (arguments) choose the calls that fail.

    Raises:
        ConfigError: The file is missing or invalid; every problem is listed.
    """
    data = _read_data(Path(path))
    if isinstance(data, Mapping):
        extra = [k for k in data if k != "faults"]
        if extra:
            raise ConfigError(f"{path}: unknown key(s) {extra}; a faults file holds 'faults'")
        data = data.get("faults")
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected a list of faults (faults: [...]), got {data!r:.80}")
    problems: list[str] = []
    faults: list[Fault] = []
    for index, item in enumerate(data, 1):
        where = f"{path}: fault #{index}"
        if not isinstance(item, Mapping):
            problems.append(f"{where}: a fault must be a mapping, got {item!r:.60}")
            continue
        unknown = [k for k in item if k not in _FAULT_KEYS]
        if unknown:
            problems.append(f"{where}: unknown key(s) {unknown}; valid: {', '.join(_FAULT_KEYS)}")
            continue
        tool = item.get("tool")
        if not isinstance(tool, str) or tool not in toolset:
            problems.append(f"{where}: 'tool' must name a served tool, got {tool!r}")
            continue
        kinds = [k for k in _FAULT_KINDS if k in item]
        if len(kinds) != 1:
            problems.append(f"{where}: give exactly one of raises, malformed, timeout")
            continue
        try:
            fault = _fault(item, kinds[0], tool, where, toolset, problems)
        except UserError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if fault is not None:
            faults.append(fault)
    if problems:
        count = len(problems)
        raise ConfigError(
            f"invalid faults file ({count} problem{'s' if count != 1 else ''}):\n"
            + "\n".join(f"  - {p}" for p in problems),
            problems=problems,
        )
    return faults


def _fault(
    item: Mapping[str, Any],
    kind: str,
    tool: str,
    where: str,
    toolset: Toolset,
    problems: list[str],
) -> Fault | None:
    """One fault of a faults file, or ``None`` with its problem added to ``problems``."""
    from toolproof._fixture_files import NamedError, parse_error
    from toolproof.testing import Fault
    from toolproof.testing._faults import MALFORMED_DEFAULT

    when = item.get("when")
    if when is not None and not isinstance(when, Mapping):
        problems.append(f"{where}: 'when' must map argument names to values")
        return None
    on_call = item.get("on_call")
    if kind == "raises":
        found, found_problems = parse_error(item["raises"])
        problems.extend(f"{where}: {message}" for message in found_problems)
        if found is None:
            return None
        if isinstance(found, NamedError):
            found = found.resolve(toolset[tool], where)
        return Fault.raises(tool, found, on_call=on_call, when=when)
    if kind == "malformed":
        value = item["malformed"]
        value = MALFORMED_DEFAULT if value is True else value
        return Fault.malformed(tool, value, on_call=on_call, when=when)
    seconds = item["timeout"]
    if seconds is True:
        seconds = None
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))):
        problems.append(f"{where}: 'timeout' must be seconds or true, got {seconds!r}")
        return None
    return Fault.timeout(tool, seconds=seconds or None, on_call=on_call, when=when)


def _read_data(path: Path) -> Any:
    import json

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it ({exc})") from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{path}: invalid JSON ({exc})") from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"{path}: invalid YAML ({getattr(exc, 'problem', None) or exc})"
        ) from None


def run_serve(args: argparse.Namespace) -> int:
    """``mcp serve``."""
    import asyncio
    import contextlib
    import signal

    _require_mcp_sdk()
    from toolproof.integrations.mcp import McpSessions, serve_mcp

    if args.tool_timeout < 0:
        raise UserError(f"--tool-timeout must be 0 or more seconds, got {args.tool_timeout}")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be between 0 and 65535, got {args.port}")
    toolset, label, real, faults = build_toolset(args)
    from toolproof.server._local import is_loopback

    if args.http and not is_loopback(args.host):
        print(
            f"toolproof mcp: warning: serving on {args.host}, not a loopback address: anyone "
            "who can reach this machine can call these tools",
            file=sys.stderr,
        )
    if args.trace_file:
        _check_writable(Path(args.trace_file))
    recorder = None
    if args.record:
        from toolproof.replay import Recorder

        recorder = Recorder(args.record)
    sessions = McpSessions(toolset, recorder=recorder, trace_file=args.trace_file, label=label)
    transport: Literal["stdio", "http"] = "http" if args.http else "stdio"

    def ready(where: str) -> None:
        tools = ", ".join(toolset.names)
        mode = toolset.mode
        print(
            f"toolproof mcp: serving {label} ({tools}) in {mode} mode on {where}", file=sys.stderr
        )
        sys.stderr.flush()

    async def serve() -> None:
        task = asyncio.ensure_future(
            serve_mcp(
                toolset,
                transport=transport,
                host=args.host,
                port=args.port,
                sessions=sessions,
                name=args.name,
                tool_timeout=args.tool_timeout or None,
                on_ready=ready,
                faults=faults,
                real_tools=real,
            )
        )
        # Ctrl-C and SIGTERM stop the server cleanly: open sessions' traces are written.
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(number, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    finally:
        if recorder is not None:
            recorder.close()
    return 0


def _require_mcp_sdk() -> None:
    """Fail with a clear error when the MCP SDK is missing."""
    try:
        import toolproof.integrations.mcp  # noqa: F401
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("mcp", "mcp_types"):
            raise UserError(
                'toolproof mcp needs the MCP SDK: pip install "toolproof[mcp]"'
            ) from None
        raise


def _check_writable(path: Path) -> None:
    """Fail before serving when ``--trace-file`` cannot be appended to."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise UserError(f"--trace-file {path}: cannot write it ({exc.strerror})") from None
