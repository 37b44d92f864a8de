"""Four-bar path generation: diffmech (multi-start L-BFGS, closure-core check) against
pylinkage's particle swarm optimiser, on the same targets and the same wall-time budget,
measured in the same run.

Targets: 12 points traced by known four-bars (prescribed timing, 30° of crank apart),
so the attainable error is 0. Reported per target set: diffmech's compile time, run
time (median of 3 seeds), mean distance to the targets, relative error, success rate of
its starts, and the time its best start took to reach 1e-6 relative RMS path error;
pylinkage's mean distance after the same wall time as diffmech's run, and after 10× it.

Then the literature's two classic problems (issue 21), posed with their bounds and
constraints: five points at absolute crank angles with the frame fixed, and eighteen
points with the crank stepping 20° from a free start. diffmech's objective Σ‖Cᵢ − Tᵢ‖²
against the best published designs (their design vectors as transcribed in the public
code of Nguyen-Van et al., Symmetry 14 (2022) 381, re-evaluated here by the closure
core and by pylinkage's kinematics) and against pylinkage's particle swarm on the same
formulation in the same wall time and 10× it. pyslvs is not run: it has no Linux wheel,
and its source build fails with the Cython pip resolves (see the README).

    python benchmarks/bench_synthesis.py [--starts 64] [--quick] [--classic-only]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

# the repository's diffmech, not an installed copy (pip may hold another version)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from diffmech import synthesis as S  # noqa: E402

try:
    from benchmarks.peers import pylinkage_synthesis as peer
except ImportError:  # run as a script from benchmarks/
    from peers import pylinkage_synthesis as peer

DESIGNS = {
    "crank-rocker": S.PlacedFourBar(
        lengths=jnp.array([0.12, 0.25, 0.26, 0.30]),
        point=jnp.array([0.1, 0.05]),
        origin=jnp.array([0.3, -0.2]),
        angle=jnp.array(0.4),
        branch=1,
    ),
    "long coupler": S.PlacedFourBar(
        lengths=jnp.array([0.05, 0.20, 0.12, 0.16]),
        point=jnp.array([0.25, -0.06]),
        origin=jnp.array([-0.1, 0.05]),
        angle=jnp.array(-1.2),
        branch=1,
    ),
    "lower branch": S.PlacedFourBar(
        lengths=jnp.array([0.10, 0.22, 0.18, 0.25]),
        point=jnp.array([0.05, 0.12]),
        origin=jnp.array([0.0, 0.0]),
        angle=jnp.array(2.0),
        branch=-1,
    ),
}
THETA = np.linspace(0.0, 2 * np.pi, 13)[:-1] + 0.3


def _rms_time(res, scale_rel=1e-6):
    """Host time at which the best start's RMS relative path error (√loss, the targets
    normalised to unit RMS radius) first fell to `scale_rel` (None if never)."""
    h = res.history
    ok = np.flatnonzero(np.sqrt(np.maximum(np.asarray(h.loss), 0)) <= scale_rel)
    return float(np.asarray(h.time)[ok[0]]) if ok.size else None


T5 = [(3, 3), (2.759, 3.363), (2.372, 3.663), (1.890, 3.862), (1.355, 3.943)]
A5 = [np.pi / 6, np.pi / 4, np.pi / 3, 5 * np.pi / 12, np.pi / 2]
T18 = [
    (0.5, 1.1),
    (0.4, 1.1),
    (0.3, 1.1),
    (0.2, 1.0),
    (0.1, 0.9),
    (0.05, 0.75),
    (0.02, 0.6),
    (0, 0.5),
    (0, 0.4),
    (0.03, 0.3),
    (0.1, 0.25),
    (0.15, 0.2),
    (0.2, 0.3),
    (0.3, 0.4),
    (0.4, 0.5),
    (0.5, 0.7),
    (0.6, 0.9),
    (0.6, 1.0),
]
A18 = list(np.deg2rad(20.0) * np.arange(18))
# design vectors [r1 ground, r2 crank, r3 coupler, r4 rocker, rcx, rcy(, x0, y0, θ0, θ2¹)] as labelled in the public
# code of Nguyen-Van et al. (2022), github sy-nguyen-van/DE_Jaya_Synthesis_Four_Bar_Mechanisms (CheckCASE2/3.m, and
# its best HCDJ results); "MUMSA" and "IOA" are that code's labels
PUBLISHED = {
    1: {
        "Kunjur & Krishnamurty 1997": [3.509643, 1.857606, 4.725835, 3.518721, 1.959538, 1.558898],
        "Cabrera et al. 2002": [3.0630424, 1.9959624, 3.305823, 2.524706, 1.645158, 1.708959],
        "MUMSA": [3.77326856, 2.00000403, 4.11697104, 2.74615671, 1.67848787, 1.67098007],
        "IOA": [2.803607, 1.99226, 3.030461, 2.474117, 1.64413, 1.714536],
        "HCDJ, Nguyen-Van et al. 2022": [4.2930812, 1.9978324, 4.7374099, 2.9417301, 1.7074051, 1.6441696],
    },
    2: {
        "Kunjur & Krishnamurty 1997": [
            1.87966,
            0.274853,
            1.180253,
            2.138209,
            -0.833592,
            -0.37877,
            1.132062,
            0.663433,
            4.354224,
            2.558625,
        ],
        "Cabrera et al. 2002": [
            3.057878,
            0.237803,
            4.828954,
            2.056456,
            0.767038,
            1.850828,
            1.776808,
            -0.641991,
            1.002168,
            0.226186,
        ],
        "MUMSA": [
            4.453772,
            0.297057,
            3.913095,
            0.849372,
            -2.067338,
            1.6610626,
            -1.309243,
            2.806964,
            2.7387359,
            4.853543,
        ],
        "IOA": [4.040435, 0.245216, 6.38294, 2.620532, 1.139106, 1.866109, 1.891805, -0.761339, 1.187751, 0.0],
        "HCDJ, Nguyen-Van et al. 2022": [
            49.800886,
            0.28817159,
            48.476138,
            1.633642,
            -23.41281,
            7.6644886,
            -14.836153,
            20.140223,
            2.5286091,
            5.0644224,
        ],
    },
}


def _classic_problem(k):
    if k == 1:
        return dict(
            targets=np.array(T5, float),
            angles=np.array(A5),
            kwargs=dict(
                timing="prescribed",
                crank_angles=np.array(A5),
                phase=0.0,
                frame={"origin": (0.0, 0.0), "angle": 0.0},
                bounds={"lengths": (0, 50), "point": (-50, 50)},
                grashof=True,
            ),
            lower=[0] * 4 + [-50] * 2 + [-1],
            upper=[50] * 4 + [50] * 2 + [1],
        )
    return dict(
        targets=np.array(T18, float),
        angles=np.array(A18),
        kwargs=dict(
            timing="prescribed",
            crank_angles=np.array(A18),
            bounds={
                "lengths": (0, 50),
                "point": (-50, 50),
                "origin": (-50, 50),
                "angle": (0, 2 * np.pi),
                "phase": (0, 2 * np.pi),
            },
            grashof=True,
        ),
        lower=[0] * 4 + [-50] * 4 + [0, 0, -1],
        upper=[50] * 4 + [50] * 4 + [2 * np.pi, 2 * np.pi, 1],
    )


def _literature_objective_diffmech(x, k, targets, angles):
    """f of a literature design vector by diffmech's closure core (sweep through the
    targets' crank angles) on the branch with C left of B→D (the literature's), or
    inf if it does not assemble there."""
    r1, r2, r3, r4, rcx, rcy = x[:6]
    x0, y0, t0, th1 = (0.0, 0.0, 0.0, 0.0) if k == 1 else x[6:]
    inputs = np.asarray(angles) + th1
    for branch in (1, -1):
        d = S.PlacedFourBar(
            lengths=jnp.array([r2, r3, r4, r1]),
            point=jnp.array([rcx, rcy]),
            origin=jnp.array([x0, y0]),
            angle=jnp.asarray(t0),
            branch=branch,
        )
        j = {n: np.asarray(v) for n, v in d.joints(float(inputs[0])).items()}
        e, f = j["D"] - j["B"], j["C"] - j["B"]
        if e[0] * f[1] - e[1] * f[0] > 0:
            pts, ok = d.path(inputs)
            return float(np.sum((np.asarray(pts) - targets) ** 2)) if bool(jnp.all(ok)) else float("inf")
    return float("inf")


def classic(args, out):
    for k, name in (
        (1, "five points, frame fixed, absolute crank angles"),
        (2, "eighteen points, crank stepping 20° from a free start"),
    ):
        P = _classic_problem(k)
        t = P["targets"]
        t0 = time.perf_counter()
        S.path_generation(t, **P["kwargs"], starts=args.starts, steps=args.classic_steps, seed=99)
        first = time.perf_counter() - t0
        runs = []
        for seed in [0] if args.quick else [0, 1, 2]:
            t0 = time.perf_counter()
            r = S.path_generation(t, **P["kwargs"], starts=args.starts, steps=args.classic_steps, seed=seed)
            d = r.design
            runs.append(
                {
                    "wall_s": time.perf_counter() - t0,
                    "objective": r.objective,
                    "lengths_crank_coupler_rocker_ground": np.asarray(d.lengths).tolist(),
                    "point": np.asarray(d.point).tolist(),
                    "origin": np.asarray(d.origin).tolist(),
                    "angle": float(d.angle),
                    "branch": d.branch,
                    "first_crank_angle": float(r.inputs[0]),
                    "grashof_excess": r.constraints["grashof_excess"],
                    "transmission_rad": r.constraints["transmission"],
                    "success_rate": r.success_rate,
                }
            )
        wall = statistics.median(x["wall_s"] for x in runs)
        best = min(runs, key=lambda x: x["objective"])
        case = {
            "diffmech": {
                "compile_s": first - wall,
                "median_wall_s": wall,
                "runs": runs,
                "best_objective": best["objective"],
                "median_objective": statistics.median(x["objective"] for x in runs),
            }
        }
        pub = {}
        for label, x in PUBLISHED[k].items():
            pub[label] = {"design": x, "objective_closure_core": _literature_objective_diffmech(x, k, t, P["angles"])}
            if peer.available():
                pub[label]["objective_pylinkage"] = peer.literature_objective(list(x) + [1.0], k, t, P["angles"])
        case["published"] = pub
        best_pub = min(v["objective_closure_core"] for v in pub.values())
        case["ratio_best_published_to_diffmech_median"] = best_pub / case["diffmech"]["median_objective"]
        print(
            f"problem {k} ({name}): diffmech {wall:.2f} s per run (compile {first - wall:.1f} s), objective median "
            f"{case['diffmech']['median_objective']:.6g}, best {best['objective']:.6g}; best published "
            f"{best_pub:.6g}",
            flush=True,
        )
        for label, v in pub.items():
            print(
                f"    {label:30s} f = {v['objective_closure_core']:.6g} (closure core)"
                + (f", {v['objective_pylinkage']:.6g} (pylinkage)" if "objective_pylinkage" in v else ""),
                flush=True,
            )
        if peer.available():
            for mult in (1, 10):
                pr = peer.run_literature(
                    t, P["angles"] if k == 2 else P["angles"], k, P["lower"], P["upper"], budget_s=mult * wall, seed=0
                )
                case[f"pylinkage_pso_{mult}x_time"] = {
                    kk: pr[kk] for kk in ("objective", "x", "evaluations", "wall_s", "rounds")
                }
                print(
                    f"    pylinkage PSO, {mult}x the time: f = {pr['objective']:.6g} ({pr['evaluations']} evaluations)",
                    flush=True,
                )
        out["classic"][k] = case


def _median_runs(call, seeds):
    """One compiling call, then one run per seed: (compile s, median wall s, results)."""
    t0 = time.perf_counter()
    call(99)
    first = time.perf_counter() - t0
    runs = []
    for seed in seeds:
        t0 = time.perf_counter()
        r = call(seed)
        runs.append((time.perf_counter() - t0, r))
    wall = statistics.median(w for w, _ in runs)
    return first - wall, wall, [r for _, r in runs]


def tasks(args, out):
    """Motion and function generation against the classical constructions they must
    agree with, measured in the same run: five poses of a coupler-carried body (every
    dyad of the design must be a Burmester pair: the NumPy construction of
    tests/reference/burmester.py), three crank-rocker angle pairs (Freudenstein's
    linear three-point solution) and five with free offsets (no closed form)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    from reference import burmester as bm

    from diffmech import fourbar as fbk

    true = DESIGNS["crank-rocker"]
    seeds = [0] if args.quick else [0, 1, 2]
    th = np.linspace(0.3, 2.6, 5)
    q = np.asarray(fbk.assemble(true.fourbar, jnp.asarray(th)))
    P = np.asarray(true.to_world(fbk.coupler_point(true.fourbar, jnp.asarray(q), true.point)))
    poses = np.c_[P, float(true.angle) + np.arctan2(q[:, 3], q[:, 2]) + 0.3]
    comp, wall, rs = _median_runs(lambda seed: S.motion_generation(poses, starts=32, steps=400, seed=seed), seeds)
    t0 = time.perf_counter()
    pairs = bm.burmester_pairs(poses)
    t_bm = time.perf_counter() - t0
    dist = []
    for r in rs:
        J = [r.design.joints(float(t)) for t in r.inputs]
        for moving, fixed in (("B", "A"), ("C", "D")):
            m = np.asarray(bm.rotation(poses[0, 2])).T @ (np.asarray(J[0][moving]) - poses[0, :2])
            c = np.asarray(J[0][fixed])
            dist.append(min(np.linalg.norm(m - pm) + np.linalg.norm(c - pc) for pm, pc in pairs))
    scale = float(np.sqrt(np.mean(np.sum((P - P.mean(0)) ** 2, 1))))
    out["tasks"]["motion_5_poses"] = {
        "diffmech": {
            "compile_s": comp,
            "median_wall_s": wall,
            "objective": [r.objective for r in rs],
            "relative_objective": [r.objective / scale**2 for r in rs],
            "max_angle_error_rad": [r.constraints["max_angle_error"] for r in rs],
        },
        "burmester_numpy": {"wall_s": t_bm, "real_pairs": len(pairs)},
        "max_dyad_distance_to_a_burmester_pair": float(max(dist)),
    }
    print(
        f"motion generation, 5 poses: diffmech {wall:.2f} s (compile {comp:.1f} s), objective/ℓ² "
        f"{max(r.objective for r in rs) / scale**2:.1e}, angle error ≤ "
        f"{max(r.constraints['max_angle_error'] for r in rs):.1e} rad; "
        f"Burmester construction (NumPy) {t_bm * 1e3:.1f} ms, {len(pairs)} real pairs; the design's dyads lie "
        f"{max(dist):.1e} from them",
        flush=True,
    )
    phi = np.array([0.5, 1.0, 1.6])
    psi = np.array([float(np.arctan2(*np.asarray(fbk.assemble(true.fourbar, p))[[5, 4]])) for p in phi])
    comp, wall, rs = _median_runs(
        lambda seed: S.function_generation(phi, psi, ground=0.30, starts=16, steps=250, seed=seed), seeds
    )
    t0 = time.perf_counter()
    A = np.c_[np.cos(psi), -np.cos(phi), np.ones(3)]
    K1, K2, K3 = np.linalg.solve(A, np.cos(phi - psi))
    a, c, d = 0.30 / K1, 0.30 / K2, 0.30
    freud = np.array([a, np.sqrt(a * a + c * c + d * d - 2 * a * c * K3), c, d])
    t_fr = time.perf_counter() - t0
    diff = max(float(np.max(np.abs(np.asarray(r.design.lengths) - freud))) for r in rs)
    phi5 = np.linspace(0.3, 2.0, 5)
    psi5 = np.array([float(np.arctan2(*np.asarray(fbk.assemble(true.fourbar, p))[[5, 4]])) for p in phi5])
    comp5, wall5, rs5 = _median_runs(
        lambda seed: S.function_generation(
            phi5 - 0.2, psi5 + 0.1, offsets=True, ground=0.30, starts=16, steps=600, seed=seed
        ),
        seeds,
    )
    out["tasks"]["function"] = {
        "three_pairs": {
            "diffmech": {"compile_s": comp, "median_wall_s": wall, "objective": [r.objective for r in rs]},
            "freudenstein_numpy_s": t_fr,
            "max_length_difference": diff,
        },
        "five_pairs_with_offsets": {
            "diffmech": {"compile_s": comp5, "median_wall_s": wall5, "objective": [r.objective for r in rs5]}
        },
    }
    print(
        f"function generation, 3 pairs: diffmech {wall:.2f} s (compile {comp:.1f} s), lengths within {diff:.1e} of "
        f"Freudenstein's solution ({t_fr * 1e6:.0f} µs in NumPy); 5 pairs with offsets: {wall5:.2f} s "
        f"(compile {comp5:.1f} s), objective ≤ {max(r.objective for r in rs5):.1e} rad²",
        flush=True,
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=64)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--quick", action="store_true", help="one target set, one seed")
    ap.add_argument("--classic-only", action="store_true", help="only the literature's two problems")
    ap.add_argument("--tasks-only", action="store_true", help="only motion and function generation")
    ap.add_argument("--classic-steps", type=int, default=500, help="the search's steps a round in the classic problems")
    args = ap.parse_args()
    out = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "jax": jax.__version__,
        "starts": args.starts,
        "steps": args.steps,
        "targets": len(THETA),
        "cases": {},
        "classic": {},
        "tasks": {},
        "date": time.strftime("%Y-%m-%d"),
    }
    names = [] if (args.classic_only or args.tasks_only) else list(DESIGNS)[:1] if args.quick else list(DESIGNS)
    seeds = [0] if args.quick else [0, 1, 2]
    for name in names:
        pts, ok = DESIGNS[name].path(THETA)
        assert bool(jnp.all(ok))
        t = np.asarray(pts)
        inc = THETA - THETA[0]
        t0 = time.perf_counter()
        S.path_generation(t, "prescribed", crank_angles=inc, starts=args.starts, steps=args.steps, seed=99)
        first = time.perf_counter() - t0
        runs = []
        for seed in seeds:
            t0 = time.perf_counter()
            r = S.path_generation(t, "prescribed", crank_angles=inc, starts=args.starts, steps=args.steps, seed=seed)
            runs.append(
                {
                    "wall_s": time.perf_counter() - t0,
                    "mean_distance": r.error,
                    "relative_error": r.relative_error,
                    "success_rate": r.success_rate,
                    "time_to_1e-6_s": _rms_time(r),
                }
            )
        wall = statistics.median(x["wall_s"] for x in runs)
        case = {
            "diffmech": {
                "compile_s": first - wall,
                "runs": runs,
                "median_wall_s": wall,
                "median_mean_distance": statistics.median(x["mean_distance"] for x in runs),
                "median_success_rate": statistics.median(x["success_rate"] for x in runs),
            }
        }
        if peer.available():
            same = peer.run(t, inc, budget_s=wall, seed=0)
            ten = peer.run(t, inc, budget_s=10 * wall, seed=0)
            case["pylinkage_same_time"] = {
                k: same[k] for k in ("best_mean_distance", "evaluations", "wall_s", "rounds")
            }
            case["pylinkage_10x_time"] = {k: ten[k] for k in ("best_mean_distance", "evaluations", "wall_s", "rounds")}
            d = case["diffmech"]["median_mean_distance"]
            case["error_ratio_same_time"] = same["best_mean_distance"] / max(d, 1e-300)
            case["error_ratio_vs_pylinkage_10x_time"] = ten["best_mean_distance"] / max(d, 1e-300)
        out["cases"][name] = case
        print(
            f"{name:13s} diffmech: {wall:6.2f} s (compile {first - wall:5.1f} s), mean distance "
            f"{case['diffmech']['median_mean_distance']:.2e} m, success {case['diffmech']['median_success_rate']:.0%}, "
            f"best start at 1e-6 after {runs[0]['time_to_1e-6_s']} s",
            flush=True,
        )
        if "pylinkage_same_time" in case:
            print(
                f"{'':13s} pylinkage PSO: {case['pylinkage_same_time']['best_mean_distance']:.2e} m in the same time "
                f"({case['pylinkage_same_time']['evaluations']} evaluations), "
                f"{case['pylinkage_10x_time']['best_mean_distance']:.2e} m in 10× the time",
                flush=True,
            )
    if not args.tasks_only:
        classic(args, out)
    if not args.classic_only:
        tasks(args, out)
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    path = os.path.join(
        os.path.dirname(__file__),
        "results",
        "synthesis_classic.json"
        if args.classic_only
        else "synthesis_tasks.json"
        if args.tasks_only
        else "synthesis.json",
    )
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
