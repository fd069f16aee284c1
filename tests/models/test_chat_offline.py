"""``toolproof chat`` offline, as a real subprocess: a script file or MODULE:ATTR as the model.

No server and no key: the scripted model answers from the same script format as eval
suites, or from a Model object or factory that the user names.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

TOOLS = '''
from toolproof import tool


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b
'''

MODELS = """
from toolproof.testing import ScriptedModel, call


def make():
    return ScriptedModel([call("multiply_numbers", a=2, b=21), "2 x 21 = 42"], name="factory")


MODEL = ScriptedModel(["hello from an object"], name="object")
NOT_A_MODEL = 42


def broken():
    raise RuntimeError("no model today")
"""


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "chat_tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "chat_models.py").write_text(MODELS, encoding="utf-8")
    return tmp_path


def chat(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUTF8="1")
    env.pop("TOOLPROOF_ALLOW_MODEL_REQUESTS", None)
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "toolproof", "chat", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


def test_a_script_file_drives_the_chat_with_malformed_arguments_corrected(workdir: Path) -> None:
    (workdir / "script.yaml").write_text(
        '- call: {name: multiply_numbers, arguments: \'{"a": 12, "b": \'}\n'
        "- call: {name: multiply_numbers, arguments: {a: 12, b: 8}}\n"
        '- "12 x 8 = 96"\n',
        encoding="utf-8",
    )
    done = chat(
        workdir,
        "--model",
        "script.yaml",
        "--tools",
        "chat_tools.py",
        stdin="12 x 8?\nonce more\nexit\n",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "model scripted:script.yaml - tools: multiply_numbers" in out
    assert "multiply_numbers error (InvalidArguments)" in out
    assert "multiply_numbers ok: 96.0" in out
    assert "assistant> 12 x 8 = 96" in out
    assert "(3 model calls - 2 tool calls" in out
    # the script has no answer for the second turn: one line, and the chat goes on
    assert "error: model scripted:script.yaml failed at step 1: ScriptedModel script ran out" in out
    assert out.rstrip().endswith("bye")
    assert "Traceback" not in out + done.stderr


def test_a_json_script_with_a_script_key_works_too(workdir: Path) -> None:
    (workdir / "script.json").write_text('{"script": ["hi there"]}', encoding="utf-8")
    done = chat(workdir, "--model", "script.json", stdin="hello\n")
    assert done.returncode == 0, done.stderr
    assert "assistant> hi there" in done.stdout


def test_an_invalid_script_file_names_each_problem_and_exits_2(workdir: Path) -> None:
    (workdir / "bad.yaml").write_text(
        "- call: {name: multiply_numbers, argumnts: {a: 1}}\n- 42\n", encoding="utf-8"
    )
    done = chat(workdir, "--model", "bad.yaml")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "bad.yaml:1: [0].call.argumnts: unknown key 'argumnts' (did you mean 'arguments'?)" in (
        done.stderr
    )
    assert "bad.yaml:2: [1]: a script item is text" in done.stderr
    assert "Traceback" not in done.stderr
    missing = chat(workdir, "--model", "missing.yaml")
    assert missing.returncode == 2
    assert "--model 'missing.yaml': no such script file" in missing.stderr


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("chat_models:make", "assistant> 2 x 21 = 42"),
        ("chat_models:MODEL", "assistant> hello from an object"),
    ],
)
def test_module_attr_names_a_model_or_a_factory(workdir: Path, spec: str, expected: str) -> None:
    done = chat(workdir, "--model", spec, "--tools", "chat_tools.py", stdin="go\n")
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("chat_models:NOT_A_MODEL", "chat_models:NOT_A_MODEL is int, not a Model"),
        ("chat_models:broken", "calling chat_models:broken failed: RuntimeError: no model today"),
        ("chat_models:nothing", "chat_models has no attribute 'nothing'"),
        ("nomodule:x", "unknown model provider 'nomodule'"),
        ("nomodule:x", "as MODULE:ATTR naming a Model: cannot import 'nomodule'"),
        ("gpt-4o", "malformed model string 'gpt-4o'"),
    ],
)
def test_a_model_that_cannot_be_loaded_is_one_line_and_exit_2(
    workdir: Path, spec: str, message: str
) -> None:
    done = chat(workdir, "--model", spec)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.timeout(60)
@settings(deadline=None, max_examples=200)
@given(
    spec=st.one_of(
        st.text(alphabet=st.characters(blacklist_characters=":", codec="utf-8"), max_size=30),
        st.builds(
            lambda head, tail: f"{head}:{tail}",
            st.sampled_from(["openai", "OLLAMA", "deepseek", "openai-compatible", "vllm"]),
            st.text(max_size=20),
        ),
        st.builds(lambda name: name + ".yaml", st.text(max_size=10)),
    )
)
def test_any_model_value_is_a_model_or_one_user_error(spec: str) -> None:
    from toolproof.cli._chat import load_model
    from toolproof.errors import UserError
    from toolproof.models import Model

    outcome: Model | UserError
    try:
        outcome = load_model(spec)
    except UserError as exc:
        outcome = exc
    assert isinstance(outcome, Model) or str(outcome).strip()
