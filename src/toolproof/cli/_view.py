"""``toolproof view``: browse run logs, reports and the trace store in a local web page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from toolproof.cli._options import add_store_argument, store_path

__all__ = ["DEFAULT_PORT", "register"]

#: The port tried first; when it is taken (and ``--port`` was not given) any free port is used.
DEFAULT_PORT = 8765

EPILOG = """examples:
  toolproof view                      # the runs in .toolproof/runs and the trace store
  toolproof view out/report.json      # one JSON report
  toolproof view --store prod.db --port 0

Pages: the run list, each run's report, a comparison of two runs, the trace store with the
filters of `toolproof traces list`, and each trace's steps. Ctrl-C stops the server.
"""


def register(subparsers: Any) -> None:
    """Add the ``view`` command."""
    parser = subparsers.add_parser(
        "view",
        help="browse runs, reports and recorded traces in a local web page",
        description="Serve the run logs, a JSON report and the trace store on 127.0.0.1.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "path",
        nargs="?",
        metavar="PATH",
        help="a runs folder (default $TOOLPROOF_LOG_DIR, else .toolproof/runs) or one JSON report",
    )
    add_store_argument(parser)
    parser.add_argument(
        "--host",
        help="address to listen on (default 127.0.0.1; any other address serves your "
        "traces to the network, so it is used only when given here, with a warning)",
    )
    parser.add_argument(
        "--port",
        type=int,
        help=f"port (default {DEFAULT_PORT}, or a free one when it is taken; 0 picks a free one)",
    )
    parser.set_defaults(handler=_view)


def _view(args: argparse.Namespace) -> int:
    from toolproof._runlog import log_dir
    from toolproof.errors import ConfigError
    from toolproof.view._server import Runs

    # The same folder `toolproof run` logs into: $TOOLPROOF_LOG_DIR, else .toolproof/runs.
    target = Path(args.path) if args.path else log_dir()
    if args.path and not target.exists():
        raise ConfigError(
            f"toolproof view: {args.path} does not exist; give a runs folder or a JSON report"
        )
    runs = Runs(single=target) if target.is_file() else Runs(root=target)
    if runs.single is not None and runs.load("report") is None:
        raise ConfigError(
            f"toolproof view: {args.path} is not a JSON report of toolproof run or replay"
        )
    if args.port is not None and not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port}: give a port between 0 and 65535")
    from toolproof.server._local import is_loopback

    host = args.host or "127.0.0.1"
    loopback = is_loopback(host)
    if not loopback:
        print(
            f"toolproof view: warning: serving on {host}, not a loopback address: anyone who can "
            "reach this machine can read your runs and traces",
            file=sys.stderr,
        )
    store = store_path(args)
    import asyncio  # with the server, not for every command's start-up

    try:
        asyncio.run(_serve(runs, store, host, args.port, loopback))
    except KeyboardInterrupt:
        print("toolproof view: stopped", file=sys.stderr)
        return 130
    return 0


async def _serve(runs: Any, store: str, host: str, port: int | None, loopback: bool) -> None:
    import asyncio

    from aiohttp import web

    from toolproof.errors import ConfigError
    from toolproof.view._server import make_app

    allowed: set[str] = set()  # filled once the port is known
    app = make_app(runs, store, allowed_hosts=allowed if loopback else None)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        tries = [port] if port is not None else [DEFAULT_PORT, 0]
        for n, number in enumerate(tries):
            site = web.TCPSite(runner, host, number)
            try:
                await site.start()
                break
            except OSError as exc:
                if n + 1 < len(tries):
                    continue
                raise ConfigError(
                    f"toolproof view: cannot listen on {host}:{number} ({exc.strerror or exc}); "
                    "choose another --port (0 picks a free one)"
                ) from exc
        bound = runner.addresses[0]
        actual = int(bound[1])
        shown = f"[{host}]" if ":" in host else host
        if loopback:
            from toolproof.server._local import local_hosts

            allowed.update(local_hosts(host, actual))
        url = f"http://{shown}:{actual}/"
        where = runs.single or runs.root
        print(f"toolproof view: serving {where} and the trace store {store}", flush=True)
        print(f"toolproof view: open {url}  (Ctrl-C stops)", flush=True)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
