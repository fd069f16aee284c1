"""Fixture mocks: canned tool responses keyed by tool name and the arguments that matter.

A :class:`ToolMock` is a mock provider for a :class:`~toolproof.Toolset` in mock mode. It
is strict by default, like ``pytest_httpx``: a call that no fixture answers raises
:class:`~toolproof.errors.MissingFixture` with the call (sensitive values masked), the
closest fixture and what differs; fixtures that were never used are reported by
:meth:`ToolMock.verify`. Each check names its opt-out in its message.
"""

from __future__ import annotations

import copy
import inspect
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from toolproof._fixture_files import NamedError
from toolproof._matching._objects import compare, format_call, mask_arguments
from toolproof._tools import refuse_real_code
from toolproof.errors import ConfigError, MissingFixture, UserError

if TYPE_CHECKING:
    from toolproof._tools import Tool

__all__ = ["DEFAULT_MASK", "Fixture", "RecordedCall", "ToolMock"]

#: Argument names whose values are never shown in messages (matched case-insensitively,
#: at any depth).
DEFAULT_MASK: tuple[str, ...] = ("api_key", "password", "token", "user_id")


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


@dataclass(eq=False)
class Fixture:
    """One canned response of a :class:`ToolMock`.

    Attributes:
        tool: The tool it answers.
        arguments: The arguments it answers (values may be matchers); ``None`` answers any
            call of the tool. Parameters left out must have their default value.
        returns: What the mock returns; a callable is called with the call's arguments.
        raises: An exception (instance or class) to raise instead of returning. Raise one of
            the tool's declared errors (or ``ToolError``) to test the error path.
        times: How many calls it may answer; ``None`` for any number. Fixtures are tried in
            the order they were added, so ``times=1`` fixtures make call sequences.
        source: Where it was defined (``"fixtures.yaml:12"``, ``"fixture #2"``).
        uses: How many calls it has answered.
    """

    tool: str
    arguments: dict[str, Any] | None = None
    returns: Any = None
    raises: BaseException | type[BaseException] | NamedError | None = None
    times: int | None = None
    source: str = ""
    uses: int = 0

    @property
    def exhausted(self) -> bool:
        """Whether it has answered as many calls as ``times`` allows."""
        return self.times is not None and self.uses >= self.times

    def describe(self, mask: Iterable[str] = DEFAULT_MASK) -> str:
        """``source: tool(arguments)`` with sensitive values masked."""
        names = frozenset(m.lower() for m in mask)
        shown = None if self.arguments is None else mask_arguments(self.arguments, names)
        where = f"{self.source}: " if self.source else ""
        return where + format_call(self.tool, shown)


class RecordedCall(NamedTuple):
    """A call a mock received.

    Attributes:
        tool: The tool name.
        arguments: The arguments, as the tool would have received them (defaults included),
            in JSON form.
        fixture: The fixture that answered it, or ``None``.
    """

    tool: str
    arguments: dict[str, Any]
    fixture: Fixture | None


@dataclass(slots=True)
class _ToolShape:
    params: list[str]
    defaults: dict[str, Any] = field(default_factory=dict)


