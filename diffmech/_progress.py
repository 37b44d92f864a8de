"""The one progress meter (diffrax's pattern: one meter, chosen by the caller): a
text bar redrawn on one line of stderr, used by `fit` (per compiled chunk of
iterations) and by sharded maps (per chunk of designs)."""

import sys
import time


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

    def close(self) -> None:
        print(file=sys.stderr)
