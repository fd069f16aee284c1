"""``toolproof chat``: talk to an agent in the terminal and watch every step.

Each model call, tool call (with its arguments), tool result, timing and token count is
printed as it happens, like the step log of a hand-built agent loop. ``exit`` (or end of
input) quits; Ctrl-C during a turn cancels that turn and keeps the conversation; Ctrl-C at
the prompt quits.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from toolproof._text import clip
from toolproof.errors import UserError

if TYPE_CHECKING:
    import asyncio

    from rich.console import Console

    from toolproof._agent import Session
    from toolproof._tools import Tool
    from toolproof._toolset import Toolset
    from toolproof.events import Event

__all__ = ["load_tools", "register"]

EXIT_WORDS = frozenset({"exit", "quit", "/exit", "/quit", ":q"})


def register(subparsers: Any) -> None:
    """Add the ``chat`` subcommand."""
    parser = subparsers.add_parser(
        "chat",
        help="talk to an agent in the terminal, showing each step",
        description=(
            "Talk to an agent in the terminal. Every model call, tool call, tool result,\n"
            "timing and token count is shown. Type 'exit' to quit; Ctrl-C cancels the\n"
            "current turn and Ctrl-C at the prompt quits."
        ),
        epilog=(
            "examples:\n"
            "  toolproof chat --model deepseek:deepseek-chat \\\n"
            "      --tools examples/hr_assistant/tools.py\n"
            "  toolproof chat --model 'ollama:qwen2.5:7b?protocol=text' --tools my_tools:TOOLS"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--model",
        "-m",
        required=True,
        help="model string, e.g. deepseek:deepseek-chat, openai:gpt-4o-mini, ollama:qwen2.5:7b",
    )
    parser.add_argument(
        "--tools",
        "-t",
        action="append",
        default=[],
        metavar="SPEC",
        help="tools: a file (tools.py), a module (pkg.tools) or module:attr naming a Tool, a "
        "list of tools or a Toolset; repeatable",
    )
    parser.add_argument("--system", "-s", help="system prompt, or @path to read it from a file")
    parser.add_argument(
        "--max-steps", type=int, default=10, help="most model calls per turn (default 10)"
    )
    parser.set_defaults(handler=run_chat)


def run_chat(args: argparse.Namespace) -> int:
    """The ``chat`` command."""
    import asyncio
    import sys

    from rich.console import Console

    from toolproof._agent import Agent
    from toolproof.models import model_from_string

    tools = _load_all(args.tools)
    system = _system_prompt(args.system)
    if args.max_steps < 1:
        raise UserError(f"--max-steps must be at least 1, got {args.max_steps}")
    model = model_from_string(args.model)
    console = Console(highlight=False, soft_wrap=True)
    agent = Agent(
        model,
        tools,
        system_prompt=system,
        max_steps=args.max_steps,
        on_event=_StepPrinter(console),
        name="chat",
    )
    names = ", ".join(agent.toolset.names) or "none"
    console.print(
        f"toolproof chat - model [bold]{_esc(model.name)}[/] - tools: {_esc(names)}\n"
        "Type 'exit' to quit; Ctrl-C cancels a turn."
    )
    session = agent.session()
    interactive = sys.stdin.isatty()
    loop = asyncio.new_event_loop()
    try:
        while True:
            try:
                line = input("you> ")
            except (EOFError, KeyboardInterrupt):
                console.print()
                break
            text = line.strip()
            if not interactive:
                console.print(_esc(line))  # echo piped input, so the transcript reads well
            if not text:
                continue
            if text.lower() in EXIT_WORDS:
                break
            _turn(loop, session, text, console)
    finally:
        try:
            loop.run_until_complete(model.aclose())
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
    console.print("bye")
    return 0


def _turn(loop: asyncio.AbstractEventLoop, session: Session, text: str, console: Console) -> None:
    import asyncio
    import signal

    from toolproof.errors import AgentRunError

    task = loop.create_task(session.run(text))
    try:
        loop.add_signal_handler(signal.SIGINT, task.cancel)
        handled = True
    except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
        handled = False
    try:
        while True:
            try:
                result = loop.run_until_complete(task)
                break
            except KeyboardInterrupt:  # no signal handler: cancel, then let the task unwind
                task.cancel()
    except asyncio.CancelledError:
        console.print("[yellow]turn cancelled[/]")
        return
    except AgentRunError as exc:
        console.print(f"[red]error:[/] {_esc(_one_line(str(exc)))}")
        return
    except Exception as exc:  # a bug somewhere: one line, not a traceback
        console.print(f"[red]error:[/] {type(exc).__name__}: {_esc(_one_line(str(exc)))}")
        return
    finally:
        if handled:
            loop.remove_signal_handler(signal.SIGINT)
    trace = result.trace
    if result.output is not None:
        console.print(f"[bold green]assistant>[/] {_esc(result.output)}")
    if not result.ok or trace.stop_detail:
        stopped = _esc(f"[run stopped: {result.stop_reason}]")
        console.print(f"[yellow]{stopped}[/] {_esc(trace.stop_detail or '')}")
    usage = trace.usage
    calls = len(trace.tool_calls)
    cost = f" - ${trace.cost:.6f}" if trace.cost else ""
    approx = "~" if usage.estimated else ""
    console.print(
        f"[dim]({len(trace.steps)} model call{'s' if len(trace.steps) != 1 else ''} - "
        f"{calls} tool call{'s' if calls != 1 else ''} - {trace.duration_ms / 1000:.2f} s - "
        f"{approx}{usage.total_tokens} tokens{cost})[/]"
    )


class _StepPrinter:
    """Prints each event of a run as one or a few lines."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, event: Event) -> None:
        from toolproof.events import ModelResponded, ToolFinished, ToolStarted

        out = self.console
        if isinstance(event, ModelResponded):
            step = event.step
            message = step.response
            usage = step.usage
            n = len(message.tool_calls)
            if n:
                what = f"{n} tool call{'s' if n != 1 else ''}"
            else:
                what = "unparsable tool call" if step.parse_errors else "answer"
            tokens = f"{usage.input_tokens} in / {usage.output_tokens} out tokens"
            if usage.cached_tokens:
                tokens += f", {usage.cached_tokens} cached"
            if usage.estimated:
                tokens = "~" + tokens
            out.print(
                f"[dim]\\[step {step.index}][/] model -> {what} "
                f"[dim]({step.latency_ms:.0f} ms, {tokens})[/]"
            )
            if message.reasoning:
                out.print(f"[dim]  thinking: {_esc(clip(message.reasoning, 300))}[/]")
            if n and message.content:
                out.print(f"[dim]  says: {_esc(clip(message.content, 300))}[/]")
            for error in step.parse_errors:
                out.print(f"[yellow]  unparsable tool call:[/] {_esc(error)}")
        elif isinstance(event, ToolStarted):
            out.print(f"[dim]\\[step {event.step}][/] tool [cyan]{_esc(event.call.signature())}[/]")
        elif isinstance(event, ToolFinished):
            result = event.result
            mark = (
                "[green]ok[/]" if result.ok else f"[red]error ({_esc(result.error_type or '')})[/]"
            )
            out.print(
                f"[dim]\\[step {event.step}][/]   {_esc(event.call.name)} {mark}: "
                f"{_esc(clip(result.content, 500))} [dim]({result.duration_ms:.1f} ms)[/]"
            )


