"""Peer benchmark: four-bar path generation (prescribed or free timing) with pylinkage's PSO.

Targets T_i (n x 2, world frame, m) at relative crank angles c_i (c_0 = 0, increasing,
anticlockwise): find a four-bar and a crank phase phi such that at crank angle phi + c_i
(AB from world +x) the coupler point P is at T_i. Error: mean distance (1/n) sum |P_i - T_i|.

Parameter vector (11 numbers; `evaluate`, `run`'s `best_params`):
    [Ax, Ay, Dx, Dy, l1, l2, l3, d, alpha, phi, b]: pivots A (crank) and D (rocker),
    lengths of crank AB, coupler BC, rocker CD; tracer P = B + d (cos, sin)(alpha +
    angle of B->C), i.e. the coupler-frame point d (cos alpha, sin alpha) (origin B, x
    along B->C); phi: crank angle at the first target; b: assembly branch, b >= 0 puts
    C on the left of B->D, b < 0 on the right (so designs on either branch are found).
    Free timing (`crank_angles=None`): the same vector, phi the crank angle where the
    curve's sampling starts (a turn anticlockwise, cut where it stops assembling), the
    error each target's distance to the curve (`free_error`).

Mapping onto pylinkage 1.3.0 (component API): one `Linkage([A, D, crank, C, P])`
* `Ground` A and D, `Crank(A, radius=l1, angular_velocity=1.0)` = B,
  `RRRDyad(crank.output, D, distance1=l2, distance2=l3)` = C (circle intersection),
  `FixedDyad(crank.output, C, distance=d, angle=alpha)` = P, the tracer rigidly
  attached to the coupler (polar offset from B, angle relative to B->C).
* This linkage is the PSO's template and is re-dimensioned for every particle, as
  pylinkage's own `kinematic_default_test` does: `set_constraints([l1, l2, l3, d,
  alpha])`, then `set_coords`. Ground pivots are not optimisable constraints in
  pylinkage, so they travel in the particle vector too (PSO `dimensions=11`) and are
  placed by `set_coords`, with B at phi and C at the closed-form C at phi on branch b
  (pylinkage takes the circle intersection nearest the previous position, so this
  picks the branch). This is ~1.7x faster than building a new linkage per particle.
* Crank angles: every solver step first rotates the crank by angular_velocity * dt
  and then records (see pylinkage_fourbar.py). So `step_fast(1, dt=0)` records the
  pose at phi itself, and each run of equal gaps g between consecutive c_i becomes one
  `step_fast(SUBSTEPS * k, dt=g / SUBSTEPS)` call (8 sub-steps per gap, so the
  nearest-intersection rule follows one branch); every SUBSTEPS-th record is a target.
  The state carries over between calls (step_fast syncs positions back).
* Simulation: `Linkage.step_fast()` (numba); it works for this linkage. Unassemblable
  poses come back as NaN -> fitness inf; so does a branch jump of the nearest-
  intersection rule (sign of (D-B) x (C-B) changing along the motion).
"""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np

SUBSTEPS = 8  # crank sub-steps per gap between consecutive targets
FREE_SAMPLES = 96  # free timing: the curve's steps over one turn in the PSO's fitness


def available() -> bool:
    """True if pylinkage and numba both import."""
    try:
        import numba  # noqa: F401
        import pylinkage  # noqa: F401
    except Exception:
        return False
    return True


def _c_closed_form(a, d, l1, l2, l3, theta, side):
    """C by circle intersection at crank angle theta (side +1: left of B->D); None if
    it cannot assemble."""
    b = a + l1 * np.array([math.cos(theta), math.sin(theta)])
    dist = math.hypot(*(d - b))
    x = (l2 * l2 - l3 * l3 + dist * dist) / (2.0 * dist) if dist > 0.0 else math.inf
    if l2 * l2 - x * x < 0.0:
        return None
    e = (d - b) / dist
    return b + x * e + side * math.sqrt(l2 * l2 - x * x) * np.array([-e[1], e[0]])


def _gap_runs(crank_angles):
    """Runs of equal consecutive gaps: [(gap, count), ...] (one step_fast call each)."""
    runs = []
    for g in np.diff(np.asarray(crank_angles, dtype=float)):
        if runs and abs(g - runs[-1][0]) <= 1e-12 * max(abs(g), 1.0):
            runs[-1][1] += 1
        else:
            runs.append([float(g), 1])
    return runs


