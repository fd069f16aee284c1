"""@tool: schemas from signatures and docstrings, validation, and signature errors."""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass
from typing import Any, Literal, Optional

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from toolproof import Tool, UserError, tool
from toolproof._tools import ArgumentsInvalid


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Address(BaseModel):
    city: str
    postcode: Optional[str] = None  # noqa: UP045 - Optional must keep working


@dataclass
class Window:
    start: str
    end: str


def test_schema_of_the_hr_assistant_example() -> None:
    assert multiply_numbers.schema == {
        "type": "function",
        "function": {
            "name": "multiply_numbers",
            "description": "Multiply two numbers.",
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"type": "number", "description": "The first factor."},
                    "b": {"type": "number", "description": "The second factor."},
                },
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        },
    }
    assert isinstance(multiply_numbers, Tool)
    assert multiply_numbers(12, 8) == 96  # calling the tool calls the function
    assert multiply_numbers.__name__ == "multiply_numbers"


def test_rich_types_defaults_and_nested_models() -> None:
    @tool(name="search_flights", side_effects=False, timeout=5)
    def search(
        origin: str,
        cabin: Literal["economy", "business"] = "economy",
        unit: Unit = Unit.CELSIUS,
        stops: Optional[int] = None,  # noqa: UP045
        tags: list[str] | None = None,
        extra: dict[str, int] | None = None,
        address: Address | None = None,
        window: Window | None = None,
    ) -> list[str]:
        """Search flights.

        Args:
            origin: IATA code of the departure airport.
            cabin: Cabin class.
        """
        return []

    params = search.parameters
    assert search.name == "search_flights" and search.timeout == 5
    assert params["required"] == ["origin"]
    props = params["properties"]
    assert props["origin"] == {
        "type": "string",
        "description": "IATA code of the departure airport.",
    }
    assert (
        props["cabin"]["enum"] == ["economy", "business"] and props["cabin"]["default"] == "economy"
    )
    assert params["$defs"]["Unit"]["enum"] == ["celsius", "fahrenheit"]
    assert props["stops"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert props["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}
    assert props["extra"]["anyOf"][0] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert params["$defs"]["Address"]["required"] == ["city"]
    assert params["$defs"]["Window"]["required"] == ["start", "end"]
    assert "title" not in params and "title" not in props["origin"]
    jsonschema.Draft202012Validator.check_schema(params)

    kwargs = search.validate(
        {
            "origin": "PEK",
            "unit": "fahrenheit",
            "address": {"city": "Beijing"},
            "window": {"start": "a", "end": "b"},
        }
    )
    assert kwargs["unit"] is Unit.FAHRENHEIT
    assert kwargs["address"] == Address(city="Beijing")
    assert kwargs["window"] == Window("a", "b")
    assert kwargs["cabin"] == "economy"


def test_numpy_and_rest_docstrings() -> None:
    @tool
    def numpy_style(query: str, limit: int = 10) -> str:
        """Search the knowledge base.

        Parameters
        ----------
        query : str
            What to look for.
        limit : int
            Most results.
        """
        return query

    @tool
    def rest_style(query: str) -> str:
        """Search the knowledge base.

        :param query: What to look for.
        """
        return query

    assert numpy_style.parameters["properties"]["query"]["description"] == "What to look for."
    assert numpy_style.parameters["properties"]["limit"]["description"] == "Most results."
    assert rest_style.parameters["properties"]["query"]["description"] == "What to look for."
    assert rest_style.description == "Search the knowledge base."


def test_async_tool_is_detected() -> None:
    @tool
    async def fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: The address.
        """
        await asyncio.sleep(0)
        return url

    assert fetch.is_async
    assert asyncio.run(fetch("x")) == "x"


def test_every_signature_problem_is_listed_once() -> None:
    def broken(a, *args, b: "NoSuchType" = 1, **kwargs):  # type: ignore[no-untyped-def]  # noqa: F821, UP037
        pass

    with pytest.raises(UserError) as info:
        tool(broken)
    message = str(info.value)
    assert message.splitlines()[0] == (
        "cannot make a tool from test_every_signature_problem_is_listed_once.<locals>.broken:"
    )
    assert "  - b: type hint cannot be resolved: name 'NoSuchType' is not defined" in message
    assert "  - no description: add a docstring" in message
    assert "  - a: missing type hint" in message
    assert "  - *args: variable positional arguments cannot be described to a model" in message
    assert "  - **kwargs: variable keyword arguments cannot be described to a model" in message


def test_docstring_documenting_a_missing_parameter_is_a_problem() -> None:
    def f(city: str) -> str:
        """Weather.

        Args:
            city: The city.
            country: Not a parameter any more.
        """
        return city

    with pytest.raises(UserError, match="docstring documents 'country', which is not a parameter"):
        tool(f)


def test_unsupported_parameter_type_is_reported() -> None:
    class Opaque:
        pass

    def f(thing: Opaque) -> None:
        """Do something."""

    with pytest.raises(UserError, match="a parameter type cannot be turned into JSON Schema"):
        tool(f)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"errors": (ValueError, "nope")}, "must list exception classes"),
        ({"extra": "allow"}, "must be 'forbid' or 'ignore'"),
        ({"timeout": 0}, "must be a positive number of seconds"),
        ({"name": "has space"}, "is not valid"),
    ],
)
def test_bad_decorator_options(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        tool(**kwargs)(multiply_numbers.function)


def test_validation_messages_are_written_for_the_model() -> None:
    with pytest.raises(ArgumentsInvalid) as info:
        multiply_numbers.validate({"a": "twelve", "user_id": 123, "options": {"format": "json"}})
    assert str(info.value) == (
        "Invalid arguments for tool 'multiply_numbers': 'a': Input should be a valid number, "
        "unable to parse string as a number (got 'twelve'); missing required argument 'b'; "
        "unexpected arguments 'user_id', 'options'. This tool accepts: a, b."
    )


def test_extra_ignore_opts_out() -> None:
    @tool(extra="ignore")
    def lenient(user_id: int) -> int:
        """Look a user up.

        Args:
            user_id: The user.
        """
        return user_id

    assert lenient.validate({"user_id": 123, "options": {"format": "json"}}) == {"user_id": 123}
    assert "additionalProperties" not in lenient.parameters


def test_parameter_names_that_shadow_pydantic_attributes() -> None:
    @tool
    def odd(schema: str, model_config: int, copy: bool = False) -> str:
        """Odd names.

        Args:
            schema: A schema name.
        """
        return schema

    assert odd.validate({"schema": "s", "model_config": 1}) == {
        "schema": "s",
        "model_config": 1,
        "copy": False,
    }
    assert set(odd.parameters["properties"]) == {"schema", "model_config", "copy"}


def test_schema_hash_changes_with_the_schema() -> None:
    def f(a: int) -> int:
        """F."""
        return a

    def g(a: str) -> int:
        """F."""
        return 0

    first, again, other = tool(name="f")(f), tool(name="f")(f), tool(name="f")(g)
    assert first.schema_hash == again.schema_hash != other.schema_hash
    assert len(first.schema_hash) == 16


# -- property test: generated signatures give valid schemas that agree with validation -----------

_TYPES: dict[str, tuple[Any, st.SearchStrategy[Any], str]] = {
    "int": (int, st.integers(-(10**6), 10**6), "integer"),
    "float": (float, st.floats(allow_nan=False, allow_infinity=False, width=32), "number"),
    "str": (str, st.text(max_size=20), "string"),
    "bool": (bool, st.booleans(), "boolean"),
    "list_str": (list[str], st.lists(st.text(max_size=5), max_size=3), "array"),
    "lit": (Literal["x", "y"], st.sampled_from(["x", "y"]), "string"),
}


@settings(max_examples=60, deadline=None)
@given(
    spec=st.lists(
        st.tuples(st.sampled_from(sorted(_TYPES)), st.booleans()), min_size=0, max_size=5
    ),
    data=st.data(),
)
def test_generated_signatures(spec: list[tuple[str, bool]], data: st.DataObject) -> None:
    import inspect

    params = []
    annotations: dict[str, Any] = {}
    for index, (kind, optional) in enumerate(spec):
        annotation, _, _ = _TYPES[kind]
        default = inspect.Parameter.empty
        if optional:
            default = data.draw(_TYPES[kind][1])
        params.append(
            inspect.Parameter(
                f"p{index}", inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
        annotations[f"p{index}"] = annotation

    def func(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    func.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    func.__annotations__ = annotations
    func.__doc__ = "Generated."
    t = tool(name="generated")(func)
    schema = t.parameters
    jsonschema.Draft202012Validator.check_schema(schema)
    assert sorted(schema.get("required", [])) == sorted(
        f"p{i}" for i, (_, optional) in enumerate(spec) if not optional
    )
    for i, (kind, _) in enumerate(spec):
        assert _TYPES[kind][2] == schema["properties"][f"p{i}"]["type"]

    arguments = {f"p{i}": data.draw(_TYPES[kind][1]) for i, (kind, _) in enumerate(spec)}
    jsonschema.validate(arguments, schema)  # what the schema accepts, the validator accepts
    assert set(t.validate(arguments)) == {f"p{i}" for i in range(len(spec))}
    with pytest.raises(ArgumentsInvalid, match="unexpected argument 'zzz'"):
        t.validate({**arguments, "zzz": 1})
