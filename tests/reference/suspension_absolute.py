"""Independent reference model of the double-wishbone suspension in ABSOLUTE coordinates.

Written only from the linkage JSON format (``diffmech/linkage/data/double_wishbone.json``)
without seeing the library's code; it shares no code with the library under test and
uses only NumPy / SciPy.

Formulation
-----------
Inputs: ``u1`` turns the lower arm about the axis of ``LI`` (through LI's point, unit
direction ``LI.axis``, right-handed, rad from the initial configuration) and ``u2``
slides the steering rack along the axis of its prismatic joint ``RK`` (m; the rack
carries ``TI``).  So ``LB(u1)`` and ``TI(u2)`` are explicit.  (Written for a bell-crank
turning ``TI`` about an axis; its maintainer changed that one line to the rack's slide
when the example's steering became a rack.)  The unknowns (7) are

* the knuckle's pose relative to the initial configuration: a rotation vector ``r``
  (rotation ``R = exp([r]x)``) and a translation ``t``; a knuckle point whose initial
  position is ``P0`` is at ``W0 + t + R (P0 - W0)`` (``W0``: the initial wheel centre);
* the upper arm's angle ``th`` about the axis of ``UI`` (so ``UB_arm = rot_UI(th) UB0``).

Equations (7, square system)::

    knuckle(LB0) - LB(u1)        = 0   (3)  ball joint LB on the lower arm
    knuckle(UB0) - rot_UI(th) UB0 = 0   (3)  ball joint UB on the upper arm
    |knuckle(TO0) - TI(u2)| - L   = 0   (1)  tie rod of length L = |TO0 - TI0|

solved with ``scipy.optimize.root`` (MINPACK hybrd) from the guess, polished by a few
finite-difference Newton steps, then
verified: max |residual| <= 1e-13 m, otherwise ``RuntimeError``.  ``path`` solves a
sequence of inputs by continuation, substepping large input steps.
"""

import numpy as np
from scipy.optimize import root
from scipy.spatial.transform import Rotation

TOL = 1e-13  # m, accepted max |residual|
MAX_STEP = 0.02  # rad, largest input step of the continuation before substepping


def _joints(link):
    """A link is a list of joint names or a mapping with a "joints" list."""
    return list(link["joints"] if isinstance(link, dict) else link)


def _geometry(spec):
    J = spec["joints"]
    P0 = {k: np.asarray(v["coords"], float) for k, v in J.items()}
    ax = {k: np.asarray(v["axis"], float) / np.linalg.norm(v["axis"]) for k, v in J.items() if "axis" in v}
    knuckle = _joints(spec["links"]["knuckle"])
    L_tie = np.linalg.norm(P0["TO"] - P0["TI"])
    return P0, ax, knuckle, L_tie


def _turn(P, A, n, angle):
    """Point P turned by `angle` (right-handed) about the axis through A along unit n."""
    return A + Rotation.from_rotvec(angle * n).apply(P - A)


def _knuckle(q, P0, names):
    R = Rotation.from_rotvec(q[:3])
    c = P0["W"] + q[3:6]
    return {k: c + R.apply(P0[k] - P0["W"]) for k in names}


def _residual(q, P0, ax, L_tie, u1, u2):
    K = _knuckle(q, P0, ("LB", "UB", "TO"))
    LB = _turn(P0["LB"], P0["LI"], ax["LI"], u1)
    UB = _turn(P0["UB"], P0["UI"], ax["UI"], q[6])
    TI = P0["TI"] + u2 * ax["RK"]
    return np.concatenate([K["LB"] - LB, K["UB"] - UB, [np.linalg.norm(K["TO"] - TI) - L_tie]])


def knuckle_points(spec, u1, u2, guess=None):
    """Positions of the knuckle's points (LB, UB, TO, W, WS) for the inputs (u1, u2).

    ``guess``: the 7 unknowns (rotation vector, translation, upper-arm angle) of a
    nearby solution, e.g. ``previous["q"]``; default the initial configuration (zeros).
    Returns a dict name -> (3,) array, plus "q" (the 7 unknowns) and "residual"
    (max |constraint residual|, m).  Raises RuntimeError if the solve does not converge.
    """
    P0, ax, knuckle, L_tie = _geometry(spec)
    q0 = np.zeros(7) if guess is None else np.asarray(guess, float)
    args = (P0, ax, L_tie, float(u1), float(u2))
    sol = root(_residual, q0, args=args, method="hybr", options={"xtol": 1e-15})
    q = sol.x
    for _ in range(3):  # polish with a few finite-difference Newton steps
        f = _residual(q, *args)
        if np.max(np.abs(f)) <= 1e-15:
            break
        h = 1e-7
        Jac = np.column_stack(
            [(_residual(q + h * e, *args) - _residual(q - h * e, *args)) / (2 * h) for e in np.eye(7)]
        )
        q = q - np.linalg.solve(Jac, f)
    res = np.max(np.abs(_residual(q, *args)))
    if not np.isfinite(res) or res > TOL:
        raise RuntimeError(f"suspension solve failed at u=({u1}, {u2}): residual {res:.3e}")
    out = _knuckle(q, P0, knuckle)
    out.update(q=q, residual=np.float64(res))
    return out


def path(spec, U):
    """Solve the inputs U (N, 2) by continuation; returns name -> (N, 3) for LB, UB, TO, W, WS.

    Each solve starts from the previous solution (the first from the initial
    configuration, reached by substeps from u = (0, 0)); steps larger than MAX_STEP rad
    are substepped.  Raises RuntimeError if any solve does not converge.
    """
    U = np.atleast_2d(np.asarray(U, float))
    names = _joints(spec["links"]["knuckle"])
    out = {k: np.empty((len(U), 3)) for k in names}
    u_prev, q = np.zeros(2), None
    for i, u in enumerate(U):
        n_sub = max(1, int(np.ceil(np.max(np.abs(u - u_prev)) / MAX_STEP)))
        for s in range(1, n_sub + 1):
            us = u_prev + (u - u_prev) * s / n_sub
            sol = knuckle_points(spec, us[0], us[1], guess=q)
            q = sol["q"]
        for k in names:
            out[k][i] = sol[k]
        u_prev = u
    return out
