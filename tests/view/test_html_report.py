"""The HTML report without a browser: written by run and replay, self-contained, escaped."""

from __future__ import annotations

import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof._html import embed_json
from toolproof._reporting import parse_report_specs
from toolproof.evals._html import (
    expand_eval_data,
    page_trial,
    write_eval_page,
)
from toolproof.replay._html import calls_diff, word_diff
from toolproof.view import render_report


class Elements(HTMLParser):
    """Every start tag with its attributes, and the data block's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.data_block = ""
        self._in_data = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_data = tag == "script" and dict(attrs).get("id") == "tp-data"

    def handle_endtag(self, tag: str) -> None:
        self._in_data = False

    def handle_data(self, data: str) -> None:
        if self._in_data:
            self.data_block += data


def parse(text: str) -> Elements:
    parser = Elements()
    parser.feed(text)
    parser.close()
    return parser


def assert_inert(text: str) -> Elements:
    """Only our two scripts, no image, no event-handler attribute, nothing fetched."""
    parsed = parse(text)
    scripts = [attrs for tag, attrs in parsed.tags if tag == "script"]
    assert len(scripts) <= 2
    assert all(attrs in ({"type": "application/json", "id": "tp-data"}, {}) for attrs in scripts)
    assert not [
        tag for tag, _ in parsed.tags if tag in ("img", "iframe", "object", "embed", "link")
    ]
    for tag, attrs in parsed.tags:
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        for name in ("src", "href", "action"):
            value = attrs.get(name) or ""
            assert not re.match(r"^\s*(https?:|//|javascript:)", value, re.I), (tag, attrs)
    return parsed


def test_run_writes_an_html_report_with_the_json_reports_data(eval_reports: dict[str, Any]) -> None:
    text = eval_reports["html"].read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>")
    parsed = assert_inert(text)
    embedded = json.loads(parsed.data_block)
    assert embedded["kind"] == "eval"
    assert len(embedded["tool_sets"]) == 1  # the tools offered, stored once for every trace
    assert expand_eval_data(embedded) == eval_reports["data"]  # every trace, as in the JSON
    summary = eval_reports["data"]["summary"]
    assert f"{summary['trials_passed']} of {summary['trials']} trials" in text
    # hostile case names, tags, arguments and answers are in the page only as text
    assert "&lt;script&gt;window.__pwned=4&lt;/script&gt;echo" in text
    assert "&lt;img src=x onerror=window.__pwned=6&gt;" in text
    assert text.count("<script") == 2
    assert "<dt>errors by kind</dt><dd>ValueError (tool) ×2</dd>" in text  # the flaky tool
    assert "<dt>tool calls</dt><dd>12 (0 mocked, 12 real, 0 refused before running)</dd>" in text


def test_replay_writes_side_by_side_diffs(replay_reports: dict[str, Any]) -> None:
    text = replay_reports["html"].read_text(encoding="utf-8")
    parsed = assert_inert(text)
    embedded = json.loads(parsed.data_block)
    assert embedded["kind"] == "replay"
    grades = {r["trace_id"]: r["grade"] for r in replay_reports["data"]["results"]}
    # the warn and the fail have both runs embedded for the step views; the pass has none
    assert sorted(grades[s] for s in _sample_ids(text, embedded)) == ["fail", "warn"]
    assert text.count('class="d-added"') == 1  # list_invoices is new in the fail
    assert text.count('class="d-changed"') == 2  # user_id 3 -> 33, and the new option
    assert '<li class="ins"><code>options</code>' in text
    assert "<del>User 3 is user3 on plan pro.</del>" in text  # the fail has no answer


def _sample_ids(text: str, embedded: dict[str, Any]) -> list[str]:
    ids = []
    for index in embedded["samples"]:
        match = re.search(rf'id="sample-{index}".*?<dt>trace</dt><dd>([0-9a-f]+)</dd>', text, re.S)
        assert match
        ids.append(match.group(1))
    return ids


def test_report_html_spec_and_cli_replay(replay_reports: dict[str, Any], tmp_path: Path) -> None:
    from toolproof.cli import main

    assert [s.format for s in parse_report_specs(["html:a.html", "htm:b.html"])] == ["html", "html"]
    out = tmp_path / "cli.html"
    code = main(
        [
            "replay", "--store", str(replay_reports["store"]), "--tools", "view_replay:TOOLS",
            "--report", f"html:{out}",
        ]
    )  # fmt: skip
    assert code == 0  # tools mode: the recorded calls still fit today's tools
    assert_inert(out.read_text(encoding="utf-8"))
    assert "gate passed" in out.read_text(encoding="utf-8")


def test_not_a_report_is_one_clear_error() -> None:
    from toolproof.errors import ConfigError

    with pytest.raises(ConfigError, match="not a toolproof report"):
        render_report({"hello": 1})


def test_big_reports_render_passing_checks_lazily(eval_reports: dict[str, Any]) -> None:
    data = json.loads(json.dumps(eval_reports["data"]))
    case = data["cases"][0]
    case["trials"] = case["trials"] * 600  # over FULL_CHECKS_LIMIT trials
    text = render_report(data)
    trials = [t for c in data["cases"] for t in c["trials"]]
    passing = sum(1 for t in trials if t["status"] == "pass")
    assert passing >= 2400
    assert text.count('class="checks-slot"') == passing  # the script renders these on opening
    failing = len(trials) - passing
    assert text.count('<table class="checks">') == failing


def test_calls_diff_and_word_diff() -> None:
    a = [{"name": "x", "arguments": {"v": 1}}, {"name": "y", "arguments": {}}]
    b = [{"name": "x", "arguments": {"v": 2}}, {"name": "z", "arguments": {}}]
    assert [kind for kind, _, _ in calls_diff(a, b)] == ["changed", "removed", "added"]
    left, right = word_diff("a <b> c", "a <i> c")
    assert left == "a <del>&lt;b&gt;</del> c"
    assert right == "a <ins>&lt;i&gt;</ins> c"


hostile_text = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["</script>", "<!--", "<script>", '"><img src=x onerror=alert(1)>', "\u2028"]),
    st.lists(
        st.sampled_from(["</", "script", ">", "<", '"', "'", "&", "on", "=", "<!--", "-->", " "]),
        max_size=12,
    ).map("".join),
)


@settings(
    deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=hostile_text, tag=hostile_text, content=hostile_text, answer=hostile_text)
def test_any_text_anywhere_stays_text(
    eval_reports: dict[str, Any], name: str, tag: str, content: str, answer: str
) -> None:
    data = json.loads(json.dumps(eval_reports["data"]))
    case = data["cases"][0]
    case["id"] = case["name"] = name
    case["tags"] = [tag]
    case["reason"] = answer
    trace = case["trials"][0]["traces"][0]
    trace["steps"][0]["tool_results"][0]["content"] = content
    trace["steps"][0]["response"]["tool_calls"][0]["arguments"] = {content: answer}
    trace["output"] = answer
    text = render_report(data)
    parsed = assert_inert(text)
    embedded = json.loads(parsed.data_block)
    assert expand_eval_data(embedded) == data
    assert "</script" not in embed_json(data).lower()


def test_the_streamed_page_is_the_page_of_the_json_report(eval_reports: dict[str, Any]) -> None:
    # written case by case from the run's spool, without the JSON report in between
    assert eval_reports["html"].read_text(encoding="utf-8") == render_report(eval_reports["data"])


_words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
_results = st.fixed_dictionaries(
    {
        "status": st.sampled_from(["ok", "error", "<b>"]),
        "mocked": st.booleans(),
        "error_type": st.none() | _words,
        "content": _words,
    }
)
_traces = st.fixed_dictionaries(
    {
        "id": _words,
        "tools": st.lists(st.fixed_dictionaries({"name": _words}), max_size=2),
        "steps": st.lists(
            st.fixed_dictionaries({"tool_results": st.lists(_results, max_size=3)}), max_size=3
        ),
    }
)
_trials = st.fixed_dictionaries(
    {
        "index": st.integers(0, 3),
        "status": st.sampled_from(["pass", "fail", "error"]),
        "duration_ms": st.floats(0, 1e4),
        "traces": st.lists(_traces, max_size=2),
    }
)
_cases = st.fixed_dictionaries(
    {"id": _words, "verdict": st.sampled_from(["pass", "fail"]), "trials": st.lists(_trials)}
)


@settings(max_examples=60)
@given(cases=st.lists(_cases, max_size=4), started=_words)
def test_a_page_written_case_by_case_is_the_page_of_the_whole_data(
    cases: list[dict[str, Any]], started: str
) -> None:
    data = {"format": "toolproof-eval-report", "started_at": started, "cases": cases}
    whole = render_report(data)
    light = {
        **data,
        "cases": [{**c, "trials": [page_trial(t) for t in c["trials"]]} for c in cases],
    }
    out = io.StringIO()
    write_eval_page(out, light, lambda: iter(cases))
    assert out.getvalue() == whole
    # the data embedded case by case is the whole data, each list of tools stored once
    embedded = json.loads(parse(whole).data_block)
    assert expand_eval_data(embedded) == data
    assert len(embedded["tool_sets"]) == len(
        {
            json.dumps(t["tools"])
            for c in cases
            for tr in c["trials"]
            for t in tr["traces"]
            if t["tools"]
        }
    )


ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def attack_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A scripted run with attacks, so its summary has every section: intervals, the gate,
    attack figures, cost and latency."""
    from toolproof.evals import evaluate

    out = tmp_path_factory.mktemp("attacks") / "report.json"
    suite = ROOT / "examples" / "inbox_attacks" / "defended.eval.yaml"
    report = evaluate(suite, model="scripted", cache=False, reports=[f"json:{out}"])
    assert report.exit_code == 0
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    summary = data["summary"]
    assert summary["attacks"] and summary["costs"]["suites"] and summary["intervals"]
    return data


