"""ToolMock: fixtures keyed by tool and arguments, strictness, diagnostics, files."""

from __future__ import annotations

import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Agent, ToolError, Toolset, tool
from toolproof.errors import AgentRunError, ConfigError, MissingFixture, ToolCrashed, UserError
from toolproof.testing import ANY, Fixture, ScriptedModel, ToolMock, approx, call


@tool(errors=(KeyError,))
def get_leave_balance(employee_id: str) -> int:
    """Look up an employee's remaining annual leave.

    Args:
        employee_id: Employee id such as E001.
    """
    raise AssertionError("the real tool must not run in these tests")


@tool
def search_docs(query: str, top_k: int = 5, user_id: str = "anonymous") -> list[str]:
    """Search the documentation.

    Args:
        query: What to look for.
        top_k: How many results.
        user_id: Who is asking.
    """
    return [f"real result for {query}"]


@tool(side_effects=True)
def send_message(channel: str, text: str) -> str:
    """Post a message.

    Args:
        channel: Where.
        text: What.
    """
    raise AssertionError("never send a real message from a test")


@tool
def get_weather(city: str) -> dict[str, str]:
    """Get the weather.

    Args:
        city: The city.
    """
    return {"city": city, "weather": "real"}


@get_weather.mock
def _weather_mock(city: str) -> dict[str, str]:
    return {"city": city, "weather": "declared mock"}


TOOLS = [get_leave_balance, search_docs, send_message, get_weather]


def run(mock: ToolMock, *script, toolset: Toolset | None = None):
    toolset = toolset or Toolset(TOOLS, mode="mock", mocks=[mock])
    agent = Agent(ScriptedModel(list(script)), toolset)
    return agent.run_sync("question")


def handler(mock: ToolMock, t):
    function = mock.mock_for(t)
    assert function is not None
    return function


# -- matching ------------------------------------------------------------------------------


def test_fixture_answers_the_call_through_an_agent_run():
    mock = ToolMock()
    mock.add("get_leave_balance", {"employee_id": "E001"}, returns=5)
    result = run(mock, call("get_leave_balance", employee_id="E001"), "E001 has 5 days.")
    (tool_result,) = result.trace.tool_results
    assert tool_result.status == "ok"
    assert tool_result.value == 5
    assert tool_result.mocked is True
    assert mock.count("get_leave_balance") == 1
    assert mock.count("get_leave_balance", employee_id="E001") == 1
    assert mock.count("get_leave_balance", employee_id="E002") == 0
    assert mock.calls[0].tool == "get_leave_balance"
    assert mock.calls[0].arguments == {"employee_id": "E001"}
    assert mock.calls[0].fixture is mock.fixtures[0]
    mock.verify()


def test_first_matching_fixture_wins_and_fixtures_are_tried_in_order():
    mock = ToolMock()
    mock.add("get_leave_balance", {"employee_id": "E001"}, returns=5)
    mock.add("get_leave_balance", {"employee_id": "E002"}, returns=0)
    mock.add("get_leave_balance", None, returns=99)  # any other employee
    answer = handler(mock, get_leave_balance)
    assert answer(employee_id="E002") == 0
    assert answer(employee_id="E001") == 5
    assert answer(employee_id="E777") == 99
    assert [f.uses for f in mock.fixtures] == [1, 1, 1]


def test_all_arguments_matter_by_default_and_defaults_fill_in():
    mock = ToolMock()
    mock.add("search_docs", {"query": "leave"}, returns=["doc-1"])
    answer = handler(mock, search_docs)
    # The toolset passes validated arguments, defaults included.
    assert answer(query="leave", top_k=5, user_id="anonymous") == ["doc-1"]
    with pytest.raises(MissingFixture):
        answer(query="leave", top_k=20, user_id="anonymous")


def test_key_args_limit_matching_to_the_arguments_that_matter():
    mock = ToolMock(key_args={"search_docs": ["query"]})
    mock.add("search_docs", {"query": "leave", "top_k": 3}, returns=["doc-1"])
    answer = handler(mock, search_docs)
    assert answer(query="leave", top_k=20, user_id="u-7") == ["doc-1"]
    with pytest.raises(MissingFixture):
        answer(query="salary", top_k=3, user_id="u-7")


