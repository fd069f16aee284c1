"""`toolproof schema` and `toolproof mocks check`, end to end through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from toolproof.cli import main

HR_TOOLS = """
from toolproof import ToolError, tool

@tool(errors=(KeyError,))
def get_leave_balance(employee_id: str) -> int:
    \"\"\"Look up remaining annual leave.

    Args:
        employee_id: Employee id such as E001.
    \"\"\"
    return {"E001": 5}[employee_id]

@tool
def multiply_numbers(a: float, b: float) -> float:
    \"\"\"Multiply two numbers.

    Args:
        a: First factor.
        b: Second factor.
    \"\"\"
    return a * b
"""


def write(path: Path, source: str) -> Path:
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- schema snapshot / check ---------------------------------------------------------------


def test_snapshot_then_check_passes(tmp_path, capsys):
    tools = write(tmp_path / "hr_tools.py", HR_TOOLS)
    snapshot = tmp_path / "tools.schema.json"
    code, out, _ = run(capsys, "schema", "snapshot", str(tools), "-o", str(snapshot))
    assert (code, out) == (0, f"wrote 2 tool schemas to {snapshot}\n")
    data = json.loads(snapshot.read_text())
    assert sorted(data["tools"]) == ["get_leave_balance", "multiply_numbers"]
    code, out, _ = run(capsys, "schema", "check", str(tools), str(snapshot))
    assert (code, out) == (0, f"{snapshot}: up to date (2 tools)\n")
    code, out, _ = run(capsys, "schema", "snapshot", f"{tools}:multiply_numbers")
    assert code == 0
    assert list(json.loads(out)["tools"]) == ["multiply_numbers"]


def test_check_fails_with_a_readable_diff(tmp_path, capsys):
    tools = write(tmp_path / "hr_tools_v1.py", HR_TOOLS)
    snapshot = tmp_path / "tools.schema.json"
    run(capsys, "schema", "snapshot", str(tools), "-o", str(snapshot))
    changed = write(
        tmp_path / "hr_tools_v2.py",
        HR_TOOLS.replace("employee_id: str)", "employee_id: str, year: int = 2025)"),
    )
    code, out, _ = run(capsys, "schema", "check", str(changed), str(snapshot))
    assert code == 1
    lines = out.splitlines()
    assert lines[:2] == [
        f"{snapshot}: the tools in {changed} differ from the snapshot",
        "  compatible get_leave_balance: new optional parameter 'year' (integer)",
    ]
    assert f"--- {snapshot} (snapshot)" in lines
    assert '+          "year": {' in lines
    assert lines[-1] == (
        f"If the change is intended, update the snapshot: toolproof schema snapshot {changed} "
        f"-o {snapshot}"
    )


# -- schema diff ---------------------------------------------------------------------------

QUERY_V1 = """
from toolproof import tool

@tool(extra="ignore")
def query_user(user_id: int) -> dict[str, str]:
    \"\"\"Query a user.

    Args:
        user_id: The user.
    \"\"\"
    return {}
"""

QUERY_V2 = """
from typing import Literal, Optional
from toolproof import tool

@tool
def query_user(user_id: int, fields: Optional[list[str]] = None) -> dict[str, str]:
    \"\"\"Query a user by id.

    Args:
        user_id: The user.
        fields: Which fields.
    \"\"\"
    return {}

@tool
def list_users(region: Literal["eu", "us"]) -> list[int]:
    \"\"\"List users.

    Args:
        region: Where.
    \"\"\"
    return []
"""


def test_diff_of_modules_and_snapshots_classifies_changes(tmp_path, capsys):
    old = write(tmp_path / "query_v1.py", QUERY_V1)
    new = write(tmp_path / "query_v2.py", QUERY_V2)
    code, out, _ = run(capsys, "schema", "diff", str(old), str(new))
    assert code == 1
    assert out.splitlines() == [
        f"{old} -> {new}: 1 breaking, 3 compatible changes",
        "  compatible list_users: new tool",
        "  BREAKING   query_user: extra fields now forbidden (additionalProperties: false)",
        "  compatible query_user: tool description changed",
        "  compatible query_user: new optional parameter 'fields' (array | null)",
    ]
    # The same from snapshot files; compatible-only changes exit 0.
    old_json, new_json = tmp_path / "old.json", tmp_path / "new.json"
    run(capsys, "schema", "snapshot", str(old), "-o", str(old_json))
    run(capsys, "schema", "snapshot", str(new), "-o", str(new_json))
    code, out, _ = run(capsys, "schema", "diff", str(old_json), str(new_json))
    assert code == 1
    assert "BREAKING   query_user: extra fields now forbidden" in out
    code, out, _ = run(capsys, "schema", "diff", str(new_json), str(new))
    assert (code, out) == (0, f"{new_json} -> {new}: no schema changes\n")
    code, out, _ = run(capsys, "schema", "diff", str(new_json), f"{new}:query_user")
    assert code == 1
    assert "BREAKING   list_users: tool removed" in out


# -- mocks check ---------------------------------------------------------------------------

DRIFTED = """
from toolproof import ToolError, tool
from toolproof.testing import StatefulMock, ToolMock

