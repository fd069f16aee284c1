"""Every exception a synchronous tool raises meets the error contract as itself.

For each built-in exception class that takes a message, raised by a synchronous tool (run
on the event loop, in ``Toolset.execute``'s own frame): declared in ``@tool(errors=...)``
it becomes an error result of that type for the model; undeclared it stops the run with
``ToolCrashed`` naming it. ``StopIteration`` included, which a coroutine boundary between
the tool and the error contract would turn into a ``RuntimeError``.
"""

from __future__ import annotations

import asyncio
import builtins
from typing import Any

import pytest

from toolproof import ToolCall, Toolset, tool
from toolproof.errors import ToolCrashed


def _raisable(cls: Any) -> bool:
    if not isinstance(cls, type) or not issubclass(cls, Exception) or issubclass(cls, Warning):
        return False
    try:
        cls("boom")
    except Exception:
        return False
    return True


EXCEPTIONS = sorted(
    (value for value in vars(builtins).values() if isinstance(value, type) and _raisable(value)),
    key=lambda cls: cls.__name__,
)


def _probe(error: type[Exception], declared: bool) -> Toolset:
    def probe(x: int) -> int:
        """Raise."""
        raise error("boom")

    return Toolset([tool(probe, errors=(error,) if declared else ())])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("error", EXCEPTIONS, ids=lambda cls: cls.__name__)
def test_a_declared_exception_is_an_error_result_of_its_type(error: type[Exception]) -> None:
    result = asyncio.run(_probe(error, True).execute(ToolCall("probe", {"x": 1}, id="1")))
    assert (result.status, result.error_type) == ("error", error.__name__)
    assert result.content == f"Error ({error.__name__}): boom"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("error", EXCEPTIONS, ids=lambda cls: cls.__name__)
def test_an_undeclared_exception_stops_the_run_naming_it(error: type[Exception]) -> None:
    with pytest.raises(ToolCrashed) as caught:
        asyncio.run(_probe(error, False).execute(ToolCall("probe", {"x": 1}, id="1")))
    assert str(caught.value).startswith(
        f"tool 'probe' raised {error.__name__}: {error('boom')} (a bug"
    )
