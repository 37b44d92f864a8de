"""The API reference's public names, one list for the site (`docs/hooks.py`) and the
docstring audit (`docs/docstring_audit.py`, run by the tests without mkdocs)."""

import importlib
import inspect

MODULES = (
    "diffmech",
    "closure",
    "fourbar",
    "linkage",
    "parallel",
    "screw",
    "cam",
    "synthesis",
    "identify",
    "fit",
    "shard",
    "plot",
    "examples",
)


def public_names(module: str) -> list[str]:
    """The public names of a module: its classes and functions defined in diffmech
    (not what it imports for itself, such as `typing.Any`) and its constants
    (upper-case names), not underscored."""
    mod = importlib.import_module(module)
    out = []
    for n in sorted(dir(mod)):
        obj = getattr(mod, n)
        if n.startswith("_") or inspect.ismodule(obj):
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            if (getattr(obj, "__module__", "") or "").startswith("diffmech"):
                out.append(n)
        elif n.isupper() and isinstance(obj, (tuple, dict, str, int, float, frozenset)):
            out.append(n)
    return out
