"""A faults file for ``toolproof mcp serve`` loads whole or fails naming every bad fault.

Files are generated from valid faults of each kind and faults with one defect each (not a
mapping, an unknown key, an unknown tool, no kind or two, a bad ``when``, a bad timeout, an
unknown error, a bad ``on_call``), in any order. A file with no defect loads every fault, in
order; a file with defects raises one ``ConfigError`` whose problems name each bad fault by
its number and no good one, and lose nothing.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import mcp_demo_tools
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Toolset
from toolproof.cli._mcp import load_faults
from toolproof.errors import ConfigError

GOOD: list[tuple[dict[str, Any], str]] = [
    ({"tool": "add", "timeout": 0}, "timeout on add"),
    ({"tool": "add", "timeout": True, "on_call": [1, 3]}, "timeout on add (calls 1, 3)"),
    ({"tool": "get_order", "raises": "KeyError: gone"}, "raises KeyError on get_order"),
    ({"tool": "get_order", "raises": {"type": "ToolError"}}, "raises ToolError on get_order"),
    ({"tool": "cancel_order", "malformed": True}, "malformed output on cancel_order"),
    (
        {"tool": "add", "malformed": "<html>", "when": {"a": 1}},
        "malformed output on add when add(a=1)",
    ),
]
BAD: list[Any] = [
    "add",
    ["add"],
    {"tool": "add", "timeout": 0, "colour": "red"},
    {"tool": "nope", "timeout": 0},
    {"tool": 7, "timeout": 0},
    {"tool": "add"},
    {"tool": "add", "timeout": 0, "malformed": True},
    {"tool": "add", "timeout": 0, "when": ["a"]},
    {"tool": "add", "timeout": "soon"},
    {"tool": "add", "timeout": False},
    {"tool": "add", "raises": "NoSuchError"},
    {"tool": "add", "raises": {"type": "ToolError", "extra": 1}},
    {"tool": "add", "raises": 5},
    {"tool": "add", "raises": "ToolError", "on_call": 0},
    {"tool": "add", "malformed": True, "on_call": "twice"},
]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(range(len(GOOD))).map(lambda i: ("good", i)),
            st.sampled_from(range(len(BAD))).map(lambda i: ("bad", i)),
        ),
        min_size=1,
        max_size=6,
    ),
    st.booleans(),
)
def test_every_bad_fault_is_named_and_good_files_load_whole(
    entries: list[tuple[str, int]], as_json: bool
) -> None:
    items = [GOOD[i][0] if kind == "good" else BAD[i] for kind, i in entries]
    bad_numbers = {n for n, (kind, _) in enumerate(entries, 1) if kind == "bad"}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("faults.json" if as_json else "faults.yaml")
        path.write_text(json.dumps({"faults": items}), encoding="utf-8")  # JSON is YAML too
        toolset = Toolset(mcp_demo_tools.TOOLS)
        if not bad_numbers:
            loaded = load_faults(path, toolset)
            assert [f.describe() for f in loaded] == [GOOD[i][1] for _, i in entries]
            return
        with pytest.raises(ConfigError) as caught:
            load_faults(path, toolset)
    problems = caught.value.problems
    named = [re.match(rf"{re.escape(str(path))}: fault #(\d+): ", p) for p in problems]
    assert all(named), problems
    numbers = [int(m.group(1)) for m in named if m]
    assert set(numbers) == bad_numbers
    assert numbers == sorted(numbers)  # in the order of the file
    count = len(problems)
    header = f"invalid faults file ({count} problem{'s' if count != 1 else ''}):"
    assert str(caught.value).splitlines() == [header, *(f"  - {p}" for p in problems)]
