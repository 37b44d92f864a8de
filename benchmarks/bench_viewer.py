"""The live viewer's latencies, measured at the server (no browser: the time from a
control's new value to the new frame queued for the page), after compilation:

- an input slider's move to the new frame (the closure solved at the new input, the
  links and joints redrawn), for the Jansen leg and the delta robot: the median of 50
  moves to new values;
- a dimension's change (a joint moved) to the new coupler curves (the default range,
  180 steps for the Jansen leg): the median of 10;
- playback: the frames a second the play loop sustains over 3 s (its target 60);
- the first frame after the command, in a fresh process with the persistent cache
  warm (`diffmech.cache(folder)`; a first process fills it): from the interpreter's
  start to the viewer's first frame drawn; and from starting `diffmech view
  theo_jansen --no-browser` to its line naming the page (printed once the first frame
  is drawn), cold and with its cache warm.

    python benchmarks/bench_viewer.py [--repeats 50]

Writes benchmarks/results/viewer.json. Run it alone.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from benchmarks._timing import run_child, write_results  # noqa: E402

_FIRST = r"""
import time, json, sys
t0 = time.perf_counter()
import jax
jax.config.update("jax_enable_x64", True)
import diffmech as dm
dm.cache(sys.argv[1])
v = dm.linkage.view(dm.examples.load("theo_jansen"))
first = time.perf_counter() - t0
v.close()
print(json.dumps({"first_frame_s": first}))
"""


def _command_first_frame(folder: str) -> float:
    """Seconds from starting `diffmech view theo_jansen --no-browser` (cache in `folder`)
    to its line naming the page (printed once the first frame is drawn)."""
    import subprocess

    env = dict(os.environ, DIFFMECH_CACHE=folder, PYTHONPATH=ROOT)
    t = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-m", "diffmech", "view", "theo_jansen", "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert p.stdout is not None
        for line in p.stdout:
            if " at http" in line:
                return time.perf_counter() - t
        raise RuntimeError("diffmech view printed no address")
    finally:
        p.kill()
        p.wait()


def _latencies(name: str, repeats: int) -> dict:
    import numpy as np

    from diffmech import examples, linkage

    lk = examples.load(name)
    t = time.perf_counter()
    v = linkage.view(lk)
    open_s = time.perf_counter() - t
    scale = 1.0 if lk.input_kind == "revolute" and lk.n_inputs == 1 else 0.02
    runs = []
    for u in np.linspace(0.05, 1.0, repeats + 3):
        t = time.perf_counter()
        v.set_inputs(np.full(lk.n_inputs, u * scale))
        runs.append(time.perf_counter() - t)
    out = dict(open_s=open_s, slider_ms=1e3 * statistics.median(runs[3:]), status=v.status)
    if lk.n_inputs == 1:
        j = next(n for n, t_ in zip(lk.names, lk.types) if t_ == "R" and n not in ("A",))
        row = np.asarray(lk.coords)[lk.names.index(j)][:2]
        edits = []
        for d in np.linspace(0.0, 0.002, 13):
            t = time.perf_counter()
            v.set_joint(j, row + d)
            edits.append(time.perf_counter() - t)
        out.update(edit_ms=1e3 * statistics.median(edits[3:]), curve_points=int(next(iter(v.curves.values())).shape[0]))
    frames = [0]
    inner = v.set_inputs

    def counted(u):
        frames[0] += 1
        return inner(u)

    v.set_inputs = counted
    v.play(True)
    time.sleep(3.0)
    v.play(False)
    out["play_fps"] = frames[0] / 3.0
    v.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args()
    import jax

    jax.config.update("jax_enable_x64", True)
    rows = {name: _latencies(name, args.repeats) for name in ("theo_jansen", "delta")}
    folder = tempfile.mkdtemp()
    run_child(_FIRST, folder)  # fills the cache
    rows["first_frame_warm_s"] = statistics.median(run_child(_FIRST, folder)["first_frame_s"] for _ in range(3))
    command = tempfile.mkdtemp()
    rows["command_first_frame_cold_s"] = _command_first_frame(command)  # fills its cache
    rows["command_first_frame_warm_s"] = statistics.median(_command_first_frame(command) for _ in range(3))
    out = write_results(os.path.join(ROOT, "benchmarks", "results", "viewer.json"), rows)
    for k, v in rows.items():
        print(k, v)
    print(out["date"], "jax", out["jax"])


if __name__ == "__main__":
    main()
