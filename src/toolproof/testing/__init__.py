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

TYPE_CHECKING = False
if TYPE_CHECKING:
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


def _parts() -> dict[str, object]:
    # Bound all at once on first use: loading the pytest plugin (a submodule of this
    # package, which pytest imports in every session where toolproof is installed) stays
    # light, and pydantic loads only when a test uses a double.
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

    return {
        "ANY": ANY,
        "Fault": Fault,
        "Fixture": Fixture,
        "FunctionModel": FunctionModel,
        "RequestInfo": RequestInfo,
        "ScriptedModel": ScriptedModel,
        "StatefulMock": StatefulMock,
        "ToolMock": ToolMock,
        "approx": approx,
        "assert_grounded": assert_grounded,
        "assert_no_tool_errors": assert_no_tool_errors,
        "assert_schema_snapshot": assert_schema_snapshot,
        "assert_tool_called": assert_tool_called,
        "assert_tool_not_called": assert_tool_not_called,
        "assert_tool_order": assert_tool_order,
        "call": call,
        "mock_tools": mock_tools,
        "with_faults": with_faults,
    }


def __getattr__(name: str) -> object:
    if name in __all__:
        # A thread racing this one imports the same modules (the import lock makes it wait)
        # and binds the same objects: no thread sees some names bound and others not.
        parts = _parts()
        globals().update(parts)
        return parts[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
