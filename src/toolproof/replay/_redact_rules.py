"""Redaction-rule files as pydantic models: what :meth:`Redactor.from_dict` reads.

The form is the one :meth:`Redactor.from_dict` shows. Problems name the key
(``redaction.fields.user_id: unknown redaction action 'encrypt'...``); a file with several
problems reports all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
)

from toolproof._filemodel import Expected, FileModel, load_error, problem
from toolproof.errors import ConfigError

__all__ = ["CustomPatternSpec", "RedactionFile", "parse_redaction"]

ACTIONS = ("mask", "drop", "hash")
_ACTION_SCHEMA: dict[str, Any] = {"enum": list(ACTIONS)}


def action_problem(value: Any) -> str | None:
    """The problem with an action, or ``None`` when it is one of :data:`ACTIONS`."""
    if value in ACTIONS:
        return None
    return f"unknown redaction action {value!r}; use one of: {', '.join(ACTIONS)}"


def _unknown(keys: list[Any], allowed: list[str]) -> str:
    return (
        f"unknown key(s) {', '.join(map(repr, sorted(keys, key=str)))}; "
        f"valid keys: {', '.join(sorted(allowed))}"
    )


def _one_action(value: Any) -> Any:
    found = action_problem(value)
    if found is not None:
        raise problem(found)
    return value


#: An action, checked with the message of the Redactor.
ActionValue = Annotated[Any, BeforeValidator(_one_action), WithJsonSchema(_ACTION_SCHEMA)]


class CustomPatternSpec(FileModel):
    """One entry of ``custom:``: your own regular expression."""

    model_config = ConfigDict(extra="ignore", strict=True)

    name: Any = Field(None, json_schema_extra={"type": "string"}, description="the rule's name")
    regex: Any = Field(json_schema_extra={"type": "string"}, description="a regular expression")
    action: ActionValue = "mask"

    missing: ClassVar[dict[str, str]] = {"regex": "expected {name: ..., regex: ..., action: ...}"}


def _custom_mapping(value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise problem("expected {name: ..., regex: ..., action: ...}")
    return value


CustomItem = Annotated[CustomPatternSpec, BeforeValidator(_custom_mapping)]


def _actions(value: Any, what: str) -> Any:
    if isinstance(value, list):
        return {str(name): "mask" for name in value}
    if not isinstance(value, Mapping):
        raise problem(f"expected a mapping of {what} name to action")
    return value


class RedactionFile(FileModel):
    """A redaction-rules file (or the ``redaction:`` section of one)."""

    secret_env: Any = Field(
        None, json_schema_extra={"type": "string"}, description="where the HMAC secret is read"
    )
    mask: Annotated[str, Expected("text")] = Field("***", description="replaces masked values")
    default_fields: Any = Field(
        True, json_schema_extra={"type": "boolean"}, description="also mask credential fields"
    )
    fields: dict[Any, ActionValue] | None = Field(
        None, description="field names (globs allowed) and their action"
    )
    patterns: Any = Field(
        None,
        json_schema_extra={"type": "object", "additionalProperties": _ACTION_SCHEMA},
        description="built-in patterns (email, phone, card, api_key) and their action",
    )
    custom: list[CustomItem] | None = Field(None, description="your own patterns")

    unknown_keys: ClassVar[Any] = staticmethod(_unknown)

    @field_validator("fields", mode="before")
    @classmethod
    def _fields(cls, value: Any) -> Any:
        return _actions(value or {}, "field")

    @field_validator("patterns", mode="before")
    @classmethod
    def _patterns(cls, value: Any) -> Any:
        # Actions of patterns are checked by the Redactor, which names them itself.
        return None if value is None else _actions(value, "pattern")

    @field_validator("custom", mode="before")
    @classmethod
    def _custom(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, list):
            raise problem(
                f"expected a list of {{name: ..., regex: ..., action: ...}}, got {value!r}"
            )
        return value or None


def parse_redaction(data: Any, where: str) -> RedactionFile:
    """Check a redaction-rules mapping (see the module docstring).

    Raises:
        ConfigError: The data is malformed; each problem names ``where`` and the key.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping of redaction settings, got {data!r}")
    try:
        return RedactionFile.model_validate(data)
    except ValidationError as exc:
        raise load_error(exc, where, "redaction rules") from None