def _template():
    """The five-component four-bar [A, D, crank (B), C, P]; its geometry is overwritten
    by `_path`. Constraints, in `Linkage.get_constraints()` order: [l1, l2, l3, d, alpha]."""
    import pylinkage as pl

    A, D = pl.Ground(0.0, 0.0, name="A"), pl.Ground(1.0, 0.0, name="D")
    crank = pl.Crank(A, radius=0.3, angular_velocity=1.0, name="B")
    C = pl.RRRDyad(crank.output, D, distance1=1.0, distance2=1.0, name="C")
    P = pl.FixedDyad(crank.output, C, distance=0.1, angle=0.0, name="P")
    return pl.Linkage([A, D, crank, C, P], name="fourbar")  # trajectory index: A D B C P


def _placed(lk, params):
    """`lk` re-dimensioned and posed at the crank angle phi on branch b (as pylinkage's
    own kinematic_default_test does: constraints, then positions: the grounds, B at
    phi, C at the branch hint, P recomputed from B and C); the branch's sign, or None
    if it cannot assemble there."""
    ax, ay, dx, dy, l1, l2, l3, dist, alpha, phi, b = (float(v) for v in params)
    side = 1.0 if b >= 0 else -1.0
    c0 = _c_closed_form(np.array([ax, ay]), np.array([dx, dy]), l1, l2, l3, phi, side)
    if c0 is None or min(l1, l2, l3) <= 0.0:
        return None
    lk.set_constraints([l1, l2, l3, dist, alpha])
    bx, by = ax + l1 * math.cos(phi), ay + l1 * math.sin(phi)
    lk.set_coords([(ax, ay), (dx, dy), (bx, by), (float(c0[0]), float(c0[1])), (bx, by)])
    return side


def _on_branch(tr, side):
    """Per pose: assembled (no NaN) and on the branch (the sign of (D-B) x (C-B))."""
    bd, bc = tr[:, 1] - tr[:, 2], tr[:, 3] - tr[:, 2]
    return ~np.isnan(tr).any(axis=(1, 2)) & (side * (bd[:, 0] * bc[:, 1] - bd[:, 1] * bc[:, 0]) > 0.0)


def _path(lk, params, runs):
    """Tracer positions at the targets' crank angles, (n, 2); None if unbuildable.
    `lk`: a `_template()` linkage (mutated), `runs`: `_gap_runs(crank_angles)`."""
    side = _placed(lk, params)
    if side is None:
        return None
    chunks = [lk.step_fast(1, dt=0.0)]  # the pose at phi (first target)
    for gap, count in runs:
        chunks.append(lk.step_fast(SUBSTEPS * count, dt=gap / SUBSTEPS))
    tr = np.concatenate(chunks)
    if not np.all(_on_branch(tr, side)):
        return None
    return tr[::SUBSTEPS, 4]  # record 0 and every SUBSTEPS-th after it: the targets


def _curve(lk, params, samples: int):
    """Free timing: the tracer's curve from the crank angle phi over one turn
    anticlockwise, `samples` steps (`samples + 1` poses), cut at the first pose that
    does not assemble or leaves the branch; None if fewer than two poses remain."""
    side = _placed(lk, params)
    if side is None:
        return None
    tr = np.concatenate([lk.step_fast(1, dt=0.0), lk.step_fast(samples, dt=2 * math.pi / samples)])
    bad = ~_on_branch(tr, side)
    k = int(np.argmax(bad)) if bad.any() else len(tr)
    return tr[:k, 4] if k >= 2 else None


def nearest_distances(curve, targets) -> np.ndarray:
    """Each target's distance to the polyline through a curve's samples `(m, 2)`."""
    a, ab = curve[:-1], np.diff(curve, axis=0)
    d = targets[:, None, :] - a[None]
    t = np.clip(np.sum(d * ab[None], -1) / np.maximum(np.sum(ab * ab, -1), 1e-300)[None], 0.0, 1.0)
    return np.min(np.linalg.norm(d - t[..., None] * ab[None], axis=-1), axis=1)


def free_error(params, targets, samples: int = 4096) -> float:
    """Free timing's mean distance of one parameter vector: each target to the curve
    (`samples` steps over the turn; the chord's error is far below the PSO's)."""
    c = _curve(_template(), params, samples)
    return math.inf if c is None else float(np.mean(nearest_distances(c, np.asarray(targets, float))))