def load_tools(spec: str) -> list[Tool[..., Any]] | Toolset:
    """The tools named by a ``--tools`` value.

    Args:
        spec: A Python file (``tools.py``), a module (``pkg.tools``), or ``module:attr`` /
            ``file.py:attr`` naming a ``Tool``, a list of tools, a ``Toolset`` or an agent.
            A file or module without ``:attr`` gives all the tools it defines.

    Raises:
        UserError: The module cannot be imported or holds no tools.
    """
    from types import ModuleType

    from toolproof._loading import load_target, tools_in
    from toolproof._toolset import Toolset

    value, label = load_target(spec)
    if isinstance(value, Toolset):
        return value  # keeps its mode, overrides and mocks
    found = tools_in(value)
    if not found and not isinstance(value, ModuleType):
        raise UserError(
            f"--tools {label!r} is {type(value).__name__}, not a tool, a list of tools, a "
            "Toolset or an agent"
        )
    if not found:
        raise UserError(
            f"no tools found in {label!r}: define functions decorated with @tool there, or "
            "name a tool, a list of tools or a Toolset with --tools module:attr"
        )
    return found


def _load_all(specs: list[str]) -> list[Tool[..., Any]] | Toolset:
    from toolproof._toolset import Toolset

    loaded = [load_tools(spec) for spec in specs]
    toolsets = [t for t in loaded if isinstance(t, Toolset)]
    if toolsets:
        if len(loaded) > 1:
            raise UserError("--tools: a Toolset must be the only --tools value")
        return toolsets[0]
    tools: list[Tool[..., Any]] = []
    for group in loaded:
        assert not isinstance(group, Toolset)
        tools.extend(t for t in group if t not in tools)
    return tools


def _system_prompt(value: str | None) -> str | None:
    if value is None or not value.startswith("@"):
        return value
    path = value[1:]
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise UserError(f"--system {value!r}: cannot read {path!r}: {exc.strerror}") from None


def _esc(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _one_line(text: str) -> str:
    return " ".join(text.split())
