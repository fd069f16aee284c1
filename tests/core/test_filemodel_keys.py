"""A key that is not a string (YAML reads ``3:`` as an integer) is an unknown key in every model."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from toolproof._filemodel import FileModel, problems_of


def _models() -> list[type[FileModel]]:
    import importlib

    for module in (  # the checks' option models come with the built-in checks
        "toolproof.evals",
        "toolproof._fixture_files",
        "toolproof.replay._redact_rules",
        "toolproof.replay._rules_model",
    ):
        importlib.import_module(module)

    found: list[type[FileModel]] = []
    todo = list(FileModel.__subclasses__())
    while todo:
        model = todo.pop()
        found.append(model)
        todo.extend(model.__subclasses__())
    return sorted(set(found), key=lambda m: m.__qualname__)


MODELS = _models()


def test_the_walk_finds_the_file_models() -> None:
    assert len(MODELS) >= 15


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__qualname__)
@pytest.mark.parametrize("key", [7, 12345678901234567890, -1, 2.5, None])
def test_a_key_that_is_not_a_string_is_named_as_unknown(
    model: type[FileModel], key: object
) -> None:
    with pytest.raises(ValidationError) as raised:
        model.model_validate({key: 1})
    messages = [message for _, message in problems_of(raised.value)]
    assert messages
    assert not any("should be strings" in m for m in messages), messages
    if model.unknown_keys is None and "unknown_key" not in vars(model):  # the default words
        named = any(m.startswith("unknown key") and str(key) in m for m in messages)
        assert named or (messages == [messages[0]] and messages[0].startswith("expected {"))