def _planted(value: Any, text: str) -> Any:
    """``value`` with every string in it (but the report's format) replaced by ``text``."""
    if isinstance(value, dict):
        return {k: v if k == "format" else _planted(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [_planted(v, text) for v in value]
    return text if isinstance(value, str) else value


_MARKED = hostile_text.map(lambda text: f"{text}<b id=planted>")


@settings(
    deadline=None, max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=_MARKED)
def test_every_text_of_an_eval_report_stays_text(attack_report: dict[str, Any], text: str) -> None:
    # every section of the summary (intervals, gate, attacks, costs), every case and trace
    data = _planted(attack_report, text)
    page = render_report(data)
    parsed = assert_inert(page)
    assert ("b", {"id": "planted"}) not in parsed.tags
    assert "&lt;b id=planted&gt;" in page
    assert expand_eval_data(json.loads(parsed.data_block)) == data


@settings(
    deadline=None, max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=_MARKED)
def test_every_text_of_a_replay_report_stays_text(
    replay_reports: dict[str, Any], text: str
) -> None:
    data = _planted(replay_reports["data"], text)
    page = render_report(data)
    parsed = assert_inert(page)
    assert ("b", {"id": "planted"}) not in parsed.tags
    assert "&lt;b id=planted&gt;" in page


def test_calls_refused_before_running_are_counted_neither_mocked_nor_real(tmp_path: Path) -> None:
    """An approver's refusal is not a real call: the page must not say real tools ran."""
    from examples.inbox_attacks.models import gullible_model

    from toolproof.evals import evaluate, load_suite

    examples = Path(__file__).resolve().parents[2] / "examples" / "inbox_attacks"
    out = tmp_path / "report.html"
    report = evaluate(
        [load_suite(examples / "defended.eval.yaml")],
        model=gullible_model(),
        reports=[f"html:{out}"],
        keep_traces=True,
        cache=False,
    )
    results = [
        r for c in report.cases for t in c.trials for tr in t.traces or [] for r in tr.tool_results
    ]
    refused = sum(not r.ran for r in results)
    mocked = sum(r.ran and r.mocked for r in results)
    assert refused > 0 and mocked > 0  # the payee filter refused the attacker's transfers
    assert sum(r.ran and not r.mocked for r in results) == 0
    counts = f"{len(results)} ({mocked} mocked, 0 real, {refused} refused before running)"
    assert f"<dt>tool calls</dt><dd>{counts}</dd>" in out.read_text(encoding="utf-8")


@given(st.floats(min_value=1e-7, max_value=7200))
def test_a_shown_duration_reads_back_within_five_percent(seconds: float) -> None:
    """Latency spreads of mocked steps are sub-millisecond: no duration may show as zero."""
    from toolproof._html import secs

    number, unit = secs(seconds).split()
    scale = {"ms": 1e-3, "s": 1.0, "min": 60.0}[unit]
    assert float(number) * scale == pytest.approx(seconds, rel=0.05)
