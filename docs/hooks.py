"""mkdocs hooks.

- The notebooks in `notebooks/` are the site's Examples pages (`examples/NAME.ipynb`),
  rendered by mkdocs-jupyter from the copies the test suite executed and kept, with
  their outputs and figures, in `build/notebooks/` (`tests/test_notebooks.py`): each
  notebook runs once per CI run. The build fails on a notebook that is missing there (it
  failed, or the suite was not run) or was executed from another version of its source.
- The API reference pages (`api/NAME.md`) are written at build time: one `:::` block
  (mkdocstrings) per public name of each public module, read from the imported module,
  so every public name is documented and a new one cannot be forgotten."""

import importlib
import inspect
import os
import pathlib
import sys
import tempfile

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

ROOT = pathlib.Path(__file__).resolve().parent.parent
# the public modules and their names (docs/api_names.py: shared with the docstring
# audit); mkdocs loads this file by path, so its folder is put on the import path
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from api_names import MODULES, public_names  # noqa: E402
from executed import BUILT, NOTEBOOKS, NotExecuted, executed_notebooks  # noqa: E402


def api_page(short: str) -> str:
    module = "diffmech" if short == "diffmech" else f"diffmech.{short}"
    mod = importlib.import_module(module)
    doc = inspect.getdoc(mod) or ""
    blocks = [f"::: {module}.{name}" for name in public_names(module)]
    return f"# {module}\n\n{doc}\n\n" + "\n\n".join(blocks) + "\n"


@event_priority(100)  # before mkdocs-jupyter, which takes the .ipynb files over
def on_files(files, config):
    try:
        executed_notebooks()  # fails the build, naming each notebook missing or stale
    except NotExecuted as e:
        raise PluginError(str(e)) from None
    # mkdocs-jupyter reads a notebook at src_dir/src_uri: a folder whose examples/ is build/notebooks/
    src = tempfile.mkdtemp(prefix="diffmech-docs-")
    os.symlink(BUILT, os.path.join(src, "examples"))
    for nb in sorted(NOTEBOOKS.glob("*.ipynb")):
        files.append(
            File(
                f"examples/{nb.name}",
                src_dir=src,
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    for short in MODULES:
        files.append(File.generated(config, f"api/{short}.md", content=api_page(short)))
    return files
