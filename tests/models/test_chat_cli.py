"""``toolproof chat`` (and ``--version`` / ``--help``) as a real subprocess.

The chat talks to the local OpenAI-compatible server through ``OPENAI_BASE_URL``; stdin is
fed by the test, and Ctrl-C is a real SIGINT sent to the child.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _openai_server import FakeOpenAIServer, Received, Reply, tool_call

from _processes import start, stop
from toolproof import __version__

TOOLS_MODULE = '''
from toolproof import Toolset, tool


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@tool
def get_weather(city: str) -> str:
    """Get the weather of a city.

    Args:
        city: The city.
    """
    return f"{city}: sunny, 25 C"


TOOLS = [multiply_numbers]
TOOLSET = Toolset([multiply_numbers, get_weather])
NOT_TOOLS = 42
'''


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "chat_tools.py"
    path.write_text(TOOLS_MODULE, encoding="utf-8")
    return path


def child_env(server: FakeOpenAIServer) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OPENAI_BASE_URL=server.url + "/v1",
        OPENAI_API_KEY="sk-test",
        TOOLPROOF_ALLOW_MODEL_REQUESTS="1",  # the chat really calls the (local) model
        PYTHONUTF8="1",
    )
    return env


def chat(
    server: FakeOpenAIServer, *args: str, stdin: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolproof", "chat", "--model", "openai:gpt-4o-mini", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=child_env(server),
        cwd=cwd,
        timeout=60,
    )


def multiply_then_answer(request: Received) -> Reply:
    last = request.body["messages"][-1]
    if last["role"] == "tool":
        return Reply.completion(f"The result is {last['content']}.")
    return Reply.completion(
        None,
        tool_calls=[tool_call("call_1", "multiply_numbers", {"a": 12, "b": 8})],
        reasoning="I should multiply.",
        usage={"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140},
    )


def test_version_and_help() -> None:
    version = subprocess.run(
        [sys.executable, "-m", "toolproof", "--version"], capture_output=True, text=True, timeout=30
    )
    assert (version.returncode, version.stdout.strip()) == (0, f"toolproof {__version__}")
    helped = subprocess.run(
        [sys.executable, "-m", "toolproof", "--help"], capture_output=True, text=True, timeout=30
    )
    assert helped.returncode == 0
    assert "chat" in helped.stdout
    assert "talk to an agent in the terminal" in helped.stdout
    chat_help = subprocess.run(
        [sys.executable, "-m", "toolproof", "chat", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert chat_help.returncode == 0
    for option in ("--model", "--tools", "--system", "--max-steps"):
        assert option in chat_help.stdout


def test_a_turn_shows_every_step(server: FakeOpenAIServer, tools_file: Path) -> None:
    server.handler = multiply_then_answer
    done = chat(server, "--tools", str(tools_file), stdin="What is 12 times 8?\nexit\n")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "toolproof chat - model openai:gpt-4o-mini - tools: multiply_numbers, get_weather"
    )
    out = done.stdout
    assert "you> What is 12 times 8?" in out
    assert "[step 1] model -> 1 tool call (" in out
    assert "ms, 120 in / 20 out tokens)" in out
    assert "  thinking: I should multiply." in out
    assert "[step 1] tool multiply_numbers(a=12, b=8)" in out
    assert "[step 1]   multiply_numbers ok: 96.0 (" in out
    assert "[step 2] model -> answer (" in out
    assert "assistant> The result is 96.0." in out
    assert "(2 model calls - 1 tool call - " in out
    cost = ((120 + 10) * 0.15 + (20 + 5) * 0.60) / 1_000_000  # gpt-4o-mini list prices
    assert f" - 155 tokens - ${cost:.6f})" in out
    assert lines[-2:] == ["you> exit", "bye"]
    assert [m["role"] for m in server.requests[1].body["messages"]] == ["user", "assistant", "tool"]


def test_text_protocol_parse_errors_are_shown(server: FakeOpenAIServer, tools_file: Path) -> None:
    server.queue(
        Reply.completion(
            '<tool_call>{"name": "multiply_numbers", "arguments": {"a": 12</tool_call>'
        ),
        Reply.completion(
            '<tool_call>{"name": "multiply_numbers", "arguments": {"a": 12, "b": 8}}</tool_call>'
        ),
        Reply.completion("96"),
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolproof",
            "chat",
            "--model",
            "openai:gpt-4o-mini?protocol=text",
            "--tools",
            f"{tools_file}:TOOLS",
        ],
        input="12 x 8?\nexit\n",
        capture_output=True,
        text=True,
        env=child_env(server),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "model openai:gpt-4o-mini?protocol=text" in out
    assert "[step 1] model -> unparsable tool call (" in out
    assert "  unparsable tool call: block 1 (" in out
    assert "[step 2] tool multiply_numbers(a=12, b=8)" in out
    assert "assistant> 96" in out
    assert all("tools" not in r.body for r in server.requests)


def test_turns_share_the_conversation_and_the_system_prompt(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.handler = lambda request: Reply.completion(f"turn {len(request.body['messages'])}")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("你是一个能够调用工具完成任务的中文智能体。", encoding="utf-8")
    done = chat(server, "--system", f"@{prompt}", stdin="你好\n\nsecond\nquit\n")
    assert done.returncode == 0, done.stderr
    assert "assistant> turn 2" in done.stdout
    assert "assistant> turn 4" in done.stdout
    first, second = (r.body["messages"] for r in server.requests)
    assert first[0] == {"role": "system", "content": "你是一个能够调用工具完成任务的中文智能体。"}
    assert [m["content"] for m in second] == [
        "你是一个能够调用工具完成任务的中文智能体。",
        "你好",
        "turn 2",
        "second",
    ]
    assert "tools" not in first  # no --tools: no tools offered


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ("chat_tools.py:TOOLS", "multiply_numbers"),
        ("chat_tools:TOOLSET", "multiply_numbers, get_weather"),
        ("chat_tools:get_weather", "get_weather"),
        ("chat_tools", "multiply_numbers, get_weather"),
    ],
)
def test_tools_forms(server: FakeOpenAIServer, tools_file: Path, spec: str, names: str) -> None:
    done = chat(server, "--tools", spec, stdin="exit\n", cwd=tools_file.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith(f"tools: {names}")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--tools", "chat_tools.py:NOT_TOOLS"],
            "--tools 'chat_tools.py:NOT_TOOLS' is int, not a tool, a list of tools, a Toolset",
        ),
        (["--tools", "chat_tools:missing"], "chat_tools has no attribute 'missing'"),
        (["--tools", "nowhere.py"], "cannot import 'nowhere.py': no such file"),
        (["--tools", "no_such_module"], "no module named 'no_such_module'"),
        (["--tools", "empty.py"], "no tools found in 'empty.py'"),
        (
            ["--tools", "broken.py"],
            "cannot import 'broken.py': ZeroDivisionError: division by zero",
        ),
        (["--system", "@missing.txt"], "cannot read 'missing.txt'"),
        (["--max-steps", "0"], "--max-steps must be at least 1"),
    ],
)
def test_bad_options_are_one_line_errors(
    server: FakeOpenAIServer, tools_file: Path, args: list[str], message: str
) -> None:
    (tools_file.parent / "empty.py").write_text("X = 1\n")
    (tools_file.parent / "broken.py").write_text("1 / 0\n")
    done = chat(server, *args, stdin="exit\n", cwd=tools_file.parent)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("toolproof: error: ")
    assert message in done.stderr
    assert server.requests == []


def test_bad_model_strings_and_missing_keys(server: FakeOpenAIServer) -> None:
    env = child_env(server)
    del env["OPENAI_API_KEY"]
    for model, message in [
        ("anthropic:claude", "unknown model provider 'anthropic'"),
        ("openai:gpt-4o", "set the environment variable OPENAI_API_KEY"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "toolproof", "chat", "--model", model],
            input="exit\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 2
        assert done.stderr.count("\n") == 1
        assert message in done.stderr
        assert "Traceback" not in done.stderr


def test_a_failed_model_call_is_one_line_and_the_chat_goes_on(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply(
            status=401,
            json={"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}},
        ),
        Reply.completion("working again"),
    )
    done = chat(server, stdin="hi\nhi again\nexit\n")
    assert done.returncode == 0
    assert "Traceback" not in done.stdout + done.stderr
    error_lines = [line for line in done.stdout.splitlines() if line.startswith("error: ")]
    assert len(error_lines) == 1
    assert "HTTP 401 Unauthorized" in error_lines[0]
    assert "Check the API key in OPENAI_API_KEY" in error_lines[0]
    assert "assistant> working again" in done.stdout
    # The failed turn did not join the conversation.
    assert [m["content"] for m in server.requests[1].body["messages"]] == ["hi again"]


class Child:
    """An interactive chat process whose output is read as it comes."""

    def __init__(self, server: FakeOpenAIServer) -> None:
        self.process = start(
            [sys.executable, "-m", "toolproof", "chat", "--model", "openai:gpt-4o-mini"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(server),
        )
        self.output = b""

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def wait_for(self, text: str, timeout: float = 30) -> None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while text.encode() not in self.output:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{text!r} never appeared in {self.output.decode()!r}"
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 4096)
                assert chunk, f"the chat exited before printing {text!r}: {self.output.decode()!r}"
                self.output += chunk

    def finish(self) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=30)
        return self.process.returncode, (self.output + out).decode(), err.decode()


@pytest.fixture
def child(server: FakeOpenAIServer) -> Iterator[Child]:
    """A chat process, stopped when the test ends, however it ends."""
    chat_child = Child(server)
    try:
        yield chat_child
    finally:
        stop(chat_child.process)


@pytest.mark.skipif(sys.platform == "win32", reason="sends SIGINT")
def test_ctrl_c_cancels_the_turn_and_the_chat_continues(
    server: FakeOpenAIServer, child: Child
) -> None:
    server.queue(Reply.completion("too late", delay=30), Reply.completion("second answer"))
    child.wait_for("you> ")
    child.send("a slow question")
    assert server.arrived.wait(30)
    child.process.send_signal(signal.SIGINT)
    child.wait_for("turn cancelled")
    child.send("next question")
    child.wait_for("assistant> second answer")
    child.send("exit")
    code, out, err = child.finish()
    assert code == 0
    assert err == ""
    assert out.rstrip().endswith("bye")
    # The cancelled turn is not part of the conversation.
    assert [m["content"] for m in server.requests[1].body["messages"]] == ["next question"]


@pytest.mark.skipif(sys.platform == "win32", reason="sends SIGINT")
def test_ctrl_c_at_the_prompt_quits_cleanly(server: FakeOpenAIServer, child: Child) -> None:
    child.wait_for("you> ")
    child.process.send_signal(signal.SIGINT)
    code, out, err = child.finish()
    assert code == 0
    assert err == ""
    assert out.rstrip().endswith("bye")
    assert server.requests == []


def test_end_of_input_quits(server: FakeOpenAIServer) -> None:
    done = chat(server, stdin="")
    assert done.returncode == 0
    assert done.stdout.rstrip().endswith("bye")
    assert textwrap.dedent(done.stderr) == ""
