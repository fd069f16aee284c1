"""Schema snapshots and the breaking/compatible classification of schema changes."""

from __future__ import annotations

import json
from typing import Annotated, Literal, Optional

import pytest
from pydantic import BaseModel, ConfigDict, Field

from toolproof import tool
from toolproof.errors import UserError
from toolproof.testing import assert_schema_snapshot
from toolproof.testing._contracts import (
    SchemaChange,
    diff_snapshots,
    dump_snapshot,
    load_snapshot,
    snapshot_tools,
)


def changes_between(old_tools, new_tools) -> list[str]:
    return [str(c) for c in diff_snapshots(snapshot_tools(old_tools), snapshot_tools(new_tools))]


def make(name: str, function, **options):
    return tool(name=name, **options)(function)


# -- snapshots -----------------------------------------------------------------------------


@tool
def get_leave_balance(employee_id: str) -> int:
    """Look up remaining annual leave.

    Args:
        employee_id: Employee id such as E001.
    """
    return 5


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: First factor.
        b: Second factor.
    """
    return a * b


def test_snapshot_holds_name_description_parameters_and_returns():
    snapshot = snapshot_tools([multiply_numbers, get_leave_balance])
    assert snapshot["format"] == "toolproof.tool-schemas"
    assert snapshot["version"] == 1
    assert list(snapshot["tools"]) == ["get_leave_balance", "multiply_numbers"]
    entry = snapshot["tools"]["multiply_numbers"]
    assert entry["description"] == "Multiply two numbers."
    assert entry["parameters"] == multiply_numbers.parameters
    assert entry["returns"] == {"type": "number"}


def test_snapshot_text_is_deterministic_and_order_independent():
    first = dump_snapshot(snapshot_tools([multiply_numbers, get_leave_balance]))
    second = dump_snapshot(snapshot_tools([get_leave_balance, multiply_numbers]))
    assert first == second
    assert first.endswith("}\n")
    assert json.loads(first)["tools"]["get_leave_balance"]["returns"] == {"type": "integer"}


class Opaque:
    pass


def test_return_schemas_of_unusual_annotations():
    def returns_opaque(x: int) -> Opaque:
        """Return something pydantic cannot describe.

        Args:
            x: A number.
        """
        return Opaque()

    def no_annotation(x: int):
        """Return anything.

        Args:
            x: A number.
        """

    tools = [make("opaque", returns_opaque), make("loose", no_annotation)]
    entries = snapshot_tools(tools)["tools"]
    assert entries["opaque"]["returns"] == {"x-python-type": Opaque.__qualname__}
    assert entries["loose"]["returns"] is None


def test_load_snapshot_rejects_other_files(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"tools": []}')
    with pytest.raises(UserError) as info:
        load_snapshot(path)
    assert str(info.value) == (
        f'{path} is not a toolproof schema snapshot (no "format": "toolproof.tool-schemas"); '
        "write one with `toolproof schema snapshot MODULE -o FILE`"
    )
    path.write_text("{nope")
    with pytest.raises(UserError, match="is not a toolproof schema snapshot: invalid JSON"):
        load_snapshot(path)
    path.write_text('{"format": "toolproof.tool-schemas", "version": 7, "tools": {}}')
    with pytest.raises(UserError, match="snapshot version 7 is not supported"):
        load_snapshot(path)
    with pytest.raises(UserError, match="no such snapshot file"):
        load_snapshot(tmp_path / "absent.json")


def test_assert_schema_snapshot_writes_compares_and_explains(tmp_path):
    path = tmp_path / "snap" / "tools.schema.json"
    with pytest.raises(AssertionError, match="does not exist"):
        assert_schema_snapshot([get_leave_balance], path)
    assert_schema_snapshot([get_leave_balance], path, update=True)
    assert_schema_snapshot([get_leave_balance], path)

    def get_leave_balance_v2(employee_id: str, year: int) -> int:
        """Look up remaining annual leave.

        Args:
            employee_id: Employee id such as E001.
            year: Which year.
        """
        return 5

    changed = make("get_leave_balance", get_leave_balance_v2)
    with pytest.raises(AssertionError) as info:
        assert_schema_snapshot([changed], path)
    message = str(info.value)
    assert message.startswith(
        f"tool schemas differ from the snapshot {path}:\n"
        "  BREAKING   get_leave_balance: new required parameter 'year' (integer)\n"
        f"--- {path} (snapshot)\n+++ current tools\n"
    )
    assert '+          "year": {' in message
    assert message.endswith(
        f"If the change is intended, run pytest with --toolproof-update-snapshots (or "
        f"`toolproof schema snapshot MODULE -o {path}`) and commit tools.schema.json."
    )


# -- diff classification -------------------------------------------------------------------


def v1_search(query: str, top_k: int = 5) -> list[str]:
    """Search documents.

    Args:
        query: What to look for.
        top_k: How many results.
    """
    return []


def test_no_changes():
    assert changes_between([make("search", v1_search)], [make("search", v1_search)]) == []


def test_new_required_and_optional_parameters_and_removals():
    def v2(query: str, region: str, top_k: int = 5, lang: str = "en") -> list[str]:
        """Search documents."""
        return []

    def v3(top_k: int = 5) -> list[str]:
        """Search documents."""
        return []

    old = [make("search", v1_search)]
    assert changes_between(old, [make("search", v2)]) == [
        "BREAKING   search: new required parameter 'region' (string)",
        "compatible search: description of parameter 'query' changed",
        "compatible search: description of parameter 'top_k' changed",
        "compatible search: new optional parameter 'lang' (string)",
    ]
    assert changes_between(old, [make("search", v3)]) == [
        "BREAKING   search: removed parameter 'query'",
        "compatible search: description of parameter 'top_k' changed",
    ]


def test_required_optional_switches():
    def required_top_k(query: str, top_k: int) -> list[str]:
        """Search documents.

        Args:
            query: What to look for.
            top_k: How many results.
        """
        return []

    old, new = [make("search", v1_search)], [make("search", required_top_k)]
    assert changes_between(old, new) == [
        "BREAKING   search: parameter 'top_k' is now required",
        "compatible search: default of parameter 'top_k' changed from 5 to null",
    ]
    assert changes_between(new, old) == [
        "compatible search: parameter 'top_k' is now optional",
        "compatible search: default of parameter 'top_k' changed from null to 5",
    ]


def test_type_narrowing_widening_and_changes():
    def as_float(value: float) -> str:
        """Convert."""
        return ""

    def as_int(value: int) -> str:
        """Convert."""
        return ""

    def as_optional_int(value: Optional[int]) -> str:  # noqa: UP045
        """Convert."""
        return ""

    def as_str(value: str) -> str:
        """Convert."""
        return ""

    f, i, oi, s = (make("convert", fn) for fn in (as_float, as_int, as_optional_int, as_str))
    assert changes_between([f], [i]) == [
        "BREAKING   convert: narrowed type of parameter 'value': number -> integer"
    ]
    assert changes_between([i], [f]) == [
        "compatible convert: widened type of parameter 'value': integer -> number"
    ]
    assert changes_between([oi], [i]) == [
        "BREAKING   convert: narrowed type of parameter 'value': integer | null -> integer"
    ]
    assert changes_between([i], [s]) == [
        "BREAKING   convert: changed type of parameter 'value': integer -> string"
    ]


def test_enum_values_removed_and_added():
    def three(unit: Literal["day", "week", "month"]) -> str:
        """Report."""
        return ""

    def two_plus_one(unit: Literal["day", "week", "year"]) -> str:
        """Report."""
        return ""

    def free(unit: str) -> str:
        """Report."""
        return ""

    assert changes_between([make("r", three)], [make("r", two_plus_one)]) == [
        "BREAKING   r: removed enum value \"month\" from parameter 'unit'",
        "compatible r: added enum value \"year\" to parameter 'unit'",
    ]
    assert changes_between([make("r", free)], [make("r", three)]) == [
        'BREAKING   r: parameter \'unit\' is now restricted to "day", "week", "month"'
    ]
    assert changes_between([make("r", three)], [make("r", free)]) == [
        "compatible r: parameter 'unit' is no longer restricted to fixed values"
    ]


def test_bounds_tightened_and_relaxed():
    def loose(top_k: Annotated[int, Field(ge=1, le=100)]) -> str:
        """Search."""
        return ""

    def tight(top_k: Annotated[int, Field(ge=1, le=20)]) -> str:
        """Search."""
        return ""

    assert changes_between([make("s", loose)], [make("s", tight)]) == [
        "BREAKING   s: narrowed parameter 'top_k': maximum 100 -> 20"
    ]
    assert changes_between([make("s", tight)], [make("s", loose)]) == [
        "compatible s: relaxed parameter 'top_k': maximum 20 -> 100"
    ]


class OptionsV1(BaseModel):
    format: str = "text"
    limit: int = 10


class OptionsV2(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limit: int = 10


def test_extra_fields_now_forbidden_and_nested_changes():
    def query_user_v1(user_id: int) -> dict[str, str]:
        """Query a user."""
        return {}

    def query_user_v2(user_id: int, options: Optional[OptionsV1] = None) -> dict[str, str]:  # noqa: UP045
        """Query a user."""
        return {}

    def query_user_v3(user_id: int, options: Optional[OptionsV2] = None) -> dict[str, str]:  # noqa: UP045
        """Query a user."""
        return {}

    lenient = make("query_user", query_user_v1, extra="ignore")
    strict = make("query_user", query_user_v1)
    assert changes_between([lenient], [strict]) == [
        "BREAKING   query_user: extra fields now forbidden (additionalProperties: false)"
    ]
    v2, v3 = make("query_user", query_user_v2), make("query_user", query_user_v3)
    assert changes_between([strict], [v2]) == [
        "compatible query_user: new optional parameter 'options' (null | object)"
    ]
    assert changes_between([v2], [v3]) == [
        "BREAKING   query_user: removed parameter 'options.format'",
        "BREAKING   query_user: extra fields now forbidden in parameter 'options' "
        "(additionalProperties: false)",
    ]


class WeatherV1(BaseModel):
    city: str
    weather: str


class WeatherV2(BaseModel):
    city: str
    temperature: float


def test_changed_return_structure_is_breaking():
    def v1(city: str) -> WeatherV1:
        """Weather."""
        return WeatherV1(city=city, weather="")

    def v2(city: str) -> WeatherV2:
        """Weather."""
        return WeatherV2(city=city, temperature=0)

    def v3(city: str) -> list[str]:
        """Weather."""
        return []

    assert changes_between([make("w", v1)], [make("w", v2)]) == [
        "BREAKING   w: return value: removed field 'weather'",
        "BREAKING   w: return value: new required field 'temperature' (number)",
    ]
    assert changes_between([make("w", v1)], [make("w", v3)]) == [
        "BREAKING   w: return value: changed type of the value: object -> array"
    ]
    kinds = {
        c.kind
        for c in diff_snapshots(snapshot_tools([make("w", v1)]), snapshot_tools([make("w", v3)]))
    }
    assert kinds == {"changed return structure"}


def test_tools_added_removed_and_descriptions():
    def search_v2(query: str, top_k: int = 5) -> list[str]:
        """Search the knowledge base.

        Args:
            query: What to look for.
            top_k: How many results.
        """
        return []

    changes = diff_snapshots(
        snapshot_tools([make("search", v1_search), get_leave_balance]),
        snapshot_tools([make("search", search_v2), multiply_numbers]),
    )
    assert [str(c) for c in changes] == [
        "BREAKING   get_leave_balance: tool removed",
        "compatible multiply_numbers: new tool",
        "compatible search: tool description changed",
    ]
    assert changes[0] == SchemaChange("get_leave_balance", True, "tool removed", "tool removed")


class Node(BaseModel):
    name: str
    children: list[Node] = []


class NodeV2(BaseModel):
    name: str
    size: int = 0
    children: list[NodeV2] = []


def test_recursive_models_terminate():
    def v1(tree: Node) -> str:
        """Walk."""
        return ""

    def v2(tree: NodeV2) -> str:
        """Walk."""
        return ""

    assert changes_between([make("walk", v1)], [make("walk", v2)]) == [
        "compatible walk: new optional parameter 'tree.size' (integer)"
    ]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"\xff\xfe{\x00", "not UTF-8 text"),
        (b"{nope", "invalid JSON"),
        (b'{"tools": []}', 'no "format"'),
        ("\u00e9t\u00e9".encode("latin-1"), "not UTF-8 text"),
    ],
)
def test_a_damaged_snapshot_is_named_from_the_cli_reader_and_the_test_helper(
    tmp_path, content, words
):
    """The loader and ``assert_schema_snapshot`` say what is wrong; never a decoding crash."""

    @tool
    def ping(host: str) -> str:
        """Ping a host."""
        return host

    path = tmp_path / "tools.schema.json"
    path.write_bytes(content)
    with pytest.raises(UserError, match=words):
        load_snapshot(path)
    with pytest.raises(UserError, match=words):
        assert_schema_snapshot([ping], path)
