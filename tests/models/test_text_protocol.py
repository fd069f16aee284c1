"""The text tool protocol: the <tool_call> parser (fuzzed) and the TextProtocolModel wrapper."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from _openai_server import FakeOpenAIServer, Reply
from hypothesis import example, given, settings
from hypothesis import strategies as st

from toolproof import Agent, Message, ModelSettings, ToolCall, ToolResult, tool
from toolproof._run import CORRECTION_PREFIX
from toolproof.errors import UserError
from toolproof.models import (
    OpenAIChatModel,
    TextProtocolModel,
    ToolCallParseError,
    parse_tool_calls,
)
from toolproof.models.textproto import parse_tool_call_block, render_tool_call
from toolproof.testing import ScriptedModel, call


@tool
def get_weather(city: str) -> dict[str, str]:
    """Get the current weather of a city. Use it when the user asks about the weather.

    Args:
        city: The city name, for example 北京.
    """
    return {"city": city, "weather": {"北京": "晴，25 度"}.get(city, "unknown")}


@tool
def calculator(expression: str) -> float:
    """Evaluate an arithmetic expression.

    Args:
        expression: The expression, for example 123 * 45.
    """
    a, b = expression.split("*")
    return float(a) * float(b)


def calls_of(text: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [(c.id, c.name, c.arguments) for c in parse_tool_calls(text).calls]


# -- the parser -------------------------------------------------------------------------------


def test_one_block_is_a_call_and_leaves_no_text() -> None:
    parsed = parse_tool_calls(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "北京"}}</tool_call>'
    )
    assert parsed.text is None
    assert parsed.errors == []
    assert [(c.id, c.name, c.arguments) for c in parsed.calls] == [
        ("call_1", "get_weather", {"city": "北京"})
    ]


def test_several_blocks_with_prose_whitespace_and_fences() -> None:
    text = (
        "Let me check both.\n\n"
        '<tool_call>\n  {"name": "get_weather",\n   "arguments": {"city": "上海"}}\n</tool_call>\n'
        '```json\n<tool_call>{"name": "calculator", '
        '"arguments": {"expression": "123 * 45"}}</tool_call>\n```\n'
        '<TOOL_CALL>```json\n{"name": "get_weather", '
        '"arguments": {"city": "广州"}}\n```</TOOL_CALL>\n'
        "I will wait for the results."
    )
    parsed = parse_tool_calls(text, first_id=4)
    assert parsed.errors == []
    assert [(c.id, c.name, c.arguments) for c in parsed.calls] == [
        ("call_4", "get_weather", {"city": "上海"}),
        ("call_5", "calculator", {"expression": "123 * 45"}),
        ("call_6", "get_weather", {"city": "广州"}),
    ]
    assert parsed.text == "Let me check both.\n\nI will wait for the results."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a closing tag cut off by a stop sequence or the token limit
        ('<tool_call>{"name": "f", "arguments": {"x": 1}}', [("call_1", "f", {"x": 1})]),
        # Llama-style "parameters"
        (
            '<tool_call>{"name": "f", "parameters": {"x": 1}}</tool_call>',
            [("call_1", "f", {"x": 1})],
        ),
        # arguments given as JSON text
        (
            '<tool_call>{"name": "f", "arguments": "{\\"x\\": 1}"}</tool_call>',
            [("call_1", "f", {"x": 1})],
        ),
        # the OpenAI shape
        (
            '<tool_call>{"type": "function", '
            '"function": {"name": "f", "arguments": {"x": 1}}}</tool_call>',
            [("call_1", "f", {"x": 1})],
        ),
        # a list of calls in one block
        (
            '<tool_call>[{"name": "f", "arguments": {}}, {"name": "g"}]</tool_call>',
            [("call_1", "f", {}), ("call_2", "g", {})],
        ),
        # words and a stray brace around the JSON
        (
            '<tool_call>call: {"name": "f", "arguments": {"x": 1}}}</tool_call>',
            [("call_1", "f", {"x": 1})],
        ),
        # null arguments, spaces in the tags
        ('<tool_call >{"name": " f ", "arguments": null}</tool_call >', [("call_1", "f", {})]),
        # two blocks, the first unclosed
        (
            '<tool_call>{"name": "f"}<tool_call>{"name": "g"}</tool_call>',
            [("call_1", "f", {}), ("call_2", "g", {})],
        ),
    ],
)
def test_tolerated_forms(text: str, expected: list[tuple[str, str, dict[str, Any]]]) -> None:
    parsed = parse_tool_calls(text)
    assert parsed.errors == []
    assert [(c.id, c.name, c.arguments) for c in parsed.calls] == expected


def test_text_without_blocks_is_a_plain_answer() -> None:
    assert parse_tool_calls("  北京今天晴。 ").text == "北京今天晴。"
    assert parse_tool_calls("a < b and b > c").calls == []


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            '<tool_call>{"name": "get_weather" "arguments": {}}</tool_call>',
            'block 1 (\'<tool_call>{"name": "get_weather" "arguments": {}}</tool_call>\'): '
            "the block is not valid JSON (Expecting ',' delimiter)",
        ),
        ('<tool_call>{"arguments": {}}</tool_call>', 'the tool call has no "name" string'),
        (
            '<tool_call>{"name": "f", "arguments": [1, 2]}</tool_call>',
            "the \"arguments\" of 'f' must be a JSON object, got list",
        ),
        ("<tool_call>   </tool_call>", "the <tool_call> block is empty"),
        ("<tool_call>[]</tool_call>", "the <tool_call> block holds an empty list"),
        (
            '<tool_call>"just text"</tool_call>',
            'a tool call must be a JSON object {"name": ..., "arguments": {...}}, got str',
        ),
        ("<tool_call>" + "[" * 100_000 + "</tool_call>", "the block is not valid JSON"),
    ],
)
def test_unparsable_blocks_become_errors_and_stay_in_the_text(text: str, error: str) -> None:
    parsed = parse_tool_calls(f"Checking.\n{text}")
    assert parsed.calls == []
    assert len(parsed.errors) == 1
    assert error in parsed.errors[0]
    assert parsed.text is not None and parsed.text.startswith("Checking.\n<tool_call>")


def test_a_good_and_a_bad_block() -> None:
    parsed = parse_tool_calls('<tool_call>{"name": "f"}</tool_call><tool_call>{oops}</tool_call>')
    assert [c.name for c in parsed.calls] == ["f"]
    assert parsed.errors[0].startswith("block 2 ('<tool_call>{oops}</tool_call>'): ")
    assert parsed.text == "<tool_call>{oops}</tool_call>"


def test_malformed_argument_text_is_kept_for_the_agent_to_report() -> None:
    (c,) = parse_tool_calls('<tool_call>{"name": "f", "arguments": "{x: 1}"}</tool_call>').calls
    assert c.arguments == {}
    assert c.raw_arguments == "{x: 1}"
    assert c.arguments_error is not None and "not valid JSON" in c.arguments_error


def test_the_block_parser_raises_only_its_error() -> None:
    with pytest.raises(ToolCallParseError) as caught:
        parse_tool_call_block("{nope")
    assert caught.value.body == "{nope"
    assert isinstance(caught.value, ValueError)


TAGS = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "<TOOL_CALL >",
        "```",
        "```json\n",
        "{",
        "}",
        "[",
        "]",
        '"name"',
        '"arguments"',
        ":",
        ",",
        '"f"',
        "null",
        "\n",
        " ",
        '"',
        "\\",
    ]
)
# JSON data: no NaN or infinities (a ToolCall keeps those as the strings "NaN", "Infinity").
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


# 200 examples: texts of up to 30 tags and short words; the scanner's cases are pinned against
# the earlier parser in test_text_protocol_bounds.py (400 examples there)
@settings(max_examples=200, deadline=None)
@given(st.lists(TAGS | st.text(max_size=8), max_size=30).map("".join))
def test_fuzz_the_message_parser_never_raises(text: str) -> None:
    parsed = parse_tool_calls(text)
    assert len({c.id for c in parsed.calls}) == len(parsed.calls)
    for c in parsed.calls:
        assert isinstance(c.name, str) and c.name
        assert isinstance(c.arguments, dict)


@settings(max_examples=200, deadline=None)  # three small input shapes: 200 cover them
@given(st.one_of(st.text(), JSON_VALUES.map(json.dumps), st.lists(TAGS).map("".join)))
def test_fuzz_the_block_parser_raises_only_tool_call_parse_error(text: str) -> None:
    try:
        calls = parse_tool_call_block(text)
    except ToolCallParseError:
        return
    assert calls and all(isinstance(c, ToolCall) for c in calls)


NAMES = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(
    lambda s: s.strip() == s and s
)


@settings(max_examples=200, deadline=None)
@given(NAMES, st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4), st.text(max_size=40))
@example("<TOOL_CALL>", {}, "")
@example("f", {"text": "</tool_call>", "<tool_call>": "<"}, "see <tool_call>")
def test_rendered_calls_parse_back(name: str, arguments: dict[str, Any], prose: str) -> None:
    text = f"{prose}\n{render_tool_call(ToolCall(name, arguments))}"
    parsed = parse_tool_calls(text)
    assert [(c.name, c.arguments) for c in parsed.calls][-1] == (name, arguments)


# -- the wrapper --------------------------------------------------------------------------------


def test_the_inner_model_sees_text_only() -> None:
    inner = ScriptedModel(["ok"])
    model = TextProtocolModel(inner)
    call_1 = ToolCall("get_weather", {"city": "北京"}, "call_1")
    call_2 = ToolCall.from_json_arguments("calculator", '{"expression": "2*3"}', "call_2")
    messages = [
        Message.system("你是一个中文智能体。"),
        Message.user("北京天气？顺便算 2*3"),
        Message.assistant("I will call two tools.", [call_1, call_2]),
        Message.tool(_result("call_1", "get_weather", '{"city": "北京"}')),
        Message.tool(_result("call_2", "calculator", "boom", status="error")),
        Message.user(f"{CORRECTION_PREFIX}: block 1 ..."),
    ]
    asyncio.run(
        model.request(
            messages,
            [get_weather.definition, calculator.definition],
            ModelSettings(tool_choice="auto", parallel_tool_calls=True),
        )
    )
    (request,) = inner.requests
    assert request.tools == []
    assert (request.settings.tool_choice, request.settings.parallel_tool_calls) == (None, None)
    sent = request.messages
    assert [m.role for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[0].content is not None
    assert sent[0].content.startswith("你是一个中文智能体。\n\n# Tools\n")
    assert (
        json.dumps(
            {
                "name": "get_weather",
                "description": get_weather.definition.description,
                "parameters": get_weather.definition.parameters,
            },
            ensure_ascii=False,
        )
        in sent[0].content
    )
    assert sent[2].tool_calls == []
    assert sent[2].content == (
        "I will call two tools.\n"
        '<tool_call>{"name": "get_weather", "arguments": {"city": "北京"}}</tool_call>\n'
        '<tool_call>{"name": "calculator", "arguments": {"expression": "2*3"}}</tool_call>'
    )
    assert sent[3].content == (
        '<tool_result name="get_weather" id="call_1">\n{"city": "北京"}\n</tool_result>\n\n'
        '<tool_result name="calculator" id="call_2" status="error">\nboom\n</tool_result>\n\n'
        f"{CORRECTION_PREFIX}: block 1 ..."
    )


def _result(call_id: str, name: str, content: str, status: str = "ok") -> ToolResult:
    return ToolResult(call_id, name, status, content)  # type: ignore[arg-type]


def test_a_system_prompt_is_added_when_there_is_none() -> None:
    model = TextProtocolModel(ScriptedModel([]))
    rendered = model.render([Message.user("hi")], [get_weather.definition])
    assert [m.role for m in rendered] == ["system", "user"]
    assert rendered[0].content == model.tools_prompt([get_weather.definition])
    assert model.render([Message.user("hi")], []) == [Message.user("hi")]


def test_parse_errors_reach_the_trace_and_the_model_gets_a_correction() -> None:
    inner = ScriptedModel(
        [
            "Checking.\n"
            '<tool_call>{"name": "get_weather", "arguments": {"city": "北京"</tool_call>',
            '<tool_call>{"name": "get_weather", "arguments": {"city": "北京"}}</tool_call>\n'
            '<tool_call>{"name": "calculator", '
            '"arguments": {"expression": "123 * 45"}}</tool_call>',
            "北京今天晴，25 度。123 * 45 = 5535。",
        ]
    )
    agent = Agent(TextProtocolModel(inner), [get_weather, calculator])
    result = agent.run_sync("北京今天天气怎么样？顺便算一下 123 * 45")
    assert result.output == "北京今天晴，25 度。123 * 45 = 5535。"
    first, second, third = result.trace.steps
    assert len(first.parse_errors) == 1
    assert first.parse_errors[0].startswith("block 1 (")
    assert "the block is not valid JSON" in first.parse_errors[0]
    assert first.response.tool_calls == []
    assert [c.signature() for c in second.response.tool_calls] == [
        "get_weather(city='北京')",
        "calculator(expression='123 * 45')",
    ]
    assert [r.content for r in second.tool_results] == [
        '{"city": "北京", "weather": "晴，25 度"}',
        "5535.0",
    ]
    assert third.parse_errors == []
    # Request 2: the bad block is shown back, followed by the agent's correction.
    sent = inner.requests[1].messages
    assert sent[-2].role == "assistant"
    assert sent[-2].content is not None and '{"city": "北京"</tool_call>' in sent[-2].content
    assert sent[-1].role == "user"
    assert sent[-1].content is not None and sent[-1].content.startswith(CORRECTION_PREFIX)
    # Request 3: both results in one user message, ids linking them to the calls.
    assert inner.requests[2].messages[-1].content == (
        '<tool_result name="get_weather" id="call_1">\n{"city": "北京", "weather": "晴，25 度"}\n'
        '</tool_result>\n\n<tool_result name="calculator" id="call_2">\n5535.0\n</tool_result>'
    )


def test_native_calls_of_the_inner_model_are_kept() -> None:
    inner = ScriptedModel([[call("get_weather", city="北京")], "done"])
    result = Agent(TextProtocolModel(inner), [get_weather]).run_sync("weather?")
    assert result.trace.tool_calls[0].name == "get_weather"
    assert result.output == "done"


def test_call_ids_stay_unique_when_the_start_was_trimmed() -> None:
    inner = ScriptedModel(
        ['<tool_call>{"name": "get_weather", "arguments": {"city": "北京"}}</tool_call>']
    )
    trimmed_history = [
        Message.user("and now?"),
        Message.assistant(None, [ToolCall("get_weather", {"city": "上海"}, "call_7")]),
        Message.tool(_result("call_7", "get_weather", "rain")),
    ]
    response = asyncio.run(
        TextProtocolModel(inner).request(trimmed_history, [get_weather.definition], ModelSettings())
    )
    assert [c.id for c in response.message.tool_calls] == ["call_8"]


def test_over_http_no_native_tools_are_sent(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply.completion(
            '好的。<tool_call>{"name": "get_weather", "arguments": {"city": "北京"}}</tool_call>'
        ),
        Reply.completion("北京今天晴，25 度。"),
    )
    inner = OpenAIChatModel(
        "local-model", base_url=server.url + "/v1", name="deepseek:deepseek-chat"
    )
    model = TextProtocolModel(inner)
    assert model.name == "deepseek:deepseek-chat?protocol=text"
    result = Agent(model, [get_weather], system_prompt="你是一个中文智能体。").run_sync(
        "北京天气？"
    )
    assert result.output == "北京今天晴，25 度。"
    assert result.trace.model == "deepseek:deepseek-chat?protocol=text"
    assert result.trace.cost is not None and result.trace.cost > 0  # priced as deepseek-chat
    first, second = (r.body for r in server.requests)
    assert "tools" not in first and "tool_choice" not in first
    assert "# Tools" in first["messages"][0]["content"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert second["messages"][2]["content"] == (
        '好的。\n<tool_call>{"name": "get_weather", "arguments": {"city": "北京"}}</tool_call>'
    )
    assert second["messages"][3]["content"].startswith(
        '<tool_result name="get_weather" id="call_1">'
    )


def test_wrapper_options_are_checked() -> None:
    with pytest.raises(UserError, match="TextProtocolModel wraps a Model"):
        TextProtocolModel("ollama:llama3")  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"must contain '\{tools\}'"):
        TextProtocolModel(ScriptedModel([]), instructions="no placeholder")
    custom = TextProtocolModel(ScriptedModel([]), instructions="Tools:\n{tools}")
    assert custom.tools_prompt([calculator.definition]).startswith('Tools:\n{"name": "calculator"')