def evaluate(params: np.ndarray, targets, crank_angles) -> float:
    """Mean distance (1/n) sum |P_i - T_i| of one parameter vector (layout in the module
    docstring); np.inf if it cannot be assembled along the motion on its branch."""
    p = _path(_template(), params, _gap_runs(crank_angles))
    if p is None:
        return math.inf
    return float(np.mean(np.linalg.norm(p - np.asarray(targets, dtype=float), axis=1)))


def bounds_for(targets):
    """PSO bounds from the targets' bounding box (size s = its larger side): pivots in
    the box grown by 2 s on every side (a small coupler curve can lie far from its
    pivots), lengths in [0.05, 3] s, tracer distance in [0, 3] s, angles in [-pi, pi],
    branch selector in [-1, 1]."""
    lo, hi = np.min(targets, axis=0), np.max(targets, axis=0)
    s = float(max(hi - lo)) or 1.0
    m = 2 * s
    lower = [lo[0] - m, lo[1] - m, lo[0] - m, lo[1] - m, 0.05 * s, 0.05 * s, 0.05 * s, 0.0, -math.pi, -math.pi, -1.0]
    upper = [hi[0] + m, hi[1] + m, hi[0] + m, hi[1] + m, 3 * s, 3 * s, 3 * s, 3 * s, math.pi, math.pi, 1.0]
    return np.array(lower), np.array(upper)


@contextlib.contextmanager
def _seeded_pso_rng(seed_seq):
    """pylinkage's PSO draws from `np.random.default_rng()` (no seed argument; the
    global np.random.seed does not reach it), looked up at call time: during one PSO
    call, unseeded calls get a generator seeded from `seed_seq`. Restored on exit."""
    orig = np.random.default_rng
    np.random.default_rng = lambda s=None: orig(seed_seq if s is None else s)
    try:
        yield
    finally:
        np.random.default_rng = orig


def run(
    targets, crank_angles, budget_s: float, seed: int = 0, n_particles: int = 100, iterations: int | None = None
) -> dict:
    """pylinkage PSO rounds (minimising the mean distance; `crank_angles=None`: free
    timing, each target's distance to the curve sampled over a turn, which also stands
    for cyclic order: the order is not imposed, in the peer's favour), restarted with new seeds
    while time remains, for `budget_s` seconds of wall time. The numba warm-up is done
    before the clock starts (`warmup_s`). Iterations per round: `iterations`, or sized
    from the measured evaluation rate so that a round takes ~budget/4 (longer rounds
    beat more restarts for this PSO). Round k's PSO is seeded by (seed, k), so with
    the same iterations rounds are bit-identical; how many rounds fit, and the length
    of a last, shortened one, depend on the clock."""
    import pylinkage as pl

    targets = np.asarray(targets, dtype=float)
    runs = None if crank_angles is None else _gap_runs(crank_angles)
    lower, upper = bounds_for(targets)
    np.random.seed(seed)  # for completeness: pylinkage's PSO ignores it (see below)
    template = _template()  # the PSO's linkage; the fitness re-dimensions it per call
    best = {"f": math.inf, "x": None, "n": 0}

    def fitness(linkage, params, _init_pos):  # pylinkage's eval_func contract
        if runs is None:  # free timing: each target to the sampled curve
            c = _curve(linkage, params, FREE_SAMPLES)
            f = math.inf if c is None else float(np.mean(nearest_distances(c, targets)))
        else:
            p = _path(linkage, params, runs)
            f = math.inf if p is None else float(np.mean(np.linalg.norm(p - targets, axis=1)))
        best["n"] += 1
        if f < best["f"]:
            best["f"], best["x"] = f, list(map(float, params))
        return f

    t_w = time.perf_counter()
    template.step_fast(2, dt=1.0)  # numba JIT / cache load (the template assembles)
    warmup_s = time.perf_counter() - t_w

    t0 = time.perf_counter()
    # Calibration: n_particles random designs (they count). Unassemblable ones return
    # early, so the cost is taken from the assemblable ones: their median (a few take
    # milliseconds: GC, OS jitter) x 1.25. This is conservative (a PSO swarm holds
    # cheap unassemblable particles too), so later rounds use the PSO's measured rate.
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2**31]))
    cost = []
    for x in rng.uniform(lower, upper, size=(n_particles, len(lower))):
        t = time.perf_counter()
        if math.isfinite(fitness(template, x.tolist(), None)):
            cost.append(time.perf_counter() - t)
    rate = 1.0 / (1.25 * np.median(cost) if cost else (time.perf_counter() - t0) / n_particles)
    trace, rounds, round_iters, n_pso, t_pso = [], 0, [], 0, 0.0
    while True:  # one round = n_particles * (iterations + 1) evaluations
        iters_per_round = iterations or max(1, int(budget_s / 4 * rate / n_particles) - 1)
        left = budget_s - (time.perf_counter() - t0)  # the last round: what time is left
        if (iters := min(iters_per_round, int(left * rate / n_particles) - 1)) < 1:
            break
        n_before, t_r = best["n"], time.perf_counter()
        with _seeded_pso_rng(np.random.SeedSequence([seed, rounds])):
            pl.particle_swarm_optimization(
                fitness,
                template,
                dimensions=len(lower),
                n_particles=n_particles,
                iterations=iters,
                bounds=(lower.tolist(), upper.tolist()),
                order_relation=min,
                verbose=False,
            )
        n_pso, t_pso = n_pso + best["n"] - n_before, t_pso + time.perf_counter() - t_r
        rate = n_pso / max(t_pso, 1e-9)
        rounds += 1
        round_iters.append(iters)
        trace.append([time.perf_counter() - t0, best["f"]])
    wall = time.perf_counter() - t0
    return {
        "best_mean_distance": best["f"],
        "best_params": best["x"],
        "evaluations": best["n"],
        "wall_s": wall,
        "trace": trace,
        "rounds": rounds,
        "n_particles": n_particles,
        "iterations_per_round": iters_per_round,
        "round_iterations": round_iters,
        "warmup_s": warmup_s,
        "evaluations_per_s": best["n"] / max(wall, 1e-9),
    }