def test_matchers_in_fixture_arguments():
    mock = ToolMock()
    mock.add(
        "search_docs",
        {"query": lambda q: q.startswith("leave"), "top_k": approx(10), "user_id": ANY},
        returns=["a"],
    )
    mock.add("search_docs", {"query": str, "top_k": int, "user_id": "admin"}, returns=["b"])
    answer = handler(mock, search_docs)
    assert answer(query="leave policy", top_k=10, user_id="x") == ["a"]
    assert answer(query="salary", top_k=3, user_id="admin") == ["b"]
    with pytest.raises(MissingFixture):
        answer(query="salary", top_k=3, user_id="someone")


def test_times_makes_call_sequences_and_fails_the_nth_call():
    mock = ToolMock()
    mock.add("get_leave_balance", {"employee_id": "E001"}, returns=5, times=1)
    mock.add("get_leave_balance", {"employee_id": "E001"}, raises=KeyError("HR system down"))
    result = run(
        mock,
        call("get_leave_balance", employee_id="E001"),
        call("get_leave_balance", employee_id="E001"),
        "The second lookup failed: HR system down.",
    )
    first, second = result.trace.tool_results
    assert (first.status, first.value) == ("ok", 5)
    assert (second.status, second.error_type, second.content) == (
        "error",
        "KeyError",
        "Error (KeyError): HR system down",
    )
    assert result.output == "The second lookup failed: HR system down."
    assert mock.count("get_leave_balance", employee_id="E001") == 2


def test_returns_callable_computes_from_arguments_and_values_are_copied():
    mock = ToolMock()
    mock.add("get_weather", None, returns=lambda city: {"city": city, "weather": "fixture"})
    shared = ["doc"]
    mock.add("search_docs", None, returns=shared)
    weather = handler(mock, get_weather)
    assert weather(city="上海") == {"city": "上海", "weather": "fixture"}
    first = handler(mock, search_docs)(query="q", top_k=5, user_id="anonymous")
    first.append("mutated by the caller")
    assert shared == ["doc"]


def test_declared_mock_answers_tools_without_fixtures_even_when_strict():
    mock = ToolMock()
    assert mock.mock_for(get_weather) is None  # left to @get_weather.mock
    assert mock.mock_for(get_leave_balance) is not None  # strict: claims it


def test_later_providers_win_so_a_toolmock_listed_first_leaves_tools_to_others():
    mock = ToolMock()
    other = ToolMock()
    other.add("get_leave_balance", None, returns=7)
    toolset = Toolset(TOOLS, mode="mock", mocks=[mock, other])
    result = run(mock, call("get_leave_balance", employee_id="E1"), "ok", toolset=toolset)
    assert result.trace.tool_results[0].value == 7


def test_non_strict_mock_lets_unmatched_calls_through():
    mock = ToolMock(strict=False)
    mock.add("search_docs", {"query": "leave"}, returns=["fixture"])
    mock.add("get_weather", {"city": "北京"}, returns={"city": "北京", "weather": "fixture"})
    assert mock.mock_for(get_leave_balance) is None  # no fixtures: the toolset decides
    search = handler(mock, search_docs)
    assert search(query="other", top_k=5, user_id="anonymous") == ["real result for other"]
    weather = handler(mock, get_weather)
    assert weather(city="上海") == {"city": "上海", "weather": "declared mock"}
    assert [c.fixture for c in mock.calls] == [None, None]


def test_thread_safe_counting_under_concurrent_calls():
    mock = ToolMock()
    mock.add("get_leave_balance", None, returns=1)
    answer = handler(mock, get_leave_balance)
    threads = [
        threading.Thread(target=lambda: [answer(employee_id="E1") for _ in range(200)])
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert mock.count("get_leave_balance") == 1600
    assert mock.fixtures[0].uses == 1600


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.text(alphabet="ABCDE0123456789", min_size=1, max_size=6),
        st.integers(min_value=-1000, max_value=1000),
        min_size=1,
        max_size=8,
    )
)
def test_property_every_fixture_answers_exactly_its_own_call(table):
    mock = ToolMock()
    for employee, days in table.items():
        mock.add("get_leave_balance", {"employee_id": employee}, returns=days)
    answer = handler(mock, get_leave_balance)
    for employee, days in table.items():
        assert answer(employee_id=employee) == days
    with pytest.raises(MissingFixture):
        answer(employee_id="not-in-" + "".join(table))
    assert mock.unused() == []