class ToolMock:
    """Canned tool responses, matched on tool name and the arguments that matter.

    Use it as a mock provider: ``Toolset(tools, mode="mock", mocks=[mock])`` (or pass it to
    the pytest ``run_agent`` helper). It answers every tool it has fixtures for, and, when
    strict, every tool that has no declared ``@tool.mock`` either, so no real code runs by
    accident. When several providers are given, later ones win: list it first to let another
    mock answer some tools.

    Args:
        fixtures: Initial fixtures (see :meth:`add`, :meth:`from_file`).
        key_args: Per tool, the arguments that decide which fixture answers (default: all).
            ``{"search_docs": ["query"]}`` ignores ``top_k`` and the rest.
        mask: Argument names whose values never appear in messages (any depth,
            case-insensitive).
        strict: A call no fixture answers raises ``MissingFixture``. With ``strict=False``
            it goes to the tool's declared mock, or its real function when the tool has no
            side effects.
        assert_all_used: :meth:`verify` fails when a fixture was never used.

    Attributes:
        fixtures: The fixtures, in matching order.
        calls: Every call received, with the fixture that answered it.

    Example:
        ```python
        mock = ToolMock(mask=["user_id"])
        mock.add("get_leave_balance", {"employee_id": "E001"}, returns=5)
        mock.add("get_leave_balance", {"employee_id": "E999"}, raises=KeyError("not found"))
        agent = build_agent(model, Toolset(TOOLS, mode="mock", mocks=[mock]))
        ...
        assert mock.count("get_leave_balance", employee_id="E001") == 1
        mock.verify()
        ```
    """

    def __init__(
        self,
        fixtures: Iterable[Fixture] | None = None,
        *,
        key_args: Mapping[str, Sequence[str]] | None = None,
        mask: Sequence[str] = DEFAULT_MASK,
        strict: bool = True,
        assert_all_used: bool = True,
    ) -> None:
        self.fixtures: list[Fixture] = []
        self.key_args: dict[str, tuple[str, ...]] = {}
        for name, names in (key_args or {}).items():
            if isinstance(names, str) or not all(isinstance(n, str) for n in names):
                raise UserError(
                    f"key_args[{name!r}] must be a list of argument names, got {names!r}"
                )
            self.key_args[name] = tuple(names)
        if isinstance(mask, str):
            raise UserError(f"mask must be a list of argument names, got {mask!r}")
        self.mask = frozenset(m.lower() for m in mask)
        self.strict = strict
        self.assert_all_used = assert_all_used
        self.calls: list[RecordedCall] = []
        self._lock = threading.Lock()
        # tool name -> (fixture count when built, plain-key index, positions to scan)
        self._index: dict[str, tuple[int, dict[Any, list[int]], list[int]]] = {}
        # id(tool) -> (tool, shape); holding the tool keeps its id from being reused.
        self._shapes: dict[int, tuple[Tool[..., Any], _ToolShape]] = {}
        for fixture in fixtures or ():
            if not isinstance(fixture, Fixture):
                raise UserError(f"ToolMock(fixtures=...) expects Fixture objects, got {fixture!r}")
            self._append(fixture)

    # -- building ----------------------------------------------------------------------------

    def add(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        returns: Any = _UNSET,
        raises: BaseException | type[BaseException] | None = None,
        times: int | None = None,
    ) -> Fixture:
        """Add a fixture; the first unexhausted fixture that matches a call answers it.

        Args:
            tool: The tool name.
            arguments: The call's arguments (values may be matchers such as ``ANY``,
                ``approx(...)``, a type, or a predicate); ``None`` matches any call.
            returns: The return value, or a callable computing it from the arguments.
            raises: An exception to raise instead (a declared error tests the error path).
            times: How many calls it may answer (default: any number).

        Returns:
            The fixture (its ``uses`` counts the calls it answered).

        Raises:
            UserError: Both ``returns`` and ``raises`` are given, or ``times`` is below 1.
        """
        if returns is not _UNSET and raises is not None:
            raise UserError(f"fixture for {tool!r}: give returns= or raises=, not both")
        if raises is not None and not (
            isinstance(raises, BaseException)
            or (isinstance(raises, type) and issubclass(raises, BaseException))
        ):
            raise UserError(f"fixture for {tool!r}: raises= must be an exception, got {raises!r}")
        fixture = Fixture(
            tool=tool,
            arguments=None if arguments is None else dict(arguments),
            returns=None if returns is _UNSET else returns,
            raises=raises,
            times=times,
        )
        return self._append(fixture)

    def _append(self, fixture: Fixture) -> Fixture:
        if not isinstance(fixture.tool, str) or not fixture.tool:
            raise UserError(f"a fixture needs a tool name, got {fixture.tool!r}")
        if fixture.times is not None and (
            isinstance(fixture.times, bool)
            or not isinstance(fixture.times, int)
            or fixture.times < 1
        ):
            raise UserError(
                f"fixture for {fixture.tool!r}: times= must be a positive integer or None, "
                f"got {fixture.times!r}"
            )
        if not fixture.source:
            fixture.source = f"fixture #{len(self.fixtures) + 1}"
        self.fixtures.append(fixture)
        return fixture

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **options: Any) -> ToolMock:
        """Build a mock from plain data (the form of a fixture file).

        ``data`` holds ``fixtures`` (a list of ``{tool, arguments, match, returns, raises,
        times}``) and optionally ``key_args``, ``mask``, ``strict`` and
        ``assert_all_used``; keyword ``options`` win over those. ``match`` maps argument
        names to matcher specs of ``toolproof.evals`` (``{range: [1, 20]}``...);
        ``raises`` is ``"KeyError"``, ``"KeyError: message"`` or ``{type:, message:}``, where
        the type is a built-in exception, one of toolproof's errors (``ToolError``...), the
        name of one of the tool's declared errors, or a dotted path ``module.Class`` to an
        exception class of a module that is already imported. Loading fixtures never
        imports anything: import such a module first (in ``conftest.py``, or by importing
        the tools that raise it), or name the error as the tool declares it.

        Raises:
            ConfigError: The data is not a valid fixture set; every problem is listed.
        """
        return cls._from_data(data, options, source="", lines={})

    @classmethod
    def from_file(cls, path: str | Path, **options: Any) -> ToolMock:
        """Load fixtures from a YAML (``.yaml``/``.yml``) or JSON (``.json``) file.

        The file's form is that of :meth:`from_dict`, which says how ``raises`` names an
        exception (loading never imports code).

        Example file:
            ```yaml
            key_args: {search_docs: [query]}
            mask: [user_id]
            fixtures:
              - tool: get_leave_balance
                arguments: {employee_id: E001}
                returns: 5
              - tool: get_leave_balance
                arguments: {employee_id: E999}
                raises: "KeyError: employee not found"
            ```

        Raises:
            ConfigError: The file is missing, unreadable, or not a valid fixture set (the
                message names the file, and the line where it can).
        """
        try:
            return cls._from_file(path, **options)
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text ({exc.reason})") from None
        except RecursionError:
            raise ConfigError(f"{path}: the file nests too deeply to be a fixture set") from None
        except (TypeError, AttributeError, ValueError) as exc:  # a shape no check above knew
            raise ConfigError(f"{path}: not a valid fixture set ({exc})") from None

    @classmethod
    def _from_file(cls, path: str | Path, **options: Any) -> ToolMock:
        """:meth:`from_file` without its last-resort conversion of errors."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".yaml", ".yml", ".json"):
            raise ConfigError(
                f"{path}: fixture files must end in .yaml, .yml or .json, "
                f"not {suffix or '(none)'!r}"
            )
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{path}: fixture file not found") from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read fixture file ({exc.strerror})") from None
        lines: dict[int, int] = {}
        if suffix == ".json":
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise ConfigError(f"{path}: invalid JSON ({exc})") from None
            except RecursionError:
                raise ConfigError(f"{path}: invalid JSON (it nests too deeply)") from None
        else:
            import yaml

            from toolproof._yaml import load_document

            try:
                data, node = load_document(text, path)
                lines = _fixture_lines(node)
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
                problem = getattr(exc, "problem", None) or str(exc)
                raise ConfigError(f"{where}: invalid YAML ({problem})") from None
        if data is None:
            data = {"fixtures": []}
        if isinstance(data, list):
            data = {"fixtures": data}
        return cls._from_data(data, options, source=str(path), lines=lines)

    @classmethod
    def _from_data(
        cls, data: Any, options: Mapping[str, Any], *, source: str, lines: Mapping[int, int]
    ) -> ToolMock:
        from pydantic import ValidationError

        from toolproof._fixture_files import UNSET, FixtureFile, fixture_problems, fixture_where

        label = source or "fixture data"
        if not isinstance(data, Mapping):
            raise ConfigError(
                f"{label}: expected a mapping with 'fixtures', got {type(data).__name__}"
            )
        try:
            spec = FixtureFile.model_validate(data)
        except ValidationError as exc:
            problems = fixture_problems(exc, label, source, lines)
            raise ConfigError(
                f"invalid fixtures in {label}:\n" + "\n".join(f"  - {p}" for p in problems),
                problems,
            ) from None
        settings = {
            k: data[k] for k in ("key_args", "mask", "strict", "assert_all_used") if k in data
        }
        settings.update(options)
        fixtures = []
        for index, item in enumerate(spec.fixtures):
            args: dict[str, Any] | None = None
            if item.arguments is not None or item.match:
                args = {**dict(item.arguments or {}), **dict(item.match or {})}
            fixtures.append(
                Fixture(
                    tool=str(item.tool),
                    arguments=args,
                    returns=None if item.returns is UNSET else item.returns,
                    raises=item.raises,
                    times=item.times,
                    source=fixture_where(index, source, lines),
                )
            )
        try:
            return cls(fixtures, **settings)
        except TypeError as exc:
            raise ConfigError(f"{label}: {exc}") from None
        except UserError as exc:
            raise ConfigError(f"{label}: {exc}") from None

    # -- MockProvider ------------------------------------------------------------------------

    def mock_for(self, tool: Tool[..., Any]) -> Callable[..., Any] | None:
        """The function answering ``tool`` from fixtures, or ``None`` to leave it to others.

        Raises:
            UserError: ``key_args`` names an argument the tool does not have.
        """
        has_fixtures = any(f.tool == tool.name for f in self.fixtures)
        if not has_fixtures and (not self.strict or tool.mock_function is not None):
            return None
        shape = self._shape(tool)
        if tool.is_async or inspect.iscoroutinefunction(tool.mock_function):

            async def answer_async(**kwargs: Any) -> Any:
                value = self._answer(tool, shape, kwargs)
                return (await value) if inspect.isawaitable(value) else value

            return answer_async

        def answer(**kwargs: Any) -> Any:
            return self._answer(tool, shape, kwargs)

        return answer

    def _shape(self, tool: Tool[..., Any]) -> _ToolShape:
        cached = self._shapes.get(id(tool))
        if cached is not None:
            return cached[1]
        signature = inspect.signature(tool.function)
        shape = _ToolShape(list(signature.parameters))
        for name, param in signature.parameters.items():
            if param.default is not inspect.Parameter.empty:
                shape.defaults[name] = jsonable_value(param.default)
        keys = self.key_args.get(tool.name, ())
        unknown = [k for k in keys if k not in shape.params]
        if unknown:
            raise UserError(
                f"key_args[{tool.name!r}] names {', '.join(map(repr, unknown))}, which "
                f"tool '{tool.name}' does not have; its parameters: "
                f"{', '.join(shape.params) or '(none)'}"
            )
        self._shapes[id(tool)] = (tool, shape)
        return shape

    def _answer(self, tool: Tool[..., Any], shape: _ToolShape, kwargs: dict[str, Any]) -> Any:
        actual = {k: jsonable_value(v) for k, v in kwargs.items()}
        with self._lock:
            chosen = None
            for position in self._candidates(tool.name, shape, actual):
                fixture = self.fixtures[position]
                if fixture.exhausted:
                    continue
                if not _failures(self._compare(tool.name, shape, fixture, actual)):
                    chosen = fixture
                    break
            if chosen is not None:
                chosen.uses += 1
            self.calls.append(RecordedCall(tool.name, actual, chosen))
        if chosen is None:
            if not self.strict and tool.mock_function is not None:
                return tool.mock_function(**kwargs)
            if not self.strict and not tool.side_effects:
                refuse_real_code(tool)  # (an attack case runs no real code)
                return tool.function(**kwargs)
            raise MissingFixture(
                self._explain(tool, shape, actual),
                tool_name=tool.name,
                arguments=mask_arguments(actual, self.mask),
            )
        return _respond(chosen, tool, kwargs)

    def _candidates(self, tool_name: str, shape: _ToolShape, actual: dict[str, Any]) -> list[int]:
        """Positions of the fixtures that may match, in order (a superset; callers verify).

        Fixtures with plain values are indexed by their compared values, so a large fixture
        set costs one lookup per call; fixtures with matchers are always candidates.
        """
        names = self.key_args.get(tool_name) or shape.params
        cached = self._index.get(tool_name)
        if cached is None or cached[0] != len(self.fixtures):
            index: dict[Any, list[int]] = {}
            scan: list[int] = []
            for position, fixture in enumerate(self.fixtures):
                if fixture.tool != tool_name:
                    continue
                key = _fixture_key(fixture, names, shape)
                if key is None:
                    scan.append(position)
                else:
                    index.setdefault(key, []).append(position)
            cached = (len(self.fixtures), index, scan)
            self._index[tool_name] = cached
        _, index, scan = cached
        try:
            found = index.get(tuple(_freeze(actual.get(name, _UNSET)) for name in names), [])
        except TypeError:  # an unhashable value: compare with every fixture
            found = [p for positions in index.values() for p in positions]
        return sorted([*found, *scan]) if scan else found

    def _compare(
        self, tool_name: str, shape: _ToolShape, fixture: Fixture, actual: dict[str, Any]
    ) -> list[tuple[str, str | None]]:
        """Per compared argument, ``None`` (matches) or the reason it does not."""
        if fixture.arguments is None:
            return []
        out: list[tuple[str, str | None]] = []
        for name in fixture.arguments:
            if name not in shape.params:
                params = ", ".join(shape.params) or "(none)"
                out.append((name, f"not a parameter of {tool_name} (parameters: {params})"))
        for name in self.key_args.get(tool_name) or shape.params:
            if name in fixture.arguments:
                expected = fixture.arguments[name]
            elif name in shape.defaults:
                expected = shape.defaults[name]
            else:
                out.append((name, "the fixture gives no value"))
                continue
            if name not in actual:
                out.append((name, "missing from the call"))
                continue
            reason = compare(expected, actual[name])
            if reason is not None and name.lower() in self.mask:
                reason = "differs (values masked)"
            out.append((name, reason))
        return out

    def _explain(self, tool: Tool[..., Any], shape: _ToolShape, actual: dict[str, Any]) -> str:
        shown = format_call(tool.name, mask_arguments(actual, self.mask))
        lines = [f"No fixture matches the call {shown}."]
        candidates = [f for f in self.fixtures if f.tool == tool.name]
        if self.strict:
            escape = (
                "or pass strict=False to ToolMock(...) to let unmatched calls through to the "
                "tool's declared mock (or its real function, if it has no side effects)."
            )
        else:
            escape = (
                f"or declare a mock with @{tool.name}.mock (strict=False cannot let this call "
                "through: the tool has side effects and no declared mock)."
            )
        if not candidates:
            others = sorted({f.tool for f in self.fixtures})
            where = f"fixtures exist for: {', '.join(others)}" if others else "it has none"
            lines.append(f"This ToolMock has no fixtures for tool '{tool.name}' ({where}).")
            lines.append(
                f"Add one with .add({tool.name!r}, {{...}}, returns=...), list the mock that "
                f"should answer '{tool.name}' after this ToolMock in mocks=[...], {escape}"
            )
            return "\n".join(lines)
        scored = [(f, self._compare(tool.name, shape, f, actual)) for f in candidates]
        used_up = [f for f, result in scored if not _failures(result)]
        if used_up:
            fixture = used_up[0]
            lines.append(
                f"Fixture {fixture.describe(self.mask)} matches, but it was already used "
                f"{fixture.uses} time{'s' if fixture.uses != 1 else ''} (times={fixture.times})."
            )
            lines.append(f"Raise its times=, add another fixture for this call, {escape}")
            return "\n".join(lines)
        best, result = min(scored, key=lambda pair: len(_failures(pair[1])))
        lines.append(f"Closest fixture ({best.describe(self.mask)}):")
        for name, reason in result:
            lines.append(f"  ✗ {name}: {reason}" if reason else f"  ✓ {name}")
        hint = "Add a fixture for this call"
        if tool.name not in self.key_args:
            hint += f", match on fewer arguments with key_args={{{tool.name!r}: [...]}}"
        lines.append(f"{hint}, {escape}")
        return "\n".join(lines)

    # -- inspection --------------------------------------------------------------------------

    def count(self, tool: str, **arguments: Any) -> int:
        """How many calls of ``tool`` were received.

        With ``arguments``, only calls whose arguments match them (values may be matchers).
        """
        return sum(
            1
            for call in self.calls
            if call.tool == tool
            and all(
                k in call.arguments and compare(v, call.arguments[k]) is None
                for k, v in arguments.items()
            )
        )

    def unused(self) -> list[Fixture]:
        """The fixtures that never answered a call."""
        return [f for f in self.fixtures if f.uses == 0]

    def verify(self) -> None:
        """Fail if a fixture was never used (unless ``assert_all_used=False``).

        The ``tool_mock`` pytest fixture calls it at the end of each test.

        Raises:
            AssertionError: Lists the unused fixtures and names the opt-out.
        """
        __tracebackhide__ = True
        unused = self.unused()
        if not self.assert_all_used or not unused:
            return
        count = len(unused)
        plural = count != 1
        lines = [
            f"{count} fixture{'s' if plural else ''} of this ToolMock "
            f"{'were' if plural else 'was'} never used:"
        ]
        lines.extend(f"  - {f.describe(self.mask)}" for f in unused)
        lines.append(
            "Remove unused fixtures, or pass assert_all_used=False to ToolMock(...) "
            "(for the tool_mock fixture: @pytest.mark.tool_mock(assert_all_used=False)) "
            "if some are expected to stay unused."
        )
        raise AssertionError("\n".join(lines))

    def reset(self) -> None:
        """Forget the calls received and the fixtures' use counts."""
        with self._lock:
            self.calls.clear()
            for fixture in self.fixtures:
                fixture.uses = 0

    def __repr__(self) -> str:
        return f"<ToolMock {len(self.fixtures)} fixtures, {len(self.calls)} calls>"


