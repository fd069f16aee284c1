"""The conversions for outside material: BFCL possible answers and agentevals trajectories.

Both return a :class:`Verdict`; both compile into the matchers of this package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolproof._matching._calls import (
    ArgumentsMatcher,
    CallSpec,
    Pairing,
    SeenCall,
    as_call,
    cap_reasons,
    compile_order,
    order_reasons,
)
from toolproof._matching._specs import bad_mode
from toolproof._matching._values import (
    ARGS_MODES,
    BFCL_IGNORED_CHARACTERS,
    ORDER_MODES,
    ArgsMode,
    BaseMatcher,
    Equals,
    Explanation,
    OrderMode,
    article,
    diff_values,
    json_equal,
    show_value,
)
from toolproof.errors import ConfigError


@dataclass(slots=True)
class Verdict:
    """The outcome of a match: ``ok`` and, when not ok, the reasons.

    Attributes:
        ok: Whether the actual calls match the expectation.
        reasons: What differs, each stating expected and actual (empty when ``ok``).
    """

    ok: bool
    reasons: list[str] = field(default_factory=list)

    @classmethod
    def from_reasons(cls, reasons: list[str]) -> Verdict:
        """``Verdict(ok=not reasons, reasons=reasons)``."""
        return cls(not reasons, reasons)

    def __str__(self) -> str:
        if self.ok:
            return "match"
        return "no match:\n" + "\n".join(f"  - {reason}" for reason in self.reasons)


# ---- agentevals-style trajectories ---------------------------------------------------

ArgsOverride = str | Sequence[str] | Callable[[Mapping[str, Any], Mapping[str, Any]], Any]


class _KeyPaths:
    """Compare only some (dotted) key paths of the arguments, by JSON equality."""

    __slots__ = ("expected", "paths")

    def __init__(self, expected: Mapping[str, Any], paths: Sequence[str]) -> None:
        self.expected = expected
        self.paths = [(path, path.split(".")) for path in paths]

    def __call__(self, actual: Mapping[str, Any] | None) -> list[str]:
        reasons = []
        for path, parts in self.paths:
            want, got = _walk(self.expected, parts), _walk(actual or {}, parts)
            if want is _ABSENT and got is _ABSENT:
                continue
            if want is _ABSENT:
                reasons.append(f"argument '{path}': expected it absent, got {show_value(got)}")
            elif got is _ABSENT:
                reasons.append(f"missing argument '{path}' (expected {show_value(want)})")
            elif not json_equal(want, got):
                where, message = diff_values(want, got)
                reasons.append(f"argument '{path}{where}': {message}")
        return reasons

    def describe(self) -> str:
        return (
            ", ".join(
                f"{path}={show_value(_walk(self.expected, parts))}" for path, parts in self.paths
            )
            + ", ..."
        )


_ABSENT: Any = object()


def _walk(value: Any, parts: Sequence[str]) -> Any:
    for part in parts:
        if not isinstance(value, Mapping) or part not in value:
            return _ABSENT
        value = value[part]
    return value


class _CustomArgs:
    __slots__ = ("expected", "function")

    def __init__(self, function: Callable[..., Any], expected: Mapping[str, Any]) -> None:
        self.function = function
        self.expected = expected

    def __call__(self, actual: Mapping[str, Any] | None) -> list[str]:
        outcome = self.function(self.expected, actual or {})
        if outcome is None or outcome is True:
            return []
        if outcome is False:
            name = getattr(self.function, "__name__", "the custom comparison")
            expected = show_value(self.expected)
            return [f"{name} rejected arguments {show_value(actual)} (expected {expected})"]
        return [str(outcome)]

    def describe(self) -> str:
        return show_value(self.expected)[1:-1] if self.expected else ""


@dataclass(slots=True)
class _Msg:
    role: str
    calls: list[SeenCall] | None  # None: no tool calls


def _read_messages(messages: Iterable[Any], side: str) -> list[_Msg]:
    out: list[_Msg] = []
    index = 0
    for position, message in enumerate(messages):
        if isinstance(message, Mapping):
            role, raw_calls = message.get("role"), message.get("tool_calls")
        else:
            role, raw_calls = getattr(message, "role", None), getattr(message, "tool_calls", None)
        if not isinstance(role, str):
            raise ConfigError(
                f"{side}_messages[{position}] has no role: OpenAI-format messages need "
                '"role" (user, assistant, tool, system)'
            )
        calls: list[SeenCall] | None = None
        if raw_calls:
            calls = []
            for number, raw in enumerate(raw_calls):
                try:
                    call = as_call(raw, index)
                except TypeError as exc:
                    raise ConfigError(
                        f"{side}_messages[{position}].tool_calls[{number}]: {exc}"
                    ) from None
                if side == "expected" and call.error is not None:
                    raise ConfigError(
                        f"expected_messages[{position}].tool_calls[{number}] ({call.name}): "
                        f"arguments are {call.error}"
                    )
                calls.append(call)
                index += 1
        out.append(_Msg(role, calls))
    return out


def _trajectory_spec(
    call: SeenCall, args: str, overrides: Mapping[str, ArgsOverride | None] | None
) -> CallSpec:
    override = overrides.get(call.name) if overrides else None
    literal = {key: Equals(value) for key, value in call.arguments.items()}
    if not override:
        return CallSpec(call.name, ArgumentsMatcher(literal, args))
    if isinstance(override, str):
        if override not in ARGS_MODES:
            raise ConfigError(
                f"invalid args_by_tool[{call.name!r}]: {bad_mode(override, ARGS_MODES)} "
                "(or give a list of key paths, or a function)"
            )
        return CallSpec(call.name, ArgumentsMatcher(literal, override))
    if callable(override):
        return CallSpec(call.name, _CustomArgs(override, call.arguments))
    return CallSpec(call.name, _KeyPaths(call.arguments, list(override)))


def _describe_message(message: _Msg) -> str:
    if message.calls:
        calls = ", ".join(c.signature() for c in message.calls)
        return f"an {message.role} message calling {calls}"
    if message.role == "assistant":
        return "an assistant message without tool calls"
    return article(f"{message.role} message")


def _strict_messages(
    expected: Sequence[_Msg], actual: Sequence[_Msg], specs: Mapping[int, CallSpec]
) -> list[str]:
    if len(expected) != len(actual):
        reasons = [f"expected {len(expected)} messages, got {len(actual)}"]
        for number, (want, got) in enumerate(zip(expected, actual, strict=False), start=1):
            if want.role != got.role or bool(want.calls) != bool(got.calls):
                reasons.append(
                    f"first difference at message #{number}: expected "
                    f"{_describe_message(want)}, got {_describe_message(got)}"
                )
                break
        else:
            shorter = min(len(expected), len(actual)) + 1
            extra = expected[shorter - 1] if len(expected) > len(actual) else actual[shorter - 1]
            which = "missing" if len(expected) > len(actual) else "unexpected"
            reasons.append(f"{which} message #{shorter}: {_describe_message(extra)}")
        return reasons
    reasons = []
    for number, (want, got) in enumerate(zip(expected, actual, strict=True), start=1):
        if want.role != got.role or bool(want.calls) != bool(got.calls):
            reasons.append(
                f"message #{number}: expected {_describe_message(want)}, "
                f"got {_describe_message(got)}"
            )
        elif want.calls and got.calls:
            pairing = Pairing([specs[c.index] for c in want.calls], got.calls)
            if len(want.calls) != len(got.calls):
                reasons.append(
                    f"message #{number}: expected {len(want.calls)} tool calls "
                    f"({', '.join(c.name for c in want.calls)}), got {len(got.calls)} "
                    f"({', '.join(c.name for c in got.calls)})"
                )
            problems = pairing.unpaired_reasons(pair_names=True)
            reasons += [f"message #{number}: {problem}" for problem in problems]
    return reasons


def match_trajectory(
    expected_messages: Iterable[Any],
    actual_messages: Iterable[Any],
    *,
    order: OrderMode = "strict",
    args: ArgsMode = "exact",
    args_by_tool: Mapping[str, ArgsOverride | None] | None = None,
) -> Verdict:
    """Compare two trajectories of OpenAI-format messages (agentevals-style).

    Only tool calls are compared: message text, tool results and call ids never are.
    ``order="strict"`` also requires the same messages (count, roles, and which assistant
    messages call tools), with each message's calls paired in any order (they are parallel
    calls); the other modes compare the calls of all messages flattened, as
    :func:`match_order` does. Expected arguments are literal values (JSON equality:
    ``1 == 1.0``, ``true != 1``).

    Coming from agentevals? Its ``superset``/``subset`` name the *actual* trajectory, toolproof
    names the *expectation*: agentevals' ``trajectory_match_mode="superset"`` is
    ``order="subset"`` here. ``docs/matching.md`` has the full table.

    Args:
        expected_messages: The reference trajectory: dicts with ``role`` and, for assistant
            messages, ``tool_calls[{function: {name, arguments}}]``, or ``Message`` objects.
        actual_messages: The trajectory to check, in the same forms.
        order: ``strict`` (default), ``in_order``, ``unordered``, ``subset`` (every expected
            call was made, extras allowed) or ``superset`` (every actual call was expected).
        args: How arguments compare: ``exact`` (default), ``subset`` (expected arguments
            present and equal, extras allowed), ``superset`` (actual arguments all expected
            and equal) or ``ignore``.
        args_by_tool: Per-tool overrides: a mode, a list of (dotted) key paths to compare
            (only those), or a function ``(expected_args, actual_args) -> bool | str | None``
            (``True``/``None`` = match, a string = the reason).

    Returns:
        The verdict, with the reasons when the trajectories do not match.

    Raises:
        ConfigError: A mode is invalid, or the expected trajectory cannot be read.
    """
    if order not in ORDER_MODES:
        raise ConfigError(f"invalid order: {bad_mode(order, ORDER_MODES)}")
    if args not in ARGS_MODES:
        raise ConfigError(f"invalid args: {bad_mode(args, ARGS_MODES)}")
    expected = _read_messages(expected_messages, "expected")
    actual = _read_messages(actual_messages, "actual")
    specs = {
        call.index: _trajectory_spec(call, args, args_by_tool)
        for message in expected
        for call in message.calls or ()
    }
    if order == "strict":
        return Verdict.from_reasons(cap_reasons(_strict_messages(expected, actual, specs)))
    flat_specs = [specs[index] for index in sorted(specs)]
    flat_calls = [call for message in actual for call in message.calls or ()]
    return Verdict.from_reasons(cap_reasons(order_reasons(flat_specs, flat_calls, order)))


# ---- BFCL possible answers -----------------------------------------------------------

_BFCL_TYPES = {
    "string": "string",
    "integer": "integer",
    "float": "number",
    "boolean": "boolean",
    "array": "array",
    "tuple": "array",
    "dict": "object",
    "any": "string",
}
_PY_TYPES: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
    type(None): "null",
}
_OMIT = ""  # BFCL's mark, among the acceptable values, for "the parameter may be left out"


def _is_omit(value: Any) -> bool:
    return isinstance(value, str) and value == _OMIT


def _bfcl_function(function: Mapping[str, Any]) -> Mapping[str, Any]:
    inner = function.get("function")
    return inner if isinstance(inner, Mapping) else function


def _bfcl_text(value: str) -> dict[str, Any]:
    return {"text": value, "ignore": BFCL_IGNORED_CHARACTERS}


def _bfcl_scalar(value: Any) -> dict[str, Any]:
    """A string compared the way BFCL standardises strings; anything else by equality."""
    return _bfcl_text(value) if isinstance(value, str) else {"equals": value}


def _answer_type(values: Sequence[Any]) -> str | None:
    """The type of the first acceptable value that is not ``""`` (how BFCL spots variables)."""
    for value in values:
        if not _is_omit(value):
            return _PY_TYPES.get(type(value))
    return None


def _types(schema_type: str, answer_type: str | None) -> list[str]:
    """The schema's type plus, for a "variable" answer, the answer's own type."""
    types = [schema_type]
    if answer_type is not None and answer_type != schema_type:
        types.append(answer_type)
    if {"integer", "number"} <= set(types):
        types = [t for t in types if t != "integer"]
    return types


def _type_spec(types: list[str]) -> str | list[str]:
    return types[0] if len(types) == 1 else types


def _bfcl_list(value: Sequence[Any], items_type: str | None, *, typed: bool) -> list[Any]:
    """A list answer: item by item, in order; with ``typed``, each item of the schema's type."""
    schema_type = _BFCL_TYPES.get(str(items_type))
    # BFCL checks the items' types one level deep, with the same "variable" escape as for
    # parameters (items of another type than the schema's, in the answer, are allowed).
    item_types = _type_spec(_types(schema_type, _answer_type(value))) if schema_type else None
    items: list[Any] = []
    for item in value:
        if items_type == "dict" and isinstance(item, dict):
            items.append(_bfcl_dict(item))  # an object, compared key by key
            continue
        spec = {"equals": item} if items_type == "dict" else _bfcl_scalar(item)
        items.append({"type": item_types, **spec} if typed and item_types else spec)
    return items


