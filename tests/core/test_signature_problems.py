"""A function that cannot become a tool gets one error listing every problem, in order.

Signatures are generated from every parameter kind (positional-only, plain, keyword-only,
``*args``, ``**kwargs``), each with or without a type hint and a documented description,
plus documented names that are not parameters. The expected problems are worked out
independently here and compared line by line with the error; a function without problems
becomes a tool whose schema names exactly its plain and keyword-only parameters.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import tool
from toolproof.errors import UserError

# (hinted, documented) for each parameter of a kind
params = st.lists(st.tuples(st.booleans(), st.booleans()), max_size=3)


def signature(
    positional_only: list[tuple[bool, bool]],
    plain: list[tuple[bool, bool]],
    keyword_only: list[tuple[bool, bool]],
    star: bool,
    double: bool,
) -> tuple[list[str], list[str], list[str], list[str]]:
    """The parameter texts, the expected problems, the documented and the schema names."""
    parts: list[str] = []
    problems: list[str] = []
    documented: list[str] = []
    fields: list[str] = []
    number = 0

    def add(kind: str, hinted: bool, described: bool) -> None:
        nonlocal number
        name = f"{kind[0]}{number}"
        number += 1
        parts.append(f"{name}: int" if hinted else name)
        if described:
            documented.append(name)
        if kind == "only":
            problems.append(f"{name}: positional-only parameters cannot be passed by name")
        elif not hinted:
            problems.append(f"{name}: missing type hint")
        else:
            fields.append(name)

    for hinted, described in positional_only:
        add("only", hinted, described)
    if positional_only:
        parts.append("/")
    for hinted, described in plain:
        add("plain", hinted, described)
    if star:
        parts.append("*args")
        problems.append("*args: variable positional arguments cannot be described to a model")
    elif keyword_only:
        parts.append("*")
    for hinted, described in keyword_only:
        add("keyword", hinted, described)
    if double:
        parts.append("**extra")
        problems.append("**extra: variable keyword arguments cannot be described to a model")
    return parts, problems, documented, fields


def make(parts: list[str], documented: list[str]) -> Any:
    lines = [f"def subject({', '.join(parts)}):"]
    if documented:
        lines += ['    """Do it.', "", "    Args:"]
        lines += [f"        {name}: The {name}." for name in documented]
        lines += ['    """']
    else:
        lines += ['    """Do it."""']
    lines += ["    return 0"]
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(lines), "<generated>", "exec"), namespace)
    return namespace["subject"]


@settings(max_examples=300, deadline=None)
@given(
    params,
    params,
    params,
    st.booleans(),
    st.booleans(),
    st.lists(st.sampled_from(["gone", "removed", "old"]), max_size=2, unique=True),
)
def test_every_problem_of_a_signature_is_listed_once_in_order(
    positional_only: list[tuple[bool, bool]],
    plain: list[tuple[bool, bool]],
    keyword_only: list[tuple[bool, bool]],
    star: bool,
    double: bool,
    stray: list[str],
) -> None:
    parts, problems, documented, fields = signature(
        positional_only, plain, keyword_only, star, double
    )
    problems += [f"docstring documents '{name}', which is not a parameter" for name in stray]
    function = make(parts, documented + stray)
    if not problems:
        made = tool(function)
        assert list(made.definition.parameters["properties"]) == fields
        return
    try:
        tool(function)
    except UserError as exc:
        lines = str(exc).splitlines()
    else:
        raise AssertionError(f"{parts} became a tool despite {problems}")
    assert lines[0] == "cannot make a tool from subject:"
    assert lines[1:] == [f"  - {problem}" for problem in problems]
