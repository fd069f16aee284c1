"""What a fixture mock is made of: fixtures, the calls it records, errors named in files."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from toolproof._matching._objects import format_call, mask_arguments
from toolproof.errors import UserError

if TYPE_CHECKING:
    from toolproof._tools import Tool

__all__ = ["DEFAULT_MASK", "Fixture", "RecordedCall"]

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
    raises: BaseException | type[BaseException] | _NamedError | None = None
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


@dataclass(frozen=True, slots=True)
class _NamedError:
    """An error named in a fixture file, resolved against the tool's declared errors."""

    name: str
    message: str | None

    def resolve(self, tool: Tool[..., Any], where: str) -> BaseException:
        for error in tool.errors:
            if error.__name__ == self.name:
                return error(self.message) if self.message is not None else error()
        declared = ", ".join(e.__name__ for e in tool.errors) or "none"
        raise UserError(
            f"{where} raises {self.name!r}, which is neither a built-in exception nor one of "
            f"the errors tool '{tool.name}' declares ({declared}); use one of those, "
            "'ToolError', or a dotted path such as 'myapp.errors.NotFound' (of an imported module)"
        )