def _bfcl_dict(answer: Mapping[str, Any]) -> dict[str, Any]:
    """A dict answer ``{key: [acceptable...]}`` as ``{fields: {key: spec}}`` (exact keys)."""
    fields: dict[str, Any] = {}
    for key, acceptable in answer.items():
        values = acceptable if isinstance(acceptable, list) else [acceptable]
        spec: dict[str, Any] = {"one_of": [_bfcl_scalar(v) for v in values]}
        fields[key] = {"optional": spec} if any(map(_is_omit, values)) else spec
    return {"fields": fields, "mode": "exact"}


def _bfcl_parameter(
    prop: Mapping[str, Any], values: list[Any], *, omittable: bool, where: str
) -> dict[str, Any]:
    """One parameter's acceptable values as a spec that accepts what BFCL's checker accepts."""
    bfcl_type = str(prop.get("type"))
    schema_type = _BFCL_TYPES.get(bfcl_type)
    if schema_type is None:
        raise ConfigError(
            f"{where}: unknown BFCL type {prop.get('type')!r}; known: {', '.join(_BFCL_TYPES)}"
        )
    answer_type = _answer_type(values)
    # BFCL's "variable" escape: acceptable values of another type than the schema's (a
    # variable name for a number, or null) are accepted as that type and compared exactly.
    variable = answer_type is not None and answer_type != schema_type
    types = _types(schema_type, answer_type)
    if None in values and "null" not in types:
        types.append("null")  # null listed: the model may send null, whatever the type
    options: list[Any]
    if variable:
        options = [{"equals": v} for v in values]
    else:
        items = prop.get("items")
        items_type = str(items.get("type")) if isinstance(items, Mapping) else None
        # BFCL's item type check passes outright when some acceptable value is not a list.
        typed = all(isinstance(v, list) for v in values)
        options = []
        for value in values:
            if schema_type == "array" and _is_omit(value):
                options.append({"equals": []})  # BFCL reads "" as an empty list here
            elif isinstance(value, list):
                options.append(_bfcl_list(value, items_type, typed=typed))
            elif isinstance(value, dict):
                options.append(_bfcl_dict(value))
            else:
                options.append(_bfcl_scalar(value))
    spec: dict[str, Any] = {"type": _type_spec(types), "one_of": options}
    return {"optional": spec} if omittable else spec