# -- strictness and its diagnostics --------------------------------------------------------


def test_missing_fixture_message_shows_closest_fixture_masked():
    mock = ToolMock(mask=["user_id"])
    mock.add("search_docs", {"query": "leave", "top_k": 5, "user_id": "u-42"}, returns=[])
    mock.add("search_docs", {"query": "salary", "top_k": 3, "user_id": "u-42"}, returns=[])
    answer = handler(mock, search_docs)
    with pytest.raises(MissingFixture) as info:
        answer(query="leave", top_k=20, user_id="u-99")
    assert str(info.value) == (
        "No fixture matches the call search_docs(query='leave', top_k=20, user_id=***).\n"
        "Closest fixture (fixture #1: search_docs(query='leave', top_k=5, user_id=***)):\n"
        "  ✓ query\n"
        "  ✗ top_k: expected 5, got 20\n"
        "  ✗ user_id: differs (values masked)\n"
        "Add a fixture for this call, match on fewer arguments with "
        "key_args={'search_docs': [...]}, or pass strict=False to ToolMock(...) to let "
        "unmatched calls through to the tool's declared mock (or its real function, if it has "
        "no side effects)."
    )
    assert info.value.tool_name == "search_docs"
    assert info.value.arguments == {"query": "leave", "top_k": 20, "user_id": "***"}
    assert "u-99" not in str(info.value)
    assert "u-42" not in str(info.value)
    assert mock.calls[-1].fixture is None


def test_missing_fixture_for_a_tool_without_fixtures():
    mock = ToolMock()
    mock.add("search_docs", None, returns=[])
    answer = handler(mock, send_message)
    with pytest.raises(MissingFixture) as info:
        answer(channel="#hr", text="hello")
    assert str(info.value) == (
        "No fixture matches the call send_message(channel='#hr', text='hello').\n"
        "This ToolMock has no fixtures for tool 'send_message' (fixtures exist for: "
        "search_docs).\n"
        "Add one with .add('send_message', {...}, returns=...), list the mock that should "
        "answer 'send_message' after this ToolMock in mocks=[...], or pass strict=False to "
        "ToolMock(...) to let unmatched calls through to the tool's declared mock (or its real "
        "function, if it has no side effects)."
    )


def test_missing_fixture_when_the_matching_fixture_is_used_up():
    mock = ToolMock()
    mock.add("get_leave_balance", {"employee_id": "E001"}, returns=5, times=1)
    answer = handler(mock, get_leave_balance)
    assert answer(employee_id="E001") == 5
    with pytest.raises(MissingFixture) as info:
        answer(employee_id="E001")
    assert str(info.value).splitlines()[1:3] == [
        "Fixture fixture #1: get_leave_balance(employee_id='E001') matches, but it was already "
        "used 1 time (times=1).",
        "Raise its times=, add another fixture for this call, or pass strict=False to "
        "ToolMock(...) to let unmatched calls through to the tool's declared mock (or its real "
        "function, if it has no side effects).",
    ]


def test_unknown_fixture_argument_is_named_in_the_diagnosis():
    mock = ToolMock()
    mock.add("get_leave_balance", {"emp_id": "E001"}, returns=5)
    with pytest.raises(MissingFixture) as info:
        handler(mock, get_leave_balance)(employee_id="E001")
    lines = str(info.value).splitlines()
    assert "  ✗ emp_id: not a parameter of get_leave_balance (parameters: employee_id)" in lines
    assert "  ✗ employee_id: the fixture gives no value" in lines


def test_non_strict_side_effect_tool_without_mock_still_fails():
    mock = ToolMock(strict=False)
    mock.add("send_message", {"channel": "#hr", "text": "hi"}, returns="sent")
    with pytest.raises(MissingFixture) as info:
        handler(mock, send_message)(channel="#general", text="hi")
    assert str(info.value).endswith(
        "or declare a mock with @send_message.mock (strict=False cannot let this call "
        "through: the tool has side effects and no declared mock)."
    )