def literature_params(x, problem, first_angle=0.0):
    """The literature's design vector (Cabrera et al. 2002 layout) as this module's
    11-number parameter vector. `x`: problem 1 `[r1, r2, r3, r4, rcx, rcy, b]` (frame
    at the origin, crank angles absolute); problem 2 `[r1, r2, r3, r4, rcx, rcy, x0, y0,
    θ0, θ2¹, b]`; r1 ground, r2 crank, r3 coupler, r4 rocker; (rcx, rcy) the coupler
    point in the frame at B with x along B→C; θ2 from the ground line; b the branch
    selector; `first_angle`: problem 1's crank angle at the first target."""
    if problem == 1:
        r1, r2, r3, r4, rcx, rcy, b = x
        x0 = y0 = t0 = 0.0
        th1 = first_angle
    else:
        r1, r2, r3, r4, rcx, rcy, x0, y0, t0, th1, b = x
    d = (x0 + r1 * math.cos(t0), y0 + r1 * math.sin(t0))
    return [x0, y0, d[0], d[1], r2, r3, r4, math.hypot(rcx, rcy), math.atan2(rcy, rcx), th1 + t0, b]


def literature_objective(x, problem, targets, crank_angles, grashof=True):
    """f = Σ‖Cᵢ − Tᵢ‖² of a literature design vector by pylinkage's kinematics (inf
    if it does not assemble along the motion on its branch, or is not Grashof)."""
    r = sorted(float(v) for v in x[:4])
    if grashof and r[0] + r[3] > r[1] + r[2]:
        return math.inf
    p = _path(_template(), literature_params(x, problem, float(crank_angles[0])), _gap_runs(crank_angles))
    return math.inf if p is None else float(np.sum((p - np.asarray(targets, dtype=float)) ** 2))


