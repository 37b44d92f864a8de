"""The one progress meter (diffrax's pattern: one meter, chosen by the caller): a
text bar redrawn on one line of stderr, used by `fit` (per compiled chunk of
iterations) and by sharded maps (per chunk of designs). A listener (`listening`)
is told every update too: the live viewer's progress bar."""

import contextlib
import sys
import time
from collections.abc import Callable

# called with (label, done, total, extra) at every update of every meter
_LISTENERS: list[Callable[[str, int, int, str], None]] = []


@contextlib.contextmanager
def listening(callback: Callable[[str, int, int, str], None]):
    """Within the block, `callback(label, done, total, extra)` at every meter's
    update (of any thread)."""
    _LISTENERS.append(callback)
    try:
        yield
    finally:
        _LISTENERS.remove(callback)


class TextProgress:
    """`label [#####.....] done/total  rate  extra  elapsed`, redrawn in place;
    `close()` ends the line."""

    def __init__(self, label: str = "", width: int = 30):
        self.label, self.width, self.t0 = label, width, time.perf_counter()

    def update(self, done: int, total: int, extra: str = "") -> None:
        elapsed = time.perf_counter() - self.t0
        k = int(self.width * done / max(total, 1))
        rate = f"{done / elapsed:,.0f}/s" if elapsed > 0 else ""
        head = f"{self.label} " if self.label else ""
        print(
            f"\r{head}[{'#' * k}{'.' * (self.width - k)}] {done}/{total}  {rate}  {extra}  {elapsed:.1f} s",
            end="",
            file=sys.stderr,
            flush=True,
        )
        for f in list(_LISTENERS):
            f(self.label, done, total, extra)

    def close(self) -> None:
        print(file=sys.stderr)
