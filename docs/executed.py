"""Which executed notebook the site renders for each notebook of `notebooks/`.

The test suite executes every notebook once (`tests/test_notebooks.py`) and writes it,
with its outputs and figures, to `build/notebooks/`, recording the SHA-256 of the source
it ran in the notebook's metadata (`SOURCE_KEY`). The documentation build (`hooks.py`)
renders those copies instead of executing the notebooks again, and refuses a notebook
whose copy is missing (it failed, or the suite was not run) or was executed from
another version of its source. No mkdocs import here: the suite tests this check."""

import hashlib
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
BUILT = ROOT / "build" / "notebooks"
SOURCE_KEY = "diffmech_source_sha256"


class NotExecuted(RuntimeError):
    """A notebook has no executed copy of its current source."""


def source_hash(path: pathlib.Path) -> str:
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def executed_notebooks(notebooks: pathlib.Path = NOTEBOOKS, built: pathlib.Path = BUILT) -> list[pathlib.Path]:
    """The executed copy of every notebook, each checked to be of the current source;
    raises `NotExecuted` naming every notebook without one."""
    problems, copies = [], []
    for nb in sorted(pathlib.Path(notebooks).glob("*.ipynb")):
        copy = pathlib.Path(built) / nb.name
        if not copy.is_file():
            problems.append(f"{nb.name}: not executed (no {copy}: it failed, or the suite was not run)")
            continue
        ran = json.loads(copy.read_text()).get("metadata", {}).get(SOURCE_KEY)
        if ran != source_hash(nb):
            problems.append(f"{nb.name}: {copy} was executed from another version of the notebook")
            continue
        copies.append(copy)
    if problems:
        raise NotExecuted(
            "the examples are rendered from the notebooks the test suite executed; run "
            "`python -m pytest tests/test_notebooks.py` first:\n  " + "\n  ".join(problems)
        )
    return copies
