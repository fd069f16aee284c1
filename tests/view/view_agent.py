"""A tiny agent for the viewer tests: an echo tool (hostile text goes through it) and a
tool that fails every second call (a flaky case)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from toolproof import Agent, tool

HOSTILE = '<script>window.__pwned=1;alert(1)</script>"><img src=x onerror="window.__pwned=2">'
CLOSER = "</script><script>window.__pwned=3</script>"

_calls = itertools.count()

#: The suite (kept here so pytest does not collect its failing cases as tests).
SUITE = """\
suite: hostile
agent: view_agent:build_agent
model: scripted
tools: real
trials: 4
pass_rule: all
cases:
  - name: "<script>window.__pwned=4</script>echo"
    input: "say <b>hi</b> \\"><img src=x onerror=window.__pwned=5>"
    tags: ["<img src=x onerror=window.__pwned=6>", smoke]
    expect:
      tools_called: [echo]
      final_contains: ["echoed"]
    script:
      - call: {name: echo, arguments: {text: "</script><script>window.__pwned=7</script>"}}
      - "echoed <script>window.__pwned=8</script> \\"><img src=x onerror=window.__pwned=9>"
  - name: flaky_flip
    input: "flip 3"
    tags: [flaky-one]
    expect:
      tools_called: [flip]
      no_tool_errors: true
    script:
      - call: {name: flip, arguments: {n: 3}}
      - "3"
  - name: always_fails
    input: "echo x"
    expect:
      tools_called: [flip]
    script:
      - call: {name: echo, arguments: {text: x}}
      - "done"
"""


@tool
def echo(text: str) -> str:
    """Say the text back.

    Args:
        text: Anything.
    """
    return f"echo: {text} {HOSTILE}"


@tool(errors=(ValueError,))
def flip(n: int) -> int:
    """Return n, failing every second call.

    Args:
        n: A number.
    """
    if next(_calls) % 2:
        raise ValueError(f"flip failed {CLOSER}")
    return n


def build_agent(model: Any, tools: Sequence[Any] | None = None, **options: Any) -> Agent:
    return Agent(
        model,
        [echo, flip] if tools is None else tools,
        system_prompt=f"You echo. {HOSTILE}",
        **options,
    )
