"""A call's JSON-text arguments are read exactly as ``json.loads`` reads them.

``ToolCall.from_json_arguments`` keeps one decoder for every call instead of the one
``json.loads`` builds per call; the result and the error text must not change.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import ToolCall
from toolproof._messages import _no_constant

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _expected(raw: str) -> tuple[Any, str | None]:
    """What the call must hold, computed with ``json.loads`` itself."""
    try:
        parsed = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        return {}, f"arguments are not valid JSON ({exc})"
    if not isinstance(parsed, dict):
        return {}, f"arguments must be a JSON object, got {type(parsed).__name__}"
    return parsed, None


texts = st.one_of(
    json_values.map(json.dumps),
    json_values.map(lambda v: "\ufeff" + json.dumps(v)),
    json_values.map(lambda v: json.dumps(v)[:-1]),
    st.text(alphabet='{}[]":,0123456789.eE+-tfnulraNIyi \ufeff\\', max_size=30),
    st.text(max_size=30),
)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_arguments_read_as_json_loads_reads_them(raw: str) -> None:
    if not raw.strip():
        return  # no arguments: covered below
    call = ToolCall.from_json_arguments("t", raw)
    arguments, error = _expected(raw)
    if error is None and call.arguments_error and "nest" in call.arguments_error:
        return  # the depth/size bound, checked by its own tests
    assert call.arguments_error == error
    assert call.arguments == arguments
    assert call.raw_arguments == raw


def test_blank_arguments_are_none() -> None:
    assert ToolCall.from_json_arguments("t", "  ").arguments == {}
    assert ToolCall.from_json_arguments("t", None).arguments_error is None


def test_one_decoder_is_safe_across_threads() -> None:
    failures: list[str] = []

    def work(n: int) -> None:
        for i in range(2000):
            raw = json.dumps({f"k{n}": i, "nested": {"v": [n, i]}})
            call = ToolCall.from_json_arguments("t", raw)
            if call.arguments != json.loads(raw):
                failures.append(raw)
            bad = ToolCall.from_json_arguments("t", '{"a": NaN}')
            if bad.arguments_error != "arguments are not valid JSON (NaN is not a JSON number)":
                failures.append(str(bad.arguments_error))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