def test_missing_fixture_stops_the_run_with_the_trace():
    mock = ToolMock(mask=["user_id"])
    model = ScriptedModel([call("search_docs", query="leave", user_id="u-1"), "never reached"])
    agent = Agent(model, Toolset(TOOLS, mode="mock", mocks=[mock]))
    with pytest.raises(AgentRunError) as info:
        agent.run_sync("find the leave policy")
    error = info.value
    assert isinstance(error.__cause__, MissingFixture)
    assert error.trace is not None
    assert error.trace.stop_reason == "error"
    assert error.trace.tool_calls[0].name == "search_docs"
    assert str(error).startswith(
        "No fixture matches the call search_docs(query='leave', top_k=5, user_id=***)."
    )
    assert len(model.requests) == 1


def test_verify_reports_unused_fixtures_and_names_the_opt_out():
    mock = ToolMock(mask=["user_id"])
    mock.add("get_leave_balance", {"employee_id": "E001"}, returns=5)
    mock.add("search_docs", {"query": "x", "user_id": "secret-user"}, returns=[])
    mock.add("get_weather", None, returns={})
    handler(mock, get_leave_balance)(employee_id="E001")
    with pytest.raises(AssertionError) as info:
        mock.verify()
    assert str(info.value) == (
        "2 fixtures of this ToolMock were never used:\n"
        "  - fixture #2: search_docs(query='x', user_id=***)\n"
        "  - fixture #3: get_weather(<any arguments>)\n"
        "Remove unused fixtures, or pass assert_all_used=False to ToolMock(...) (for the "
        "tool_mock fixture: @pytest.mark.tool_mock(assert_all_used=False)) if some are "
        "expected to stay unused."
    )
    assert [f.source for f in mock.unused()] == ["fixture #2", "fixture #3"]
    ToolMock(mock.fixtures, assert_all_used=False).verify()


def test_reset_forgets_calls_and_uses():
    mock = ToolMock()
    mock.add("get_leave_balance", None, returns=1)
    handler(mock, get_leave_balance)(employee_id="E1")
    mock.reset()
    assert mock.calls == []
    assert mock.unused() == mock.fixtures


def test_bad_options_are_user_errors():
    with pytest.raises(UserError, match=r"key_args\['search_docs'\] must be a list"):
        ToolMock(key_args={"search_docs": "query"})
    with pytest.raises(UserError, match="give returns= or raises=, not both"):
        ToolMock().add("t", returns=1, raises=KeyError())
    with pytest.raises(UserError, match="times= must be a positive integer"):
        ToolMock().add("t", times=0)
    mock = ToolMock(key_args={"search_docs": ["q"]})
    mock.add("search_docs", None, returns=[])
    with pytest.raises(UserError) as info:
        mock.mock_for(search_docs)
    assert str(info.value) == (
        "key_args['search_docs'] names 'q', which tool 'search_docs' does not have; its "
        "parameters: query, top_k, user_id"
    )


# -- files ---------------------------------------------------------------------------------

YAML_FIXTURES = """\
key_args:
  search_docs: [query]
mask: [user_id]
fixtures:
  - tool: get_leave_balance
    arguments: {employee_id: E001}
    returns: 5
  - tool: get_leave_balance
    arguments: {employee_id: E999}
    raises: "KeyError: employee not found"
  - tool: search_docs
    arguments: {query: leave}
    returns: [policy.md]
    times: 2
  - tool: get_weather
    arguments: {city: 北京}
    raises: {type: ToolError, message: weather service unavailable}
"""


def test_from_file_yaml(tmp_path):
    path = tmp_path / "fixtures.yaml"
    path.write_text(YAML_FIXTURES, encoding="utf-8")
    mock = ToolMock.from_file(path)
    assert mock.key_args == {"search_docs": ("query",)}
    assert mock.mask == frozenset({"user_id"})
    assert [f.source for f in mock.fixtures] == [f"{path}:{n}" for n in (5, 8, 11, 15)]
    result = run(
        mock,
        [
            call("get_leave_balance", employee_id="E001"),
            call("get_leave_balance", employee_id="E999"),
            call("search_docs", query="leave", top_k=9),
            call("get_weather", city="北京"),
        ],
        "done",
    )
    ok, missing, search, weather = result.trace.tool_results
    assert ok.value == 5
    assert (missing.status, missing.error_type, missing.content) == (
        "error",
        "KeyError",
        "Error (KeyError): employee not found",
    )
    assert search.value == ["policy.md"]
    assert (weather.error_type, weather.content) == (
        "ToolError",
        "Error (ToolError): weather service unavailable",
    )
    mock.verify()


