"""The parallel mechanisms' exact pipelines with their legs in closed form (the default)
against the same pipelines with the continuation (`stride=25`, the default before),
alternately in one process: inverse kinematics plus Newton–Euler, and the inverse
kinematics alone, over 10,000 steps of each seed's trajectory (the Gough–Stewart's
spiral; the 3UPS–UPU–S's tilt circle, whose turn about the platform normal the U-P-U
leg fixes, solved first).

    python benchmarks/bench_stewart_legs.py [--repeats 4]

Prints first-call times (compilation included), medians of the repeated calls and how
far the two results differ.
"""

import argparse
import datetime
import time

import jax

jax.config.update("jax_enable_x64", True)
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from diffmech import parallel as par  # noqa: E402


def pipeline(stride, dynamics):
    def run(mech, traj, load):
        kin = par.inverse_kinematics(mech, traj, stride=stride)
        if not dynamics:
            return kin.labels, kin.rates, kin.converged
        dyn = par.inverse_dynamics(mech, traj, load, kinematics=kin)
        return kin.labels, dyn.actuator_forces, kin.converged & dyn.converged

    return eqx.filter_jit(run)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=4)
    a = ap.parse_args()
    print(f"jax {jax.__version__}, {datetime.date.today()}")
    stewart, ups = par.StewartPlatform(), par.ThreeUPSUPUS()
    cases = [
        (
            "Gough-Stewart",
            stewart,
            par.stewart_spiral(stewart, jnp.arange(10_000) * 1e-3),
            (0.0, 0.0, 10.0, 10.0, 0, 0),
        ),
        ("3UPS-UPU-S", ups, par.tilt_circle(ups, jnp.arange(10_000) * 1e-3), (0.0, 0.0, 1000.0, 1000.0, 0, 0)),
    ]
    for (name, mech, traj, load), dynamics in ((c, d) for c in cases for d in (True, False)):
        load = jnp.asarray(load, dtype=float)
        what = name + (": inverse kinematics + Newton-Euler" if dynamics else ": inverse kinematics alone")
        f = {s: pipeline(s, dynamics) for s in (None, 25)}
        out = {}
        for s, g in f.items():
            t = time.perf_counter()
            out[s] = jax.block_until_ready(g(mech, traj, load))
            ok = bool(out[s][2].all())
            print(f"{what}, stride {s}: first call {time.perf_counter() - t:.1f} s, all converged {ok}")
        print(
            f"  closed form against continuation: labels {float(jnp.abs(out[None][0] - out[25][0]).max()):.1e}, "
            f"{'forces' if dynamics else 'rates'} {float(jnp.abs(out[None][1] - out[25][1]).max()):.1e}"
        )
        runs = {s: [] for s in f}
        for _ in range(a.repeats):
            for s, g in f.items():
                t = time.perf_counter()
                jax.block_until_ready(g(mech, traj, load))
                runs[s].append(time.perf_counter() - t)
        for s in f:
            label = "legs in closed form" if s is None else "continuation, stride 25"
            print(f"  {label}: median {np.median(runs[s]):.3f} s of {np.round(runs[s], 3).tolist()}")


if __name__ == "__main__":
    main()
