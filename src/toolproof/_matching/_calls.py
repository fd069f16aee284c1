"""Argument sets and call trajectories: expected arguments and calls against actual ones.

``subset``/``superset`` always name the *expectation* relative to what happened. Calls are
paired by maximum bipartite matching, so a valid pairing is always found when one exists.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from toolproof._matching._specs import Compiler, bad_mode, join_path
from toolproof._matching._values import (
    ARGS_MODES,
    MAX_REASONS,
    ORDER_MODES,
    ArgsMode,
    OrderMode,
    describe_matcher,
    explain_matcher,
    got_text,
    is_optional,
    key_path,
    show_value,
)
from toolproof.errors import ConfigError


class ArgumentsMatcher:
    """Expected arguments, compiled: ``matcher(actual_arguments)`` returns reasons.

    Build it with :func:`compile_arguments`. Reasons name the argument and compare expected
    with actual: ``argument 'b': expected 8, got 9``, ``missing argument 'b' (expected 8)``,
    ``unexpected argument 'c' = 1 (mode 'exact' allows only: a, b)``.
    """

    __slots__ = ("fields", "mode")

    def __init__(self, fields: Mapping[str, Any], mode: str) -> None:
        self.fields = dict(fields)
        self.mode = mode

    def __call__(self, actual: Any) -> list[str]:
        mode = self.mode
        if mode == "ignore":
            return []
        if actual is None:
            actual = {}
        if not isinstance(actual, Mapping):
            return [f"expected arguments as an object, {got_text(actual)}"]
        reasons: list[str] = []
        fields = self.fields
        for key, matcher in fields.items():
            if key not in actual:
                if mode == "superset" or is_optional(matcher):
                    continue
                reasons.append(f"missing argument '{key}' (expected {describe_matcher(matcher)})")
                continue
            explanation = explain_matcher(matcher, actual[key])
            if explanation is not None:
                reasons.append(f"argument '{key}{explanation[0]}': {explanation[1]}")
        if mode != "subset":
            for key, value in actual.items():
                if key not in fields:
                    allowed = (
                        f"allows only: {', '.join(map(str, fields))}"
                        if fields
                        else "allows no arguments"
                    )
                    shown = show_value(value)
                    reasons.append(
                        f"unexpected argument '{key}' = {shown} (mode '{mode}' {allowed})"
                    )
        return reasons

    def describe(self) -> str:
        """``a=12, b=type(integer)`` (with ``, ...`` when extra arguments are allowed)."""
        if self.mode == "ignore":
            return "..."
        parts = [f"{key}={describe_matcher(m)}" for key, m in self.fields.items()]
        if self.mode == "subset":
            parts.append("...")
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"<arguments {self.describe()} mode={self.mode}>"


def _compile_arguments(
    compiler: Compiler, expected: Any, mode: Any, where: str
) -> ArgumentsMatcher:
    if mode not in ARGS_MODES:
        compiler.problem(where, bad_mode(mode, ARGS_MODES))
        mode = "subset"
    if expected is None:
        expected = {}
    if not isinstance(expected, Mapping):
        compiler.problem(
            where, f"expected arguments must be an object of name: spec, got {show_value(expected)}"
        )
        expected = {}
    fields = {
        key: compiler.value(spec, join_path(where, key_path(key))) for key, spec in expected.items()
    }
    return ArgumentsMatcher(fields, mode)


def compile_arguments(
    expected: Mapping[str, Any], *, mode: ArgsMode = "subset", where: str = ""
) -> ArgumentsMatcher:
    """Compile expected argument specs once, to check many calls.

    Args:
        expected: Argument name -> value spec (see :func:`compile_value_matcher`).
        mode: ``"subset"`` (default): the expected arguments must be present and match,
            extra actual arguments are allowed; ``"exact"``: the same keys (``optional`` ones
            may be absent); ``"superset"``: every actual argument must be expected and match,
            expected ones may be absent; ``"ignore"``: arguments are not checked.
        where: Where the specs come from, used to name bad specs.

    Returns:
        The compiled matcher; calling it with the actual arguments returns the reasons
        (``[]`` on a match).

    Raises:
        ConfigError: A spec or the mode is invalid.
    """
    compiler = Compiler()
    matcher = _compile_arguments(compiler, expected, mode, where)
    compiler.raise_if_problems()
    return matcher


def match_arguments(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    *,
    mode: ArgsMode = "subset",
    where: str = "",
) -> list[str]:
    """Check a call's arguments against expected argument specs.

    This compiles ``expected`` on every call; to check many calls against the same
    expectation, compile it once with :func:`compile_arguments`.

    Example:
        ```python
        match_arguments({"query": {"text": "leave policy"}, "top_k": {"max": 20}},
                        {"query": "Leave policy", "top_k": 50})
        # ["argument 'top_k': expected a number <= 20, got 50"]
        ```

    Args:
        expected: Argument name -> value spec.
        actual: The call's arguments.
        mode: ``exact``, ``subset`` (default), ``superset`` or ``ignore`` (see
            :func:`compile_arguments`).
        where: Where the specs come from, used to name bad specs.

    Returns:
        The reasons the arguments do not match; ``[]`` when they match.

    Raises:
        ConfigError: A spec or the mode is invalid.
    """
    return compile_arguments(expected, mode=mode, where=where)(actual)


# --------------------------------------------------------------------------------------
# Calls and trajectories
# --------------------------------------------------------------------------------------


class _ArgsCheck(Protocol):
    def __call__(self, actual: Mapping[str, Any] | None) -> list[str]: ...

    def describe(self) -> str: ...


@dataclass(frozen=True, slots=True)
class CallSpec:
    """One expected tool call: a name and, optionally, compiled argument expectations.

    Attributes:
        name: The tool name (exact, case-sensitive).
        arguments: The argument check (an :class:`ArgumentsMatcher`), or ``None`` when any
            arguments will do.
    """

    name: str
    arguments: _ArgsCheck | None = None

    def describe(self) -> str:
        """``search(query="x", ...)``, or ``search`` when any arguments will do."""
        if self.arguments is None:
            return self.name
        return f"{self.name}({self.arguments.describe()})"

    def check(self, call: Any) -> list[str]:
        """Reasons ``call`` is not this call (``[]`` when it is).

        Args:
            call: The actual call, in any form :func:`match_order` accepts.
        """
        if not isinstance(call, SeenCall):
            call = as_call(call, 0)
        if call.name != self.name:
            return [f"expected tool {self.name}, got {call.name}"]
        if self.arguments is None:
            return []
        if call.error is not None:
            return [f"arguments could not be read ({call.error})"]
        return self.arguments(call.arguments)


@dataclass(slots=True)
class SeenCall:
    name: str
    arguments: Mapping[str, Any]
    error: str | None
    index: int

    def signature(self) -> str:
        if self.error is not None:
            return f"{self.name}(<unreadable arguments>)"
        args = ", ".join(f"{k}={show_value(v, 40)}" for k, v in self.arguments.items())
        text = f"{self.name}({args})"
        return text if len(text) <= 120 else text[:119] + "…"

    def label(self) -> str:
        return f"call #{self.index + 1} {self.signature()}"


def _parse_arguments(raw: Any) -> tuple[Mapping[str, Any], str | None]:
    if raw is None:
        return {}, None
    if isinstance(raw, Mapping):
        return raw, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            return {}, f"not valid JSON: {exc}"
        if not isinstance(parsed, dict):
            return {}, f"not a JSON object: {show_value(parsed)}"
        return parsed, None
    return {}, f"arguments must be an object or JSON text, got {show_value(raw)}"


def as_call(item: Any, index: int) -> SeenCall:
    """Read one actual call in any of the accepted forms.

    A ``ToolCall``, an OpenAI tool call, ``{name, arguments}``, BFCL's ``{name: {args}}`` or a
    ``(name, arguments)`` pair.
    """
    name: Any
    if isinstance(item, Mapping):
        function = item.get("function")
        if isinstance(function, Mapping):
            name, raw = function.get("name"), function.get("arguments")
        elif "name" in item and isinstance(item.get("name"), str):
            name, raw = item["name"], item.get("arguments")
        elif len(item) == 1:
            ((name, raw),) = item.items()
        else:
            raise TypeError(
                f"cannot read a tool call from {show_value(item)}: expected a ToolCall, "
                '{"name": ..., "arguments": {...}}, an OpenAI tool call or {name: {args}}'
            )
        arguments, error = _parse_arguments(raw)
        return SeenCall(str(name), arguments, error, index)
    if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
        arguments, error = _parse_arguments(item[1])
        return SeenCall(item[0], arguments, error, index)
    name = getattr(item, "name", None)
    if isinstance(name, str) and hasattr(item, "arguments"):
        error = getattr(item, "arguments_error", None)
        return SeenCall(name, item.arguments, error, index)
    raise TypeError(f"cannot read a tool call from {item!r}")


def _compile_call(compiler: Compiler, item: Any, args: str, where: str) -> CallSpec:
    if isinstance(item, CallSpec):
        return item
    if isinstance(item, str):
        return CallSpec(item)
    if isinstance(item, Mapping):
        unknown = [k for k in item if k not in ("name", "arguments", "mode")]
        name = item.get("name")
        if unknown:
            compiler.problem(
                where,
                f"unknown key{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(k) for k in unknown)}; an expected call has name, "
                "arguments and mode",
            )
        if not isinstance(name, str) or not name:
            compiler.problem(where, f"an expected call needs a tool name, got {show_value(name)}")
            return CallSpec(str(name))
        if "arguments" not in item and "mode" not in item:
            return CallSpec(name)
        mode = item.get("mode", args)
        return CallSpec(
            name,
            _compile_arguments(
                compiler, item.get("arguments"), mode, join_path(where, ".arguments")
            ),
        )
    compiler.problem(
        where, f"an expected call is a tool name or {{name, arguments}}, got {show_value(item)}"
    )
    return CallSpec("?")


def compile_calls(
    expected: Iterable[str | Mapping[str, Any] | CallSpec],
    *,
    args: ArgsMode = "subset",
    where: str = "",
) -> list[CallSpec]:
    """Compile expected calls.

    Args:
        expected: Each a tool name (any arguments), a :class:`CallSpec`, or a mapping
            ``{name: ..., arguments: {arg: spec}, mode: exact|subset|superset|ignore}``.
        args: The argument mode of calls that give ``arguments`` but no ``mode``.
        where: Where the expectations come from, used to name bad specs.

    Returns:
        The compiled calls.

    Raises:
        ConfigError: An expected call or one of its specs is invalid.
    """
    compiler = Compiler()
    if args not in ARGS_MODES:
        compiler.problem(where, bad_mode(args, ARGS_MODES))
        args = "subset"
    calls = [
        _compile_call(compiler, item, args, f"{where}[{i}]") for i, item in enumerate(expected)
    ]
    compiler.raise_if_problems()
    return calls


class Pairing:
    """Which expected calls match which actual calls, and a maximum one-to-one pairing.

    Positions are indices into ``specs`` and ``calls``; reasons show each call's own
    ``index`` (its number in the whole trajectory).
    """

    def __init__(self, specs: Sequence[CallSpec], calls: Sequence[SeenCall]) -> None:
        self.specs = specs
        self.calls = calls
        by_name: dict[str, list[int]] = {}
        for position, call in enumerate(calls):
            by_name.setdefault(call.name, []).append(position)
        self.by_name = by_name
        self.adjacent: list[list[int]] = [
            [j for j in by_name.get(spec.name, ()) if not spec.check(calls[j])] for spec in specs
        ]
        self.spec_of, self.call_of = _max_matching(self.adjacent, len(calls))

    def unpaired_reasons(self, *, pair_names: bool = False) -> list[str]:
        """Reasons for the unpaired calls of both sides.

        An unpaired expected call and an unpaired actual call of the same tool are reported
        together as one mismatch (expected vs actual); with ``pair_names``, leftovers of
        different tools are paired too, in order (used inside one message).
        """
        specs, calls = self.specs, self.calls
        free = [j for j, i in enumerate(self.spec_of) if i == -1]
        reasons: list[str] = []
        unpaired: list[int] = []
        for i, j in enumerate(self.call_of):
            if j != -1:
                continue
            same = [k for k in free if calls[k].name == specs[i].name]
            if not same or self.adjacent[i]:
                unpaired.append(i)
                continue
            best = min(same, key=lambda k: len(specs[i].check(calls[k])))
            free.remove(best)
            reasons.append(
                f"{calls[best].label()} does not match the expected {specs[i].describe()}: "
                + "; ".join(specs[i].check(calls[best]))
            )
        if pair_names:
            while unpaired and free:
                i, j = unpaired.pop(0), free.pop(0)
                reasons.append(f"expected {specs[i].describe()}, got {calls[j].label()}")
        reasons += [self.missing_reason(i) for i in unpaired]
        return reasons + [self.extra_reason(j) for j in free]

    def missing_reason(self, i: int) -> str:
        spec, calls = self.specs[i], self.calls
        same = self.by_name.get(spec.name, [])
        if not same:
            made = ", ".join(c.name for c in calls[:12]) if calls else "none"
            if len(calls) > 12:
                made += ", …"
            return f"expected call {spec.describe()} was not made (calls made: {made})"
        if self.adjacent[i]:
            wanted = sum(1 for s in self.specs if s.name == spec.name)
            return (
                f"expected call {spec.describe()} was not made: {spec.name} was called "
                f"{len(self.adjacent[i])} time(s) with matching arguments, but {wanted} "
                f"{spec.name} calls are expected"
            )
        free = [j for j in same if self.spec_of[j] == -1]
        if not free:
            taken = ", ".join(calls[j].label() for j in same[:3])
            return (
                f"expected call {spec.describe()} was not made; the {spec.name} calls made "
                f"match other expected calls ({taken})"
            )
        best = min(free, key=lambda j: len(spec.check(calls[j])))
        return (
            f"expected call {spec.describe()} was not made; closest is {calls[best].label()}: "
            + "; ".join(spec.check(calls[best]))
        )

    def extra_reason(self, j: int) -> str:
        call, specs = self.calls[j], self.specs
        same = [i for i, s in enumerate(specs) if s.name == call.name]
        if not same:
            names = ", ".join(dict.fromkeys(s.name for s in specs)) or "none"
            return (
                f"unexpected {call.label()}: {call.name} is not an expected tool "
                f"(expected: {names})"
            )
        if any(j in self.adjacent[i] for i in same):
            made = len(self.by_name.get(call.name, ()))
            return (
                f"unexpected {call.label()}: {call.name} was called {made} times, "
                f"only {len(same)} expected"
            )
        best = min(same, key=lambda i: (self.call_of[i] != -1, len(specs[i].check(call))))
        return (
            f"unexpected {call.label()}: its arguments match no expected {call.name} call; "
            f"closest is {specs[best].describe()}: " + "; ".join(specs[best].check(call))
        )


def _max_matching(adjacent: Sequence[Sequence[int]], n_right: int) -> tuple[list[int], list[int]]:
    """Maximum bipartite matching (augmenting paths, BFS), after a greedy first pass.

    Returns ``(spec_of, call_of)``: ``spec_of[j]`` is the left vertex paired with right vertex
    ``j`` (or -1), ``call_of[i]`` the right vertex paired with left vertex ``i`` (or -1).
    """
    call_of = [-1] * len(adjacent)
    spec_of = [-1] * n_right
    for i, options in enumerate(adjacent):
        for j in options:
            if spec_of[j] == -1:
                spec_of[j], call_of[i] = i, j
                break
    for root in range(len(adjacent)):
        if call_of[root] != -1 or not adjacent[root]:
            continue
        came_from: dict[int, int] = {}
        queue = [root]
        found = -1
        head = 0
        while head < len(queue) and found == -1:
            left = queue[head]
            head += 1
            for j in adjacent[left]:
                if j in came_from:
                    continue
                came_from[j] = left
                if spec_of[j] == -1:
                    found = j
                    break
                queue.append(spec_of[j])
        while found != -1:
            left = came_from[found]
            previous = call_of[left]
            call_of[left], spec_of[found] = found, left
            found = previous if left != root else -1
    return spec_of, call_of


def _calls(count: int) -> str:
    return f"{count} call" if count == 1 else f"{count} calls"


def cap_reasons(reasons: list[str]) -> list[str]:
    if len(reasons) <= MAX_REASONS:
        return reasons
    extra = len(reasons) - MAX_REASONS + 1
    return [*reasons[: MAX_REASONS - 1], f"… and {extra} more differences"]


def order_reasons(specs: Sequence[CallSpec], calls: Sequence[SeenCall], mode: str) -> list[str]:
    if mode == "strict":
        return _strict_reasons(specs, calls)
    if mode == "in_order":
        return _in_order_reasons(specs, calls)
    pairing = Pairing(specs, calls)
    reasons: list[str] = []
    if mode == "unordered" and len(specs) != len(calls):
        any_order = " (in any order)" if len(specs) > 1 else ""
        reasons.append(f"expected {_calls(len(specs))}{any_order}, got {len(calls)}")
    if mode == "unordered":
        return reasons + pairing.unpaired_reasons()
    if mode == "subset":
        reasons += [pairing.missing_reason(i) for i, j in enumerate(pairing.call_of) if j == -1]
    if mode == "superset":
        reasons += [pairing.extra_reason(j) for j, i in enumerate(pairing.spec_of) if i == -1]
    return reasons


def _in_order_reasons(specs: Sequence[CallSpec], calls: Sequence[SeenCall]) -> list[str]:
    reasons: list[str] = []
    position = 0
    last: SeenCall | None = None
    for spec in specs:
        found = next((c for c in calls[position:] if not spec.check(c)), None)
        if found is not None:
            position, last = found.index + 1, found
            continue
        after = f" after {last.label()}" if last is not None else ""
        earlier = next((c for c in calls[:position] if not spec.check(c)), None)
        if earlier is not None:
            reasons.append(
                f"expected call {spec.describe()}{after}, but it was only made before that, "
                f"as {earlier.label()}"
            )
            continue
        same = [c for c in calls[position:] if c.name == spec.name] or [
            c for c in calls if c.name == spec.name
        ]
        if same:
            best = min(same, key=lambda c: len(spec.check(c)))
            reasons.append(
                f"expected call {spec.describe()}{after}; closest is {best.label()}: "
                + "; ".join(spec.check(best))
            )
        else:
            made = ", ".join(c.name for c in calls[:12]) if calls else "none"
            reasons.append(
                f"expected call {spec.describe()}{after} was not made (calls made: {made})"
            )
    return reasons


def _mismatch(spec: CallSpec, call: SeenCall) -> str | None:
    """Why ``call`` does not meet ``spec`` in the same place, or ``None`` when it does."""
    problems = spec.check(call)
    if not problems:
        return None
    if call.name == spec.name:
        return f"{call.label()}: " + "; ".join(problems)
    return f"call #{call.index + 1}: expected {spec.describe()}, got {call.signature()}"


def _strict_reasons(specs: Sequence[CallSpec], calls: Sequence[SeenCall]) -> list[str]:
    if len(specs) == len(calls):
        reasons = [reason for reason in map(_mismatch, specs, calls) if reason]
        if any(spec.name != call.name for spec, call in zip(specs, calls, strict=True)):
            reasons.insert(0, _order_summary(specs, calls))
        return reasons
    import difflib

    reasons = [_order_summary(specs, calls)]
    matcher = difflib.SequenceMatcher(
        None, [s.name for s in specs], [c.name for c in calls], autojunk=False
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "replace"):
            reasons += [reason for reason in map(_mismatch, specs[i1:i2], calls[j1:j2]) if reason]
            i1, j1 = i1 + min(i2 - i1, j2 - j1), j1 + min(i2 - i1, j2 - j1)
        for spec in specs[i1:i2]:
            reasons.append(
                f"missing call {spec.describe()} before call #{j1 + 1}"
                if j1 < len(calls)
                else f"missing call {spec.describe()} at the end"
            )
        for call in calls[j1:j2]:
            reasons.append(f"unexpected {call.label()}")
    return reasons


def _order_summary(specs: Sequence[CallSpec], calls: Sequence[SeenCall]) -> str:
    return (
        f"expected {_calls(len(specs))} in this order: "
        f"{', '.join(s.name for s in specs) or 'none'}; got {_calls(len(calls))}: "
        f"{', '.join(c.name for c in calls) or 'none'}"
    )


class OrderMatcher:
    """Expected calls and an order mode, compiled: ``matcher(actual_calls)`` returns reasons.

    Build it with :func:`compile_order`.
    """

    __slots__ = ("calls", "mode")

    def __init__(self, calls: Sequence[CallSpec], mode: str) -> None:
        self.calls = list(calls)
        self.mode = mode

    def __call__(self, actual: Iterable[Any]) -> list[str]:
        calls = [as_call(item, index) for index, item in enumerate(actual)]
        return cap_reasons(order_reasons(self.calls, calls, self.mode))

    def describe(self) -> str:
        """``in_order: search(query="x", ...), answer``."""
        return f"{self.mode}: {', '.join(c.describe() for c in self.calls)}"

    def __repr__(self) -> str:
        return f"<order {self.describe()}>"


def compile_order(
    expected: Iterable[str | Mapping[str, Any] | CallSpec],
    mode: OrderMode = "in_order",
    *,
    args: ArgsMode = "subset",
    where: str = "",
) -> OrderMatcher:
    """Compile expected calls and an order mode once, to check many trajectories.

    Modes (the expectation is named relative to what happened):

    - ``strict``: exactly the expected calls, in this order, nothing else;
    - ``in_order``: the expected calls appear in this order; other calls may come between;
    - ``unordered``: the same calls in any order, one actual call per expected call;
    - ``subset``: every expected call was made (any order); extra calls are allowed;
    - ``superset``: every actual call was expected (any order); expected ones may be missing.

    Calls are paired one to one by maximum bipartite matching, so when several expected
    calls share a tool name, a valid pairing is found whenever one exists.

    Args:
        expected: Tool names, :class:`CallSpec` objects or ``{name, arguments, mode}``
            mappings (see :func:`compile_calls`).
        mode: The order mode.
        args: The argument mode of expected calls that give arguments but no mode.
        where: Where the expectations come from, used to name bad specs.

    Returns:
        The compiled matcher. Call it with the actual calls (``ToolCall`` objects, OpenAI
        tool calls, ``{"name", "arguments"}`` mappings or ``(name, arguments)`` pairs).

    Raises:
        ConfigError: The mode, an expected call or one of its specs is invalid.
    """
    if mode not in ORDER_MODES:
        problem = bad_mode(mode, ORDER_MODES)
        message = f"{where}: {problem}" if where else problem
        raise ConfigError(f"invalid order: {message}", [message])
    return OrderMatcher(compile_calls(expected, args=args, where=where), mode)


def match_order(
    expected: Iterable[str | Mapping[str, Any] | CallSpec],
    actual: Iterable[Any],
    mode: OrderMode = "in_order",
    *,
    args: ArgsMode = "subset",
    where: str = "",
) -> list[str]:
    """Check the tool calls an agent made against expected calls and an order mode.

    Example:
        ```python
        match_order(["slack_get_message", "jira_get_ticket", "slack_add_reaction"],
                    trace.tool_calls, "in_order")
        ```

    Args:
        expected: Tool names, or ``{name, arguments, mode}`` mappings (arguments are specs).
        actual: The calls made (``ToolCall`` objects, OpenAI tool calls,
            ``{"name", "arguments"}`` mappings or ``(name, arguments)`` pairs).
        mode: ``strict``, ``in_order`` (default), ``unordered``, ``subset`` or ``superset``
            (see :func:`compile_order`).
        args: The argument mode of expected calls that give arguments but no mode.
        where: Where the expectations come from, used to name bad specs.

    Returns:
        The reasons the calls do not match (``[]`` when they match), each naming the
        expected call and the actual call closest to it.

    Raises:
        ConfigError: The mode, an expected call or one of its specs is invalid.
    """
    return compile_order(expected, mode, args=args, where=where)(actual)


# --------------------------------------------------------------------------------------
# Verdicts and the two public conversions
# --------------------------------------------------------------------------------------
