"""Peer benchmark: pylinkage (numba back end) on a planar crank-rocker four-bar.

Mechanism (SI units, metres / radians)
--------------------------------------
Ground pivots A = (0, 0) (crank pivot) and D = (l4, 0) with l4 = 0.30.
Crank AB l1 = 0.12, coupler BC l2 = 0.25, rocker CD l3 = 0.26.
B = A + l1 (cos theta, sin theta), theta anticlockwise from +x.
Assembly branch: C above AD at theta = 0, C(0) ~ (0.196, 0.238); for a
crank-rocker this is the branch with cross(D - B, C - B) > 0 all cycle long.

How this maps onto pylinkage 1.3.0
----------------------------------
* ``pylinkage.Ground`` for A and D, ``pylinkage.Crank`` for B (anchor A,
  ``radius`` l1), ``pylinkage.RRRDyad`` for C (anchor1 = crank output B with
  ``distance1`` l2, anchor2 = D with ``distance2`` l3), gathered in
  ``pylinkage.Linkage([A, D, crank, C])``.  Joint index 3 of every trajectory
  array is C; index 2 is B.
* Crank convention: ``angular_velocity`` is radians *per step* (``dt`` = 1),
  positive = anticlockwise.  Every solver step *first* rotates the crank
  (``solve_crank``: ``atan2`` of the current B about A, plus
  ``angular_velocity * dt``) and *then* records the positions, so record k
  holds theta_initial + (k + 1) * dtheta.  To get record k at theta = k*dtheta
  (starting at 0) the crank is built with ``initial_angle = -dtheta``.
  The angle is re-derived from the current B with ``atan2`` each step, so it
  does not drift beyond a few ulp.
* Branch selection: ``solve_revolute`` takes the circle-circle intersection
  nearest to C's previous position (hysteresis), so C's initial position is
  seeded with the closed-form upper-branch point at theta = -dtheta.
* Single-linkage fast path: ``pylinkage.solver.simulation.simulate`` (an
  ``@njit(cache=True)`` loop over steps and joints), fed the ``SolverData``
  arrays built by ``Linkage.compile()``.  This is exactly the kernel that the
  public ``Linkage.step_fast()`` calls; ``step_fast`` only adds Python
  bookkeeping (syncing positions in/out of the component objects), whose
  time is reported separately as ``step_fast_median_s``.
* Batch path: ``pylinkage.population.Ensemble(linkage, dimensions,
  initial_positions).simulate(iterations, dt)``, which calls
  ``pylinkage.population._batch_sim.simulate_batch``.  That is a plain
  *Python* ``for`` loop over members, each calling the numba ``simulate``
  kernel once.  There is no ``prange`` / ``parallel=True`` anywhere in
  pylinkage 1.3.0, so it runs on ONE thread regardless of
  ``numba.get_num_threads()``.  Per-member constraint vectors
  ``[l1, l2, l3]`` (crank radius, dyad distance1, distance2) and per-member
  initial positions (which carry the ground pivot D, hence l4) are supported;
  the trajectory holds all joints, shape (n_members, iterations, n_joints, 2).
* numba ``cache=True``: the first call in a fresh process either compiles or
  loads the on-disk cache (pylinkage's ``__pycache__`` or ``NUMBA_CACHE_DIR``);
  ``compile_s`` is that first-call time and ``numba_cache_hits`` says which.
"""

from __future__ import annotations

import json
import math
import statistics
import time

import numpy as np

L1, L2, L3, L4 = 0.12, 0.25, 0.26, 0.30
C_JOINT = 3  # index of C in the component tuple (A, D, crank, C)
B_JOINT = 2


def available() -> bool:
    """True if pylinkage and numba both import."""
    try:
        import numba  # noqa: F401
        import pylinkage  # noqa: F401
        from pylinkage.solver.simulation import simulate  # noqa: F401
    except Exception:
        return False
    return True


# ----------------------------------------------------------------------------
# Closed form (numpy, independent of pylinkage)
# ----------------------------------------------------------------------------


