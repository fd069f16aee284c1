"""Every YAML file toolproof reads is bounded: aliases, nesting, size, integers.

Each loader (eval suites, fixture files, redaction rules, replay rules) is tried with the
same hostile documents, in process and through the CLI; the only errors allowed are
toolproof's own. A loader that hangs on an input fails by the test's timeout; the refused
expansion is also bounded in memory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolproof.testing._suites  # kept loaded across pytester runs
from toolproof import _yaml
from toolproof.errors import ConfigError, ToolproofError, UserError
from toolproof.evals import load_suite
from toolproof.replay import Redactor, ReplayRules
from toolproof.testing import ToolMock

ROOT = Path(__file__).resolve().parents[2]

pytest_plugins = ["pytester"]


def laughs(levels: int = 9, fan_out: int = 9) -> str:
    """The "billion laughs" document: each level lists the previous one ``fan_out`` times."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * fan_out)}]"]
    for level in range(1, levels):
        items = ", ".join([f"*a{level - 1}"] * fan_out)
        lines.append(f"a{level}: &a{level} [{items}]")
    return "\n".join(lines) + "\n"


LOADERS: dict[str, tuple[str, Callable[[Path], Any]]] = {
    "suite": ("x.eval.yaml", load_suite),
    "fixtures": ("fixtures.yaml", ToolMock.from_file),
    "redaction": ("redact.yaml", Redactor.from_file),
    "replay rules": ("rules.yaml", ReplayRules.from_file),
}


def load(kind: str, directory: Path, text: str) -> Any:
    """Load ``text`` as a ``kind`` file; the value or the toolproof error."""
    name, loader = LOADERS[kind]
    path = directory / name
    path.write_text(text, encoding="utf-8")
    try:
        return loader(path)
    except ToolproofError as exc:
        return exc


@pytest.fixture(params=sorted(LOADERS))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.timeout(60)
def test_billion_laughs_is_refused_quickly_in_little_memory(kind: str, tmp_path: Path) -> None:
    text = laughs()
    assert len(text) < 512  # a file of this size took 8-14 s and 1.1 GB
    tracemalloc.start()
    try:
        error = load(kind, tmp_path, text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(error, ConfigError)
    assert f"{LOADERS[kind][0]}:6: the aliases expand the document by more than 100,000" in str(
        error
    )
    assert peak < 20 * 2**20  # the expansion was refused, not built


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("a: " + "[" * 5000 + "]" * 5000, 1, "nests more than 100 levels deep"),
        ("a:\n" + "".join(" " * i + "- \n" for i in range(1, 3000)), 101, "nests more than 100"),
        ("".join(" " * i + f"k{i}:\n" for i in range(300)) + " " * 300 + "v\n", 101, "nests more"),
        ("a: &x\n  b: [1, *x]\n", 2, "the alias *x refers to a value that contains it"),
        ("a: 1\nb: " + "7" * 5000 + "\n", 2, "an integer longer than 1,000 characters"),
        ("a: 1\nb: " + "1:2" * 2000 + "\n", 2, "an integer longer than 1,000 characters"),
    ],
    ids=["flow depth", "block depth", "mapping depth", "recursive alias", "int", "base 60"],
)
@pytest.mark.timeout(60)
def test_hostile_documents_get_one_error_naming_file_and_line(
    kind: str, tmp_path: Path, text: str, line: int, message: str
) -> None:
    # Deep flow nesting made libyaml take quadratic time and then crash the interpreter.
    error = load(kind, tmp_path, text)
    assert isinstance(error, ConfigError), error
    assert f"{LOADERS[kind][0]}:{line}" in str(error) and message in str(error)


def test_documents_beyond_the_size_limit_are_refused(
    monkeypatch: pytest.MonkeyPatch, kind: str, tmp_path: Path
) -> None:
    monkeypatch.setattr(_yaml, "MAX_CHARS", 1_000)
    error = load(kind, tmp_path, "# " + "x" * 2_000 + "\n")
    assert isinstance(error, ConfigError) and "split it into smaller files" in str(error)


SUITE = """\
suite: anchors
agent: evalagents:build_agent
cases:
  - name: one
    input: "12 times 8"
    expect: &expect {final_contains: "96"}
  - name: two
    input: "8 times 12"
    expect: *expect
"""


def test_ordinary_aliases_still_work(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "evals"))
    (tmp_path / "s.eval.yaml").write_text(SUITE, encoding="utf-8")
    suite = load_suite(tmp_path / "s.eval.yaml")
    assert [c.name for c in suite.cases] == ["one", "two"]
    fixtures = tmp_path / "f.yaml"
    fixtures.write_text(
        "fixtures:\n"
        "  - {tool: get, arguments: &args {id: E1}, returns: 5}\n"
        "  - {tool: other, arguments: *args, returns: 6}\n",
        encoding="utf-8",
    )
    assert ToolMock.from_file(fixtures).fixtures[1].arguments == {"id": "E1"}
    # aliases up to the limit load: 9 * 9 * 9 * 9 * 9 = 59,049 added values
    assert _yaml.safe_load(laughs(levels=5), "x.yaml")["a4"][8][8][8][8][8] == "lol"


