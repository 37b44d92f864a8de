"""Which public callables' docstrings do not name every parameter (issue 24, item 4);
`tests/test_docs.py` requires none. A parameter counts as named when the
docstring writes it as `` `name` ``, `` `name, `` or ``name:``. Run from the
repository root:

    python docs/docstring_audit.py
"""

import importlib
import inspect
import os
import sys
import typing

import jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
jax.config.update("jax_enable_x64", True)

import api_names  # noqa: E402  (docs/api_names.py: the API reference's public names)


def undocumented() -> tuple[int, dict[str, list[str]]]:
    """`(number of public callables, {qualified name: parameters its docstring does not
    name})` over every public module of the API reference."""
    missing, seen, total = {}, set(), 0
    for short in api_names.MODULES:
        module = "diffmech" if short == "diffmech" else f"diffmech.{short}"
        mod = importlib.import_module(module)
        for name in api_names.public_names(module):
            obj = getattr(mod, name)
            if id(obj) in seen or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            seen.add(id(obj))
            try:
                sig = inspect.signature(obj)
            except (TypeError, ValueError):
                continue
            doc = inspect.getdoc(obj) or ""
            params = [p for p in sig.parameters if p not in ("self", "args", "kwargs")]
            params = [q for p in params for q in _keywords(obj, sig.parameters[p])]
            total += 1
            miss = [p for p in params if f"`{p}`" not in doc and f"{p}:" not in doc and f"`{p}," not in doc]
            if miss:
                missing[f"{module}.{name}"] = miss
    return total, missing


def _keywords(obj, param) -> list[str]:
    """A parameter's names to find in the docstring: its own, or for `**separate:
    Unpack[SomeFields]` (an options object's fields as separate keywords) each of the
    typed dictionary's keys."""
    ann = param.annotation
    if param.kind is not inspect.Parameter.VAR_KEYWORD:
        return [param.name]
    if isinstance(ann, str) and ann.startswith("Unpack["):  # postponed annotations
        fields = getattr(inspect.unwrap(obj), "__globals__", {})[ann[len("Unpack[") : -1]]
    elif typing.get_origin(ann) is typing.Unpack:
        fields = typing.get_args(ann)[0]
    else:
        return [param.name]
    return sorted(fields.__required_keys__ | fields.__optional_keys__)


def main() -> None:
    total, missing = undocumented()
    print(total, "public callables;", len(missing), "with parameters their docstring does not name")
    for k, v in missing.items():
        print(" ", k, v)


if __name__ == "__main__":
    main()
