"""Model strings: ``"provider:model"`` (plus ``?options``) to model instances.

The forms (the same in Python, on the command line and in YAML suites)::

    openai:gpt-4o-mini                    OPENAI_API_KEY, honours OPENAI_BASE_URL
    deepseek:deepseek-chat                DEEPSEEK_API_KEY, honours DEEPSEEK_BASE_URL
    qwen:qwen-plus                        DASHSCOPE_API_KEY (alias dashscope:)
    ollama:qwen2.5:7b                     no key, http://localhost:11434/v1 (OLLAMA_BASE_URL)
    openai-compatible:MODEL?base_url=URL&api_key_env=VAR     any other endpoint

Options after ``?`` work with every provider, for example
``deepseek:deepseek-reasoner?stream=true`` or ``ollama:llama3.1?protocol=text``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from toolproof.errors import UserError
from toolproof.models._base import Model

__all__ = ["PROVIDERS", "Provider", "api_key_env", "model_from_string"]


@dataclass(frozen=True, slots=True)
class Provider:
    """An OpenAI-compatible provider that model strings can name.

    Attributes:
        name: The prefix in model strings (``"deepseek"``).
        base_url: The default API root; ``None`` means the string must give ``base_url=``.
        base_url_env: The environment variable that overrides ``base_url``.
        key_env: The environment variable that holds the API key (``None``: no key).
        key_required: Whether a missing key is an error (local servers take none).
        options: Adapter options this provider needs (see ``OpenAIChatModel``).
    """

    name: str
    base_url: str | None
    base_url_env: str | None
    key_env: str | None
    key_required: bool = True
    options: tuple[tuple[str, Any], ...] = ()


#: The providers model strings can name, by prefix.
PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider(
            "openai",
            "https://api.openai.com/v1",
            "OPENAI_BASE_URL",
            "OPENAI_API_KEY",
            options=(("max_tokens_field", "max_completion_tokens"),),
        ),
        Provider(
            "deepseek",
            "https://api.deepseek.com",
            "DEEPSEEK_BASE_URL",
            "DEEPSEEK_API_KEY",
            options=(("send_reasoning", True),),
        ),
        Provider(
            "qwen",
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "DASHSCOPE_BASE_URL",
            "DASHSCOPE_API_KEY",
        ),
        Provider(
            "dashscope",
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "DASHSCOPE_BASE_URL",
            "DASHSCOPE_API_KEY",
        ),
        Provider(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "OPENROUTER_BASE_URL",
            "OPENROUTER_API_KEY",
        ),
        Provider("groq", "https://api.groq.com/openai/v1", "GROQ_BASE_URL", "GROQ_API_KEY"),
        Provider(
            "together", "https://api.together.xyz/v1", "TOGETHER_BASE_URL", "TOGETHER_API_KEY"
        ),
        Provider(
            "ollama", "http://localhost:11434/v1", "OLLAMA_BASE_URL", None, key_required=False
        ),
        Provider(
            "vllm", "http://localhost:8000/v1", "VLLM_BASE_URL", "VLLM_API_KEY", key_required=False
        ),
        Provider(
            "lmstudio", "http://localhost:1234/v1", "LMSTUDIO_BASE_URL", None, key_required=False
        ),
        Provider("openai-compatible", None, None, None, key_required=False),
    )
}

#: Options a model string may carry after ``?``, with what they mean.
STRING_OPTIONS = {
    "base_url": "the API root (required for openai-compatible:)",
    "api_key_env": "the environment variable holding the key",
    "stream": "true or false: streamed responses",
    "protocol": "native (default) or text: describe tools in the prompt (TextProtocolModel)",
    "timeout": "read and progress timeout in seconds",
    "max_retries": "retries on 429, 5xx and connection errors",
}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _valid_forms() -> str:
    names = ", ".join(f"{n}:" for n in PROVIDERS if n != "openai-compatible")
    return (
        "use 'PROVIDER:MODEL' with a provider among "
        f"{names} (for example 'deepseek:deepseek-chat'), or "
        "'openai-compatible:MODEL?base_url=URL&api_key_env=VAR' for any other endpoint; "
        f"options after '?': {', '.join(STRING_OPTIONS)}"
    )


@dataclass(frozen=True, slots=True)
class _Spec:
    provider: Provider
    model: str
    options: dict[str, str]


def _parse(spec: object) -> _Spec:
    if not isinstance(spec, str):
        raise UserError(f"a model string must be a string, got {spec!r}; {_valid_forms()}")
    text = spec.strip()
    head, _, query = text.partition("?")
    provider_name, colon, model = head.partition(":")
    provider_name = provider_name.strip().lower()
    model = model.strip()
    if not colon or not provider_name or not model:
        raise UserError(f"malformed model string {spec!r}: {_valid_forms()}")
    provider = PROVIDERS.get(provider_name)
    if provider is None:
        raise UserError(f"unknown model provider {provider_name!r} in {spec!r}: {_valid_forms()}")
    options: dict[str, str] = {}
    if query:
        from urllib.parse import parse_qsl

        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
        except ValueError:
            raise UserError(
                f"malformed options {query!r} in model string {spec!r}: write them as "
                "'?key=value&key=value'"
            ) from None
        for key, value in pairs:
            if key not in STRING_OPTIONS:
                known = ", ".join(STRING_OPTIONS)
                raise UserError(
                    f"unknown option {key!r} in model string {spec!r}; known options: {known}"
                )
            options[key] = value
    if provider.base_url is None and not options.get("base_url"):
        raise UserError(
            f"model string {spec!r} needs the endpoint: "
            f"'{provider.name}:{model}?base_url=http://host:8000/v1' "
            "(add '&api_key_env=VAR' if it needs a key)"
        )
    return _Spec(provider, model, options)


def api_key_env(spec: str) -> str | None:
    """The environment variable a model string needs for its API key.

    Args:
        spec: A model string such as ``"deepseek:deepseek-chat"``.

    Returns:
        The variable (``"DEEPSEEK_API_KEY"``), or ``None`` when the model needs no key
        (local servers such as Ollama, or a string without ``api_key_env=``).

    Raises:
        UserError: The string is malformed or names an unknown provider.
    """
    parsed = _parse(spec)
    if "api_key_env" in parsed.options:
        return parsed.options["api_key_env"] or None
    return parsed.provider.key_env if parsed.provider.key_required else None


def model_from_string(spec: str, **options: Any) -> Model:
    """Build a model from a string such as ``"deepseek:deepseek-chat"``.

    Keys come from the provider's environment variable (``OPENAI_API_KEY``,
    ``DEEPSEEK_API_KEY``...) unless ``api_key=`` is passed; ``openai:`` honours
    ``OPENAI_BASE_URL`` and ``deepseek:`` honours ``DEEPSEEK_BASE_URL`` (each provider has
    its ``*_BASE_URL``), so any compatible server can stand in.

    Args:
        spec: ``"provider:model"``, optionally followed by ``?key=value&...`` options
            (``base_url``, ``api_key_env``, ``stream``, ``protocol``, ``timeout``,
            ``max_retries``).
        **options: Passed to :class:`~toolproof.models.OpenAIChatModel` (``api_key=``,
            ``base_url=``, ``timeout=``, ``retry=``, ``stream=``...); they win over the
            string's options.

    Returns:
        The model (an ``OpenAIChatModel``, or a ``TextProtocolModel`` around one with
        ``protocol=text``).

    Raises:
        UserError: The string is malformed or names an unknown provider; the message lists
            the valid forms.
        MissingAPIKey: The provider needs a key and its variable is not set.

    Example:
        ```python
        model = model_from_string("deepseek:deepseek-chat")
        local = model_from_string("ollama:qwen2.5:7b?protocol=text")
        custom = model_from_string(
            "openai-compatible:my-model?base_url=http://gpu:8000/v1&api_key_env=GPU_KEY"
        )
        ```
    """
    from toolproof.models.openai import OpenAIChatModel

    parsed = _parse(spec)
    provider = parsed.provider
    kwargs: dict[str, Any] = dict(provider.options)
    string_options = dict(parsed.options)
    protocol = string_options.pop("protocol", "native").strip().lower() or "native"
    if protocol not in ("native", "text"):
        raise UserError(f"protocol must be 'native' or 'text' in {spec!r}, got {protocol!r}")
    base_url = string_options.pop("base_url", None)
    if base_url:
        kwargs["base_url"] = base_url
    elif provider.base_url_env and os.environ.get(provider.base_url_env):
        kwargs["base_url"] = os.environ[provider.base_url_env]
        kwargs["base_url_env"] = provider.base_url_env
    else:
        kwargs["base_url"] = provider.base_url
    key_env = string_options.pop("api_key_env", None)
    if key_env:
        kwargs["api_key_env"] = key_env
    elif provider.key_env is not None and (
        provider.key_required or os.environ.get(provider.key_env)
    ):
        kwargs["api_key_env"] = provider.key_env
    if "stream" in string_options:
        kwargs["stream"] = _flag(string_options.pop("stream"), "stream", spec)
    if "timeout" in string_options:
        kwargs["timeout"] = _number(string_options.pop("timeout"), "timeout", spec)
    if "max_retries" in string_options:
        value = string_options.pop("max_retries").strip()
        if not value.isdigit():
            raise UserError(f"option max_retries in {spec!r} must be a whole number, got {value!r}")
        kwargs["retry"] = int(value)
    kwargs["name"] = f"{provider.name}:{parsed.model}"
    kwargs.update(options)
    model: Model = OpenAIChatModel(parsed.model, **kwargs)
    if protocol == "text":
        from toolproof.models.textproto import TextProtocolModel

        model = TextProtocolModel(model)
    return model


def _flag(value: str, key: str, spec: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise UserError(f"option {key} in {spec!r} must be true or false, got {value!r}")


def _number(value: str, key: str, spec: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if number < 0 or number != number:
        raise UserError(f"option {key} in {spec!r} must be a non-negative number, got {value!r}")
    return number
