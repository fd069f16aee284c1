"""Finds ``assert`` statements that put an upper bound on measured wall-clock (or CPU) time.

A test that asserts ``elapsed < N`` fails when the machine is busy, not when the code is
wrong. :func:`time_bounds` reads Python source with :mod:`ast` and reports each assertion
that bounds, from above, a value obtained from a clock: ``time.perf_counter``,
``time.monotonic``, ``time.process_time``, ``time.thread_time``, ``time.time`` (and their
``_ns`` forms, however imported), an event loop's ``.time()``, or a trace's measured
``duration_ms`` / ``duration_s``; directly or through local variables, helper functions of the
same module that return such a value, and the arithmetic in between.

Values are tracked by kind, so that what cannot fail under load stays allowed:

* an *instant* (a clock reading), a *deadline* (an instant plus an amount), a *duration*
  (the difference of two instants, or a measured duration), a *rate* (an amount divided by
  a duration);
* flagged: ``duration < amount``, ``instant < deadline``, ``amount < rate`` and the
  mirrored ``>`` forms, also inside ``pytest.approx(...)`` equalities;
* allowed: lower bounds (``duration >= 0.5``: a timeout did not fire early), orderings of
  two measured instants, and comparisons of two measured durations (a ratio of the same
  test's timings, ``slow < 40 * fast``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

CLOCKS = frozenset(
    name + suffix
    for name in ("perf_counter", "monotonic", "process_time", "thread_time", "time")
    for suffix in ("", "_ns")
)
#: Attributes and keys that hold a duration measured by the code under test.
MEASURED = frozenset({"duration_ms", "duration_s"})
#: Functions whose result has the kind of their arguments.
PASS_THROUGH = frozenset(
    {"abs", "max", "min", "sum", "round", "float", "int", "median", "mean", "fsum", "sorted"}
)

INSTANT, DEADLINE, DURATION, RATE = "instant", "deadline", "duration", "rate"
Kind = str | None


def _is_time_module(node: ast.expr, modules: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in modules


class _Module:
    """The clock names of one module, and the kinds its helper functions return."""

    def __init__(self, tree: ast.Module) -> None:
        self.modules: set[str] = set()  # names bound to the `time` module
        self.clocks: set[str] = set()  # names bound to a clock function
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "time":
                        self.modules.add(alias.asname or "time")
            elif isinstance(node, ast.ImportFrom) and node.module == "time":
                for alias in node.names:
                    if alias.name in CLOCKS:
                        self.clocks.add(alias.asname or alias.name)
        for node in ast.walk(tree):  # `clock = time.perf_counter`
            if isinstance(node, ast.Assign) and self.is_clock_ref(node.value):
                self.clocks.update(t.id for t in node.targets if isinstance(t, ast.Name))
        self.returns: dict[str, tuple[Kind, ...]] = {}
        # the helpers that may return a time: they read a clock, a measured duration, or call
        # such a helper (found again until no new one appears)
        functions: dict[ast.AST, set[str]] = {}  # function -> the names it calls
        timed: set[ast.AST] = set()  # functions that read a clock or a measured duration
        self.asserting: set[ast.AST] = set()  # functions with an assert (nested ones included)
        self._facts(tree, [], functions, timed)
        timed &= set(functions)  # (only those that return a value)
        while True:
            for function in timed:
                scope = _Scope(self, function, {})
                kinds = [scope.returned(node) for node in _own_nodes(function, ast.Return)]
                found = [k for k in kinds if any(k)]
                if found:
                    self.returns[function.name] = found[0]
            more = {n for n, calls in functions.items() if calls & set(self.returns)} - timed
            if not more:
                break
            timed |= more

    def _facts(
        self,
        node: ast.AST,
        enclosing: list[ast.AST],
        functions: dict[ast.AST, set[str]],
        timed: set[ast.AST],
    ) -> None:
        """One walk: what each function (and the functions around it) calls and reads."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            enclosing = [*enclosing, node]
        if isinstance(node, ast.Return) and node.value is not None and enclosing:
            functions.setdefault(enclosing[-1], set())
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            for function in enclosing:
                functions.setdefault(function, set()).add(node.func.id)
        if self._times(node):
            timed.update(enclosing)
        if isinstance(node, ast.Assert):
            self.asserting.update(enclosing)
            self.asserting.add(node)  # (the module has one)
        for child in ast.iter_child_nodes(node):
            self._facts(child, enclosing, functions, timed)

    def _times(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call) and self.is_clock_call(node):
            return True
        if isinstance(node, ast.Attribute) and node.attr in MEASURED:
            return True
        return isinstance(node, ast.Constant) and node.value in MEASURED

    def is_clock_ref(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Attribute) and node.attr in CLOCKS:
            return _is_time_module(node.value, self.modules)
        return isinstance(node, ast.Name) and node.id in self.clocks

    def is_clock_call(self, node: ast.Call) -> bool:
        if self.is_clock_ref(node.func):
            return True
        # an event loop's clock: loop.time(), asyncio.get_running_loop().time()
        func = node.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr == "time"
            and not node.args
            and not _is_time_module(func.value, self.modules)
            and not (isinstance(func.value, ast.Name) and func.value.id == "datetime")
        )


