"""Report primitives: --report parsing, JUnit XML, Markdown helpers, atomic outputs."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from toolproof._reporting import (
    JUnitCase,
    JUnitSuite,
    ReportSpec,
    junit_xml,
    md_escape,
    md_table,
    md_truncate,
    open_output,
    parse_report_specs,
    write_junit,
)
from toolproof.errors import ConfigError


def test_parse_report_specs_formats_paths_and_aliases() -> None:
    specs = parse_report_specs(["junit:out/r.xml", "md:-", "json:C:/x/report.json"])
    assert specs == [
        ReportSpec("junit", "out/r.xml"),
        ReportSpec("markdown", "-"),
        ReportSpec("json", "C:/x/report.json"),
    ]
    assert parse_report_specs(["json"]) == [ReportSpec("json", "-")]


def test_parse_report_specs_lists_every_bad_value() -> None:
    with pytest.raises(ConfigError) as info:
        parse_report_specs(["pdf:a.pdf", "json:r.json", "csv"])
    assert str(info.value) == "invalid --report values"
    assert info.value.problems == [
        "--report 'pdf:a.pdf': unknown format 'pdf'; use FORMAT:PATH with FORMAT one of "
        "json, junit, markdown, html (PATH '-' or omitted means stdout)",
        "--report 'csv': unknown format 'csv'; use FORMAT:PATH with FORMAT one of "
        "json, junit, markdown, html (PATH '-' or omitted means stdout)",
    ]


def test_parse_report_specs_refuses_two_reports_on_stdout() -> None:
    with pytest.raises(ConfigError, match="only one report can go to stdout"):
        parse_report_specs(["json", "markdown:-"])


def test_parse_report_specs_with_custom_formats() -> None:
    assert parse_report_specs(["junit:x.xml"], formats=("junit",)) == [ReportSpec("junit", "x.xml")]
    with pytest.raises(ConfigError, match="FORMAT one of junit "):
        parse_report_specs(["json:x"], formats=("junit",))


def test_junit_xml_counts_and_content(tmp_path: Path) -> None:
    suite = JUnitSuite(
        "hr",
        [
            JUnitCase("ok", "hr", 0.5),
            JUnitCase(
                "bad", "hr", 1.25, failure="tools_called: expected a\ndetails", system_out="x"
            ),
            JUnitCase("down", "hr", error="model unreachable"),
            JUnitCase("later", "hr", skipped="no script\x01"),
        ],
    )
    path = tmp_path / "sub" / "junit.xml"
    write_junit(path, [suite])
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "4",
        "1",
        "1",
        "1",
    )
    element = root.find("testsuite")
    assert element is not None and element.get("time") == "1.750"
    bad = element.find("testcase[@name='bad']/failure")
    assert bad is not None
    assert bad.get("message") == "tools_called: expected a"
    assert bad.text == "tools_called: expected a\ndetails"
    skipped = element.find("testcase[@name='later']/skipped")
    assert skipped is not None and skipped.get("message") == "no script"  # control char dropped
    assert junit_xml([suite]).startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites')


def test_markdown_helpers() -> None:
    assert md_escape("a|b *c* <d>\nnext") == "a\\|b \\*c\\* &lt;d&gt; next"
    assert md_escape("abcdef", limit=4) == "abc…"
    table = md_table(["case", "verdict"], [["a", "pass"], ["b"]])
    assert table.splitlines() == ["| case | verdict |", "| --- | --- |", "| a | pass |", "| b |  |"]
    long = "line\n" * 100
    cut = md_truncate(long, limit=120)
    assert len(cut) <= 120
    assert cut.endswith("see the full report artifact.\n")
    assert md_truncate("short", limit=120) == "short"


def test_open_output_is_atomic(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text("old")

    def write_half() -> None:
        with open_output(path) as out:
            out.write("half")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_half()
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
    with open_output(path) as out:
        out.write("new")
    assert path.read_text() == "new"


def test_open_output_dash_is_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    with open_output("-") as out:
        out.write("hello")
    assert capsys.readouterr().out == "hello"