def closed_form_c(theta, l1=L1, l2=L2, l3=L3, l4=L4):
    """Upper-branch C for crank angle(s) theta; broadcasts over all arguments."""
    theta = np.asarray(theta, dtype=np.float64)
    bx, by = l1 * np.cos(theta), l1 * np.sin(theta)
    ux, uy = l4 - bx, 0.0 - by  # B -> D
    d2 = ux * ux + uy * uy
    d = np.sqrt(d2)
    a = (l2 * l2 - l3 * l3 + d2) / (2.0 * d)
    h = np.sqrt(l2 * l2 - a * a)
    ex, ey = ux / d, uy / d
    # +90 deg rotation of B->D: points "up" when B->D points along +x.
    cx = bx + a * ex - h * ey
    cy = by + a * ey + h * ex
    return np.stack([cx, cy], axis=-1)


def _is_crank_rocker(l1, l2, l3, l4) -> np.ndarray:
    l1, l2, l3, l4 = (np.asarray(v) for v in (l1, l2, l3, l4))
    lengths = np.stack([l1, l2, l3, l4], axis=-1)
    s, big = lengths.min(axis=-1), lengths.max(axis=-1)
    pq = lengths.sum(axis=-1) - s - big
    return (s + big < pq) & (l1 == s)


# ----------------------------------------------------------------------------
# pylinkage model
# ----------------------------------------------------------------------------


def _build_linkage(n_steps, l1=L1, l2=L2, l3=L3, l4=L4):
    import pylinkage as pl

    dtheta = 2.0 * math.pi / n_steps
    a = pl.Ground(0.0, 0.0, name="A")
    d = pl.Ground(l4, 0.0, name="D")
    crank = pl.Crank(anchor=a, radius=l1, angular_velocity=dtheta, initial_angle=-dtheta, name="B")
    c0 = closed_form_c(-dtheta, l1, l2, l3, l4)
    c = pl.RRRDyad(crank.output, d, distance1=l2, distance2=l3, x=float(c0[0]), y=float(c0[1]), name="C")
    return pl.Linkage([a, d, crank, c], name="fourbar")


def _cache_hits(dispatcher) -> int:
    try:
        return int(sum(dispatcher.stats.cache_hits.values()))
    except Exception:
        return -1


def _pylinkage_sweep(n_steps=180, l1=L1, l2=L2, l3=L3, l4=L4) -> np.ndarray:
    """Full trajectory (n_steps, 4, 2) via the numba kernel."""
    from pylinkage.solver.simulation import simulate

    link = _build_linkage(n_steps, l1, l2, l3, l4)
    link.compile()
    sd = link._solver_data
    return simulate(
        sd.positions.copy(),
        sd.constraints,
        sd.joint_types,
        sd.parent_indices,
        sd.constraint_offsets,
        sd.solve_order,
        n_steps,
        1.0,
    )


def single_sweep(n_steps: int = 180, repeats: int = 2000) -> dict:
    """Time one nominal design swept over one crank revolution (numba kernel)."""
    from pylinkage.solver.simulation import simulate

    link = _build_linkage(n_steps)
    link.compile()  # Linkage -> SolverData arrays (what step_fast uses)
    sd = link._solver_data
    pos0 = sd.positions.copy()
    args = (sd.constraints, sd.joint_types, sd.parent_indices, sd.constraint_offsets, sd.solve_order)

    t0 = time.perf_counter()
    traj = simulate(pos0.copy(), *args, n_steps, 1.0)
    compile_s = time.perf_counter() - t0

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        traj = simulate(pos0.copy(), *args, n_steps, 1.0)
        times.append(time.perf_counter() - t0)

    # Reference: the public wrapper, with its per-call Python bookkeeping.
    link2 = _build_linkage(n_steps)
    link2.step_fast(n_steps, 1.0)  # compile/warm-up
    coords0 = [(x, y) for x, y in link2.get_coords()]
    t_sf = []
    for _ in range(min(repeats, 500)):
        link2.set_coords(coords0)
        t0 = time.perf_counter()
        link2.step_fast(n_steps, 1.0)
        t_sf.append(time.perf_counter() - t0)

    return {
        "path": "pylinkage.solver.simulation.simulate (numba @njit kernel "
        "behind Linkage.step_fast), SolverData from Linkage.compile()",
        "n_steps": n_steps,
        "repeats": repeats,
        "compile_s": compile_s,
        "numba_cache_hits": _cache_hits(simulate),
        "median_s": statistics.median(times),
        "min_s": min(times),
        "step_fast_median_s": statistics.median(t_sf),
        "positions": traj[:, C_JOINT, :].copy(),
    }