@tool(errors=(KeyError,))
def get_order(order_id: str) -> dict[str, str]:
    \"\"\"Get an order.

    Args:
        order_id: The order id.
    \"\"\"
    raise KeyError(order_id)

@get_order.mock
def _order(order_id: str) -> dict[str, str]:
    return {"id": order_id, "status": "paid"}

@tool
def search(query: str, top_k: int = 5) -> list[str]:
    \"\"\"Search.

    Args:
        query: What.
        top_k: How many.
    \"\"\"
    return []

@search.mock
def _search(query: str, limit: int = 5) -> list[str]:
    return ["doc"]

@tool
def get_weather(city: str) -> dict[str, str]:
    \"\"\"Weather.

    Args:
        city: The city.
    \"\"\"
    return {}

@get_weather.mock
def _weather(city: str) -> str:
    return "sunny"

@tool(side_effects=True)
def cancel_order(order_id: str) -> str:
    \"\"\"Cancel.

    Args:
        order_id: The order id.
    \"\"\"
    return "cancelled"

class Orders(StatefulMock):
    initial_state = {"orders": {}}

    @StatefulMock.handles("cancel_order")
    def cancel(self, order_id: int) -> str:
        return "cancelled"

    @StatefulMock.handles("refund_order")
    def refund(self, order_id: str) -> str:
        return "refunded"

FIXTURES = ToolMock()
FIXTURES.add("get_order", {"order_id": "A1"}, returns={"id": "A1", "status": 3})
FIXTURES.add("get_order", {"order": "A1"}, returns={"id": "A1"})
FIXTURES.add("get_weather", {"city": "北京"}, returns={"city": "北京", "weather": "晴"})
"""


def test_mocks_check_lists_every_drift(tmp_path, capsys):
    module = write(tmp_path / "drifted.py", DRIFTED)
    code, out, _ = run(capsys, "mocks", "check", str(module))
    assert code == 1
    lines = out.splitlines()
    where = f"({module}:"
    assert lines[0] == (
        "checked 4 tools: 3 declared mocks, 2 stateful handlers, 3 fixtures, "
        "5 mock outputs validated"
    )
    drifts = [line for line in lines if line.startswith("DRIFT")]
    assert len(drifts) == 7
    assert drifts[0] == (
        "DRIFT  get_order: FIXTURES fixture #1: its returns value does not match the tool's "
        "return type dict[str, str] (status: Input should be a valid string; got "
        '{"id": "A1", "status": 3})'
    )
    assert drifts[1].startswith(
        "DRIFT  get_order: FIXTURES fixture #2: its arguments are not a valid call of the tool: "
        "Invalid arguments for tool 'get_order': missing required argument 'order_id'"
    )
    assert drifts[2].startswith("DRIFT  get_weather: @get_weather.mock " + where)
    assert drifts[2].endswith(
        "its output on get_weather(city='北京') does not match the tool's return type "
        'dict[str, str] (Input should be a valid dictionary; got "sunny")'
    )
    assert drifts[3].startswith("DRIFT  search: @search.mock " + where)
    assert drifts[3].endswith("does not accept parameter 'top_k', which the tool has")
    assert drifts[4].endswith("accepts parameter 'limit', which the tool does not have")
    assert drifts[5].startswith("DRIFT  cancel_order: Orders.cancel " + where)
    assert drifts[5].endswith(
        'parameter \'order_id\' has another type: the tool takes {"type": "string"}, the mock '
        'takes {"type": "integer"}'
    )
    assert drifts[6].startswith("DRIFT  refund_order: Orders.refund")
    assert drifts[6].endswith(
        "handles tool 'refund_order', which does not exist (tools: cancel_order, get_order, "
        "get_weather, search)"
    )
    assert lines[-1] == "7 drifts found"


def test_mocks_check_passes_on_the_hr_example(capsys):
    code, out, _ = run(capsys, "mocks", "check", "examples.hr_assistant.tools")
    assert code == 0
    assert out.splitlines()[-1] == "no drift"


def test_mocks_check_with_tools_and_mocks_in_separate_modules(tmp_path, capsys, monkeypatch):
    package = tmp_path / "shop"
    package.mkdir()
    (package / "__init__.py").write_text("")
    write(
        package / "tools.py",
        """
        from toolproof import tool

        @tool
        def get_stock(sku: str) -> int:
            \"\"\"Stock of a product.

            Args:
                sku: Product code.
            \"\"\"
            return 0
        """,
    )
    write(
        package / "mocks.py",
        """
        from toolproof.testing import StatefulMock

        class Stock(StatefulMock):
            initial_state = {"SKU-1": 4}

            @StatefulMock.handles("get_stock")
            def get_stock(self, sku: str) -> int:
                return self.state.get(sku, "unknown")
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = run(capsys, "mocks", "check", "shop.tools", "shop.mocks")
    assert code == 1
    assert out.splitlines()[-2].endswith(
        "its output on get_stock(sku='example') does not match the tool's return type int "
        '(Input should be a valid integer, unable to parse string as an integer; got "unknown")'
    )


