"""Replay details: one schema loader, honest notes and gate figures, the report marker,
async mocks, and the same model specs for ``run`` and ``replay``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from replay_helpers import run_trace

from toolproof import Trace, tool
from toolproof.cli import main
from toolproof.replay import TraceStore, areplay, replay
from toolproof.testing import call


@tool
def search_docs(query: str, top_k: int = 5) -> list[dict[str, Any]]:
    """Search the documentation.

    Args:
        query: What to search for.
        top_k: How many results.
    """
    return [{"title": f"about {query}", "score": 0.9}]


@tool
def get_weather(city: str) -> str:
    """Today's weather.

    Args:
        city: The city.
    """
    return "sunny"


def search_trace() -> Trace:
    return run_trace(
        [call("search_docs", query="refunds"), "See 'about refunds'."],
        input="How do refunds work?",
        tools=[search_docs, get_weather],
    )


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_docs",
            "description": "Search the documentation.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "top_k": {"type": "integer"}},
                "required": ["query"],
            },
        },
    }
]


def test_schema_diff_reads_openai_tool_schemas_like_replay_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "tools.json"
    old.write_text(json.dumps(OPENAI_TOOLS))
    stricter = json.loads(json.dumps(OPENAI_TOOLS))
    stricter[0]["function"]["parameters"]["required"].append("top_k")
    new = tmp_path / "tools-new.json"
    new.write_text(json.dumps(stricter))
    code, out, err = run(capsys, "schema", "diff", str(old), str(old))
    assert (code, err) == (0, "")
    assert out == f"{old} -> {old}: no schema changes\n"
    code, out, _ = run(capsys, "schema", "diff", str(old), str(new))
    assert code == 1
    assert "1 breaking" in out and "top_k" in out
    # ...and a toolproof snapshot works where an OpenAI file does (replay --schemas).
    snapshot = tmp_path / "tools.schema.json"
    code, _, err = run(capsys, "schema", "snapshot", f"{__name__}:search_docs", "-o", str(snapshot))
    assert (code, err) == (0, "")
    db = tmp_path / "t.db"
    with TraceStore(db) as store:
        store.add(search_trace())
    for schemas in (old, snapshot):
        code, out, err = run(capsys, "replay", "--store", str(db), "--schemas", str(schemas))
        assert (code, err) == (0, ""), out
        assert "1 samples: 1 pass" in out


def test_a_file_that_is_neither_form_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"tool": 1}')
    for argv in (("schema", "diff", str(bad), str(bad)), ("replay", "--schemas", str(bad))):
        code, _, err = run(
            capsys, *argv, *(("--store", str(tmp_path / "x.db")) if argv[0] == "replay" else ())
        )
        assert code == 2
        assert err == (
            f"toolproof: error: {bad} is neither a toolproof schema snapshot nor OpenAI tool "
            "schemas: expected a list of OpenAI tool schemas\n"
        )


def test_the_schema_note_names_only_tools_the_sample_called() -> None:
    @tool(name="get_weather")
    def weather_v2(city: str, units: str = "metric") -> str:
        """Today's weather.

        Args:
            city: The city.
            units: metric or imperial.
        """
        return "sunny"

    @tool(name="search_docs")
    def search_v2(query: str, top_k: int = 5, lang: str = "en") -> list[dict[str, Any]]:
        """Search the documentation.

        Args:
            query: What to search for.
            top_k: How many results.
            lang: The language.
        """
        return []

    # The sample never called get_weather: its change is not this sample's business.
    [sample] = replay([search_trace()], tools=[search_docs, weather_v2]).samples
    assert (sample.grade, sample.notes) == ("pass", [])
    [sample] = replay([search_trace()], tools=[search_v2, weather_v2]).samples
    assert sample.notes == ["search_docs: schema changed since recording"]


def test_the_json_report_shows_the_effective_gate() -> None:
    report = replay([search_trace()], tools=[search_docs, get_weather])
    assert report.gate is None
    gate = report.to_dict()["gate"]
    assert {k: gate[k] for k in ("threshold", "rate", "passed", "verdict", "mode")} == {
        "threshold": 0.0,
        "rate": 0.0,
        "passed": True,
        "verdict": "pass",
        "mode": "advisory",
    }
    assert (gate["interval"]["low"], gate["interval"]["method"]) == (0.0, "wilson")
    report = replay([search_trace()], tools=[search_docs, get_weather], gate=0.05)
    assert report.to_dict()["gate"]["threshold"] == 0.05


def test_the_markdown_report_starts_with_its_marker() -> None:
    report = replay([search_trace()], tools=[search_docs, get_weather])
    markdown = report.render_markdown()
    assert markdown.splitlines()[0] == "<!-- toolproof-replay -->"
    from toolproof.replay._report import MARKDOWN_MARKER

    assert MARKDOWN_MARKER == "<!-- toolproof-replay -->"


def test_nothing_replayed_is_never_green() -> None:
    report = replay([], tools=[search_docs])
    assert report.exit_code == 5
    assert "nothing replayed" in report.summary()
    assert "nothing replayed" in report.render_markdown()


def test_run_mocks_awaits_async_mocks_inside_a_running_loop() -> None:
    @tool(name="search_docs")
    def renamed_field(query: str, top_k: int = 5) -> list[dict[str, Any]]:
        """Search the documentation.

        Args:
            query: What to search for.
            top_k: How many results.
        """
        return []

    @renamed_field.mock
    async def _(query: str, top_k: int = 5) -> list[dict[str, Any]]:
        await asyncio.sleep(0)
        return [{"heading": query, "score": 1.0}]

    for report in (
        replay([search_trace()], tools=[renamed_field, get_weather], run_mocks=True),
        asyncio.run(areplay([search_trace()], tools=[renamed_field, get_weather], run_mocks=True)),
    ):
        [sample] = report.samples
        [finding] = sample.findings
        assert finding.check == "return_shape"
        assert finding.message == "search_docs returns another structure today: missing $[].title"


def test_run_and_replay_take_the_same_model_specs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolproof._loading import load_model_spec
    from toolproof.errors import MissingAPIKey, UserError
    from toolproof.models import Model

    module = tmp_path / "mymodels.py"
    module.write_text(
        "from toolproof.testing import ScriptedModel\n"
        "MODEL = ScriptedModel(['hi'], name='mine')\n"
        "def build():\n    return ScriptedModel(['hi'], name='built')\n"
        "NOT_A_MODEL = 3\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for spec, name in (
        ("mymodels:MODEL", "mine"),
        ("mymodels:build", "built"),
        (f"{module}:MODEL", "mine"),
    ):
        found = load_model_spec(spec)
        assert isinstance(found, Model) and found.name == name
    assert load_model_spec("Scripted", keywords=("scripted",)) == "scripted"
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    with pytest.raises(MissingAPIKey):
        load_model_spec("deepseek:deepseek-chat")
    with pytest.raises(UserError) as info:
        load_model_spec("mymodels:NOT_A_MODEL")
    assert str(info.value) == (
        "--model mymodels:NOT_A_MODEL: mymodels:NOT_A_MODEL is int, not a Model (nor a function "
        "returning one)"
    )
    with pytest.raises(UserError, match=r"unknown model provider 'nowhere'.*or MODULE:ATTR"):
        load_model_spec("nowhere:x")
