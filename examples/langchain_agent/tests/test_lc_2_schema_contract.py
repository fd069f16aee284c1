"""Layer 2: the tool contract the model sees (names, descriptions, argument schemas).

The LangChain tools and their toolproof view must describe the same interface; the snapshot
fails with a diff when a parameter is renamed or a type hint is dropped.
"""

from __future__ import annotations

from examples.langchain_agent.agent import TOOLS
from examples.langchain_agent.tools import build_tools


def test_multiply_tool_has_the_expected_schema() -> None:
    tools_by_name = {tool.name: tool for tool in build_tools()}
    schema = tools_by_name["multiply_numbers"].args_schema.model_json_schema()
    assert set(schema["properties"]) == {"a", "b"}
    assert set(schema["required"]) == {"a", "b"}
    assert schema["properties"]["a"]["type"] == "number"
    assert schema["properties"]["b"]["type"] == "number"


def test_toolproof_tools_describe_what_langchain_sends(schema_snapshot) -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    sent = {t.name: convert_to_openai_tool(t)["function"] for t in build_tools()}
    for tool in TOOLS:
        assert tool.description == sent[tool.name]["description"]
        assert tool.parameters == sent[tool.name]["parameters"]
    schema_snapshot(TOOLS, "tools.schema.json")
