"""The README's pictures, made from the library's own results (issue 24).

    python docs/figures.py            # writes docs/images/*.png (about 2 minutes on 2 cores)

- `crank_rocker.png`: the seed crank-rocker (Bai et al.): its coupler track from the
  closure core, and its free motion under gravity (the reduced Hamiltonian model,
  Diffrax) with the energy drift and the loop gap along it;
- `seed_linkages.png`: the six bundled seed linkages (Sharma & Purwar's planar,
  spherical and spatial cases, the Jansen leg) and their coupler curves;
- `synthesis.png`: a four-bar synthesised through twelve target points, and the D-shaped
  target of notebook 07;
- `dynamics_vs_mujoco.png`: the Jansen leg's loop gap and energy error against wall
  time, diffmech against MuJoCo, read from `benchmarks/results/linkage_dynamics.json`
  (written by `benchmarks/bench_linkage_dynamics.py`).

`--small` runs every figure with few samples and synthesis starts (the test suite's
check that the script works); the committed pictures come from the full run.
"""

import argparse
import json
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)  # the library's figures are float64
import matplotlib

matplotlib.use("Agg")
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import diffmech as dm
from diffmech import fourbar as fbk, linkage as L, plot, synthesis as S

DPI = 90


def crank_rocker(out, small):
    fb = dm.FourBar.seed_crank_rocker()
    fig = plt.figure(figsize=(11, 4.2))
    ax = fig.add_subplot(1, 2, 1)
    s = fbk.sweep(fb, np.linspace(0.0, 2 * np.pi, 91 if small else 361))
    plot.fourbar_track(fb, s.q, every=15, point=(0.125, 0.0), ax=ax)
    ax.set_title("crank-rocker: coupler track (closure core)")
    t1 = 1.0 if small else 5.0
    sim = fbk.simulate_dynamics(fb, fbk.assemble(fb, 0.0), 0.0, t1, saveat=jnp.linspace(0.0, t1, 101 if small else 501))
    ax1 = fig.add_subplot(1, 2, 2)
    ax1.plot(np.asarray(sim.ts), np.asarray(sim.theta_A), color="C0")
    ax1.set_xlabel("t (s)")
    ax1.set_ylabel("crank angle θA (rad)", color="C0")
    ax2 = ax1.twinx()
    H = np.asarray(sim.energy)
    ax2.semilogy(np.asarray(sim.ts)[1:], np.maximum(np.abs(H[1:] - H[0]), 1e-18), color="C3", lw=0.8)
    ax2.semilogy(np.asarray(sim.ts), np.maximum(np.asarray(sim.residual), 1e-18), color="C2", lw=0.8)
    ax2.set_ylabel("|H(t) − H(0)| (J, red), loop gap (m, green)")
    ax1.set_title(f"released under gravity, {t1:g} s: energy and loop kept to round-off")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "crank_rocker.png"), dpi=DPI)
    plt.close(fig)


def seed_linkages(out, small):
    fig = plt.figure(figsize=(13, 8))
    for k, name in enumerate(dm.examples.NAMES):
        lk = getattr(dm.examples, name)()
        inputs = L.default_inputs(lk)
        if small:
            inputs = inputs[:: max(1, len(inputs) // 24)]
        m = L.sweep(lk, inputs=inputs, condition=False)
        ax = fig.add_subplot(2, 3, k + 1, projection="3d" if lk.dim == 3 else None)
        plot.linkage_curve(lk, m, ax=ax, every=max(1, len(inputs) // 8), title=f"{name} ({lk.geometry})")
        ax.legend().remove()
    fig.suptitle("the bundled seed linkages and their coupler curves (closed by Newton at every step)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "seed_linkages.png"), dpi=DPI)
    plt.close(fig)


def synthesis(out, small):
    starts, steps = (4, 40) if small else (32, 300)
    true = S.PlacedFourBar(
        lengths=jnp.array([0.12, 0.25, 0.26, 0.30]),
        point=jnp.array([0.1, 0.05]),
        origin=jnp.array([0.3, -0.2]),
        angle=jnp.array(0.4),
        branch=1,
    )
    theta = np.linspace(0.0, 2 * np.pi, 13)[:-1] + 0.3
    targets = np.asarray(true.path(theta)[0])
    r = S.path_generation(targets, "prescribed", crank_angles=theta - theta[0], starts=starts, steps=steps, seed=0)
    s = np.linspace(0, 1, 6, endpoint=False)
    D = 0.1 * np.r_[np.c_[np.zeros(6), 1 - 2 * s], np.c_[np.sin(np.pi * s), -np.cos(np.pi * s)]] + [0.2, 0.1]
    rd = S.path_generation(D, "prescribed", starts=starts, steps=steps, seed=0)
    fig, axs = plt.subplots(1, 2, figsize=(11, 4.6))
    plot.synthesis(
        r, targets, ax=axs[0], title=f"12 targets on a four-bar's curve: relative error {r.relative_error:.0e}"
    )
    plot.synthesis(rd, D, ax=axs[1], title=f"a 'D' (no four-bar draws it): mean distance {rd.error:.1e} m")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "synthesis.png"), dpi=DPI)
    plt.close(fig)


def dynamics_vs_mujoco(out, results):
    with open(results) as f:
        d = json.load(f)
    fig, axs = plt.subplots(1, 2, figsize=(11, 4.2))
    for run in d["diffmech"]:
        if run.get("driven"):
            continue
        for ax, key in zip(axs, ("loop_gap", "energy_error")):
            ax.loglog(run["wall_s"] * 1e3, max(run[key], 1e-17), "o", color="C0")
    for run in d["mujoco"]:
        if run.get("driven"):
            continue
        marker = "s" if run["integrator"] == "RK4" else "^"
        color = "C3" if run["stiff"] else "C1"
        for ax, key in zip(axs, ("loop_gap", "energy_error")):
            ax.loglog(run["wall_s"] * 1e3, max(run[key], 1e-17), marker, color=color, mfc="none")
    for ax, what in zip(axs, ("loop gap (m)", "energy error (relative)")):
        ax.set_xlabel("wall time for 5 s of motion (ms)")
        ax.set_ylabel(what)
        ax.grid(True, which="major", lw=0.4)
    handles = [
        plt.Line2D([], [], ls="", marker="o", color="C0", label="diffmech (rtol 1e-6 … 1e-12)"),
        plt.Line2D([], [], ls="", marker="^", color="C1", mfc="none", label="MuJoCo Euler, default softness"),
        plt.Line2D([], [], ls="", marker="^", color="C3", mfc="none", label="MuJoCo Euler, stiff"),
        plt.Line2D([], [], ls="", marker="s", color="C1", mfc="none", label="MuJoCo RK4, default softness"),
        plt.Line2D([], [], ls="", marker="s", color="C3", mfc="none", label="MuJoCo RK4, stiff"),
    ]
    axs[1].legend(handles=handles, fontsize=7, loc="best")
    fig.suptitle(f"Theo Jansen leg released under gravity (jax {d['jax']}, {d['date']}, {d['cpus']}-core CPU)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "dynamics_vs_mujoco.png"), dpi=DPI)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "images"))
    ap.add_argument("--small", action="store_true", help="few samples and starts (the test suite's run)")
    ap.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results", "linkage_dynamics.json"))
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    crank_rocker(a.out, a.small)
    seed_linkages(a.out, a.small)
    synthesis(a.out, a.small)
    dynamics_vs_mujoco(a.out, a.results)
    print(f"wrote {a.out}: crank_rocker.png, seed_linkages.png, synthesis.png, dynamics_vs_mujoco.png")


if __name__ == "__main__":
    main()
