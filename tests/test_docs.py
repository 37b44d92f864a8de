"""The README's pictures: every image it shows is in the repository, a PNG small enough
to keep in git, and made by `docs/figures.py` (which names each file it writes)."""

import pathlib
import re

import pytest
from helpers import docs_module

ROOT = pathlib.Path(__file__).parent.parent


def test_every_readme_picture_exists_is_a_small_png_and_is_made_by_the_figure_script():
    readme = (ROOT / "README.md").read_text()
    shown = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", readme)
    assert len(shown) >= 4
    script = (ROOT / "docs" / "figures.py").read_text()
    for rel in shown:
        path = ROOT / rel
        assert path.is_file(), rel
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", rel
        assert len(data) <= 400_000, (rel, len(data))
        assert f'"{path.name}"' in script, f"{rel} is not written by docs/figures.py"


def test_the_site_lists_every_notebook_and_builds_the_api_pages_it_links():
    """mkdocs.yml's Examples are exactly the notebooks; its API pages are exactly the
    ones docs/hooks.py writes (one per public module of docs/api_names.py)."""
    config = (ROOT / "mkdocs.yml").read_text()
    listed = set(re.findall(r"examples/(\S+\.ipynb)", config))
    assert listed == {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    names = (ROOT / "docs" / "api_names.py").read_text()
    modules = set(re.findall(r'^    "(\w+)",$', names, re.M))
    assert set(re.findall(r"api/(\w+)\.md", config)) == modules


def test_the_errors_page_lists_every_status_and_error_class_diffmech_adds():
    """docs/errors.md names every status diffmech adds to Diffrax's `RESULTS` and every
    `ClosureError` subclass it exports, so the page stays true when one is added."""
    import diffrax

    import diffmech as dm
    from diffmech.closure import RESULTS

    page = (ROOT / "docs" / "errors.md").read_text()
    ours = set(RESULTS._name_to_item) - set(diffrax.RESULTS._name_to_item)
    assert ours and all(f"`{name}`" in page for name in ours), ours
    errors = [n for n in dir(dm) if isinstance(getattr(dm, n), type) and issubclass(getattr(dm, n), dm.ClosureError)]
    assert len(errors) >= 6 and all(f"::: diffmech.{n}" in page for n in errors), errors


def test_every_public_callable_names_each_of_its_parameters_in_its_docstring():
    """The API reference is the docstrings: every public function and class of every
    public module names each of its parameters (docs/docstring_audit.py)."""
    total, missing = docs_module("docstring_audit").undocumented()
    assert total >= 150, total  # the audit sees the whole API
    assert not missing, missing


def test_the_site_renders_only_notebooks_executed_from_their_current_source(tmp_path):
    """docs/hooks.py renders the notebooks the suite executed (build/notebooks/); the
    check it runs refuses a notebook with no executed copy or a copy of another source,
    naming each, and returns the copies otherwise."""
    import json

    executed = docs_module("executed")
    src, built = tmp_path / "notebooks", tmp_path / "built"
    src.mkdir(), built.mkdir()
    for name in ("01_a.ipynb", "02_b.ipynb"):
        (src / name).write_text(json.dumps({"cells": [], "metadata": {}, "name": name}))
    with pytest.raises(executed.NotExecuted, match=r"01_a\.ipynb: not executed[\s\S]*02_b\.ipynb: not executed"):
        executed.executed_notebooks(src, built)
    for name in ("01_a.ipynb", "02_b.ipynb"):
        meta = {executed.SOURCE_KEY: executed.source_hash(src / name)}
        (built / name).write_text(json.dumps({"cells": [], "metadata": meta}))
    assert [p.name for p in executed.executed_notebooks(src, built)] == ["01_a.ipynb", "02_b.ipynb"]
    (src / "02_b.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "edited": True}))
    with pytest.raises(executed.NotExecuted, match=r"02_b\.ipynb: .* another version") as e:
        executed.executed_notebooks(src, built)
    assert "01_a" not in str(e.value)
