"""First answers in a fresh process, with the baselines in the same run:

- the compiled programs `diffmech.cache()` keeps on disk against JAX's persistent cache
  alone (the kept programs switched off in those processes): each statement cold (an
  empty folder), then warm in a second process, for each of the two;
- `linkage.joint_forces` along a motion (its configurations) against the same call
  from 36 inputs (a second sweep inside the program), cold;
- a drive law switched in one process: free motion, then a `ConstantTorque`, then an
  `AffineTorque` with other numbers (one compiled program for the three).

    python benchmarks/bench_kept_programs.py

Each statement runs after its set-up (not timed) in its own process. Writes
benchmarks/results/kept_programs.json and prints a table. Run it alone.
"""

import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from benchmarks._timing import CHILD_PREAMBLE, run_child, write_results  # noqa: E402

# set-up (not timed), statement (timed): the README's calls
STATEMENTS = {
    "fourbar.sweep (361 angles)": (
        "fb = dm.FourBar(lengths=(0.12, 0.25, 0.26, 0.30)); th = jnp.linspace(0, 2 * jnp.pi, 361)",
        "out = fourbar.sweep(fb, th).q",
    ),
    "linkage.sweep (Jansen)": ("lk = dm.examples.theo_jansen()", "out = linkage.sweep(lk).coords"),
    "linkage.joint_forces along the motion (Jansen)": (
        "lk = dm.examples.theo_jansen(); m = linkage.sweep(lk)",
        "out = linkage.joint_forces(lk, m, 2 * jnp.pi, 0.0).torque",
    ),
    "linkage.tolerance (Jansen, 4096 samples)": (
        "lk = dm.examples.theo_jansen(); m = linkage.sweep(lk)",
        "out = linkage.tolerance(lk, m, 1e-4, samples=4096).linear",
    ),
    "linkage.singularities (Jansen)": (
        "lk = dm.examples.theo_jansen(); m = linkage.sweep(lk)",
        "out = linkage.singularities(lk, m).at",
    ),
    "parallel.inverse_kinematics (Stewart, 50 samples)": (
        "mech = parallel.StewartPlatform(); traj = parallel.stewart_spiral(mech, jnp.arange(0.0, 0.5, 0.01))",
        "out = parallel.inverse_kinematics(mech, traj).platform_R",
    ),
    "parallel.forward_kinematics (Stewart)": (
        "mech = parallel.StewartPlatform(); traj = parallel.stewart_spiral(mech, jnp.arange(0.0, 0.5, 0.01)); "
        "kin = parallel.inverse_kinematics(mech, traj); "
        "legs = parallel.leg_lengths(mech, kin.platform_R[0], kin.platform_d[0])",
        "out = parallel.forward_kinematics(mech, legs).positions",
    ),
    "synthesis.path_generation (12 targets, prescribed)": (
        "fb = dm.FourBar(lengths=(0.12, 0.25, 0.26, 0.30)); angles = jnp.linspace(0, 2 * jnp.pi, 13)[:-1]; "
        "targets = fourbar.coupler_point(fb, fourbar.sweep(fb, angles).q, jnp.array([0.1, 0.05]))",
        'out = synthesis.path_generation(targets, "prescribed", crank_angles=angles).points',
    ),
}
FORCES_FROM_INPUTS = (
    "lk = dm.examples.theo_jansen(); m = linkage.sweep(lk); u = jnp.linspace(0, 2 * jnp.pi, 36, endpoint=False)",
    "out = linkage.joint_forces(lk, u, 2 * jnp.pi, 0.0).torque",
)

_CHILD = (
    CHILD_PREAMBLE
    + r"""
import jax.numpy as jnp
import diffmech as dm
from diffmech import _cache, fourbar, linkage, parallel, synthesis
folder, kept, setup, statement = sys.argv[1:5]
if folder != "-":
    dm.cache(folder)
    if kept == "0":
        _cache._PROGRAM_FOLDER = None  # JAX's persistent cache alone
exec(setup)
compiles[0] = 0
t = time.perf_counter()
exec(statement)
jax.block_until_ready(out)
print(json.dumps(dict(wall=time.perf_counter() - t, compiles=compiles[0])))
"""
)

_LAWS = (
    CHILD_PREAMBLE
    + r"""
import diffmech as dm
from diffmech import linkage
lk = dm.examples.theo_jansen()
laws = [None, linkage.ConstantTorque(40.0), linkage.AffineTorque(60.0, 4.0)]
out = {}
for name, law in zip(("free", "constant", "affine"), laws):
    drive = None if law is None else linkage.Drive(torque=law)
    compiles[0] = 0
    t = time.perf_counter()
    jax.block_until_ready(linkage.simulate_dynamics(lk, 0.0, 1.0, drive=drive).u)
    out[name] = dict(wall=time.perf_counter() - t, compiles=compiles[0])
print(json.dumps(out))
"""
)


def main():
    rows = {}
    for name, (setup, statement) in STATEMENTS.items():
        row = {}
        for kept in ("0", "1"):
            with tempfile.TemporaryDirectory() as folder:
                label = "kept" if kept == "1" else "jax_cache"
                row[f"{label}_cold"] = run_child(_CHILD, folder, kept, setup, statement)
                row[f"{label}_warm"] = run_child(_CHILD, folder, kept, setup, statement)
        rows[name] = row
        print(
            f"{name:52s} cold {row['kept_cold']['wall']:6.2f} s | warm: JAX's cache "
            f"{row['jax_cache_warm']['wall']:5.2f} s, kept {row['kept_warm']['wall']:5.2f} s "
            f"({row['jax_cache_warm']['wall'] / row['kept_warm']['wall']:.1f}x)",
            flush=True,
        )
    along, inputs = (
        run_child(_CHILD, "-", "0", *STATEMENTS["linkage.joint_forces along the motion (Jansen)"]),
        run_child(_CHILD, "-", "0", *FORCES_FROM_INPUTS),
    )
    rows["joint_forces cold: along the motion / from 36 inputs"] = dict(along=along, inputs=inputs)
    print(
        f"joint_forces cold: along the motion {along['wall']:.2f} s, from 36 inputs {inputs['wall']:.2f} s "
        f"({inputs['wall'] / along['wall']:.1f}x)",
        flush=True,
    )
    laws = run_child(_LAWS)
    rows["drive laws in one process: free, constant, affine"] = laws
    print(
        "drive laws: " + ", ".join(f"{k} {v['wall']:.3f} s ({v['compiles']} compilations)" for k, v in laws.items()),
        flush=True,
    )
    out = write_results(os.path.join(ROOT, "benchmarks", "results", "kept_programs.json"), rows)
    print(f"jax {out['jax']}, {out['date']}")


if __name__ == "__main__":
    main()
