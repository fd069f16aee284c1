"""The check vocabulary: every key ``expect:`` accepts is a check registered by name.

Built-in checks and your own are registered the same way, with :func:`check`::

    from toolproof.evals import SessionRecord, check

    @check("max_words", accepts="a positive integer")
    def max_words(record: SessionRecord, limit: int) -> tuple[str, str]:
        words = len((record.output or "").split())
        if words > limit:
            return "fail", f"the answer has {words} words, more than {limit}"
        return "pass", f"{words} words <= {limit}"

A suite names the modules that register its checks (``checks: [mypkg.checks]``); then
``expect: {max_words: 50}`` works like any built-in key, and a misspelt name gets a
did-you-mean suggestion among every registered check.

The decorated function runs on every trial with the trial's :class:`SessionRecord` and the
value written in the suite (validated first against ``spec``, a type or pydantic model,
when given: a bad value fails the suite before anything runs, with its file and line). It
returns ``True``/``False``, or ``(status, reason)`` with status ``"pass"``, ``"fail"`` or
``"skip"``.

Built-in checks need more than the value (the agent's tools, the other keys of the
mapping): they are registered with :meth:`check.compiler` and build a :class:`Check`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, get_args

from toolproof._text import clip
from toolproof.errors import UserError

if TYPE_CHECKING:
    from toolproof.evals._checks import Check, CheckContext, CheckStatus, SessionRecord

__all__ = ["CheckDefinition", "accepts", "check", "registered"]

#: Builds one check from its value: ``(context, value, the whole expect mapping)``.
Compiler = Callable[["CheckContext", Any, Mapping[str, Any]], "Check | None"]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class CheckDefinition:
    """A registered check.

    Attributes:
        name: The ``expect`` key.
        accepts: What its value must be, in words (shown in messages and the JSON Schema).
        compile: Builds the check from a value.
        schema: The JSON Schema of its value (``None``: any value).
        module: The module that registered it.
        builtin: Whether toolproof ships it.
    """

    name: str
    accepts: str
    compile: Compiler
    schema: dict[str, Any] | None
    module: str
    builtin: bool


_REGISTRY: dict[str, CheckDefinition] = {}
_BUILTINS = (
    "toolproof.evals.checks.calls",
    "toolproof.evals.checks.answer",
    "toolproof.evals.checks.run",
    "toolproof.evals.checks.state",
)
_loaded = False


def registered() -> dict[str, CheckDefinition]:
    """Every registered check by name: the built-ins first, in their documented order."""
    global _loaded
    if not _loaded:
        import importlib

        _loaded = True
        for module in _BUILTINS:
            importlib.import_module(module)
    return _REGISTRY


def accepts(name: str) -> str:
    """What the value of check ``name`` must be, in words."""
    return registered()[name].accepts


def _register(definition: CheckDefinition) -> None:
    if definition.builtin is False:
        registered()  # built-ins keep their names and come first
    found = _REGISTRY.get(definition.name)
    if found is not None and (found.builtin or found.module != definition.module):
        raise UserError(
            f"a check named {definition.name!r} is already registered by {found.module}; "
            "choose another name"
        )
    _REGISTRY[definition.name] = definition


def unregister(name: str) -> None:
    """Forget a user check (tests register checks and clean up after themselves)."""
    found = _REGISTRY.get(name)
    if found is not None and not found.builtin:
        del _REGISTRY[name]


class _CheckDecorator:
    """:func:`check` and its :meth:`compiler` form."""

    def __call__(
        self,
        name: str,
        *,
        spec: Any = None,
        accepts: str | None = None,
        describe: Callable[[Any], str] | str | None = None,
    ) -> Callable[[F], F]:
        """Register the decorated function as the check ``name``.

        Args:
            name: The key written under ``expect:``.
            spec: The type its value must have (a pydantic model, ``int``,
                ``list[str]``...); ``None`` accepts any value.
            accepts: What the value must be, in words (for messages); defaults to the
                spec's description.
            describe: What the check expects, in words, for reports: text, or a function of
                the value.

        Returns:
            The decorator; the function is returned unchanged.
        """

        def decorate(function: F) -> F:
            adapter = _adapter(spec)
            schema = adapter.json_schema() if adapter is not None else None
            words = accepts or (schema or {}).get("description") or _spec_words(spec)
            _register(
                CheckDefinition(
                    name=name,
                    accepts=words,
                    compile=_user_compiler(name, function, adapter, describe),
                    schema=schema,
                    module=getattr(function, "__module__", "?"),
                    builtin=False,
                )
            )
            return function

        return decorate

    def compiler(
        self, name: str, *, accepts: str, schema: dict[str, Any] | None = None
    ) -> Callable[[F], F]:
        """Register a function that compiles the check ``name`` itself.

        The function takes ``(context, value, expect)`` — the :class:`CheckContext` (the
        agent's tools, where to record problems), the value, and the whole ``expect``
        mapping — and returns a :class:`Check`, or ``None`` after recording problems.
        """

        def decorate(function: F) -> F:
            module = getattr(function, "__module__", "?")
            _register(
                CheckDefinition(
                    name=name,
                    accepts=accepts,
                    compile=function,
                    schema=schema,
                    module=module,
                    builtin=module.startswith("toolproof."),
                )
            )
            return function

        return decorate


#: Registers a check under a name usable from ``expect:`` (see the module docstring).
check = _CheckDecorator()


def _adapter(spec: Any) -> Any:
    if spec is None:
        return None
    from pydantic import TypeAdapter

    return TypeAdapter(spec)


def _spec_words(spec: Any) -> str:
    if spec is None:
        return "any value"
    args = get_args(spec)
    if args:
        return " or ".join(_spec_words(arg) for arg in args)
    return getattr(spec, "__name__", repr(spec))


def _user_compiler(
    name: str,
    function: Callable[..., Any],
    adapter: Any,
    describe: Callable[[Any], str] | str | None,
) -> Compiler:
    def compile_check(ctx: CheckContext, value: Any, expect: Mapping[str, Any]) -> Check | None:
        from pydantic import ValidationError

        from toolproof._filemodel import report
        from toolproof.evals._checks import Check

        spec_value = value
        if adapter is not None:
            try:
                spec_value = adapter.validate_python(value, strict=True)
            except ValidationError as exc:
                problems = [(e["loc"], e["msg"]) for e in exc.errors()]
                if all(e["type"] == "toolproof" for e in exc.errors()):
                    report(exc, ctx.problems, ctx.at(name))
                else:
                    words = registered()[name].accepts
                    where = ", ".join(
                        ".".join(map(str, loc)) + ": " + msg if loc else msg
                        for loc, msg in problems[:3]
                    )
                    ctx.problems.add(ctx.at(name), f"expected {words}, got {value!r} ({where})")
                return None
        if callable(describe):
            text = describe(spec_value)
        else:
            text = describe or f"{name}: {clip(repr(value), 60)}"

        def evaluate(record: SessionRecord) -> tuple[CheckStatus, str]:
            return _outcome(name, function(record, spec_value))

        return Check(name, text, evaluate)

    return compile_check


def _outcome(name: str, result: Any) -> tuple[CheckStatus, str]:
    if result is True:
        return "pass", f"{name} passed"
    if result is False:
        return "fail", f"{name} failed"
    if (
        isinstance(result, tuple)
        and len(result) == 2
        and result[0] in ("pass", "fail", "skip")
        and isinstance(result[1], str)
    ):
        return result[0], result[1]
    raise TypeError(
        f"check {name!r} returned {clip(repr(result), 80)}; a check returns True, False, or "
        "(status, reason) with status 'pass', 'fail' or 'skip'"
    )