def _freeze(value: Any) -> Any:
    """A hashable form with the equality ``compare`` uses (``12 == 12.0``)."""
    if isinstance(value, Mapping):
        return ("{}", tuple(sorted((str(k), _freeze(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("[]", tuple(_freeze(v) for v in value))
    hash(value)
    return value


def _fixture_key(fixture: Fixture, names: Sequence[str], shape: _ToolShape) -> Any:
    """The index key of a fixture with plain values only, else ``None``."""
    arguments = fixture.arguments
    if arguments is None or any(name not in shape.params for name in arguments):
        return None
    values = []
    for name in names:
        if name in arguments:
            value = arguments[name]
        elif name in shape.defaults:
            value = shape.defaults[name]
        else:
            return None
        if _has_matcher(value):
            return None
        values.append(value)
    try:
        return tuple(_freeze(v) for v in values)
    except TypeError:
        return None


def _has_matcher(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(_has_matcher(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_matcher(v) for v in value)
    return callable(value)


def _failures(result: list[tuple[str, str | None]]) -> list[str]:
    return [reason for _, reason in result if reason is not None]


def _respond(fixture: Fixture, tool: Tool[..., Any], kwargs: dict[str, Any]) -> Any:
    if fixture.raises is not None:
        error = fixture.raises
        if isinstance(error, NamedError):
            raise error.resolve(tool, fixture.source)
        raise error
    if callable(fixture.returns):
        return fixture.returns(**kwargs)
    return copy.deepcopy(fixture.returns)


def jsonable_value(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable_value(v) for v in value]
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=str)


def _fixture_lines(node: Any) -> dict[int, int]:
    """Line number (1-based) of each item of the ``fixtures`` list in a YAML node tree."""
    import yaml

    sequence = None
    if isinstance(node, yaml.SequenceNode):
        sequence = node
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if getattr(key, "value", None) == "fixtures" and isinstance(value, yaml.SequenceNode):
                sequence = value
    if sequence is None:
        return {}
    return {index: item.start_mark.line + 1 for index, item in enumerate(sequence.value)}
