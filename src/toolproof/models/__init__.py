"""Models: the ``Model`` seam, real adapters, and the switch that blocks real requests.

``ALLOW_MODEL_REQUESTS`` is toolproof's only process-global state: set it to ``False``
(the pytest plugin does) and every real adapter raises ``ModelRequestsDisabled`` instead of
sending a request. Scripted and function models are not affected.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from toolproof._messages import ModelResponse, ModelSettings, ToolDefinition, Usage
from toolproof._pricing import DEFAULT_PRICES, Price
from toolproof.errors import ModelRequestsDisabled
from toolproof.models._base import Model

TYPE_CHECKING = False
if TYPE_CHECKING:
    from toolproof.models._http import RetryPolicy, Timeout
    from toolproof.models._registry import api_key_env, model_from_string
    from toolproof.models.openai import OpenAIChatModel
    from toolproof.models.textproto import TextProtocolModel, ToolCallParseError, parse_tool_calls

# The adapters are imported on first use: `import toolproof` must stay light.
_LAZY = (
    "OpenAIChatModel",
    "RetryPolicy",
    "TextProtocolModel",
    "Timeout",
    "ToolCallParseError",
    "api_key_env",
    "model_from_string",
    "parse_tool_calls",
)


def __getattr__(name: str) -> object:
    value: object
    if name == "OpenAIChatModel":
        from toolproof.models.openai import OpenAIChatModel as value
    elif name in ("RetryPolicy", "Timeout"):
        from toolproof.models import _http

        value = getattr(_http, name)
    elif name in ("TextProtocolModel", "ToolCallParseError", "parse_tool_calls"):
        from toolproof.models import textproto

        value = getattr(textproto, name)
    elif name in ("api_key_env", "model_from_string"):
        from toolproof.models import _registry

        value = getattr(_registry, name)
    else:
        raise AttributeError(f"module 'toolproof.models' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "ALLOW_MODEL_REQUESTS",
    "DEFAULT_PRICES",
    "Model",
    "ModelResponse",
    "ModelSettings",
    "OpenAIChatModel",
    "Price",
    "RetryPolicy",
    "TextProtocolModel",
    "Timeout",
    "ToolCallParseError",
    "ToolDefinition",
    "Usage",
    "api_key_env",
    "check_allow_model_requests",
    "model_from_string",
    "override_allow_model_requests",
    "parse_tool_calls",
]

#: Whether real model adapters may send requests. The pytest plugin sets it to ``False``;
#: the environment variable ``TOOLPROOF_ALLOW_MODEL_REQUESTS=0`` does the same at import.
ALLOW_MODEL_REQUESTS: bool = True


def _init_from_env() -> None:
    import os

    global ALLOW_MODEL_REQUESTS
    if os.environ.get("TOOLPROOF_ALLOW_MODEL_REQUESTS", "").strip().lower() in {"0", "false", "no"}:
        ALLOW_MODEL_REQUESTS = False


_init_from_env()


def check_allow_model_requests(model_name: str = "a real model") -> None:
    """Raise unless real model requests are allowed.

    Real adapters call this before sending anything.

    Raises:
        ModelRequestsDisabled: ``toolproof.models.ALLOW_MODEL_REQUESTS`` is ``False``.
    """
    if not ALLOW_MODEL_REQUESTS:
        raise ModelRequestsDisabled(
            f"request to {model_name} blocked: toolproof.models.ALLOW_MODEL_REQUESTS is False "
            "(the toolproof pytest plugin blocks real model requests; mark the test "
            "@pytest.mark.live_model(...) and run with --toolproof-live to allow them)"
        )


@contextmanager
def override_allow_model_requests(allow: bool) -> Iterator[None]:
    """Temporarily set ``ALLOW_MODEL_REQUESTS`` (restored on exit)."""
    global ALLOW_MODEL_REQUESTS
    previous = ALLOW_MODEL_REQUESTS
    ALLOW_MODEL_REQUESTS = allow
    try:
        yield
    finally:
        ALLOW_MODEL_REQUESTS = previous
