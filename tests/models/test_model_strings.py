"""Model strings: model_from_string and api_key_env."""

from __future__ import annotations

import asyncio

import pytest
from _openai_server import FakeOpenAIServer, Reply

from toolproof import Agent, Message, ModelSettings
from toolproof.errors import MissingAPIKey, UserError
from toolproof.models import OpenAIChatModel, TextProtocolModel, api_key_env, model_from_string

KEY_VARS = [
    "OPENAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "DASHSCOPE_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "TOGETHER_API_KEY",
    "VLLM_API_KEY",
    "GPU_KEY",
]
URL_VARS = [
    "OPENAI_BASE_URL",
    "DEEPSEEK_BASE_URL",
    "DASHSCOPE_BASE_URL",
    "OLLAMA_BASE_URL",
    "VLLM_BASE_URL",
    "LMSTUDIO_BASE_URL",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARS + URL_VARS:
        monkeypatch.delenv(name, raising=False)


def build(spec: str, **options: object) -> OpenAIChatModel:
    model = model_from_string(spec, **options)
    assert isinstance(model, OpenAIChatModel)
    return model


@pytest.mark.parametrize(
    ("spec", "variable", "url", "model_id"),
    [
        ("openai:gpt-4o-mini", "OPENAI_API_KEY", "https://api.openai.com/v1", "gpt-4o-mini"),
        ("deepseek:deepseek-chat", "DEEPSEEK_API_KEY", "https://api.deepseek.com", "deepseek-chat"),
        (
            "deepseek:deepseek-reasoner",
            "DEEPSEEK_API_KEY",
            "https://api.deepseek.com",
            "deepseek-reasoner",
        ),
        (
            "qwen:qwen-plus",
            "DASHSCOPE_API_KEY",
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "qwen-plus",
        ),
        (
            "dashscope:qwen-max",
            "DASHSCOPE_API_KEY",
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "qwen-max",
        ),
        (
            "openrouter:google/gemini-2.0-flash-exp:free",
            "OPENROUTER_API_KEY",
            "https://openrouter.ai/api/v1",
            "google/gemini-2.0-flash-exp:free",
        ),
        ("groq:qwen/qwen3-32b", "GROQ_API_KEY", "https://api.groq.com/openai/v1", "qwen/qwen3-32b"),
        (
            "together:meta-llama/Llama-3.3-70B-Instruct-Turbo",
            "TOGETHER_API_KEY",
            "https://api.together.xyz/v1",
            "meta-llama/Llama-3.3-70B-Instruct-Turbo",
        ),
    ],
)
def test_hosted_providers(
    spec: str, variable: str, url: str, model_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert api_key_env(spec) == variable
    with pytest.raises(MissingAPIKey) as caught:
        model_from_string(spec)
    assert caught.value.variable == variable
    assert variable in str(caught.value)
    monkeypatch.setenv(variable, "sk-x")
    model = build(spec)
    assert (model.model, model.base_url, model.name) == (model_id, url, spec)
    assert model.url == url + "/chat/completions"
    assert model.api_key_env == variable


def test_provider_defaults() -> None:
    openai = build("openai:gpt-4o", api_key="k")
    deepseek = build("deepseek:deepseek-chat", api_key="k")
    assert (openai.max_tokens_field, openai.send_reasoning) == ("max_completion_tokens", False)
    assert (deepseek.max_tokens_field, deepseek.send_reasoning) == ("max_tokens", True)
    assert (deepseek.stream, deepseek.system_role) == (False, "system")


@pytest.mark.parametrize(
    ("spec", "url"),
    [
        ("ollama:qwen2.5:7b", "http://localhost:11434/v1"),
        ("vllm:Qwen/Qwen2.5-7B-Instruct", "http://localhost:8000/v1"),
        ("lmstudio:qwen2.5-7b-instruct", "http://localhost:1234/v1"),
    ],
)
def test_local_servers_need_no_key(spec: str, url: str) -> None:
    assert api_key_env(spec) is None
    model = build(spec)
    assert model.base_url == url
    assert model.model == spec.split(":", 1)[1]  # "qwen2.5:7b" keeps its colon
    assert model.api_key_env is None


def test_vllm_uses_its_key_when_set(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "vllm-secret")
    monkeypatch.setenv("VLLM_BASE_URL", server.url + "/v1")
    server.queue(Reply.completion("ok"))
    asyncio.run(build("vllm:my-model").request([Message.user("hi")], [], ModelSettings()))
    assert server.last.headers["Authorization"] == "Bearer vllm-secret"


def test_openai_honours_openai_base_url(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1/")
    server.queue(Reply.completion("from the local server"))
    result = Agent("openai:gpt-4o-mini").run_sync("hi")
    assert result.output == "from the local server"
    assert result.trace.model == "openai:gpt-4o-mini"
    assert server.last.path == "/v1/chat/completions"
    assert server.last.headers["Authorization"] == "Bearer sk-local"
    assert server.last.body["model"] == "gpt-4o-mini"


def test_deepseek_honours_deepseek_base_url(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-ds")
    monkeypatch.setenv("DEEPSEEK_BASE_URL", server.url)
    server.queue(Reply.completion("hi", reasoning="r"))
    model = build("deepseek:deepseek-reasoner")
    assert model.base_url_env == "DEEPSEEK_BASE_URL"
    response = asyncio.run(model.request([Message.user("x")], [], ModelSettings()))
    assert response.message.reasoning == "r"
    assert server.last.path == "/chat/completions"


def test_ollama_sends_no_key(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", server.url + "/v1")
    server.queue(Reply.completion("ok"))
    asyncio.run(build("ollama:llama3.1").request([Message.user("hi")], [], ModelSettings()))
    assert "Authorization" not in server.last.headers
    assert server.last.body["model"] == "llama3.1"


def test_openai_compatible_endpoint_in_one_string(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = f"openai-compatible:my-model?base_url={server.url}/v1&api_key_env=GPU_KEY"
    assert api_key_env(spec) == "GPU_KEY"
    with pytest.raises(MissingAPIKey, match="set the environment variable GPU_KEY"):
        model_from_string(spec)
    monkeypatch.setenv("GPU_KEY", "gpu-secret")
    model = build(spec)
    assert (model.name, model.model, model.base_url) == (
        "openai-compatible:my-model",
        "my-model",
        server.url + "/v1",
    )
    server.queue(Reply.completion("ok"))
    asyncio.run(model.request([Message.user("hi")], [], ModelSettings()))
    assert server.last.headers["Authorization"] == "Bearer gpu-secret"
    keyless = f"openai-compatible:m?base_url={server.url}/v1"
    assert api_key_env(keyless) is None
    assert build(keyless).api_key_env is None


def test_string_options() -> None:
    model = build("deepseek:deepseek-chat?stream=true&timeout=30&max_retries=5", api_key="k")
    assert model.stream is True
    assert model.timeout.read == 30
    assert model.retry.max_retries == 5
    override = build("ollama:m?base_url=http://gpu-box:11434/v1")
    assert override.base_url == "http://gpu-box:11434/v1"
    assert build("openai:gpt-4o?api_key_env=AZURE_KEY", api_key="k").api_key_env == "AZURE_KEY"
    assert api_key_env("openai:gpt-4o?api_key_env=AZURE_KEY") == "AZURE_KEY"
    # Keyword options win over the string's.
    assert build("ollama:m?stream=true", stream=False).stream is False


def test_text_protocol_option() -> None:
    model = model_from_string("ollama:llama3.1?protocol=text")
    assert isinstance(model, TextProtocolModel)
    assert isinstance(model.inner, OpenAIChatModel)
    assert model.name == "ollama:llama3.1?protocol=text"
    assert model.inner.name == "ollama:llama3.1"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4o", "malformed model string 'gpt-4o': use 'PROVIDER:MODEL'"),
        ("openai:", "malformed model string 'openai:'"),
        (":gpt-4o", "malformed model string ':gpt-4o'"),
        ("anthropic:claude", "unknown model provider 'anthropic' in 'anthropic:claude': use"),
        (
            "ollama:m?colour=blue",
            "unknown option 'colour' in model string 'ollama:m?colour=blue'; known options: "
            "base_url, api_key_env, stream, protocol, timeout, max_retries",
        ),
        ("ollama:m?stream=maybe", "option stream in 'ollama:m?stream=maybe' must be true or false"),
        (
            "ollama:m?timeout=soon",
            "option timeout in 'ollama:m?timeout=soon' must be a non-negative number",
        ),
        (
            "ollama:m?max_retries=2.5",
            "option max_retries in 'ollama:m?max_retries=2.5' must be a whole number",
        ),
        ("ollama:m?protocol=xml", "protocol must be 'native' or 'text'"),
        ("ollama:m?stream", "malformed options 'stream' in model string"),
        (
            "openai-compatible:m",
            "model string 'openai-compatible:m' needs the endpoint: 'openai-compatible:m?base_url=http://host:8000/v1'",
        ),
        ("ollama:m?base_url=localhost:11434", "must start with http:// or https://"),
    ],
)
def test_bad_model_strings_are_one_user_error(spec: str, message: str) -> None:
    with pytest.raises(UserError) as caught:
        model_from_string(spec)
    assert message in str(caught.value)


def test_the_error_lists_every_valid_form() -> None:
    with pytest.raises(UserError) as caught:
        model_from_string("nope")
    assert str(caught.value) == (
        "malformed model string 'nope': use 'PROVIDER:MODEL' with a provider among openai:, "
        "deepseek:, qwen:, dashscope:, openrouter:, groq:, together:, ollama:, vllm:, "
        "lmstudio: (for example 'deepseek:deepseek-chat'), or "
        "'openai-compatible:MODEL?base_url=URL&api_key_env=VAR' for any other endpoint; "
        "options after '?': base_url, api_key_env, stream, protocol, timeout, max_retries"
    )
    with pytest.raises(UserError, match="unknown model provider"):
        api_key_env("anthropic:claude")
    with pytest.raises(UserError, match="a model string must be a string"):
        model_from_string(42)  # type: ignore[arg-type]


def test_the_agent_reports_a_missing_key_before_any_request() -> None:
    with pytest.raises(MissingAPIKey) as caught:
        Agent("deepseek:deepseek-chat")
    assert str(caught.value) == (
        "deepseek:deepseek-chat needs an API key: set the environment variable "
        "DEEPSEEK_API_KEY (or pass api_key=...)"
    )