def _timed_swarm(objective, lower, upper, budget_s, seed, n_particles, iters=50):
    """pylinkage's PSO minimising `objective(linkage, x)` within the box (lower, upper),
    restarted with new seeds (`seed`, round) while time remains, for `budget_s` seconds
    of wall time (numba warm-up excluded). Returns the best f and x, the evaluations,
    the wall time, the rounds and the (time, best f) trace."""
    import pylinkage as pl

    best = {"f": math.inf, "x": None, "n": 0}

    def fitness(linkage, x, _init_pos):
        f = objective(linkage, x)
        best["n"] += 1
        if f < best["f"]:
            best["f"], best["x"] = f, list(map(float, x))
        return f

    template = _template()
    template.step_fast(2, dt=1.0)  # numba warm-up, before the clock
    t0, rounds, trace = time.perf_counter(), 0, []
    while time.perf_counter() - t0 < budget_s:
        with _seeded_pso_rng(np.random.SeedSequence([seed, rounds])):
            pl.particle_swarm_optimization(
                fitness,
                template,
                dimensions=len(lower),
                n_particles=n_particles,
                iterations=iters,
                bounds=(list(lower), list(upper)),
                order_relation=min,
                verbose=False,
            )
        rounds += 1
        trace.append([time.perf_counter() - t0, best["f"]])
    return {
        "objective": best["f"],
        "x": best["x"],
        "evaluations": best["n"],
        "wall_s": time.perf_counter() - t0,
        "rounds": rounds,
        "trace": trace,
    }


def run_literature(targets, crank_angles, problem, lower, upper, budget_s, seed=0, n_particles=100):
    """pylinkage's PSO on the literature's formulation (design vector and bounds as in
    `literature_params`, objective f, Grashof as a rejection), restarted with new seeds
    while time remains, for `budget_s` seconds of wall time (numba warm-up excluded).
    `crank_angles`: problem 1 absolute; problem 2 relative to θ2¹."""
    targets = np.asarray(targets, dtype=float)
    runs = _gap_runs(crank_angles)

    def objective(linkage, x):
        r = sorted(float(v) for v in x[:4])
        if r[0] + r[3] > r[1] + r[2]:
            return math.inf
        p = _path(linkage, literature_params(x, problem, float(crank_angles[0])), runs)
        return math.inf if p is None else float(np.sum((p - targets) ** 2))

    out = _timed_swarm(objective, lower, upper, budget_s, seed, n_particles, iters=50)
    return out | {"iterations_per_round": 50, "n_particles": n_particles}


def _known_design():
    """Self-check targets, computed independently in numpy. A = (0.3, -0.2), ground line
    at 0.4 rad, (crank, coupler, rocker, ground) = (0.12, 0.25, 0.26, 0.30), tracer
    (0.1, 0.05) in the coupler frame (origin B, x along B->C), C on the left of B->D,
    crank at 2 pi k / 12 + 0.3 from the ground line.
    Returns (targets, relative crank angles, the design's parameter vector)."""
    A, gam, (l1, l2, l3, l4) = np.array([0.3, -0.2]), 0.4, (0.12, 0.25, 0.26, 0.30)
    px, py = 0.1, 0.05  # tracer in the coupler frame
    D = A + l4 * np.array([np.cos(gam), np.sin(gam)])
    th = 2 * np.pi * np.arange(12) / 12 + 0.3 + gam  # world-frame crank angles
    B = A + l1 * np.stack([np.cos(th), np.sin(th)], axis=1)
    r = np.linalg.norm(D - B, axis=1, keepdims=True)
    e = (D - B) / r
    x = (l2**2 - l3**2 + r**2) / (2 * r)
    n = np.stack([-e[:, 1], e[:, 0]], axis=1)  # left normal of B->D
    C = B + x * e + np.sqrt(l2**2 - x**2) * n
    ex = (C - B) / l2  # coupler frame: x along B->C, y its left normal
    T = B + px * ex + py * np.stack([-ex[:, 1], ex[:, 0]], axis=1)
    params = np.array([*A, *D, l1, l2, l3, math.hypot(px, py), math.atan2(py, px), th[0], 1.0])
    return T, th - th[0], params


if __name__ == "__main__":
    import json

    assert available(), "pylinkage / numba not importable"
    T, c, p_true = _known_design()
    print(f"evaluate(known design) = {(e_true := evaluate(p_true, T, c)):.3e} m")
    assert e_true <= 1e-9, e_true
    p_true[-1] = -1.0  # the other assembly branch must not fit
    print(f"evaluate(known design, other branch) = {evaluate(p_true, T, c):.3e} m")
    # Same seed and iterations per round -> same rounds (compare the first few).
    r1, r2 = (run(T, c, budget_s=1.0, seed=3, n_particles=20, iterations=3) for _ in range(2))
    assert [f for _, f in r1["trace"][:5]] == [f for _, f in r2["trace"][:5]]
    res = run(T, c, budget_s=10.0, seed=0)
    assert evaluate(np.array(res["best_params"]), T, c) == res["best_mean_distance"]
    res["best_params"] = [round(v, 6) for v in res["best_params"]]
    res["trace"] = [[round(t, 2), float(f"{f:.4g}")] for t, f in res["trace"]]
    print(json.dumps(res))
    assert math.isfinite(res["best_mean_distance"]) and res["rounds"] >= 1
    print("self-check passed")


