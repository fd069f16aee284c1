"""Markdown reports: any text in any table cell renders as itself, in its own cell.

Case names, inputs, reasons and tool names come from datasets and models. Rendered by a
real CommonMark renderer with GFM tables and raw HTML allowed (markdown-it-py, which rich
brings), every generated text stays in exactly one cell per column, produces no raw HTML,
and reads back as the text it was (whitespace folded). Then the same through the real
reports: the eval and replay Markdown of cases named with hostile text.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from toolproof._reporting import md_code, md_details, md_escape, md_table

ROOT = Path(__file__).resolve().parents[2]
RENDERER = MarkdownIt("commonmark", {"html": True}).enable("table")

#: Characters that mean something to Markdown or HTML, and whitespace of every kind.
SPECIALS = "|`*_~[]()<>&\\!#=-+:;\"' \t\n\r\u2028\x00\x0b\x0c/"
HOSTILE = st.text(
    alphabet=st.one_of(st.sampled_from(SPECIALS), st.characters(codec="utf-8")), max_size=40
) | st.sampled_from(
    [
        "a|b",
        "`a|b`",
        "<img src=x onerror=alert(1)>",
        "a\\|b",
        "&lt;script&gt;",
        "&#x3C;b>",
        "``` x",
        "[link](javascript:alert(1))",
        "<!-- comment -->",
        "~~gone~~",
        "**bold**",
        "a\\",
        "| --- |",
    ]
)


def cells(markdown: str) -> list[list[tuple[str, str]]]:
    """Each row of the one table: its cells as (kind, text) — kind is the inline tokens'."""
    tokens = RENDERER.parse(markdown)
    assert not [t for t in tokens if t.type == "html_block"], markdown
    rows: list[list[tuple[str, str]]] = []
    for token in tokens:
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            children = token.children or []
            assert not [c for c in children if c.type == "html_inline"], markdown
            kinds = {c.type for c in children} - {"text", "code_inline", "softbreak"}
            assert not kinds, (markdown, kinds)
            rows[-1].append(("cell", "".join(c.content for c in children)))
    return rows


def flat(text: str) -> str:
    # (CommonMark shows NUL as U+FFFD, by its own rule)
    return " ".join(text.split()).replace("\x00", "\ufffd")


@given(st.lists(HOSTILE, min_size=1, max_size=4))
def test_escaped_text_stays_in_its_cell_and_reads_back(texts: list[str]) -> None:
    headers = [f"h{n}" for n in range(len(texts))]
    table = md_table(headers, [[md_escape(t) for t in texts]])
    rows = cells(table)
    assert len(rows) == 2, table
    assert len(rows[1]) == len(texts), table
    assert [text for _, text in rows[1]] == [flat(t) for t in texts], table


@given(st.lists(HOSTILE, min_size=1, max_size=4))
def test_code_stays_in_its_cell_and_reads_back(texts: list[str]) -> None:
    headers = [f"h{n}" for n in range(len(texts))]
    table = md_table(headers, [[md_code(t) for t in texts]])
    rows = cells(table)
    assert len(rows) == 2 and len(rows[1]) == len(texts), table
    assert [text for _, text in rows[1]] == [flat(t) for t in texts], table


@given(HOSTILE)
def test_a_details_summary_is_text(text: str) -> None:
    html = RENDERER.render(md_details(text, "body"))
    summary = html.split("<summary>", 1)[1].split("</summary>", 1)[0]
    assert "<" not in summary, html


@pytest.mark.parametrize(
    "name",
    ["x|<img src=x onerror=alert(1)>|y", "`a|b`", "a\\|<b>c</b>", "[x](javascript:alert(1))"],
)
def test_the_eval_reports_table_keeps_a_hostile_case_name_in_one_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    from toolproof.evals import load_suite
    from toolproof.evals._checks import CheckResult
    from toolproof.evals._report import markdown_report
    from toolproof.evals._results import CaseResult, EvalReport, TrialResult

    monkeypatch.syspath_prepend(str(ROOT))
    path = tmp_path / "s.eval.yaml"
    path.write_text(
        "suite: s\nagent: examples.hr_assistant.agent:build_agent\nmodel: scripted\n"
        f"cases: [{{name: {_yaml(name)}, input: hi, script: [done]}}]\n",
        encoding="utf-8",
    )
    suite = load_suite(path)
    case = suite.cases[0]
    trial = TrialResult(0, "fail", [CheckResult("final_contains", "fail", f"it was {name}")])
    report = EvalReport([CaseResult(case, "fail", f"because {name}", [trial], model="m")])
    text = markdown_report(report)
    table = text[text.index("| verdict |") :].split("\n\n")[0]
    rows = cells(table)
    assert [len(row) for row in rows] == [5, 5], table  # with the pass rate and its interval
    assert rows[1][1][1] == f"{case.suite}::{flat(name)}"
    assert rows[1][4][1] == flat(f"because {name}")


def _yaml(text: str) -> str:
    import json

    return json.dumps(text)
