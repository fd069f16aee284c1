"""``toolproof serve``: an OpenAI-compatible endpoint for agents toolproof did not build."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from typing import Any

__all__ = ["register"]

EPILOG = """examples:
  toolproof serve --mode scripted --script script.yaml
  toolproof serve --mode record --model deepseek:deepseek-chat --store traces.db
  toolproof serve --mode replay --store traces.db
then point your agent at it:  OPENAI_BASE_URL=http://127.0.0.1:8700/v1 python my_agent.py
faults for one request: header X-Toolproof-Fault (or ?fault=) 429[:SECONDS], 500, 502, 503,
timeout[:SECONDS], malformed, drop (SECONDS: 0 to 600)
identical conversations side by side: name each with the header X-Toolproof-Conversation
"""


def register(subparsers: Any) -> None:
    """Add the ``serve`` subcommand."""
    parser = subparsers.add_parser(
        "serve",
        help="an OpenAI-compatible endpoint that records what any agent does (scripted, "
        "record, replay)",
        description=(
            "Serve POST /v1/chat/completions on 127.0.0.1 for an agent written with any\n"
            "framework or language. Every conversation is read off the wire as a trace."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--mode", choices=("scripted", "record", "replay"), required=True, help="how to answer"
    )
    parser.add_argument(
        "--script", metavar="FILE", help="scripted: the responses of each conversation (YAML)"
    )
    parser.add_argument(
        "--model", "-m", help="record: the real model requests are proxied to (a model string)"
    )
    parser.add_argument(
        "--store",
        metavar="PATH",
        help="record: where traces are written; replay: where they are read "
        "(default: $TOOLPROOF_STORE or .toolproof/traces.db)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address (default 127.0.0.1; any other address lets others on the network use "
        "the server, and in record mode your model key, so it warns)",
    )
    parser.add_argument("--port", type=int, default=8700, help="port (default 8700; 0: any)")
    parser.set_defaults(handler=run_serve)


def backend(args: argparse.Namespace) -> tuple[Any, Any]:
    """The model factory and the recorder (record mode; else ``None``) of the chosen mode."""
    from toolproof.cli._chat import load_model, scripted_model
    from toolproof.cli._options import store_path
    from toolproof.errors import UserError

    if args.mode == "scripted":
        if not args.script:
            raise UserError("--mode scripted needs --script FILE (a list of responses)")
        from toolproof.models.fake import ScriptedModel

        checked = scripted_model(args.script)  # read once; each conversation starts it afresh
        assert isinstance(checked, ScriptedModel)
        return (lambda: _Script(ScriptedModel(list(checked.script), name=checked.name))), None
    if args.mode == "record":
        if not args.model:
            raise UserError("--mode record needs --model (the real model to proxy to)")
        from toolproof.replay import Recorder

        model = load_model(args.model)
        return (lambda: model), Recorder(store_path(args))
    from pathlib import Path

    from toolproof.server._replay import recorded_model_from_store

    path = store_path(args)
    if "://" not in str(path) and not Path(path).exists():
        raise UserError(f"--mode replay: no trace store at {path} (record one with --mode record)")
    replayed = recorded_model_from_store(str(path))
    return (lambda: replayed), None


class _Script:
    """One conversation's script on a long-running server: it forgets each request's messages.

    (A ``ScriptedModel`` keeps every request it receives, for tests to read; a server
    answering many conversations keeps only their number.)
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name

    async def request(self, messages: Any, tools: Any, settings: Any) -> Any:
        from toolproof.models.fake import ModelRequest

        try:
            return await self.inner.request(messages, tools, settings)
        finally:
            self.inner.requests[-1] = ModelRequest([], [], settings)


def run_serve(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    import asyncio

    from toolproof.server._app import ToolproofServer
    from toolproof.server._local import is_loopback

    new_model, recorder = backend(args)
    if not is_loopback(args.host):
        print(
            f"toolproof serve: warning: serving on {args.host}, not a loopback address: anyone "
            "who can reach this machine can use this server"
            + (" and your model key" if recorder is not None else ""),
            file=sys.stderr,
        )
    on_finished = recorder.record if recorder is not None else None
    server = ToolproofServer(new_model, on_finished=on_finished, host=args.host, port=args.port)

    async def serve() -> None:
        try:
            await server.start()
        except OSError as exc:
            from toolproof.errors import UserError

            raise UserError(f"cannot listen on {args.host}:{args.port}: {exc}") from None
        print(f"toolproof serve ({args.mode}): {server.url}/v1", flush=True)
        # Ctrl-C and SIGTERM (how containers and service managers stop a server) both stop
        # it at once: open requests are answered 503, a recording server's traces written.
        stopped = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(number, stopped.set)
        try:
            await stopped.wait()
        finally:
            await server.aclose()

    try:
        with contextlib.suppress(KeyboardInterrupt):  # (where the loop takes no signal handlers)
            asyncio.run(serve())
    finally:
        if recorder is not None:
            recorder.close()
    print("stopped", file=sys.stderr)
    return 0