def test_the_locator_still_reports_lines_through_aliases(tmp_path: Path) -> None:
    from toolproof.evals._yaml import load_yaml

    data, locator, problems = load_yaml(SUITE, tmp_path / "s.eval.yaml")
    assert data["cases"][1]["expect"] == {"final_contains": "96"}
    assert locator.line(("cases", 1, "input")) == 8 and not problems
    assert locator.line(("cases", 1, "expect", "final_contains")) == 6  # where it was written


# -- through the command line -------------------------------------------------------------------


def toolproof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("laughs.eval.yaml", ["run", "laughs.eval.yaml"]),
        ("laughs.yaml", ["traces", "import", "none.jsonl", "--redact", "laughs.yaml"]),
        ("laughs.yaml", ["replay", "--rules", "laughs.yaml"]),
    ],
    ids=["run", "traces import --redact", "replay --rules"],
)
@pytest.mark.parametrize("document", ["laughs", "deep"])
def test_the_cli_exits_2_quickly_with_the_file_and_line(
    tmp_path: Path, name: str, command: list[str], document: str
) -> None:
    text = laughs() if document == "laughs" else "a: " + "[" * 100_000 + "]" * 100_000
    (tmp_path / name).write_text(text, encoding="utf-8")
    done = toolproof(*command, cwd=tmp_path)
    assert done.returncode == 2, done.stderr  # a crash of the interpreter was -11
    assert "Traceback" not in done.stderr
    located = [line for line in done.stderr.splitlines() if f"{name}:" in line]
    assert len(located) == 1, done.stderr
    assert ("aliases expand" if document == "laughs" else "nests more than") in located[0]


# -- generated documents ------------------------------------------------------------------------

PIECES = [
    "&a ",
    "&b ",
    "*a",
    "*b",
    "[",
    "]",
    "{",
    "}",
    ", ",
    ": ",
    "- ",
    "? ",
    "\n",
    "  ",
    "<<: ",
    "<<: *a",
    "!!python/object:os.system ",
    "!!int ",
    "!!binary ",
    "!!set ",
    "!!omap ",
    "!!timestamp ",
    "1" * 1200,
    "2001-12-14t21:59:43.10-05:00",
    "1:2:3",
    '"',
    "'",
    "|",
    ">",
    "#",
    "---\n",
    "...\n",
    "%YAML 1.1\n",
    "\t",
    "\x00",
    "\ufeff",
    "fixtures",
    "tool",
    "suite",
    "cases",
    "name",
    "input",
    "fields",
    "patterns",
    "tools",
    "x",
    "0x1F",
    "1e9",
    ".nan",
    "null",
    "true",
]


def nested_aliases() -> st.SearchStrategy[str]:
    """Chains of anchors, each level aliasing the previous ones, in flow or block style."""

    @st.composite
    def build(draw: st.DrawFn) -> str:
        levels = draw(st.integers(1, 14))
        lines = [f"l0: &l0 {draw(st.sampled_from(['lol', '[lol, lol]', '{k: lol}']))}"]
        for level in range(1, levels):
            fan_out = draw(st.integers(1, 12))
            targets = [f"*l{draw(st.integers(0, level - 1))}" for _ in range(fan_out)]
            if draw(st.booleans()):
                lines.append(f"l{level}: &l{level} [{', '.join(targets)}]")
            else:
                items = "".join(f"\n  - {t}" for t in targets)
                lines.append(f"l{level}: &l{level}{items}")
        return "\n".join(lines) + "\n"

    return build()


def deep_nesting() -> st.SearchStrategy[str]:
    @st.composite
    def build(draw: st.DrawFn) -> str:
        depth = draw(st.integers(1, 3000))
        style = draw(st.sampled_from(["[", "{a: ", "- ", "map"]))
        if style == "[":
            return "[" * depth + "]" * depth
        if style == "{a: ":
            return "{a: " * depth + "1" + "}" * depth
        if style == "- ":
            return "- " * depth + "x\n"
        return "".join(" " * i + "k:\n" for i in range(min(depth, 400)))

    return build()


DOCUMENTS = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
    nested_aliases(),
    deep_nesting(),
)


@pytest.mark.timeout(300)  # a loader that hangs on a generated document fails here
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=DOCUMENTS)
def test_generated_documents_get_a_value_or_a_toolproof_error_quickly(
    kind: str, tmp_path: Path, text: str
) -> None:
    value = load(kind, tmp_path, text)
    if isinstance(value, ToolproofError):
        assert isinstance(value, UserError) and str(value)


def test_deeply_nested_json_fixtures_get_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "fixtures.json"
    path.write_text('{"fixtures": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"fixtures\.json: invalid JSON \(it nests too deeply\)"):
        ToolMock.from_file(path)


@pytest.mark.timeout(120)
def test_the_pytest_plugin_reports_one_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\n"
        "asyncio_mode = auto\n"
        "asyncio_default_fixture_loop_scope = function\n"
        "addopts = -p no:cacheprovider\n"
    )
    (pytester.path / "laughs.eval.yaml").write_text(laughs(), encoding="utf-8")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert "laughs.eval.yaml:6: the aliases expand the document by more than 100,000" in output
    assert "Traceback" not in output
