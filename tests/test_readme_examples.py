"""The examples users read first run as written: every Python block of the README and of
the getting-started page, in order, in one namespace per page (a later block may use
what an earlier one defined, as a reader running them one after another would), in a
scratch folder. Their sizes are the small ones a reader tries first; a block that
raises fails the test and names the page, the block and its first line."""

import pathlib
import re

import matplotlib.pyplot as plt
import pytest

ROOT = pathlib.Path(__file__).parent.parent
PAGES = [ROOT / "README.md", ROOT / "docs" / "getting-started.md"]


def python_blocks(path: pathlib.Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), re.M | re.S)


def test_the_pages_have_examples_to_run():
    assert all(len(python_blocks(p)) >= 1 for p in PAGES)
    assert len(python_blocks(ROOT / "README.md")) >= 4  # a tour of every family


@pytest.mark.parametrize("path", PAGES, ids=[p.name for p in PAGES])
def test_every_python_block_runs(path, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": "__main__"}
    try:
        for k, code in enumerate(python_blocks(path)):
            where = f"{path.name}, Python block {k + 1} ({code.splitlines()[0]!r})"
            try:
                exec(compile(code, where, "exec"), namespace)
            except Exception as e:
                raise AssertionError(f"{where}: {type(e).__name__}: {e}") from e
    finally:
        plt.close("all")
