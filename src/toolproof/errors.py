"""Errors raised by toolproof, grouped by who must act.

The tree::

    ToolproofError
    ├── UserError                  the developer must fix code or configuration
    │   ├── ConfigError            a suite, fixture or settings file is invalid (file, line)
    │   ├── TraceFormatError       a trace cannot be written or read back (names the field)
    │   ├── MissingAPIKey          a provider key is not set (names the variable)
    │   ├── ModelRequestsDisabled  a real model was called while requests are switched off
    │   ├── ScriptExhausted        a scripted model was asked for more than its script holds
    │   └── NoRecording            no recording answers a request (replay server, HTTP 404)
    ├── ToolError                  raised inside a tool: the message goes back to the model
    ├── ModelError                 the model provider failed or answered something unusable
    │   ├── ModelHTTPError         the provider answered an HTTP error (status, provider message)
    │   ├── ModelConnectionError   the provider could not be reached or timed out
    │   └── UnexpectedModelOutput  the provider answered a body that cannot be understood
    │       └── ToolCallParseError a ``<tool_call>`` block in a text-protocol answer is broken
    ├── AgentRunError              a run stopped on a problem; carries the partial trace
    │   ├── ToolCrashed            a tool raised an exception it did not declare (a bug)
    │   ├── ModelFailed            the model request failed (cause in ``__cause__``)
    │   └── UnmockedToolCall       a tool could not be run in mock mode (side effects, no mock)
    │       └── MockBypassed       a mocked run would run real code: the agent is not using
    │                              the toolset toolproof handed it (also a UserError)
    └── ReplayError                replay could not proceed
        └── MissingFixture         a tool call has no recorded response

Errors carry structured attributes (``tool_name``, ``step``, ``trace``) rather than
logging anything themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolproof._trace import Trace

__all__ = [
    "AgentRunError",
    "ConfigError",
    "MissingAPIKey",
    "MissingFixture",
    "MockBypassed",
    "ModelConnectionError",
    "ModelError",
    "ModelFailed",
    "ModelHTTPError",
    "ModelRequestsDisabled",
    "NoRecording",
    "ReplayError",
    "ScriptExhausted",
    "ToolCallParseError",
    "ToolCrashed",
    "ToolError",
    "ToolproofError",
    "TraceFormatError",
    "UnexpectedModelOutput",
    "UnmockedToolCall",
    "UserError",
]


class ToolproofError(Exception):
    """Base class of every error toolproof raises on purpose."""


class UserError(ToolproofError):
    """The developer used toolproof incorrectly: the message says what to fix."""


class ConfigError(UserError):
    """A configuration file (suite, fixtures, redaction rules) is invalid.

    Attributes:
        problems: Every problem found, each already formatted as ``file:line: message``.
    """

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class TraceFormatError(UserError, ValueError):
    """A trace holds data that cannot be stored as JSON, or stored data is not a valid trace.

    Raised when a trace is built or encoded with a value JSON cannot hold exactly (a
    non-finite float or a huge integer in a field that must be a number, a negative token
    count, nesting deeper than the format allows), and when a trace is read from JSON or
    from the store and is not a trace this toolproof can read.

    Attributes:
        trace_id: The id of the stored trace, when the problem is with a stored row.
    """

    def __init__(self, message: str, *, trace_id: str | None = None) -> None:
        super().__init__(message)
        self.trace_id = trace_id


class MissingAPIKey(UserError):
    """A provider's API key is not available.

    Attributes:
        variable: The environment variable that should hold the key.
    """

    def __init__(self, message: str, variable: str) -> None:
        super().__init__(message)
        self.variable = variable


class ModelRequestsDisabled(UserError, RuntimeError):
    """A real model was asked for a completion while ``ALLOW_MODEL_REQUESTS`` is off."""


class ScriptExhausted(UserError):
    """A :class:`ScriptedModel` was asked for more responses than its script holds."""


class NoRecording(UserError):
    """No recording answers this request (answered with HTTP 404).

    Attributes:
        request: The request's messages, sensitive values masked.
        closest: The most similar recorded request and its answer, if any.
    """

    def __init__(self, message: str, request: list[dict[str, Any]], closest: Any) -> None:
        super().__init__(message)
        self.request = request
        self.closest = closest


class ToolError(ToolproofError):
    """Raise inside a tool to report a problem the model can act on.

    The run continues: the message becomes a tool result with ``status="error"``.

    Example:
        ```python
        @tool
        def get_order(order_id: str) -> dict:
            if order_id not in ORDERS:
                raise ToolError(f"order {order_id} does not exist")
            return ORDERS[order_id]
        ```
    """


class ModelError(ToolproofError):
    """The model provider failed, or answered something toolproof cannot use."""


class ModelHTTPError(ModelError):
    """The provider answered with an HTTP error status.

    Attributes:
        status: The HTTP status code.
        provider_message: The provider's own error message, when its body had one.
        code: The provider's error code (``"invalid_api_key"``, ``429``...), if any.
        error_type: The provider's error type (``"invalid_request_error"``...), if any.
        param: The request parameter the provider blamed, if any.
        body: The decoded JSON body, or the raw text when the body was not JSON.
        retry_after: Seconds the provider asked to wait (``Retry-After``), if it said.
        retryable: Whether retrying the same request may succeed (429, 5xx).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        provider_message: str | None = None,
        code: str | int | None = None,
        error_type: str | None = None,
        param: str | None = None,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.provider_message = provider_message
        self.code = code
        self.error_type = error_type
        self.param = param
        self.body = body
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed later (rate limits and server errors)."""
        return self.status == 429 or self.status >= 500


class ModelConnectionError(ModelError):
    """The provider could not be reached, or did not answer in time."""


class UnexpectedModelOutput(ModelError):
    """The provider answered a body that cannot be understood.

    Attributes:
        body: The body as received (text), for diagnosis.
    """

    def __init__(self, message: str, body: str | None = None) -> None:
        super().__init__(message)
        self.body = body


class ToolCallParseError(UnexpectedModelOutput, ValueError):
    """A ``<tool_call>`` block could not be turned into tool calls.

    Attributes:
        body: The block's text as the model wrote it.
    """


class AgentRunError(ToolproofError):
    """A run stopped because of a problem that is not the model's to fix.

    Attributes:
        trace: The partial trace of the run, with ``stop_reason="error"``.
        step: The step (1-based model call number) at which the run stopped.
    """

    def __init__(
        self, message: str, *, trace: Trace | None = None, step: int | None = None
    ) -> None:
        super().__init__(message)
        self.trace = trace
        self.step = step


class _ToolRunError(AgentRunError):
    """A run stopped at one tool, named by ``tool_name``."""

    def __init__(
        self,
        message: str,
        *,
        tool_name: str,
        trace: Trace | None = None,
        step: int | None = None,
    ) -> None:
        super().__init__(message, trace=trace, step=step)
        self.tool_name = tool_name


class ToolCrashed(_ToolRunError):
    """A tool raised an exception it did not declare in ``@tool(errors=...)``.

    This is treated as a bug in the tool: the run stops rather than hiding it from the
    developer. The original exception is ``__cause__``.

    Attributes:
        tool_name: The tool that crashed.
    """


class ModelFailed(AgentRunError):
    """The model request failed; the provider's error is ``__cause__``."""


