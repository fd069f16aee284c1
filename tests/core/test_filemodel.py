"""The shared plumbing of file formats: pydantic errors become file:line problems."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator

from toolproof._filemodel import Expected, FileModel, problem, validate
from toolproof._yaml import Problems, load_yaml


class Inner(FileModel):
    size: Annotated[int, Field(ge=1), Expected("a positive integer")] = 1


class Outer(FileModel):
    name: str
    mode: Annotated[str, Expected("fast or slow")] = "fast"
    inner: Inner | None = None
    items: list[Inner] = Field(default_factory=list)
    tags: Any = None

    missing: ClassVar[dict[str, str]] = {"name": "each thing needs a 'name'"}

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: Any) -> Any:
        if not isinstance(value, list):
            raise problem("tags are a list", also=["(write [a, b])"])
        return value


def problems_of(text: str) -> list[str]:
    data, locator, structural = load_yaml(text, Path("f.yaml"))
    problems = Problems(locator)
    validate(Outer, data, problems)
    return structural + problems.formatted()


def test_every_problem_with_its_line_and_did_you_mean() -> None:
    assert problems_of(
        "nmae: x\nmode: 3\ninner: {size: 0, szie: 2}\nitems:\n  - size: true\n  - {}\ntags: 5\n"
    ) == [
        "f.yaml:1: nmae: unknown key 'nmae' (did you mean 'name'?); allowed: name, mode, inner, "
        "items, tags",
        "f.yaml:1: each thing needs a 'name'",
        "f.yaml:2: mode: expected fast or slow, got 3",
        "f.yaml:3: inner.szie: unknown key 'szie' (did you mean 'size'?); allowed: size",
        "f.yaml:3: inner.size: expected a positive integer, got 0",
        "f.yaml:5: items[0].size: expected a positive integer, got True",
        "f.yaml:7: tags: tags are a list",
        "f.yaml:7: tags: (write [a, b])",
    ]


def test_values_are_not_converted() -> None:
    assert problems_of("name: 3\n") == [
        "f.yaml:1: name: input should be a valid string, got an integer"
    ]
    assert problems_of("name: x\ninner: 3\n") == [
        "f.yaml:2: inner: expected a mapping, got an integer"
    ]


def test_a_valid_document_is_a_model() -> None:
    data, locator, _ = load_yaml("name: x\nitems: [{size: 2}]\n", Path("f.yaml"))
    model, bad = validate(Outer, data, Problems(locator))
    assert model is not None and bad == set()
    assert model.items[0].size == 2
