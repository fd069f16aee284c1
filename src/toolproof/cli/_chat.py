"""``toolproof chat``: talk to an agent in the terminal and watch every step.

Each model call, tool call (with its arguments), tool result, timing and token count is
printed as it happens. ``exit`` (or end of input) quits; Ctrl-C during a turn cancels that
turn and keeps the conversation; Ctrl-C at the prompt quits.
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
    from toolproof.models import Model

__all__ = ["load_model", "load_tools", "register"]

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
            "  toolproof chat --model 'ollama:qwen2.5:7b?protocol=text' --tools my_tools:TOOLS\n"
            "  toolproof chat --model script.yaml --tools tools.py      # offline, scripted"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--model",
        "-m",
        required=True,
        help="model string (deepseek:deepseek-chat, openai:gpt-4o-mini, ollama:qwen2.5:7b), a "
        "script file (script.yaml: the responses of a scripted model, as in eval suites) or "
        "MODULE:ATTR naming a Model or a function returning one",
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

    tools = _load_all(args.tools)
    system = _system_prompt(args.system)
    if args.max_steps < 1:
        raise UserError(f"--max-steps must be at least 1, got {args.max_steps}")
    model = load_model(args.model)
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


def load_model(spec: str) -> Model:
    """The model named by a ``--model`` value.

    Args:
        spec: A model string (``deepseek:deepseek-chat``; its provider prefix decides), a
            script file (``.yaml``, ``.yml`` or ``.json``: a list of responses in the format
            of an eval case's ``script:``, or a mapping with a ``script:`` list), or
            ``module:attr`` / ``file.py:attr`` naming a ``Model`` or a function (or class)
            that returns one when called without arguments.

    Raises:
        UserError: The value is none of these, the file is not a valid script, or the
            import fails or names something that is not a model.
    """
    from toolproof.models import Model, model_from_string
    from toolproof.models._registry import PROVIDERS

    text = spec.strip()
    if text.partition(":")[0].strip().lower() in PROVIDERS:
        return model_from_string(text)
    if text.lower().endswith((".yaml", ".yml", ".json")):
        return scripted_model(text)
    if ":" not in text:
        return model_from_string(text)  # its error lists the valid forms
    from toolproof._loading import load_target

    try:
        target, label = load_target(text)
    except UserError as exc:
        try:
            model_from_string(text)
        except UserError as not_a_string:
            raise UserError(f"{not_a_string}; as MODULE:ATTR naming a Model: {exc}") from None
        raise
    made = target
    if not isinstance(made, Model) and callable(made):
        try:
            made = made()
        except Exception as exc:
            raise UserError(
                f"--model {spec!r}: calling {label} failed: {type(exc).__name__}: {exc}"
            ) from None
    if not isinstance(made, Model):
        raise UserError(
            f"--model {spec!r}: {label} is {type(made).__name__}, not a Model (nor a function "
            "returning one)"
        )
    return made


def scripted_model(path_text: str) -> Model:
    """A ScriptedModel from a script file, checked like an eval case's ``script:``."""
    from pathlib import Path

    from toolproof.errors import ConfigError
    from toolproof.evals._resolve import Resolver
    from toolproof.evals._suite import Builder
    from toolproof.evals._yaml import Problems, load_yaml
    from toolproof.models.fake import ScriptedModel

    path = Path(path_text)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"--model {path_text!r}: no such script file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: a NUL in the path
        raise UserError(f"--model {path_text!r}: cannot read the script file: {exc}") from None
    data, locator, structural = load_yaml(text, path)
    where: tuple[Any, ...] = ()
    if isinstance(data, dict) and "script" in data:
        data, where = data["script"], ("script",)
    problems = Problems(locator)
    script = Builder(path, locator, problems, Resolver())._script(data, where)
    formatted = structural + problems.formatted()
    if formatted or script is None:
        lines = formatted or [f"{path}:1: not a script"]
        raise ConfigError(
            f"invalid script file {path_text!r} (a list of responses: text, "
            "{call: {name, arguments}}, a list of calls, or {raise: ...}):\n"
            + "\n".join(f"  {line}" for line in lines),
            lines,
        )
    return ScriptedModel(script, name=f"scripted:{path.name}")


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
