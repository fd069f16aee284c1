"""Test doubles and checks for agents: fake models, mocked tools, trace assertions.

Example:
    ```python
    from toolproof import Toolset
    from toolproof.testing import ScriptedModel, ToolMock, assert_tool_called, call

    model = ScriptedModel([call("get_leave_balance", employee_id="E001"), "E001 has 5 days."])
    mock = ToolMock()
    mock.add("get_leave_balance", {"employee_id": "E001"}, returns=5)
    agent = build_agent(model, Toolset(TOOLS, mode="mock", mocks=[mock]))
    result = agent.run_sync("How much leave does E001 have?")
    assert_tool_called(result, "get_leave_balance", employee_id="E001")
    mock.verify()
    ```
"""

from toolproof._matching._objects import ANY, approx
from toolproof._mocks import Fixture, ToolMock
from toolproof.models.fake import FunctionModel, RequestInfo, ScriptedModel, call
from toolproof.testing._assertions import (
    assert_grounded,
    assert_no_tool_errors,
    assert_tool_called,
    assert_tool_not_called,
    assert_tool_order,
)
from toolproof.testing._contracts import assert_schema_snapshot
from toolproof.testing._faults import Fault, mock_tools, with_faults
from toolproof.testing._stateful import StatefulMock

__all__ = [
    "ANY",
    "Fault",
    "Fixture",
    "FunctionModel",
    "RequestInfo",
    "ScriptedModel",
    "StatefulMock",
    "ToolMock",
    "approx",
    "assert_grounded",
    "assert_no_tool_errors",
    "assert_schema_snapshot",
    "assert_tool_called",
    "assert_tool_not_called",
    "assert_tool_order",
    "call",
    "mock_tools",
    "with_faults",
]
