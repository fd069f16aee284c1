"""``@tool``: typed Python functions become tools the model can call."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, Literal, ParamSpec, TypeVar, overload

from toolproof._messages import ToolDefinition
from toolproof._trace import ToolInfo, schema_hash
from toolproof.errors import UnmockedToolCall, UserError

if TYPE_CHECKING:
    from pydantic import BaseModel, TypeAdapter

    from toolproof._schema import Extra

__all__ = ["ArgumentsInvalid", "Tool", "tool"]

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


class ArgumentsInvalid(Exception):
    """Internal: the model's arguments do not fit the tool's schema (message is for the model)."""


class Tool(Generic[P, R]):
    """A function the model can call, with its schema, validator and policies.

    Create tools with :func:`tool`. Calling a ``Tool`` calls the original function, so pure
    tool tests stay plain function calls.

    Attributes:
        name: The name the model uses.
        description: What the model is told the tool does.
        function: The real implementation.
        parameters: JSON Schema of the arguments.
        errors: Exception types that are reported to the model instead of stopping the run.
        side_effects: Whether the tool changes the outside world (mock mode refuses to run
            such a tool's real code).
        requires_approval: Whether each call goes through the agent's approver first.
        timeout: Wall-clock limit of one call, in seconds.
        extra: ``"forbid"`` rejects arguments the schema does not know; ``"ignore"`` drops them.
        thread: Run a synchronous function in a worker thread (for blocking I/O).
        mock_function: The mock implementation, if one was declared with :meth:`mock`.
    """

    def __init__(
        self,
        function: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        errors: tuple[type[BaseException], ...] = (),
        side_effects: bool = False,
        requires_approval: bool = False,
        timeout: float | None = None,
        extra: Extra = "forbid",
        thread: bool = False,
        _localns: dict[str, Any] | None = None,
        _parameters: dict[str, Any] | None = None,
    ) -> None:
        if not callable(function):
            raise UserError(f"@tool expects a function, got {function!r}")
        bad = [e for e in errors if not (isinstance(e, type) and issubclass(e, BaseException))]
        if bad:
            raise UserError(f"@tool(errors=...) must list exception classes, got {bad!r}")
        if extra not in ("forbid", "ignore"):
            raise UserError(f"@tool(extra=...) must be 'forbid' or 'ignore', got {extra!r}")
        if timeout is not None and timeout <= 0:
            raise UserError(
                f"@tool(timeout=...) must be a positive number of seconds, got {timeout!r}"
            )
        self.function = function
        self.name = name or function.__name__
        if not self.name.replace("_", "a").replace("-", "a").isalnum():
            raise UserError(
                f"tool name {self.name!r} is not valid: use letters, digits, '_' and '-' only"
            )
        if _localns is None:
            _localns = _callers_names()
        from toolproof._schema import build_function_schema  # with pydantic, on the first tool

        spec = build_function_schema(
            function, name=self.name, description=description, extra=extra, localns=_localns
        )
        self.description = spec.description
        # (an adapter's tool tells the model exactly its framework's schema)
        self.parameters = spec.parameters if _parameters is None else _parameters
        self.errors = tuple(errors)
        self.side_effects = side_effects
        self.requires_approval = requires_approval
        self.timeout = timeout
        self.extra: Extra = extra
        self.thread = thread
        self.is_async = inspect.iscoroutinefunction(function)
        self.mock_function: Callable[..., Any] | None = None
        self.return_annotation = spec.return_annotation
        self.has_return_annotation = spec.has_return_annotation
        self._args_model: type[BaseModel] = spec.args_model
        self._field_to_param = spec.field_to_param
        self._return_adapter: TypeAdapter[Any] | None = None
        self.definition = ToolDefinition(self.name, self.description, self.parameters)
        self.schema_hash = schema_hash(self.name, self.description, self.parameters)
        functools.update_wrapper(self, function)

    # -- calling -----------------------------------------------------------------------------

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the real function directly (no validation, no tracing)."""
        return self.function(*args, **kwargs)

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate and coerce the model's arguments into keyword arguments for the function.

        Raises:
            ArgumentsInvalid: The arguments do not fit the schema; the message is written for
                the model (what is wrong, which arguments exist).
        """
        try:
            validated = self._args_model.model_validate(arguments)
        except Exception as exc:
            from pydantic import ValidationError  # on failure only: the import costs ~0.4 µs

            if not isinstance(exc, ValidationError):
                raise
            raise ArgumentsInvalid(self._explain(exc, arguments)) from None
        fields = validated.__dict__
        return {param: fields[field] for field, param in self._field_to_param.items()}

    def _explain(self, exc: Any, arguments: dict[str, Any]) -> str:
        expected = ", ".join(self._field_to_param.values()) or "no arguments"
        problems = []
        unexpected = []
        for error in exc.errors(include_url=False):
            loc = ".".join(str(part) for part in error["loc"])
            if error["type"] == "extra_forbidden" and len(error["loc"]) == 1:
                unexpected.append(loc)
            elif error["type"] == "missing":
                problems.append(f"missing required argument '{loc}'")
            else:
                problems.append(f"'{loc}': {error['msg']} (got {_short_repr(error.get('input'))})")
        if unexpected:
            names = ", ".join(f"'{name}'" for name in unexpected)
            problems.append(f"unexpected argument{'s' if len(unexpected) > 1 else ''} {names}")
        return (
            f"Invalid arguments for tool '{self.name}': " + "; ".join(problems) + f". "
            f"This tool accepts: {expected}."
        )

    # -- mocks and return values -------------------------------------------------------------

    def mock(self, function: F) -> F:
        """Declare the mock implementation used when tools run in mock mode.

        Example:
            ```python
            @search_knowledge_base.mock
            def _(query: str) -> str:
                return TEST_KB_RESULTS.get(query, DEFAULT_RESULT)
            ```
        """
        if not callable(function):
            raise UserError(f"{self.name}.mock expects a function, got {function!r}")
        self.mock_function = function
        return function

    def validate_return(self, value: Any) -> Any:
        """Validate ``value`` against the real function's return annotation.

        Raises:
            pydantic.ValidationError: The value does not match the annotation.
        """
        if not self.has_return_annotation:
            return value
        if self._return_adapter is None:
            from pydantic import TypeAdapter

            self._return_adapter = TypeAdapter(self.return_annotation)
        return self._return_adapter.validate_python(value)

    # -- descriptions ------------------------------------------------------------------------

    @property
    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema: ``{"type": "function", "function": {...}}``."""
        return self.definition.to_openai()

    @property
    def info(self) -> ToolInfo:
        """The tool as recorded in traces (with its schema hash)."""
        return ToolInfo(self.name, self.description, self.parameters, self.schema_hash)

    def __repr__(self) -> str:
        flags = [f for f in ("side_effects", "requires_approval") if getattr(self, f)]
        return f"<Tool {self.name}{' ' + ' '.join(flags) if flags else ''}>"


@overload
def tool(function: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    errors: tuple[type[BaseException], ...] = (),
    side_effects: bool = False,
    requires_approval: bool = False,
    timeout: float | None = None,
    extra: Literal["forbid", "ignore"] = "forbid",
    thread: bool = False,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    function: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    errors: tuple[type[BaseException], ...] = (),
    side_effects: bool = False,
    requires_approval: bool = False,
    timeout: float | None = None,
    extra: Literal["forbid", "ignore"] = "forbid",
    thread: bool = False,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Turn a typed function (sync or async) into a :class:`Tool`.

    The name comes from the function, the description from the docstring's first
    paragraphs, per-parameter descriptions from its ``Args:`` (Google), ``Parameters``
    (NumPy) or ``:param:`` (reST) section, and the JSON Schema from the type hints through
    pydantic: defaults make a parameter optional; ``Literal``, ``Enum``, ``Optional``, lists,
    dicts, nested pydantic models and dataclasses work.

    Args:
        function: The function (when used as a bare ``@tool``).
        name: Override the tool name.
        description: Override the description.
        errors: Exceptions that report a problem to the model (the run continues); any other
            exception stops the run as a bug in the tool.
        side_effects: The tool changes the outside world; mock mode never runs its real code.
        requires_approval: Each call goes through the agent's ``approver`` first.
        timeout: Seconds one call may take before it is reported to the model as timed out.
        extra: ``"forbid"`` (default) rejects unknown arguments, naming them for the model;
            ``"ignore"`` drops them silently.
        thread: Run a synchronous function in a worker thread (for blocking I/O). Synchronous
            tools with a timeout always run in a thread so the timeout can interrupt the wait.

    Returns:
        The tool, or a decorator that makes one.

    Raises:
        UserError: The function cannot become a tool (lists every problem).

    Example:
        ```python
        @tool(errors=(KeyError,))
        def get_leave_balance(employee_id: str) -> int:
            \"\"\"Look up an employee's remaining annual leave, in days.

    Args:
                employee_id: Employee id such as E001.
            \"\"\"
            return LEAVE[employee_id.upper()]
        ```
    """

    def make(func: Callable[P, R], localns: dict[str, Any] | None = None) -> Tool[P, R]:
        return Tool(
            func,
            name=name,
            description=description,
            errors=errors,
            side_effects=side_effects,
            requires_approval=requires_approval,
            timeout=timeout,
            extra=extra,
            thread=thread,
            _localns=localns if localns is not None else _callers_names(),
        )

    if function is not None:
        return make(function, _callers_names())
    return make


def _callers_names() -> dict[str, Any]:
    """The local names where our caller was called (a tool's hints may name them)."""
    frame = inspect.currentframe()
    try:
        caller = frame.f_back.f_back if frame is not None and frame.f_back is not None else None
        return caller.f_locals if caller is not None else {}
    finally:
        del frame  # (no cycle through this frame)


def _short_repr(value: Any, limit: int = 80) -> str:
    from toolproof._text import cut

    return cut(repr(value), limit)


#: Set (to where, for messages) while a run allows mocks only: no tool's real code runs.
_only_mocks: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "toolproof_only_mocks", default=None
)


@contextlib.contextmanager
def only_mocks_in(where: str | None) -> Iterator[None]:
    """Inside the block (when ``where`` is set), :func:`refuse_real_code` refuses every tool."""
    token = _only_mocks.set(where)
    try:
        yield
    finally:
        _only_mocks.reset(token)


def refuse_real_code(t: Tool[..., Any]) -> None:
    """Refuse ``t``'s real code in a run that allows mocks only (an attack case).

    The toolset asks before any real code runs, and so does a non-strict fixture mock
    before it lets a call through to a tool's real function.

    Raises:
        UnmockedToolCall: The run allows mocks only.
    """
    where = _only_mocks.get()
    if where is not None:
        raise UnmockedToolCall(
            f"tool '{t.name}' has no mock for this call, and {where} never runs a tool's "
            f"real code (whatever the suite or the agent ask); give '{t.name}' a mock or a "
            "fixture",
            tool_name=t.name,
        )