def test_from_file_json_and_options_override_the_file(tmp_path):
    path = tmp_path / "fixtures.json"
    path.write_text(
        json.dumps(
            {
                "strict": True,
                "fixtures": [{"tool": "get_leave_balance", "arguments": None, "returns": 3}],
            }
        )
    )
    mock = ToolMock.from_file(path, strict=False, assert_all_used=False)
    assert (mock.strict, mock.assert_all_used) == (False, False)
    assert handler(mock, get_leave_balance)(employee_id="E5") == 3
    listed = tmp_path / "list.json"
    listed.write_text('[{"tool": "get_weather", "returns": {"city": "x"}}]')
    assert ToolMock.from_file(listed).fixtures[0].tool == "get_weather"


def test_from_dict_named_declared_error_resolves_against_the_tool():
    @tool(errors=(LookupError,))
    def lookup(key: str) -> str:
        """Look up a key.

        Args:
            key: The key.
        """
        return key

    class EmployeeMissing(Exception):
        pass

    @tool(errors=(EmployeeMissing,))
    def find_employee(employee_id: str) -> str:
        """Find an employee.

        Args:
            employee_id: The id.
        """
        return employee_id

    mock = ToolMock.from_dict(
        {
            "fixtures": [
                {"tool": "find_employee", "raises": "EmployeeMissing: no such employee"},
                {"tool": "lookup", "raises": "EmployeeMissing"},
            ]
        }
    )
    result = run(
        mock,
        call("find_employee", employee_id="E9"),
        "sorry",
        toolset=Toolset([find_employee, lookup], mode="mock", mocks=[mock]),
    )
    assert result.trace.tool_results[0].error_type == "EmployeeMissing"
    assert result.trace.tool_results[0].content == "Error (EmployeeMissing): no such employee"
    agent = Agent(
        ScriptedModel([call("lookup", key="k"), "x"]),
        Toolset([find_employee, lookup], mode="mock", mocks=[mock]),
    )
    with pytest.raises(ToolCrashed) as info:
        agent.run_sync("q")
    assert "fixture #2 raises 'EmployeeMissing', which is neither a built-in " in str(info.value)
    assert "(LookupError)" in str(info.value)


