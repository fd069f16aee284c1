"""The encoder checks a tool set's schemas once, and still refuses a schema changed later.

``Trace.to_json`` refuses values that would not read back; the tools offered are the same
run after run, so their schemas are checked once per tool set (remembered by a ``marshal``
snapshot, see ``_trace.py``). These tests try to slip a changed schema past that memory:
every hostile change made after a first encode is refused exactly as a fresh check
refuses it, and an allowed change writes exactly what a fresh check writes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolproof._trace as trace_module
from toolproof import Trace
from toolproof._messages import MAX_JSON_DEPTH
from toolproof._trace import ToolInfo
from toolproof.errors import TraceFormatError


def _schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "query": {"type": "string", "default": "x"},
            "limit": {"type": "integer", "default": 1, "enum": [1, 2, 3]},
        },
        "required": ["query"],
    }


def _trace(number: int = 0, tools: list[ToolInfo] | None = None) -> Trace:
    if tools is None:
        tools = [ToolInfo("search", "Search.", _schema(), "h1"), ToolInfo("get", "", {}, "h2")]
    return Trace(id=f"t-{number}", input="hi", tools=tools)


class _Str(str):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _Liar:
    """Equal to everything, hashable: what a deep comparison would wave through."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 1


def _cyclic(params: dict[str, Any]) -> None:
    params["properties"]["self"] = params


def _deep(params: dict[str, Any]) -> None:
    node: dict[str, Any] = params
    for _ in range(MAX_JSON_DEPTH + 5):
        node["x"] = {}
        node = node["x"]


def _setter(value: Any) -> Callable[[dict[str, Any]], None]:
    def change(params: dict[str, Any]) -> None:
        params["properties"]["limit"]["default"] = value

    return change


HOSTILE: dict[str, Callable[[dict[str, Any]], None]] = {
    "nan": _setter(math.nan),
    "infinity": _setter(-math.inf),
    "set": _setter({1, 2}),
    "tuple": _setter((1, 2)),
    "lone surrogate": _setter("\ud800"),
    "huge integer": _setter(10**5000),
    "str subclass": _setter(_Str("x")),
    "dict subclass": _setter(_Dict(a=1)),
    "object equal to anything": _setter(_Liar()),
    "bytes": _setter(b"x"),
    "number key": lambda params: params["properties"].__setitem__(1, {}),
    "surrogate key": lambda params: params["properties"].__setitem__("\udfff", {}),
    "cycle": _cyclic,
    "too deep": _deep,
    "list item": lambda params: params["properties"]["limit"]["enum"].append(math.nan),
}


def _outcome(trace: Trace) -> str:
    try:
        return "wrote " + trace.to_json()
    except TraceFormatError as exc:
        return f"refused: {exc}"


@pytest.mark.parametrize("change", list(HOSTILE), ids=list(HOSTILE))
def test_a_schema_changed_after_its_check_is_still_refused(change: str) -> None:
    trace = _trace()
    trace.to_json()  # the tool set is checked and remembered
    HOSTILE[change](trace.tools[0].parameters)
    with pytest.raises(TraceFormatError, match=r"tool search: parameters"):
        trace.to_json()
    # the same trace, refused again (a refused schema is never remembered)
    with pytest.raises(TraceFormatError, match=r"tool search: parameters"):
        trace.to_json()
    # and another trace sharing the changed tool set
    with pytest.raises(TraceFormatError, match=r"tool search: parameters"):
        _trace(1, trace.tools).to_json()


def test_a_refused_schema_is_refused_with_the_same_message_as_a_fresh_check() -> None:
    for change in HOSTILE.values():
        remembered = _trace()
        remembered.to_json()
        change(remembered.tools[0].parameters)
        fresh = _trace()
        change(fresh.tools[0].parameters)
        trace_module._CHECKED_SCHEMAS.clear()
        expected = _outcome(fresh)
        remembered_outcome = _outcome(remembered)
        assert remembered_outcome == expected
        assert expected.startswith("refused")


_JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=5)
    | st.sampled_from([_Str("s"), (1,), {1}, b"b", "\ud800", _Liar()])
    | st.sampled_from([4400]).map(lambda digits: 10**digits)
)
_VALUES = st.recursive(
    _JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=_VALUES, second=_VALUES)
def test_any_change_writes_or_refuses_as_a_fresh_check_does(first: Any, second: Any) -> None:
    tools = [ToolInfo("search", "", {}, "h")]
    tools[0].parameters["default"] = first  # (after construction: nothing converts it)
    _outcome(_trace(0, tools))  # remembered when it passed
    tools[0].parameters["default"] = second
    remembered = _outcome(_trace(1, tools))
    trace_module._CHECKED_SCHEMAS.clear()
    assert remembered == _outcome(_trace(1, tools))


def test_an_unchanged_tool_set_is_checked_once_not_once_per_encode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools = _trace().tools
    schemas = {id(info.parameters) for info in tools}
    checked: list[int] = []
    real = trace_module.plain

    def counting(value: Any, depth: int) -> bool:
        if id(value) in schemas:
            checked.append(id(value))
        return real(value, depth)

    monkeypatch.setattr(trace_module, "plain", counting)
    trace_module._CHECKED_SCHEMAS.clear()
    for number in range(50):
        _trace(number, tools).to_json()
    assert len(checked) == len(tools)  # the first encode only
    # a second tool set, alternating with the first: each is checked once
    other = [ToolInfo("other", "", {"type": "object"}, "h3")]
    schemas.add(id(other[0].parameters))
    for number in range(50):
        _trace(number, other if number % 2 else tools).to_json()
    assert len(checked) == len(tools) + 1
    # a change to a remembered schema: checked again, then remembered again
    tools[0].parameters["properties"]["query"]["default"] = "y"
    for number in range(10):
        _trace(number, tools).to_json()
    assert len(checked) == 2 * len(tools) + 1


def test_the_memory_of_checked_tool_sets_is_bounded() -> None:
    trace_module._CHECKED_SCHEMAS.clear()
    for number in range(trace_module._SCHEMAS_KEPT * 2 + 3):
        tools = [ToolInfo("search", "", {"default": number}, "h")]
        _trace(number, tools).to_json()
        assert len(trace_module._CHECKED_SCHEMAS) <= trace_module._SCHEMAS_KEPT
    big = [ToolInfo("big", "", {"enum": [f"{n:04d}" + "x" * 1000 for n in range(100)]}, "h")]
    trace_module._CHECKED_SCHEMAS.clear()
    _trace(0, big).to_json()
    assert not trace_module._CHECKED_SCHEMAS  # too large to keep: checked every time
