"""Spatial linkages and several inputs: a sweep of each new bundled linkage through the
jitted `linkage.sweep_functional`, against the closed form (or independent model)
its test checks it with, evaluated in NumPy in the same run, one input after another
(the baseline a user without diffmech writes for this one mechanism).

- RSSR, 180 crank angles: the input–output equation `P cos φ + Q sin φ = S`;
- five-bar, 61 inputs (2 cranks): the circle–circle intersection;
- delta robot, 41 inputs (3 arms): three-sphere trilateration;
- double wishbone, 21 inputs (travel and steering): the absolute-coordinate SciPy model
  of `tests/reference/suspension_absolute.py`;
- RSCR (a cylindrical joint), 180 crank angles: its closure condition solved for the
  rocker angle by Newton steps from the last one, and every link's pose, per angle;
- spatial slider-crank (a prismatic joint on a skew axis), 180 crank angles: the
  slider's travel as the root of the rod's length, vectorised;
- Bennett 4R (over-constrained: normal equations) and Hooke's joint, 180 inputs, no
  baseline of the same output (their closed forms give angles only): the sweep time;
  the RSCR driven by its C joint's slide (a joint's own coordinate, 60 inputs): the
  sweep time.

Compile time is reported apart; run times are medians of `--repeats` warm runs.

    python benchmarks/bench_spatial.py [--repeats 20]

Writes benchmarks/results/spatial.json.
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_cpu_enable_async_dispatch", False)  # small programs run inline (the README's advice)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from reference import suspension_absolute  # noqa: E402
from test_inputs import delta_closed_form, five_bar_closed_form  # noqa: E402
from test_spatial import RSCR, rscr_poses, rssr_closed_form, slider_crank_spec  # noqa: E402

import diffmech as dm  # noqa: E402
from benchmarks._timing import timed  # noqa: E402
from diffmech import linkage as L  # noqa: E402


def _median(f, repeats):
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def rscr_baseline(theta):
    """The RSCR's links' poses at each crank angle, the rocker angle continued."""
    phi, out = 0.0, []
    for t in theta:
        poses, phi = rscr_poses(t, phi)
        out.append(poses)
    return out


def slider_baseline(spec, e, C0):
    """The slider's point at each crank angle: `C0 + s e`, `|C0 + s e − B(θ)| = L`."""

    def run(theta):
        B = np.c_[np.cos(theta), np.sin(theta), np.zeros_like(theta)]
        w = C0 - B
        we = w @ e
        s = -we + np.sqrt(we**2 - np.sum(w * w, axis=1) + 2.5**2)
        return C0 + s[:, None] * e

    return run


def cases():
    t61, t41 = np.linspace(0.0, 2 * np.pi, 61), np.linspace(0.0, 2 * np.pi, 41)
    spec = json.loads(dm.examples.path("double_wishbone").read_text())
    U_sus = np.c_[np.linspace(0.0, 0.25, 21), np.linspace(0.0, 0.02, 21)]
    theta = np.arange(180) * 2 * np.pi / 180
    return [
        ("rssr", theta, lambda U: rssr_closed_form(U)[1], "input–output equation (NumPy)"),
        ("five_bar", np.c_[0.4 * np.sin(t61), -0.3 * np.sin(2 * t61)], five_bar_closed_form, "circle intersection"),
        (
            "delta",
            np.c_[0.3 * np.sin(t41), 0.3 * np.sin(t41 + 2.0), 0.3 * np.sin(2 * t41)],
            delta_closed_form,
            "three-sphere trilateration",
        ),
        ("double_wishbone", U_sus, lambda U: suspension_absolute.path(spec, U), "absolute-coordinate SciPy model"),
        ("rscr", theta, rscr_baseline, "closure condition by Newton steps (NumPy)"),
        ("slider_crank", theta, slider_baseline(*slider_crank_spec()), "root of the rod's length (NumPy)"),
        ("bennett", theta, None, None),
        ("cardan", theta, None, None),
        ("rscr_slide", np.linspace(0.0, 1.9, 60), None, None),
    ]


def load(name):
    """A bundled linkage, or one of the benchmark's own: the tests' spatial slider-crank
    and the RSCR driven by its C joint's slide."""
    if name == "slider_crank":
        return L.Linkage.from_dict(slider_crank_spec()[0])
    if name == "rscr_slide":
        return L.Linkage.from_dict(dict(RSCR, input={"type": "prismatic", "joint": "C"}))
    return dm.examples.load(name)


def main():
    ap = argparse.ArgumentParser(description="Spatial linkages and several inputs: sweep times.")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "spatial.json"))
    a = ap.parse_args()
    rows = []
    for name, U, baseline, what in cases():
        lk = load(name)
        run = jax.jit(lambda k, u: (lambda m: (m.coords, m.converged, m.residual))(L.sweep_functional(k, u)))
        u = jnp.asarray(U)
        (_, ok, res), compile_s, wall = timed(run, lk, u, repeats=a.repeats)
        row = dict(
            linkage=name,
            inputs=list(np.shape(U)),
            unknowns=lk.counts()["unknowns"],
            equations=lk.counts()["equations"],
            compile_s=compile_s,
            sweep_s=wall,
            converged=bool(np.all(ok)),
            max_residual=float(np.max(res)),
        )
        if baseline is not None:
            base = _median(lambda: baseline(U), max(3, a.repeats // 4))
            row.update(baseline=what, baseline_s=base, speedup=base / wall)
        rows.append(row)
        print(
            f"{name:16s} {str(np.shape(U)):9s} sweep {1e3 * wall:8.3f} ms (compile {compile_s:.1f} s), "
            f"residual {row['max_residual']:.1e}"
            + (f"; {what} {1e3 * row['baseline_s']:.3f} ms: {row['speedup']:.1f}×" if baseline is not None else ""),
            flush=True,
        )
    meta = dict(jax=jax.__version__, date=datetime.date.today().isoformat(), cpus=os.cpu_count())
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump(dict(meta=meta, rows=rows), fh, indent=1)


if __name__ == "__main__":
    main()