def test_invalid_fixture_file_lists_every_problem(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "fixtures:\n"
        "  - tool: get_leave_balance\n"
        "    arguments: [E001]\n"
        "    times: 0\n"
        "  - returns: 5\n"
        "    colour: blue\n"
        "  - tool: x\n"
        "    returns: 1\n"
        "    raises: KeyError\n"
        "surprise: true\n"
    )
    with pytest.raises(ConfigError) as info:
        ToolMock.from_file(path)
    assert info.value.problems == [
        f"{path}: unknown key(s) 'surprise'; valid keys: version, fixtures, key_args, mask, "
        "strict, assert_all_used",
        f"{path}:2: 'arguments' must be a mapping, got list",
        f"{path}:2: 'times' must be a positive integer, got 0",
        f"{path}:5: unknown key(s) 'colour'; valid keys: tool, arguments, match, returns, "
        "raises, times",
        f"{path}:5: 'tool' must name the tool, got None",
        f"{path}:7: give 'returns' or 'raises', not both",
    ]
    assert str(info.value).startswith(f"invalid fixtures in {path}:\n  - ")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("f.txt", "x", "fixture files must end in .yaml, .yml or .json, not '.txt'"),
        ("f.json", "{nope", "invalid JSON"),
        ("f.yaml", "fixtures: [\n", "invalid YAML"),
        ("f.yaml", "42", "expected a mapping with 'fixtures', got int"),
    ],
)
def test_unreadable_fixture_files(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        ToolMock.from_file(path)


def test_missing_fixture_file(tmp_path):
    with pytest.raises(ConfigError) as info:
        ToolMock.from_file(tmp_path / "absent.yaml")
    assert str(info.value) == f"{tmp_path / 'absent.yaml'}: fixture file not found"


def test_fixture_objects_and_errors():
    fixture = Fixture("get_leave_balance", {"employee_id": "E1"}, returns=1)
    mock = ToolMock([fixture])
    assert fixture.source == "fixture #1"
    assert handler(mock, get_leave_balance)(employee_id="E1") == 1
    assert fixture.uses == 1
    with pytest.raises(UserError, match="expects Fixture objects"):
        ToolMock([{"tool": "x"}])  # type: ignore[list-item]


def test_tool_error_fixture_goes_back_to_the_model():
    mock = ToolMock()
    mock.add("get_weather", {"city": "北京"}, raises=ToolError("no data"))
    result = run(mock, call("get_weather", city="北京"), "No weather data, sorry.")
    (res,) = result.trace.tool_results
    assert (res.status, res.error_type, res.content, res.mocked) == (
        "error",
        "ToolError",
        "Error (ToolError): no data",
        True,
    )
    assert result.output == "No weather data, sorry."


def test_match_specs_in_files_use_the_eval_matchers(tmp_path):
    path = tmp_path / "fixtures.yaml"
    path.write_text(
        "fixtures:\n"
        "  - tool: search_docs\n"
        "    arguments: {query: leave, user_id: anonymous}\n"
        "    match: {top_k: {range: [1, 20]}}\n"
        "    returns: [policy.md]\n"
    )
    mock = ToolMock.from_file(path)
    answer = handler(mock, search_docs)
    assert answer(query="leave", top_k=20, user_id="anonymous") == ["policy.md"]
    with pytest.raises(MissingFixture) as info:
        answer(query="leave", top_k=50, user_id="anonymous")
    assert "  ✗ top_k: expected a number in range [1, 20], got 50" in str(info.value)
    assert (
        f"Closest fixture ({path}:2: search_docs(query='leave', user_id=***, top_k=range(1, 20))):"
        in str(info.value)
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("fixtures:\n  - tool: search_docs\n    match: {top_k: {range: x}}\n")
    with pytest.raises(ConfigError) as error:
        ToolMock.from_file(bad)
    assert error.value.problems == [
        f'{bad}:2: match.top_k.range: must be [low, high] (null for an open end), got "x"'
    ]


def test_indexed_and_matcher_fixtures_keep_insertion_order():
    @tool
    def configure(count: float, flag: bool, options: dict[str, list[int]]) -> str:
        """Configure.

        Args:
            count: A number.
            flag: A switch.
            options: Nested options.
        """
        return "real"

    mock = ToolMock()
    mock.add(
        "configure", {"count": ANY, "flag": True, "options": {"a": [1]}}, returns="matcher", times=1
    )
    mock.add("configure", {"count": 12, "flag": True, "options": {"a": [1]}}, returns="plain")
    mock.add("configure", {"count": 12, "flag": False, "options": {"a": [1]}}, returns="flag off")
    answer = handler(mock, configure)
    call_args = {"count": 12.0, "flag": True, "options": {"a": [1]}}
    assert answer(**call_args) == "matcher"  # first in order, even though not indexed
    assert answer(**call_args) == "plain"  # 12 matches 12.0
    assert answer(count=12.0, flag=False, options={"a": [1]}) == "flag off"
    with pytest.raises(MissingFixture):
        answer(count=12.0, flag=True, options={"a": [2]})
    # Fixtures added later join the index.
    mock.add("configure", {"count": 1, "flag": True, "options": {}}, returns="late")
    assert answer(count=1.0, flag=True, options={}) == "late"


def test_booleans_never_match_numbers_even_through_the_index():
    @tool
    def set_level(level: int | bool) -> str:
        """Set a level.

        Args:
            level: The level.
        """
        return "real"

    mock = ToolMock()
    mock.add("set_level", {"level": 1}, returns="one")
    answer = handler(mock, set_level)
    assert answer(level=1) == "one"
    with pytest.raises(MissingFixture, match="expected 1, got true"):
        answer(level=True)
