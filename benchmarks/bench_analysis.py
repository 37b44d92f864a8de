"""Analysis before building: transmission angles against pylinkage 1.3's
`analyze_transmission` on its peer four-bar; the Gough–Stewart forward kinematics
(every real assembly) against many-start MINPACK (`scipy.optimize.root`, one start at
a time, as NumPy/MATLAB tools solve it) from the same starts; singular points along a
motion, workspaces and singularity sections, timed alone.

Each figure is one call as the README writes it (defaults); compile time apart
(first call minus the median), medians of repeated calls.

    python benchmarks/bench_analysis.py [--repeats 5] [--peer-starts 1024]

Writes benchmarks/results/analysis.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

from benchmarks._timing import add_dispatch_flag, set_dispatch  # noqa: E402
from benchmarks.bench_tolerance import clock  # noqa: E402


def _built_platform(seed: int):
    """A 6-6 platform with four chosen assemblies for one set of leg lengths: the
    construction of tests/test_assembly.py (base joint i equidistant from its platform
    joint's four positions)."""
    import numpy as np
    from test_assembly import _built

    m, lengths, _ = _built(np.random.default_rng(seed))
    return m, lengths


def _scipy_assemblies(mech, lengths, starts: int):
    """Many-start MINPACK (hybr) on the six leg equations in (rotation vector, d), from
    the same orientations and least-squares positions as diffmech's starts; distinct
    roots counted as diffmech merges them."""
    import jax
    import numpy as np
    from scipy.optimize import root
    from scipy.spatial.transform import Rotation

    from diffmech.parallel import _assembly as A

    a, c = (np.asarray(v) for v in A.anchors(mech))
    R0, xi = (np.asarray(v) for v in A._starts(jax.random.key(0), starts))
    L = np.asarray(lengths)
    scale = L.mean()

    def f(z):
        R = Rotation.from_rotvec(z[:3]).as_matrix()
        p = c @ R.T + z[3:] - a
        return (np.sum(p * p, axis=1) - L**2) / (2 * L)

    found = []
    for R, x in zip(R0, xi):
        d0 = np.asarray(A._position_for(R, a, c, L)) + 0.1 * scale * x
        sol = root(f, np.concatenate([Rotation.from_matrix(R).as_rotvec(), d0]), method="hybr")
        R = Rotation.from_rotvec(sol.x[:3]).as_matrix()
        res = np.max(np.abs(np.linalg.norm(c @ R.T + sol.x[3:] - a, axis=1) - L))
        if res <= 1e-10 * L.max():
            key = np.concatenate([R.ravel(), sol.x[3:] / scale])
            if all(np.max(np.abs(key - k)) >= 1e-6 for k in found):
                found.append(key)
    return len(found)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--peer-starts", type=int, default=1024)
    add_dispatch_flag(ap)
    a = ap.parse_args(argv)
    set_dispatch(a.async_dispatch)
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import diffmech as dm
    from benchmarks.peers import pylinkage_fourbar as pk
    from diffmech import linkage as L, parallel as par

    out = dict(date=datetime.date.today().isoformat(), jax=jax.__version__)

    # transmission angles along 180 crank angles: diffmech's from a simulated motion, pylinkage's analysis
    lk = dm.examples.fourbar()
    comp, run, t = clock(lambda: L.transmission(lk, L.sweep(lk, condition=False)), a.repeats)
    out["fourbar_transmission"] = dict(compile_s=comp, median_s=run)
    line = f"four-bar transmission (simulate + angles, 180 steps): {run * 1e3:.2f} ms"
    if pk.available():
        from pylinkage.linkage.transmission import analyze_transmission

        runs = []
        for _ in range(a.repeats):
            lk_p = pk._build_linkage(180)
            t0 = time.perf_counter()
            tp = analyze_transmission(lk_p, iterations=180)
            runs.append(time.perf_counter() - t0)
        peer = float(np.median(runs))
        mu = np.degrees(np.asarray(t.angle[:, 0]))
        out["pylinkage_transmission"] = dict(
            median_s=peer,
            min_deg=float(tp.min_angle),
            max_deg=float(tp.max_angle),
            ours_min_deg=float(mu.min()),
            ours_max_deg=float(mu.max()),
        )
        out["ratio_transmission_time"] = peer / run
        line += (
            f"; pylinkage analyze_transmission {peer * 1e3:.1f} ms ({peer / run:.0f}x), extremes "
            f"{tp.min_angle:.4f}/{tp.max_angle:.4f} deg vs {mu.min():.4f}/{mu.max():.4f}"
        )
    print(line, flush=True)

    # singular points along the default sweeps
    for name in ("fourbar", "theo_jansen"):
        lk = getattr(dm.examples, name)()
        motion = L.sweep(lk, condition=False)
        comp, run, s = clock(lambda: L.singularities(lk, motion), a.repeats)
        out[f"{name}_singularities"] = dict(
            compile_s=comp, median_s=run, events=[list(e) for e in s.events()], worst_step=float(np.max(s.step))
        )
        print(f"{name} singularities: {len(s.at)} events in {run * 1e3:.1f} ms (compile {comp:.1f} s)", flush=True)

    # workspaces
    rpr = dm.examples.three_rpr()
    g = np.linspace(-0.1, 1.1, 121), np.linspace(-0.2, 1.0, 121)
    comp, run, w = clock(lambda: par.workspace(rpr, *g, orientation=0.3), a.repeats)
    out["three_rpr_workspace_121x121"] = dict(
        compile_s=comp, median_s=run, area=w.size, locus_points=int(w.locus.shape[0])
    )
    st = par.StewartPlatform()
    x = np.linspace(-0.08, 0.08, 41)
    R = dm.screw.rotation_vector(jnp.array([0.5, 0.2, 0.0]))
    comp2, run2, w2 = clock(
        lambda: par.workspace(st, x, x, np.linspace(0.02, 0.16, 41), orientation=R, section=0.04), a.repeats
    )
    out["stewart_workspace_41x41x41"] = dict(compile_s=comp2, median_s=run2, volume=w2.size)
    print(f"workspace: 3-RPR 121² {run * 1e3:.1f} ms, Stewart 41³ {run2 * 1e3:.1f} ms", flush=True)

    # forward kinematics: one instance (the seed's platform; a general one), a batch of 64
    kin = par.inverse_kinematics(st, par.stewart_spiral(st, jnp.linspace(0.0, 6.0, 64)))
    off = np.array([float(jnp.linalg.norm(ch.attach - ch.points[0]) - ch.home[3]) for ch in st.chains])
    legs = np.asarray(kin.labels)[:, [6 * i + 3 for i in range(6)]] + off
    comp, run, r = clock(lambda: par.forward_kinematics(st, legs[0]), a.repeats)
    out["fk_seed_platform"] = dict(compile_s=comp, median_s=run, count=int(r.count))
    gen, gl = _built_platform(3)
    comp1, run1, r1 = clock(lambda: par.forward_kinematics(gen, gl), a.repeats)
    out["fk_general_platform"] = dict(compile_s=comp1, median_s=run1, count=int(r1.count))
    comp2, run2, r2 = clock(lambda: par.forward_kinematics(st, legs), max(1, a.repeats // 2))
    out["fk_batch_64"] = dict(
        compile_s=comp2, median_s=run2, per_instance_s=run2 / 64, counts=np.asarray(r2.count).tolist()
    )
    t0 = time.perf_counter()
    peer_count = _scipy_assemblies(gen, gl, a.peer_starts)
    peer = time.perf_counter() - t0
    out["scipy_root_many_start"] = dict(starts=a.peer_starts, seconds=peer, count=peer_count)
    out["ratio_fk_time_per_start"] = (peer / a.peer_starts) / (run1 / 1024)  # diffmech's default: 1024 starts
    print(
        f"forward kinematics: seed platform {int(r.count)} assemblies in {run * 1e3:.1f} ms (compile {comp:.1f} s); "
        f"general platform {int(r1.count)} in {run1 * 1e3:.1f} ms; batch of 64: {run2 / 64 * 1e3:.1f} ms each; "
        f"scipy root from the same {a.peer_starts} starts: {peer_count} in {peer:.2f} s "
        f"({out['ratio_fk_time_per_start']:.0f}x per start)",
        flush=True,
    )
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "analysis.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, default=float)
    print("wrote", path)


if __name__ == "__main__":
    main()
