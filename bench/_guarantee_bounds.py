"""Guarantee figures: no input keeps toolproof busy (parsers, YAML loaders, calculator, runs).

``measure()`` tries hostile inputs on each parser and loader and reports the slowest and
median seconds per input, the memory of the "billion laughs" file, the calculator's worst
case, and how far past its limit a run with a hung tool or model ends. It takes ~15 s and
prints nothing.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

Row = tuple[str, str, str]

_CALL = '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>'
_TEXT_PIECES = [
    "```",
    "```json\n",
    "`",
    "<tool_call>",
    "</tool_call>",
    "<TOOL_CALL >",
    "</tool_call\n>",
    "<tool_call",
    " ",
    "\n",
    "x",
    '{"name": "a"}',
    "[[[[",
    _CALL,
]
_YAML_PIECES = [
    "&a ",
    "*a",
    "[",
    "]",
    "{",
    "}",
    ", ",
    ": ",
    "- ",
    "\n",
    "  ",
    "<<: *a",
    "!!timestamp ",
    "!!int ",
    "1" * 1200,
    '"',
    "---\n",
    "x",
]


def _laughs(levels: int, fan_out: int = 9) -> str:
    lines = [f"a0: &a0 [{', '.join(['lol'] * fan_out)}]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * fan_out)}]")
    return "\n".join(lines) + "\n"


def _timed(function: Callable[[], Any]) -> float:
    started = time.perf_counter()
    try:
        function()
    except Exception as exc:
        from toolproof.errors import ToolproofError

        if not isinstance(exc, ToolproofError):
            raise
    return time.perf_counter() - started


def _summary(seconds: list[float]) -> str:
    return f"max {max(seconds):.3f} s, median {statistics.median(seconds) * 1000:.2f} ms per input"


def _text_protocol(rng: random.Random) -> Row:
    from toolproof.models.textproto import parse_tool_calls

    inputs = ["```\n" + _CALL * n for n in (22, 1_000, 10_000)]
    inputs += ["<tool_call>" * 20_000, "```" * 20_000, "```" + " " * 20_000 + "x"]
    for _ in range(300):
        pieces = [rng.choice(_TEXT_PIECES) for _ in range(rng.randint(1, 40))]
        inputs.append("".join(pieces) * rng.randint(1, 300))
    seconds = [_timed(lambda text=text: parse_tool_calls(text)) for text in inputs]  # type: ignore[misc]
    return (
        "text-protocol parsing is linear",
        f"{len(inputs)} hostile outputs (unclosed fences before up to 10,000 blocks, "
        "unclosed tags, generated)",
        _summary(seconds),
    )


def _yaml_loaders(rng: random.Random, directory: Path) -> list[Row]:
    from toolproof.evals import load_suite
    from toolproof.replay import Redactor, ReplayRules
    from toolproof.testing import ToolMock

    documents = [_laughs(9), _laughs(12), "[" * 100_000 + "]" * 100_000, "- " * 50_000 + "x"]
    documents += ["a: &x\n  b: [1, *x]\n", "a: " + "1" * 5_000]
    for _ in range(150):
        documents.append("".join(rng.choice(_YAML_PIECES) for _ in range(rng.randint(1, 40))))
    loaders: dict[str, Callable[[Path], Any]] = {
        "eval suites": load_suite,
        "fixture files": ToolMock.from_file,
        "redaction rules": Redactor.from_file,
        "replay rules": ReplayRules.from_file,
    }
    rows = []
    for name, loader in loaders.items():
        path = directory / ("x.eval.yaml" if name == "eval suites" else "x.yaml")
        seconds = []
        for text in documents:
            path.write_text(text, encoding="utf-8")
            seconds.append(_timed(lambda: loader(path)))  # noqa: B023 (called at once)
        rows.append(
            (
                f"YAML {name}: bounded work",
                f"{len(documents)} hostile documents (billion laughs, 100,000-deep nesting, "
                "recursive aliases, long integers, generated)",
                _summary(seconds),
            )
        )
    path = directory / "laughs.eval.yaml"
    path.write_text(_laughs(9), encoding="utf-8")
    tracemalloc.start()
    elapsed = _timed(lambda: load_suite(path))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows.append(
        (
            "billion laughs is refused",
            f"a {len(_laughs(9))}-byte suite of nested aliases (9^9 values once expanded; before: "
            "8-14 s, 1.1 GB)",
            f"refused in {elapsed * 1000:.1f} ms, peak {peak / 2**20:.2f} MiB",
        )
    )
    return rows


def _calculator(rng: random.Random) -> Row:
    from toolproof._calculator import evaluate

    expressions = [
        "round(1, -10**7)",
        "10**10**10",
        "2**9999999",
        "9**9**9**9",
        "(10**1200)*(10**1200)",
        "2**4095*2**4095",
        "round(10**1000, -1300)",
        "(" * 249 + "1" + ")" * 249,
        "-" * 499 + "1",
        "max(" + ",".join(["10**1200"] * 60) + ")",
    ]
    atoms = ["10**1000", "2", "-3", "1e300", "0.5", "pi", "(10**1200)", "4095", "-(2**4095)"]
    functions = ["round", "abs", "min", "max", "sqrt", "floor", "log", "exp"]
    operators = ["+", "-", "*", "/", "//", "%", "**"]

    def generate(depth: int) -> str:
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(atoms)
        if rng.random() < 0.6:
            return f"({generate(depth - 1)}{rng.choice(operators)}{generate(depth - 1)})"
        name = rng.choice(functions)
        extra = f",{generate(depth - 1)}" if name in ("round", "min", "max") else ""
        return f"{name}({generate(depth - 1)}{extra})"

    expressions += [generate(5) for _ in range(3_000)]
    seconds = [_timed(lambda e=e: evaluate(e)) for e in expressions]  # type: ignore[misc]
    return (
        "calculator work is capped",
        f"{len(expressions)} expressions (round(1, -10**7) took 9-27 s before; huge powers, "
        "products, nesting, generated)",
        _summary(seconds),
    )


def _grounding() -> Row:
    from toolproof._grounding import check_grounding

    texts = [unit * 50_000 for unit in ("a-", "1-", "a.", "a1/", "ab_", "9,999,", "E1001 ")]
    seconds = [_timed(lambda t=t: check_grounding(t, [t])) for t in texts]  # type: ignore[misc]
    return (
        "grounding checks are linear",
        f"{len(texts)} answers and evidence texts of 100-300 KB built to make id patterns "
        "rescan ('a-a-a-...' of 32 KB took 9 s before)",
        f"max {max(seconds):.3f} s per text",
    )


def _run_limits() -> Row:
    from toolproof import Agent, Budget, Message, tool
    from toolproof.testing import FunctionModel, RequestInfo, ScriptedModel, call

    @tool
    async def hang(x: int) -> int:
        """Never answers.

        Args:
            x: Ignored.
        """
        await asyncio.Event().wait()
        return x

    async def hung_model(messages: list[Message], info: RequestInfo) -> str:
        await asyncio.Event().wait()
        return ""

    limit = 0.2
    overshoot = []
    for _ in range(5):
        for agent in (
            Agent(ScriptedModel([call("hang", x=1)]), [hang], budget=Budget(max_seconds=limit)),
            Agent(FunctionModel(hung_model), budget=Budget(max_seconds=limit)),
        ):
            started = time.perf_counter()
            result = agent.run_sync("x")
            assert result.stop_reason == "budget"
            overshoot.append(time.perf_counter() - started - limit)
    return (
        "every run ends by its time limit (default 600 s)",
        "10 runs with a hung async tool or a hung model, limit 0.2 s",
        f"all ended with stop_reason=budget and their trace, at most {max(overshoot) * 1000:.1f}"
        " ms past the limit",
    )


def measure() -> list[Row]:
    """The rows (guarantee, what was tried, result) of the bounds guarantees."""
    rng = random.Random(20261201)
    with tempfile.TemporaryDirectory() as directory:
        rows = [_text_protocol(rng), *_yaml_loaders(rng, Path(directory))]
    rows.append(_calculator(rng))
    rows.append(_grounding())
    rows.append(_run_limits())
    return rows


if __name__ == "__main__":
    for row in measure():
        print(" | ".join(row))
