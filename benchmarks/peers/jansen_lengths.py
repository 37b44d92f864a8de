"""Peer case: Theo Jansen's leg with his published link lengths ("holy numbers"), built
in both libraries from its lengths, for the sensitivity and tolerance comparison with
pylinkage 1.3 (whose analyses perturb a linkage's distance constraints).

Lengths (Jansen's units): crank m = 15; ground pivots O = (0, 0) (crank) and
B = (−38, −7.8) (a = 38, l = 7.8, kept exact); dyads, each a point at given distances
from two known points:

    J from (M, B): j = 50,   b = 41.5   (above)
    K from (M, B): k = 61.9, c = 39.3   (below)
    E from (B, J): d = 40.1, e = 55.8   (the triangle B J E, to the left)
    F from (E, K): f = 39.4, g = 36.7   (to the left)
    H from (F, K): h = 65.7, i = 49     (the foot, the triangle F K H, below)

The output is the foot H. diffmech's description is computed from the lengths (its
initial coordinates are circle intersections written in `jax.numpy`), so the foot's
path is a differentiable function of the 11 lengths: exact length sensitivities by
`jax.jacfwd` through `linkage.simulate_functional`, and a Monte Carlo over lengths by
`vmap`. pylinkage builds the same chain of `RRRDyad`s after its `Crank`.
"""

from __future__ import annotations

import math

import numpy as np

NAMES = ("m", "j", "b", "k", "c", "d", "e", "f", "g", "h", "i")
LENGTHS = np.array([15.0, 50.0, 41.5, 61.9, 39.3, 40.1, 55.8, 39.4, 36.7, 65.7, 49.0])
O, B = (0.0, 0.0), (-38.0, -7.8)
# each dyad: (name, anchor1, anchor2, length index 1, length index 2, the side: +1 left of anchor1→anchor2)
DYADS = (("J", "M", "B", 1, 2, -1), ("K", "M", "B", 3, 4, 1), ("E", "B", "J", 5, 6, 1), ("F", "E", "K", 7, 8, -1),
         ("H", "F", "K", 9, 10, -1))  # fmt: skip


def _circle(xp, p, q, r1, r2, side):
    """The point at distances r1 from p and r2 from q, on `side` of p→q (array module
    `xp`: numpy or jax.numpy)."""
    dx, dy = q[0] - p[0], q[1] - p[1]
    d2 = dx * dx + dy * dy
    a = (r1 * r1 - r2 * r2 + d2) / (2 * d2)
    h = xp.sqrt(r1 * r1 / d2 - a * a)
    return xp.stack([p[0] + a * dx - side * h * dy, p[1] + a * dy + side * h * dx])


def points(xp, lengths, theta=0.0):
    """Every joint at crank angle `theta` from the lengths."""
    P = {"O": xp.asarray(O, dtype=float), "B": xp.asarray(B, dtype=float)}
    P["M"] = xp.stack([lengths[0] * xp.cos(theta), lengths[0] * xp.sin(theta)])
    for name, p, q, i1, i2, side in DYADS:
        P[name] = _circle(xp, P[p], P[q], lengths[i1], lengths[i2], side)
    return P


def description(lengths=LENGTHS, steps: int = 180) -> dict:
    """diffmech's description of the leg (numbers from `points`)."""
    P = {k: [float(x) for x in v] for k, v in points(np, np.asarray(lengths, float)).items()}
    return {
        "name": "jansen_holy",
        "geometry": "planar",
        "joints": {k: {"type": "tracer" if k == "H" else "R", "coords": v} for k, v in P.items()},
        "links": {
            "ground": ["O", "B"],
            "crank": ["O", "M"],
            "MJ": ["M", "J"],
            "MK": ["M", "K"],
            "BJE": ["B", "J", "E"],
            "BK": ["B", "K"],
            "EF": ["E", "F"],
            "FKH": ["F", "K", "H"],
        },
        "ground": "ground",
        "input": {"type": "revolute", "link": "crank", "joint": "O"},
        "simulation": {"steps": steps, "step": 2 * math.pi / steps},
    }


def pylinkage_leg(steps: int = 180, lengths=LENGTHS):
    """pylinkage's leg: the crank then the five RRR dyads, seeded at crank angle
    −Δθ (pylinkage records after its first step; see pylinkage_fourbar.py)."""
    import pylinkage as pl

    dtheta = 2 * math.pi / steps
    P = {k: np.asarray(v) for k, v in points(np, np.asarray(lengths, float), -dtheta).items()}
    o = pl.Ground(*O, name="O")
    b = pl.Ground(*B, name="B")
    crank = pl.Crank(anchor=o, radius=float(lengths[0]), angular_velocity=dtheta, initial_angle=-dtheta, name="M")
    joints = {"O": o, "B": b, "M": crank.output}
    parts = [o, b, crank]
    for name, p, q, i1, i2, _ in DYADS:
        dy = pl.RRRDyad(joints[p], joints[q], distance1=float(lengths[i1]), distance2=float(lengths[i2]),
                        x=float(P[name][0]), y=float(P[name][1]), name=name)  # fmt: skip
        joints[name] = dy
        parts.append(dy)
    return pl.Linkage(parts, name="jansen_holy"), joints["H"]