# --------------------------------------------------------------------------- the five NV problems
#
# Nguyen-Van et al. (2022) as in `benchmarks/data/literature_synthesis.json`: design vector
# [r1, r2, r3, r4, rcx, rcy, (x0, y0, θ0), (θ2 per target | θ2¹), b] (r1 ground, r2 crank,
# r3 coupler, r4 rocker; b ≥ 0 one assembly mode, b < 0 the other), Grashof everywhere, the
# crank the shortest link in Cases 1 and 4, the targets met in increasing cyclic order in
# Cases 1 and 5: each a rejection (f = inf), as the source's code treats them.


def _nv_layout(case, n):
    """(number of design numbers before b, has frame, per-target angles)."""
    if case == "NV-Case2":
        return 6, False, False
    if case in ("NV-Case1", "NV-Case5"):
        return 9 + n, True, True
    if case == "NV-Case3":
        return 10, True, False
    return 9, True, False  # NV-Case4: absolute crank angles, the frame free


def nv_bounds(case, n, box):
    """PSO bounds of the NV design vector (the source's boxes; b in [−1, 1])."""
    k, frame, _ = _nv_layout(case, n)
    lo = [1e-9] * 4 + [-box, -box] + ([-box, -box, 0.0] if frame else []) + [0.0] * (k - (9 if frame else 6))
    hi = [box] * 4 + [box, box] + ([box, box, 2 * math.pi] if frame else []) + [2 * math.pi] * (k - (9 if frame else 6))
    return lo + [-1.0], hi + [1.0]


def _nv_motion(case, x, angles):
    """(literature vector in `literature_params`' problem-2 layout, crank angles relative
    to the first) of an NV design vector, or None where an order rule rejects it."""
    n = len(angles)
    k, frame, per_target = _nv_layout(case, n)
    r, pt = list(x[:4]), list(x[4:6])
    x0, y0, t0 = (x[6], x[7], x[8]) if frame else (0.0, 0.0, 0.0)
    if per_target:
        th = np.asarray(x[9 : 9 + n], dtype=float)
        gaps = np.mod(np.diff(th), 2 * math.pi)
        if np.any(gaps <= 0.0) or gaps.sum() >= 2 * math.pi:  # not in increasing cyclic order
            return None
        rel = np.concatenate([[0.0], np.cumsum(gaps)])
        first = float(th[0])
    elif case == "NV-Case3":
        first, rel = float(x[9]), np.arange(n) * math.pi / 9
    else:
        first, rel = float(angles[0]), np.asarray(angles, dtype=float) - float(angles[0])
    return [*r, *pt, x0, y0, t0, first, float(x[k])], rel


def nv_objective(x, case, targets, angles):
    """f = Σ‖Cᵢ − Tᵢ‖² of an NV design vector (with b last) by pylinkage's kinematics;
    inf where it breaks a rule of its problem or does not assemble on its branch."""
    s = sorted(float(v) for v in x[:4])
    if s[0] + s[3] > s[1] + s[2]:
        return math.inf
    if case in ("NV-Case1", "NV-Case4") and float(x[1]) != s[0]:  # the crank the shortest
        return math.inf
    m = _nv_motion(case, x, angles)
    if m is None:
        return math.inf
    lit, rel = m
    p = _path(_template(), literature_params(lit, 2), _gap_runs(rel))
    return math.inf if p is None else float(np.sum((p - np.asarray(targets, dtype=float)) ** 2))


def run_nv(case, targets, angles, box, budget_s, seed=0, n_particles=100):
    """pylinkage's PSO on an NV problem (`nv_objective`, `nv_bounds`), restarted with new
    seeds while time remains, for `budget_s` seconds (numba warm-up excluded)."""
    targets = np.asarray(targets, dtype=float)
    lower, upper = nv_bounds(case, len(targets), box)
    objective = lambda _linkage, x: nv_objective(x, case, targets, angles)  # noqa: E731
    return _timed_swarm(objective, lower, upper, budget_s, seed, n_particles)
