"""The examples users read first run as written, in a scratch folder, at the small sizes
a reader tries first; a block that raises fails the test and names the page, the block
and its first line.

The README's first block is its set-up; every other block runs after it alone, in a fresh
namespace, as the README promises ("copy any one of them"). Each runs in the xdist group
of the family it shows (tests/conftest.py), after that family's tests: the programs it
compiles are mostly theirs. The getting-started page runs in one namespace, its blocks in
order, as a reader runs them one after another."""

import ast
import collections
import contextlib
import pathlib
import re
import traceback

import jax
import matplotlib.pyplot as plt
import pytest

ROOT = pathlib.Path(__file__).parent.parent
README = ROOT / "README.md"
PAGES = [README, ROOT / "docs" / "getting-started.md"]
# a README block's family: the first of these calls it makes (the shard example sweeps
# four-bars but is no four-bar test's; ungrouped)
FAMILY = (
    ("shard.", None),
    ("fourbar.simulate_dynamics(", "fourbar_dynamics"),
    ("synthesis.", "synthesis"),
    ("parallel.", "parallel"),
    ("linkage.", "linkage"),
    ("closure.", "closure"),
    ("fourbar.", "fourbar_kinematics"),
)


def python_blocks(path: pathlib.Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), re.M | re.S)


def _group(code: str) -> str | None:
    return next((group for call, group in FAMILY if call in code), None)


def _run(path, blocks, namespace):
    for k, code in blocks:
        where = f"{path.name}, Python block {k + 1} ({code.splitlines()[0]!r})"
        try:
            exec(compile(code, where, "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{where}: {type(e).__name__}: {e}") from e


def test_the_pages_have_examples_to_run():
    assert all(len(python_blocks(p)) >= 1 for p in PAGES)
    blocks = python_blocks(README)
    assert len(blocks) >= 5  # the set-up and a tour of every family
    # the set-up block turns float64 on and imports; it computes nothing
    assert "jax_enable_x64" in blocks[0] and "dm." not in blocks[0]


_README_BLOCKS = python_blocks(README)


@pytest.mark.parametrize(
    "k",
    [
        pytest.param(k, marks=[pytest.mark.xdist_group(g)] if (g := _group(code)) else [])
        for k, code in enumerate(_README_BLOCKS)
        if k > 0
    ],
    ids=lambda k: f"block{k + 1}-{_group(_README_BLOCKS[k]) or 'ungrouped'}",
)
def test_each_readme_block_runs_on_its_own_after_the_set_up(k, monkeypatch, tmp_path):
    """Each block runs, no statement of it running more than `_EAGER_OPERATIONS`
    operations op by op; then each of its calls again, in the same namespace, compiles
    nothing (counted by `jax.monitoring`): every statement that defines no function and
    no `lambda` (a new function object is a new program, by design) runs a second time."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace = {"__name__": "__main__"}
    try:
        _run(README, [(0, _README_BLOCKS[0])], namespace)
        code = _README_BLOCKS[k]
        # the first run, statement by statement: none runs more than a few operations op
        # by op (eagerly, each a small program of its own to compile: the library's
        # eager entry points run as one program each)
        eager = {}
        with _counting_eager_operations() as ops:
            for node in ast.parse(code).body:
                before = len(ops)
                where = f"README.md, block {k + 1} ({ast.get_source_segment(code, node).splitlines()[0]!r})"
                try:
                    exec(compile(ast.Module([node], []), where, "exec"), namespace)
                except Exception as e:
                    raise AssertionError(f"{where}: {type(e).__name__}: {e}") from e
                eager[where] = ops[before:]
        many = {w: collections.Counter(o).most_common(4) for w, o in eager.items() if len(o) > _EAGER_OPERATIONS}
        assert not many, many
        again = [
            node
            for node in ast.parse(code).body
            if not any(isinstance(n, (ast.FunctionDef, ast.Lambda)) for n in ast.walk(node))
        ]
        compiled = _compilations()
        compiled.clear()
        for node in again:
            exec(compile(ast.Module([node], []), f"README.md, block {k + 1}, again", "exec"), namespace)
        calls = [ast.get_source_segment(code, node).splitlines()[0] for node in again]
        assert list(compiled) == [], (len(compiled), calls)
    finally:
        plt.close("all")
        _compilations().clear()


# operations a README statement may run op by op: indexing a result, converting a
# user's list; an entry point that computes op by op runs dozens (the four-bar's
# `rates` ran 413 before it became one program, the Stewart platform's constructor 58)
_EAGER_OPERATIONS = 12


@contextlib.contextmanager
def _counting_eager_operations():
    """The primitives JAX runs eagerly (op by op) inside the block, by name, where the
    code that asked for one is diffmech's or the README's: the transfer of a host
    array to the device (`stage`) is not counted, nor the constants another library
    (Diffrax, Equinox, Optax) evaluates while a program is traced. JAX's own dispatch
    function is wrapped: private, so the test names what it relies on."""
    from jax._src import dispatch

    ops: list[str] = []
    original = dispatch.xla_primitive_callable

    def counting(prim, **params):
        if str(prim) != "stage" and _caller(traceback.extract_stack()) not in _OTHERS:
            ops.append(str(prim))
        return original(prim, **params)

    dispatch.xla_primitive_callable = counting
    try:
        yield ops
    finally:
        dispatch.xla_primitive_callable = original


_OTHERS = ("diffrax", "equinox", "optax", "optimistix", "lineax")


def _caller(stack) -> str:
    """The package of the innermost frame outside JAX (and this test)."""
    for frame in reversed(stack):
        parts = pathlib.Path(frame.filename).parts
        if "site-packages" in parts:
            package = parts[parts.index("site-packages") + 1]
            if package not in ("jax", "jaxlib"):
                return package
        elif frame.filename != __file__:
            return "diffmech"  # the library or the README's code
    return ""


_SEEN: list = []


def _compilations() -> list:
    """The backend compilations seen since the last `clear()` (one listener per process)."""
    if not _SEEN:
        _SEEN.append([])
        jax.monitoring.register_event_duration_secs_listener(
            lambda event, d, **kw: _SEEN[0].append(d) if event == "/jax/core/compile/backend_compile_duration" else None
        )
    return _SEEN[0]


@pytest.mark.xdist_group("fourbar_dynamics")  # the seed's simulation; its sweep and the Jansen leg's are small
def test_the_getting_started_page_runs(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    path = PAGES[1]
    try:
        _run(path, list(enumerate(python_blocks(path))), {"__name__": "__main__"})
    finally:
        plt.close("all")