class _NoValue(BaseMatcher):
    """A parameter of the possible answer that no call can get right (BFCL rejects it)."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem

    def explain(self, actual: Any) -> Explanation | None:
        return "", f"{self.problem}, so no value passes"

    def describe(self) -> str:
        return f"<{self.problem}>"


def _bfcl_calls(
    functions: Sequence[Mapping[str, Any]],
    possible_answer: Sequence[Mapping[str, Mapping[str, Sequence[Any]]]],
    *,
    underscore_names: bool,
    impossible: list[str] | None,
) -> list[dict[str, Any]]:
    """The expected calls; with ``impossible``, parameters no call can pass get a ``_NoValue``.

    Without ``impossible`` such a possible answer raises ``ConfigError``; with it, the
    problems are appended there and the specs reject every call, as BFCL's checker does.
    """
    docs = {str(f.get("name")): f for f in map(_bfcl_function, functions)}
    calls: list[dict[str, Any]] = []
    for number, entry in enumerate(possible_answer):
        where = f"possible_answer[{number}]"
        if not isinstance(entry, Mapping) or len(entry) != 1:
            raise ConfigError(f"{where}: expected {{function_name: {{parameter: [values]}}}}")
        ((name, answers),) = entry.items()
        doc = docs.get(name)
        if doc is None:
            raise ConfigError(
                f"{where}: function {name!r} is not among the functions "
                f"({', '.join(docs) or 'none'})"
            )
        parameters = doc.get("parameters") or {}
        properties = parameters.get("properties") or {}
        required = set(parameters.get("required") or ())
        arguments: dict[str, Any] = {}
        problems: dict[str, str] = {}
        for param in sorted(required - set(answers)):
            # The call must give it (it is required) but may not (the answer does not list it).
            problems[param] = f"{name} requires {param!r} but the possible answer does not list it"
        for param, listed in answers.items():
            values = list(listed) if isinstance(listed, (list, tuple)) else [listed]
            omittable = any(map(_is_omit, values))
            if param not in properties:
                # Giving it is an unexpected parameter; leaving it out is fine only with "".
                if not omittable:
                    problems[param] = (
                        f"the possible answer lists {param!r}, which {name} does not declare"
                    )
                continue
            arguments[param] = _bfcl_parameter(
                properties[param],
                values,
                omittable=omittable and param not in required,
                where=f"{where}.{param}",
            )
        for param, problem in problems.items():
            if impossible is None:
                raise ConfigError(f"{where}: {problem}, so no call could pass")
            impossible.append(f"{where}: {problem}, so no call can pass")
            arguments[param] = _NoValue(problem)
        call_name = name.replace(".", "_") if underscore_names else name
        calls.append({"name": call_name, "arguments": arguments, "mode": "exact"})
    return calls


def bfcl_expected_calls(
    functions: Sequence[Mapping[str, Any]],
    possible_answer: Sequence[Mapping[str, Mapping[str, Sequence[Any]]]],
    *,
    underscore_names: bool = False,
) -> list[dict[str, Any]]:
    """Translate a BFCL possible answer into toolproof's expected-call specs.

    The result is plain data in the suite's YAML form, one ``{name, arguments, mode:
    exact}`` per expected call, so BFCL material can be turned into suites. Per parameter:
    the schema type (BFCL's ``float`` accepts integers, ``integer`` does not accept ``5.0``
    and booleans are never numbers), ``one_of`` the acceptable values (strings compared
    ignoring case and the characters ``" ,./-_*^"`` as BFCL does, lists in order with their
    items' type, dicts key by key), ``null`` when ``None`` is acceptable, and ``optional``
    when ``""`` is acceptable and the schema does not require the parameter. A parameter the
    function does not declare, listed with ``""``, is left out (a call giving it fails).

    Args:
        functions: The BFCL function docs (``{name, parameters: {properties, required}}``;
            OpenAI ``{type: function, function: {...}}`` also works).
        possible_answer: ``[{function_name: {parameter: [acceptable values...]}}]``.
        underscore_names: Expect ``a_b`` for a function named ``a.b`` (BFCL does this for
            native function-calling models, whose APIs do not allow dots in names).

    Returns:
        The expected calls, ready for :func:`compile_calls`.

    Raises:
        ConfigError: The answer names a function the functions do not declare, or no call
            could pass it (it requires a parameter the function does not declare, or leaves
            out one the schema requires), so a suite made from it could never pass.
            :func:`match_bfcl` rejects the calls instead, as BFCL does.
    """
    return _bfcl_calls(
        functions, possible_answer, underscore_names=underscore_names, impossible=None
    )


def match_bfcl(
    functions: Sequence[Mapping[str, Any]],
    possible_answer: Sequence[Mapping[str, Mapping[str, Sequence[Any]]]],
    calls: Iterable[Any],
    *,
    underscore_names: bool = False,
) -> Verdict:
    """Check tool calls against a BFCL possible answer (Berkeley Function Calling Leaderboard).

    As BFCL's AST checker: the number of calls must equal the number of expected calls, and
    the calls must pair one to one (in any order) with the expected ones, each with the
    expected name, no parameter outside the answer or the schema, every required parameter
    and every parameter without ``""`` among its values present, the schema's types (an
    integer passes for a float; ``null`` passes where ``None`` is acceptable) and an
    acceptable value. Unlike BFCL's greedy pairing, the pairing is a maximum bipartite
    matching, so a valid pairing is never missed. ``docs/matching.md`` lists every rule.

    Example:
        ```python
        functions = [{"name": "math.gcd", "parameters": {"type": "dict", "properties": {
            "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}]
        answer = [{"math.gcd": {"a": [36], "b": [48]}}]
        match_bfcl(functions, answer, [{"math.gcd": {"a": 36, "b": 48}}]).ok  # True
        ```

    Args:
        functions: The function docs offered to the model.
        possible_answer: BFCL's ``[{function_name: {parameter: [acceptable values]}}]``
            (``""`` among the values: the parameter may be omitted).
        calls: The model's calls: BFCL's ``[{name: {args}}]``, ``{"name", "arguments"}``
            mappings, OpenAI tool calls or ``ToolCall`` objects.
        underscore_names: Expect ``a_b`` for a function named ``a.b`` (native
            function-calling APIs do not allow dots in names).

    Returns:
        The verdict, with one reason per expected call that found no match and per extra
        call. A possible answer no call can pass (it lists a parameter the function does
        not declare, without ``""``, or leaves out one the schema requires) rejects every
        call, as BFCL does, and its first reason says why.

    Raises:
        ConfigError: The possible answer names a function that is not among the functions,
            or is not of BFCL's form.
    """
    impossible: list[str] = []
    expected = _bfcl_calls(
        functions, possible_answer, underscore_names=underscore_names, impossible=impossible
    )
    matcher = compile_order(expected, "unordered", args="exact", where="possible_answer")
    actual = [as_call(item, index) for index, item in enumerate(calls)]
    reasons = order_reasons(matcher.calls, actual, "unordered")
    if reasons and not underscore_names:
        dotted = {c["name"].replace(".", "_"): c["name"] for c in expected if "." in c["name"]}
        for call in actual:
            if call.name in dotted:
                reasons.append(
                    f"hint: {call.name} is {dotted[call.name]} with dots as underscores; "
                    "pass underscore_names=True for models whose API cannot send dots"
                )
                break
    return Verdict.from_reasons(cap_reasons([*impossible, *reasons]))