# -- errors: one line, exit 2, no traceback ------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["schema", "snapshot", "no_such_module_xyz"],
            "toolproof: error: cannot import 'no_such_module_xyz': no module named "
            "'no_such_module_xyz' (run from the project root, or pass a file path such as "
            "path/to/tools.py)",
        ),
        (
            ["schema", "check", "examples.hr_assistant.tools", "pyproject.toml"],
            "toolproof: error: pyproject.toml is not a toolproof schema snapshot: invalid JSON",
        ),
        (
            ["schema", "snapshot", "examples.hr_assistant.tools:nothing_here"],
            "toolproof: error: examples.hr_assistant.tools has no attribute 'nothing_here'",
        ),
        (
            ["schema", "snapshot", "examples.hr_assistant.tools:LEAVE"],
            "toolproof: error: examples.hr_assistant.tools:LEAVE is not a tool, a toolset, an "
            "agent or a list of tools",
        ),
        (
            ["mocks", "check", "json"],
            "toolproof: error: no tools found in json (looked for tools, toolsets, agents and "
            "lists of tools; pass the module with the real tools too)",
        ),
        (
            ["schema", "diff", "missing_old.json", "examples.hr_assistant.tools"],
            "toolproof: error: missing_old.json: no such snapshot file",
        ),
    ],
)
def test_cli_errors_are_one_line(argv, message):
    result = subprocess.run(
        [sys.executable, "-m", "toolproof", *argv],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_broken_user_module_is_one_line(tmp_path):
    broken = write(tmp_path / "broken.py", "def oops(:\n    pass\n")
    raising = write(tmp_path / "raising.py", "raise RuntimeError('database not configured')\n")
    for path, message in [
        (broken, f"cannot import '{broken}': SyntaxError: invalid syntax ({broken}, line 1)"),
        (
            raising,
            f"cannot import '{raising}': RuntimeError: database not configured "
            f"({raising}:1 in <module>)",
        ),
    ]:
        result = subprocess.run(
            [sys.executable, "-m", "toolproof", "schema", "snapshot", str(path)],
            capture_output=True,
            text=True,
        )
        assert (result.returncode, result.stderr) == (2, f"toolproof: error: {message}\n")


# -- schema diff --store: a model upgrade's story against a real trace store ---------------

QUERY_LENIENT = """
from toolproof import tool

@tool(extra="ignore")
def query_user(user_id: int) -> dict[str, str]:
    \"\"\"Query a user.

    Args:
        user_id: The user.
    \"\"\"
    return {"user_id": str(user_id), "name": "Mia"}
"""


def test_diff_with_store_counts_recorded_calls_the_new_schema_rejects(tmp_path, capsys):
    from toolproof import Agent
    from toolproof.replay import TraceStore
    from toolproof.testing import ScriptedModel, call

    lenient_path = write(tmp_path / "query_lenient.py", QUERY_LENIENT)
    strict_path = write(
        tmp_path / "query_strict.py", QUERY_LENIENT.replace('@tool(extra="ignore")', "@tool")
    )
    namespace: dict = {}
    exec(compile(lenient_path.read_text(), str(lenient_path), "exec"), namespace)
    query_user = namespace["query_user"]

    # Production: the old model sends {user_id}; the upgraded one adds options={format: json}.
    store_path = tmp_path / "traces.db"
    with TraceStore(store_path) as store:
        for n in range(5):
            arguments = {"user_id": 100 + n}
            if n % 2:
                arguments["options"] = {"format": "json"}
            model = ScriptedModel([call("query_user", **arguments), "Mia"])
            store.add(Agent(model, [query_user]).run_sync(f"who is user {100 + n}?").trace)

    code, out, _ = run(
        capsys,
        "schema",
        "diff",
        str(lenient_path),
        str(strict_path),
        "--store",
        str(store_path),
        "--examples",
        "1",
    )
    assert code == 1
    lines = out.splitlines()
    assert lines[:2] == [
        f"{lenient_path} -> {strict_path}: 1 breaking, 0 compatible change",
        "  BREAKING   query_user: extra fields now forbidden (additionalProperties: false)",
    ]
    assert lines[2] == (
        f"recorded calls in {store_path}: 2 of 5 would be rejected by the new schemas"
    )
    assert lines[3] == "  query_user: 2 of 5 rejected"
    assert lines[4].startswith("    - ")
    assert "Additional properties are not allowed ('options' was unexpected)" in lines[4]
    assert len(lines) == 5


def test_diff_store_must_exist(tmp_path, capsys):
    tools = write(tmp_path / "hr_tools_store.py", HR_TOOLS)
    code, _, err = run(
        capsys, "schema", "diff", str(tools), str(tools), "--store", str(tmp_path / "none.db")
    )
    assert (code, err) == (
        2,
        f"toolproof: error: --store {tmp_path / 'none.db'}: no such trace store\n",
    )
