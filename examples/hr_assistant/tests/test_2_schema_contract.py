"""Layer 2: the schemas the model sees are a contract; a silent change fails here.

The snapshot ``tools.schema.json`` is committed. After an intended change, accept it with
``pytest examples/hr_assistant --toolproof-update-snapshots`` and review the diff.
"""

from __future__ import annotations

import examples.hr_assistant.tools as hr_tools
from examples.hr_assistant.tools import multiply_numbers


def test_tool_schemas_match_the_snapshot(schema_snapshot):
    schema_snapshot(hr_tools, "tools.schema.json")


def test_multiply_tool_has_expected_schema():
    # The explicit form of the contract test, for the most important tool.
    schema = multiply_numbers.parameters
    assert set(schema["properties"]) == {"a", "b"}
    assert set(schema["required"]) == {"a", "b"}
    assert schema["properties"]["a"]["type"] == "number"
    assert schema["properties"]["b"]["type"] == "number"
    assert multiply_numbers.name == "multiply_numbers"
    assert multiply_numbers.description == "Multiply two numbers."