class UnmockedToolCall(_ToolRunError):
    """A tool cannot run in mock mode: it has side effects and no mock.

    Attributes:
        tool_name: The tool that was refused.
    """


class MockBypassed(UnmockedToolCall, UserError):
    """A mocked run would run a tool's real code: the agent does not use its mocked tools.

    Typically an agent factory ignores its ``tools`` argument, so the agent runs its own
    real tools although toolproof handed it mocked ones. The run stops before the real code
    runs (``trace`` holds the partial trace when it stopped mid-run), and being a
    :class:`UserError` it stops the whole eval or replay run (the CLI exits 2).

    Attributes:
        tool_name: The tool that was refused (``""`` when the agent was refused before any
            tool ran).
        factory: The agent factory as ``module:function``, when one is known.
    """

    def __init__(
        self,
        message: str,
        *,
        tool_name: str | None = None,
        factory: str | None = None,
        trace: Trace | None = None,
        step: int | None = None,
    ) -> None:
        super().__init__(message, tool_name=tool_name or "", trace=trace, step=step)
        self.factory = factory


class ReplayError(ToolproofError):
    """Replay of a recorded trace could not proceed."""


class MissingFixture(ReplayError, AssertionError):
    """A mocked tool was called with arguments that have no fixture.

    Attributes:
        tool_name: The tool that was called.
        arguments: The call's arguments, with sensitive values masked.
    """

    def __init__(self, message: str, *, tool_name: str, arguments: dict[str, Any]) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.arguments = arguments