def _designs(n_designs: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    nominal = np.array([L1, L2, L3, L4])
    lengths = nominal * (1.0 + 0.02 * rng.uniform(-1.0, 1.0, size=(n_designs, 4)))
    ok = _is_crank_rocker(*lengths.T)
    if not ok.all():
        raise AssertionError(f"{(~ok).sum()} perturbed designs are not crank-rockers")
    return lengths


def batched(n_designs: int = 10000, n_steps: int = 360, repeats: int = 5) -> dict:
    """Time the Ensemble batch simulation of n_designs perturbed designs."""
    import numba
    from pylinkage.population import Ensemble
    from pylinkage.solver.simulation import simulate

    lengths = _designs(n_designs)
    l1, l2, l3, l4 = lengths.T
    dtheta = 2.0 * math.pi / n_steps

    template = _build_linkage(n_steps)
    # user constraint vector per member, order of Linkage.get_constraints():
    # [crank radius, dyad distance1, dyad distance2]
    assert len(template.get_constraints()) == 3
    dims = np.stack([l1, l2, l3], axis=1)
    init = np.zeros((n_designs, 4, 2))
    init[:, 1, 0] = l4  # D
    init[:, B_JOINT, 0] = l1 * math.cos(-dtheta)
    init[:, B_JOINT, 1] = l1 * math.sin(-dtheta)
    init[:, C_JOINT, :] = closed_form_c(-dtheta, l1, l2, l3, l4)
    ens = Ensemble(template, dims, init)

    t0 = time.perf_counter()
    ens[:1].simulate(n_steps, 1.0, store=False)  # numba compile / cache load
    compile_s = time.perf_counter() - t0
    _ = ens.template  # SolverData built once, outside the timed region

    times = []
    traj = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        traj = ens.simulate(n_steps, 1.0, store=False)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)

    theta = dtheta * np.arange(n_steps)
    ref = closed_form_c(theta[None, :], l1[:, None], l2[:, None], l3[:, None], l4[:, None])
    err = float(np.nanmax(np.abs(traj[:, :, C_JOINT, :] - ref)))

    return {
        "path": "pylinkage.population.Ensemble.simulate -> "
        "population._batch_sim.simulate_batch (Python loop over "
        "members, numba solver.simulation.simulate per member)",
        "n_designs": n_designs,
        "n_steps": n_steps,
        "repeats": repeats,
        "compile_s": compile_s,
        "numba_cache_hits": _cache_hits(simulate),
        "median_s": med,
        "min_s": min(times),
        "positions_per_s": n_designs * n_steps / med,
        "threads": 1,  # no prange/parallel in pylinkage: serial loop
        "numba_num_threads": int(numba.get_num_threads()),
        "nan_count": int(np.isnan(traj).sum()),
        "max_abs_err_vs_closed_form": err,
    }


def check_against_closed_form(n_steps: int = 180) -> float:
    """Max |C_pylinkage - C_closed_form| over one revolution, nominal design."""
    traj = _pylinkage_sweep(n_steps)
    theta = 2.0 * math.pi / n_steps * np.arange(n_steps)
    ref = closed_form_c(theta)
    return float(np.max(np.abs(traj[:, C_JOINT, :] - ref)))


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return {"shape": list(obj.shape), "first": obj[0].tolist(), "last": obj[-1].tolist()}
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    return obj


if __name__ == "__main__":
    if not available():
        print(json.dumps({"available": False}))
    else:
        import numba
        import pylinkage

        out = {
            "available": True,
            "pylinkage_version": getattr(pylinkage, "__version__", "?"),
            "numba_version": numba.__version__,
            "numba_num_threads": int(numba.get_num_threads()),
            "single_sweep": single_sweep(),
            "batched": batched(),
            "check_against_closed_form": check_against_closed_form(),
        }
        print(json.dumps(_jsonable(out), indent=2))