def _own_nodes(
    function: ast.AST, kind: type[ast.AST] | tuple[type[ast.AST], ...]
) -> Iterator[ast.AST]:
    """Nodes of ``kind`` in a function's body, not in the functions nested in it."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, kind):
            yield node
        stack.extend(ast.iter_child_nodes(node))


class _Scope:
    """The kinds of the local names of one function (or the module's top level)."""

    def __init__(self, module: _Module, node: ast.AST, outer: dict[str, Kind]) -> None:
        self.module = module
        self.names: dict[str, Kind] = dict(outer)
        own = list(_own_nodes(node, (ast.stmt, ast.comprehension)))
        statements = [n for n in own if isinstance(n, ast.stmt)]
        loops = [n for n in own if isinstance(n, ast.comprehension)]
        for _ in range(4):  # a fixpoint: names assigned from names
            before = dict(self.names)
            for assign in statements:
                self._bind(assign)
            for loop in loops:
                assert isinstance(loop, ast.comprehension)
                self._target(loop.target, self._element(loop.iter))
            if self.names == before:
                break

    def _bind(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._target(target, self.returned_value(node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._target(node.target, self.returned_value(node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            merged = self.kind(ast.BinOp(node.target, node.op, node.value))
            if merged:
                self.names[node.target.id] = merged
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._target(node.target, self._element(node.iter))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value  # times.append(perf_counter() - started)
            func = call.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in {"append", "add", "extend"}
                and isinstance(func.value, ast.Name)
                and call.args
            ):
                kind = self.kind(call.args[0])
                if func.attr == "extend":
                    kind = self._element(call.args[0])
                if kind:
                    self.names[func.value.id] = kind

    def _target(self, target: ast.expr, value: tuple[Kind, ...] | Kind) -> None:
        if isinstance(target, ast.Name):
            kind = value if not isinstance(value, tuple) else next((k for k in value if k), None)
            if kind:
                self.names[target.id] = kind
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, tuple):
            for element, kind in zip(target.elts, value, strict=False):
                self._target(element, kind)

    def _element(self, node: ast.expr) -> Kind:
        """The kind of the elements of an iterable (a list of durations, a comprehension)."""
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return _Scope(self.module, node, self.names).kind(node.elt)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return next((k for k in map(self.kind, node.elts) if k), None)
        return self.kind(node)

    def returned(self, node: ast.AST) -> tuple[Kind, ...]:
        assert isinstance(node, ast.Return)
        return () if node.value is None else self.returned_value(node.value)

    def returned_value(self, node: ast.expr) -> tuple[Kind, ...]:
        if isinstance(node, ast.Tuple):
            return tuple(self.kind(element) for element in node.elts)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in self.module.returns
        ):
            return self.module.returns[node.func.id]
        return (self.kind(node),)

    def kind(self, node: ast.expr) -> Kind:
        if isinstance(node, ast.Call):
            func = node.func
            if self.module.is_clock_call(node):
                return INSTANT
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in PASS_THROUGH:
                kinds = [self._element(argument) for argument in node.args]
                return next((k for k in kinds if k), None)
            if isinstance(func, ast.Name) and func.id in self.module.returns:
                return next((k for k in self.module.returns[func.id] if k), None)
            return None
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute):
            return DURATION if node.attr in MEASURED else None
        if isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and key.value in MEASURED:
                return DURATION
            return self.kind(node.value) if isinstance(node.value, ast.Name) else None
        if isinstance(node, ast.UnaryOp):
            return self.kind(node.operand)
        if isinstance(node, ast.IfExp):
            return self.kind(node.body) or self.kind(node.orelse)
        if isinstance(node, ast.BinOp):
            return _combine(self.kind(node.left), node.op, self.kind(node.right))
        return None


def _combine(left: Kind, op: ast.operator, right: Kind) -> Kind:
    points = {INSTANT, DEADLINE}
    if isinstance(op, ast.Sub):
        if left in points and right in points:
            return DURATION
        if left in points:
            return DEADLINE
        return DURATION if DURATION in (left, right) else None
    if isinstance(op, ast.Add):
        if left in points or right in points:
            return DEADLINE
        return DURATION if DURATION in (left, right) else None
    if isinstance(op, ast.Mult):
        return left or right
    if isinstance(op, (ast.Div, ast.FloorDiv)):
        if left and right:
            return None  # a ratio of two timings
        if left:
            return left
        return RATE if right else None
    return None


def _upper_bound(small: Kind, big: Kind) -> bool:
    """Whether ``small < big`` bounds a measured time from above by a fixed amount."""
    if small == DURATION:
        return big not in (DURATION, RATE)
    if small == INSTANT:
        return big == DEADLINE
    return small is None and big == RATE


def _approx(node: ast.expr) -> ast.expr | None:
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name == "approx":
            return node.args[0]
    return None


def _violations(scope: _Scope, test: ast.expr) -> Iterator[ast.Compare]:
    for compare in ast.walk(test):
        if not isinstance(compare, ast.Compare):
            continue
        operands = [compare.left, *compare.comparators]
        for left, op, right in zip(operands, compare.ops, operands[1:], strict=False):
            if isinstance(op, (ast.Gt, ast.GtE)):  # as `right < left`
                left, right = right, left
            if isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
                if _upper_bound(scope.kind(left), scope.kind(right)):
                    yield compare
            elif isinstance(op, ast.Eq):
                for measured, other in ((left, right), (right, left)):
                    inner = _approx(other)
                    if scope.kind(measured) and inner is not None and not scope.kind(inner):
                        yield compare


def time_bounds(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """The line and text of each assertion in ``source`` that bounds a measured time."""
    tree = ast.parse(source, filename)
    module = _Module(tree)
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, outer: dict[str, Kind]) -> None:
        if node is not tree and node not in module.asserting:
            return  # nothing to check here, nor in the functions nested in it
        scope = _Scope(module, node, outer)
        for statement in _own_nodes(node, ast.Assert):
            assert isinstance(statement, ast.Assert)
            for compare in _violations(scope, statement.test):
                found.append((statement.lineno, ast.unparse(compare)))
        for child in _own_functions(node):
            visit(child, scope.names)

    visit(tree, {})
    return sorted(set(found))


def _own_functions(parent: ast.AST) -> Iterator[ast.AST]:
    stack = list(ast.iter_child_nodes(parent))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
            continue
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))


#: Source that can hold a time bound names a clock or a measured duration.
_MAY_TIME = re.compile(r"\b(?:" + "|".join(sorted(CLOCKS)) + r")\b|" + "|".join(sorted(MEASURED)))


def scan(*roots: Path) -> list[str]:
    """``path:line: comparison`` for every time bound in the Python files under ``roots``."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            if not _MAY_TIME.search(source):
                continue
            for line, text in time_bounds(source, str(path)):
                found.append(f"{path}:{line}: {text}")
    return found
