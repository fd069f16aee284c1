"""One rule for scripts, whatever runs the agent: a scripted call names a tool the agent
offers, with arguments its schema accepts, or says ``unchecked: true``.

An agent toolproof builds (or a LangChain model bound to tools) shows its tools before the
run, so a script that does not fit is refused when the suite loads; a program or an HTTP
service shows them in its requests, so the request is refused and the case fails naming
the same problem. Generated scripts go through every agent kind.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _suites import AGENTS
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.errors import ConfigError, UserError
from toolproof.evals import evaluate_async, load_suite

pytest.importorskip("openai")

SRC = Path(__file__).resolve().parents[2] / "src"
PROGRAM = [sys.executable, str(AGENTS / "openai_sdk_agent.py")]

# Calls that do not fit the agent (get_price(item: string), multiply(a: number, b: number)).
MISFITS = [
    ("launch_rocket", {"target": "moon"}, "calls tool 'launch_rocket', which is not bound"),
    ("get_price", {"item": 3}, "with arguments the tool's schema rejects"),
    ("multiply", {"a": 3}, "with arguments the tool's schema rejects"),
]


def _suite(folder: Path, agent: str, name: str, arguments: dict[str, Any], unchecked: bool) -> Path:
    flag = ", unchecked: true" if unchecked else ""
    text = textwrap.dedent(
        f"""\
        suite: rule
        agent: {agent}
        cases:
          - name: misfit
            input: "What do 3 apples cost?"
            script:
              - {{call: {{name: {name}, arguments: {json.dumps(arguments)}{flag}}}}}
              - "3 apples cost 6 euros."
            expect: {{final_contains: "6 euros"}}
        """
    )
    path = folder / "rule.eval.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
async def http_agent() -> AsyncIterator[str]:
    """An HTTP agent offering the same two tools (it runs the same loop as the program)."""
    import aiohttp
    from aiohttp import web

    sys.path.insert(0, str(AGENTS))
    import openai_sdk_agent

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        messages: list[Any] = [{"role": "user", "content": body["input"]}]
        headers = {"Authorization": f"Bearer {body['api_key']}"}
        async with aiohttp.ClientSession() as session:
            for _ in range(4):
                async with session.post(
                    body["base_url"] + "/chat/completions",
                    json={"model": "m", "messages": messages, "tools": openai_sdk_agent.TOOLS},
                    headers=headers,
                ) as reply:
                    if reply.status != 200:
                        return web.json_response({"error": await reply.text()}, status=500)
                    message = (await reply.json())["choices"][0]["message"]
                messages.append(message)
                if not message.get("tool_calls"):
                    return web.json_response({"output": message["content"]})
                for c in message["tool_calls"]:
                    arguments = json.loads(c["function"]["arguments"])
                    try:
                        result = openai_sdk_agent.run_tool(c["function"]["name"], arguments)
                    except Exception as exc:
                        result = f"error: {exc}"
                    messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
        return web.json_response({"output": None})

    app = web.Application()
    app.router.add_post("/chat", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/chat"
    finally:
        await runner.cleanup()
        sys.path.remove(str(AGENTS))


async def _case_error(path: Path) -> tuple[str, str]:
    report = await evaluate_async([load_suite(path)], model="scripted", keep_traces=True)
    [case] = report.cases
    return case.verdict, case.trials[0].error or case.reason


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("name", "arguments", "expected"), MISFITS)
async def test_every_agent_kind_refuses_a_script_that_does_not_fit(
    name: str, arguments: dict[str, Any], expected: str, tmp_path: Path, http_agent: str
) -> None:
    program = json.dumps({"command": PROGRAM})
    verdict, why = await _case_error(_suite(tmp_path, program, name, arguments, False))
    assert verdict == "fail" and "the script does not fit the agent" in why and expected in why
    verdict, why = await _case_error(
        _suite(tmp_path, json.dumps({"http": http_agent}), name, arguments, False)
    )
    assert verdict == "fail" and expected in why, why

    # An agent whose tools toolproof knows is refused when the suite loads.
    with pytest.raises(ConfigError) as loaded:
        load_suite(_suite(tmp_path, "shop_agent:build_agent", name, arguments, False))
    assert name in str(loaded.value) and "unchecked: true" in str(loaded.value)

    # A LangChain scripted model bound to the same tools refuses it at the request.
    langchain = pytest.importorskip("toolproof.integrations.langchain")
    import openai_sdk_agent

    from toolproof.models.fake import call

    model = langchain.ScriptedChatModel([call(name, **arguments)]).bind_tools(
        openai_sdk_agent.TOOLS
    )
    with pytest.raises(UserError, match=re.escape(expected)):
        await model.ainvoke("What do 3 apples cost?")


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("name", "arguments", "expected"), MISFITS)
def test_the_command_line_fails_the_case_naming_the_misfit(
    name: str, arguments: dict[str, Any], expected: str, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, json.dumps({"command": PROGRAM}), name, arguments, False)
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", str(suite), "--model", "scripted",
         "--report", f"json:{report}"],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert expected in report.read_text()


@pytest.mark.timeout(300)
async def test_unchecked_calls_reach_every_agent_kind(tmp_path: Path, http_agent: str) -> None:
    name, arguments, expected = MISFITS[1]  # get_price(item=3): the agents cope with it
    for agent in (json.dumps({"command": PROGRAM}), json.dumps({"http": http_agent})):
        _, why = await _case_error(_suite(tmp_path, agent, name, arguments, True))
        assert "does not fit" not in why and expected not in why, why
    load_suite(_suite(tmp_path, "shop_agent:build_agent", name, arguments, True))


@settings(max_examples=15, deadline=None)
@given(
    name=st.sampled_from(["get_price", "multiply", "launch_rocket", "get-price", "GET_PRICE"]),
    arguments=st.dictionaries(
        st.sampled_from(["item", "a", "b", "extra"]),
        st.one_of(st.integers(), st.text(max_size=5), st.none(), st.floats(allow_nan=False)),
        max_size=3,
    ),
)
def test_the_rule_is_the_same_function_for_requests_and_langchain(
    name: str, arguments: dict[str, Any]
) -> None:
    """A generated call fits the offered tools for the scripted model exactly when it fits
    for the LangChain model: both ask ``script_misfit``."""
    langchain = pytest.importorskip("toolproof.integrations.langchain")
    from toolproof._messages import ToolDefinition
    from toolproof.models.fake import ScriptedModel, call, script_misfit

    sys.path.insert(0, str(AGENTS))
    import openai_sdk_agent

    tools = [
        ToolDefinition(t["function"]["name"], "", t["function"]["parameters"])
        for t in openai_sdk_agent.TOOLS
    ]
    problem = script_misfit(call(name, **arguments), tools)

    import asyncio

    from toolproof._messages import Message, ModelSettings

    scripted = ScriptedModel([call(name, **arguments)], check_calls=True)
    try:
        asyncio.run(scripted.request([Message.user("q")], tools, ModelSettings()))
        by_model = None
    except UserError as exc:
        by_model = str(exc)
    chat = langchain.ScriptedChatModel([call(name, **arguments)]).bind_tools(openai_sdk_agent.TOOLS)
    try:
        chat.invoke("q")
        by_langchain = None
    except UserError as exc:
        by_langchain = str(exc)
    assert (problem is None) == (by_model is None) == (by_langchain is None)
    if problem is not None:
        assert problem in str(by_model) and problem in str(by_langchain)
