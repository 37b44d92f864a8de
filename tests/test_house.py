"""The package's own structure, read from its source (no JAX): no import circle
between its modules, and no module reaching for another module's private names (a
private module holds the public names its siblings use, as Optimistix's do)."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "diffmech"


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for p in sorted(ROOT.rglob("*.py")):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _imports(name: str, path: pathlib.Path):
    """Every `(target module, imported name or None, alias)` of a module's imports,
    at any depth (a function-level import to dodge a circle is still one)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                yield target, a.name, a.asname or a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, None, a.asname or a.name.split(".")[0]


def _graph():
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for name, path in MODULES.items():
        for target, item, _ in _imports(name, path):
            sub = f"{target}.{item}" if item else target
            if sub in MODULES:
                edges[name].add(sub)
            elif target in MODULES and target != name:
                edges[name].add(target)
    return edges


def _circles(edges):
    """Every elementary circle's set of modules (Tarjan's strongly connected
    components of more than one module, or a module importing itself)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges[v]:
                out.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_reaches():
    found = []
    for name, path in MODULES.items():
        aliases = {}  # a local name bound to another diffmech module
        for target, item, alias in _imports(name, path):
            sub = f"{target}.{item}" if item else target
            if sub in MODULES:
                aliases[alias] = sub
            elif item and _private(item) and target in MODULES and target != name:
                found.append(f"{name}: from {target} import {item}")
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and aliases[node.value.id] != name
                and _private(node.attr)
            ):
                found.append(f"{name}:{node.lineno}: {node.value.id}.{node.attr} ({aliases[node.value.id]})")
    return found


def test_the_modules_import_one_another_without_a_circle():
    assert len(MODULES) > 40 and "diffmech.linkage._model" in MODULES  # the walk found the package
    edges = _graph()
    # the graph is read: the linkage's simulation imports its model, and the core is imported
    assert "diffmech.linkage._model" in edges["diffmech.linkage._simulate"]
    assert "diffmech._closure" in edges["diffmech.linkage._structure"]
    assert _circles(edges) == []


def test_no_module_reaches_for_another_modules_private_names():
    assert _private_reaches() == []


def test_the_checks_see_a_circle_and_a_private_reach():
    # the two checks on a made-up graph and source: they can fail
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
    assert _private("_sweep") and not _private("__version__") and not _private("sweep")


def _direct_jits():
    """Every `jax.jit` or `eqx.filter_jit` outside `diffmech._xla` (called, or as a
    decorator): the library jits through `_xla.jit` and `_xla.filter_jit` alone."""
    found = []
    for name, path in MODULES.items():
        if name == "diffmech._xla":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in (("jax", "jit"), ("eqx", "filter_jit"))
            ):
                found.append(f"{name}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_one_way_to_jit():
    assert _direct_jits() == []


# a constructor with one keyword per physical quantity of the model, as a dataclass has fields
_MANY_PARAMETERS = {"diffmech.parallel._model:from_anchors"}


def _oversized(source: str, where: str, lines: int = 100, parameters: int = 12) -> list[str]:
    """Every function of `source` longer than `lines` lines of code (its docstring not
    counted) or taking more than `parameters` parameters (`self`/`cls` not counted,
    `*args` and `**kwargs` one each)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = node.args
        n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
        n -= bool(a.args) and a.args[0].arg in ("self", "cls")
        body = node.body
        doc = body[0] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else None
        length = node.end_lineno - node.lineno + 1 - (doc.end_lineno - doc.lineno + 1 if doc else 0)
        if length > lines:
            found.append(f"{where}:{node.name}: {length} lines")
        if n > parameters and f"{where}:{node.name}" not in _MANY_PARAMETERS:
            found.append(f"{where}:{node.name}: {n} parameters")
    return found


def test_no_function_over_100_lines_or_12_parameters():
    found = [f for name, path in MODULES.items() for f in _oversized(path.read_text(), name)]
    assert found == []
    # the check itself, on made-up source: it can fail
    head = "def f(a):\n    '''doc\n    doc'''\n"
    assert _oversized(head + "    x = 1\n" * 100, "m") == ["m:f: 101 lines"]
    assert _oversized(head + "    x = 1\n" * 99, "m") == []
    wide = "def g(self, " + ", ".join(f"p{i}" for i in range(12)) + ", *a, **k):\n    pass\n"
    assert _oversized(wide, "m") == ["m:g: 14 parameters"]
