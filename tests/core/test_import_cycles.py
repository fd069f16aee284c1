"""No import circle between toolproof's modules, at import time or later (imports in functions).

The graph is built from the source with :mod:`ast`: every ``import`` and ``from ... import``
anywhere in a module (inside functions too, since those run later and still tie the modules
together), except under ``if TYPE_CHECKING:``, which never runs. A module importing its own
package (``toolproof.models.openai`` reading ``toolproof.models.ALLOW_MODEL_REQUESTS``) is
left out: Python has always loaded a package before its submodules, so that import never
loads anything. The circles named in ``EXCUSED`` below remain, each with its reason.

At import time the rule is stricter: a module that runs ``from package import name`` while
it loads goes through that package, so the package must not be loading it (a name the
package has not bound yet is an ImportError that depends on which module came first).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

#: Circles that remain, with their reason; each must still exist (so the list shrinks).
EXCUSED = {
    # TraceStore("postgresql://...") answers with its PostgreSQL subclass, imported on use.
    frozenset({"toolproof.replay._store", "toolproof.replay._postgres"}),
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run (those under ``if TYPE_CHECKING:`` never do)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    visit_one(other)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        else:
            visit(node)

    visit(tree)
    return found


def _load_time_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run while the module loads (not those in functions)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                for part in (node.body, *(h.body for h in node.handlers), node.orelse):
                    visit(part)
                visit(node.finalbody)
            elif isinstance(node, ast.With):
                visit(node.body)

    visit(tree.body)
    return found


def import_graph(*, load_time: bool = False) -> dict[str, set[str]]:
    """Module -> the modules it imports.

    With ``load_time``, only the imports that run while a module loads, and a
    ``from package import name`` goes through ``package`` even from inside it.
    """
    modules = _modules()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _load_time_imports(tree) if load_time else _imports(tree):
            if isinstance(node, ast.Import):
                targets = [known(alias.name) for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                targets = [
                    known(f"{base}.{alias.name}")
                    if f"{base}.{alias.name}" in modules
                    else known(base)
                    for alias in node.names
                ]
                if load_time:
                    targets.append(known(base))
            for target in targets:
                if target is None or name == target:
                    continue
                if name.startswith(target + ".") and not (load_time and target == known(base)):
                    continue  # its own package, loaded before it
                graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(frozenset(group))
    return found


def test_no_import_circle_in_the_package() -> None:
    found = cycles(import_graph())
    circles = [sorted(group) for group in found if group not in EXCUSED]
    assert not circles, f"import circles: {circles}"
    assert set(EXCUSED) <= set(found), "an excused circle is gone: remove it from EXCUSED"


def test_no_module_imports_through_a_package_that_is_loading_it() -> None:
    circles = [sorted(group) for group in cycles(import_graph(load_time=True))]
    assert not circles, f"import circles while the package loads: {circles}"


def test_the_load_time_graph_goes_through_the_package_a_name_is_taken_from() -> None:
    graph = import_graph(load_time=True)
    # `toolproof.evals` loads the runner while it loads; `from toolproof.evals import x`
    # in a module it loads would go through the package that is loading it
    assert "toolproof.evals._runner" in graph["toolproof.evals"]
    assert all(
        "toolproof.evals" not in graph[name]
        for name in graph
        if name.startswith("toolproof.evals.")
    )
    # an import in a function runs later: not in the load-time graph
    assert "toolproof.events" not in graph["toolproof._run"]
    assert "toolproof.events" in import_graph()["toolproof._run"]


def test_the_graph_sees_imports_in_functions_and_not_under_type_checking() -> None:
    graph = import_graph()
    # `_run` imports toolproof.events inside a function, and `_agent` only for annotations
    assert "toolproof.events" in graph["toolproof._run"]
    assert "toolproof._agent" not in graph["toolproof._run"]
    assert "toolproof.replay._postgres" in graph["toolproof.replay._store"]


def test_a_circle_is_found_through_any_number_of_modules() -> None:
    for size in range(2, 12):
        ring = {f"m{i}": {f"m{(i + 1) % size}"} for i in range(size)}
        ring["outside"] = {"m0"}
        assert cycles(ring) == [frozenset(f"m{i}" for i in range(size))]
        del ring[f"m{size - 1}"]
        ring[f"m{size - 1}"] = set()
        assert cycles(ring) == []
