"""Singular configurations along a motion: dead centres, toggles and change points,
located to round-off and typed.

With the closure `Φ(x, u) = 0` (state `x`, one input `u`), `J_x = ∂Φ/∂x` and
`J_u = ∂Φ/∂u`:

- an **input singularity** (a dead centre for this input) is where `J_x` is singular
  while `[J_x J_u]` keeps full rank: the input cannot drive the linkage through, the
  motion turns back in `u` (the input reaches a limit of its range) and the driven
  links' rates blow up. Located by Newton on the bordered system `Φ = 0`,
  `J_x v = 0`, `cᵀv = 1` in `(x, u, v)`, regular at a simple fold, so quadratic;
- an **output singularity** (a toggle, or limit position, of an output link) is where
  an output link's angular rate vanishes while the input moves: the output reaches an
  extreme of its swing (a crank-rocker's rocker when crank and coupler line up).
  Located by Newton on `Φ = 0`, `J_x v + J_u = 0`, `ω(x, u, v) = 0`;
- a **change point** is where `[J_x J_u]` itself loses rank: two assembly branches
  meet (a Grashof-boundary linkage with all its links in line) and the motion can
  switch branch. Located by Gauss–Newton on the consistent over-determined system
  `Φ = 0`, `[J_x J_u]ᵀ w = 0`, `wᵀw = 1` in `(x, u, w)`.

Candidates come from the motion's samples: a sign change of `det J_x` between two
samples (crossed: a change point, or a dead centre the continuation jumped), a local
minimum of `J_x`'s smallest relative singular value below `near` and the last sample
of a motion stopped at a motion limit (approached), a sign change of an output's rate
(a toggle crossed). Newton runs from the nearest sample; an event is kept when it
converges (closure residual at round-off, last input step ≤ 1e-12) within one step of
the motion's inputs. The Jacobians are array programs (no LAPACK, vmapped over the
samples); the small Newton solves run on the host (NumPy).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import _cache
from .._validate import UnknownNameError
from ._change import RANK, arm2, at_configuration, locate, turn_rate
from ._model import Linkage, joint_coords, prepare, prepared_residual
from ._simulate import Motion, check_motion, sweep

KINDS = ("input", "output", "change")


class Singularities(eqx.Module):
    """The singular configurations a motion approaches or crosses.

    Along the motion (one row per input, NaN where it did not converge):

    - `inputs` `(N,)`; `margin` `(N,)`: the smallest singular value of `J_x` over its
      largest (0 at a dead centre or change point); `det_sign` `(N,)`: the sign of
      `det J_x` (it flips across a change point);
    - `rates` `(N, O)`: each output link's angular rate per unit input (0 at its
      toggle); `outputs` (static): the output links' names.

    The events, in input order:

    - `at` `(E,)`: the input value; `kinds` (static): `"input"`, `"output"` or
      `"change"` each; `links` (static): the output link of an output singularity
      (`""` otherwise);
    - `coords` `(E, J, 3)`: the singular configuration; `residual` `(E,)`: its closure
      residual; `step` `(E,)`: Newton's last change of the input there (the location's
      accuracy).
    """

    inputs: Float[Array, " N"]
    margin: Float[Array, " N"]
    det_sign: Float[Array, " N"]
    rates: Float[Array, "N O"]
    at: Float[Array, " E"]
    coords: Float[Array, "E J 3"]
    residual: Float[Array, " E"]
    step: Float[Array, " E"]
    kinds: tuple[str, ...] = eqx.field(static=True)
    links: tuple[str, ...] = eqx.field(static=True)
    outputs: tuple[str, ...] = eqx.field(static=True)

    def events(self, kind: str | None = None) -> list[tuple[str, str, float]]:
        """`(kind, link, input)` of every event (of one kind)."""
        if kind is not None and kind not in KINDS:
            raise ValueError(f"Singularities.events: `kind` must be one of {KINDS}; got {kind!r}")
        at = np.asarray(self.at)
        return [(k, lk, float(u)) for k, lk, u in zip(self.kinds, self.links, at) if kind in (None, k)]


def _output_pivots(lk: Linkage, outputs) -> list[tuple[str, int, int]]:
    """Per output link: (name, its pivot joint on the ground, another of its joints)."""
    ground = set(lk.links[lk.ground])
    names = []
    if outputs is None:
        names = [
            lk.link_names[i]
            for i, js in enumerate(lk.links)
            if i != lk.ground
            and i not in lk.topology.input_links
            and any(j in ground and lk.types[j] == "R" for j in js)
        ]
    else:
        for name in [outputs] if isinstance(outputs, str) else list(outputs):
            if name not in lk.link_names:
                raise UnknownNameError(f"linkage.singularities: no link {name!r}; links are {list(lk.link_names)}")
            names.append(name)
    out = []
    for name in names:
        i = lk.link_names.index(name)
        pivots = [j for j in lk.links[i] if j in ground and lk.types[j] == "R"]
        if i == lk.ground or not pivots:
            raise ValueError(
                f"linkage.singularities: output {name!r} must be a moving link hinged to the ground (an R joint "
                "shared with the ground link): its angle about that pivot is the output"
            )
        others = [j for j in lk.links[i] if j != pivots[0] and lk.types[j] in ("R", "S", "tracer")]
        if not others:
            raise ValueError(f"linkage.singularities: output {name!r} has no point besides its pivot")
        out.append((name, pivots[0], others[0]))
    return out


@_cache.kept()
def _scan(lk: Linkage, X, U):
    """Per sample: J_x, J_u and every output's rate (array code, no LAPACK)."""
    prep = prepare(lk)

    def one(x, u):
        Jx = jax.jacfwd(prepared_residual)(x, u, prep)
        Ju = jax.jacfwd(prepared_residual, argnums=1)(x, u, prep)
        return Jx, Ju

    Jx, Ju = jax.vmap(one)(X, U)
    return Jx, Ju


@_cache.kept()
def _rates(lk: Linkage, X, U, V, pivots):
    prep = prepare(lk)

    def one(x, u, v):
        C, Cd = jax.jvp(lambda x_, u_: joint_coords(x_, u_, prep), (x, u), (v, jnp.ones_like(u)))
        r = [turn_rate(lk, C, Cd, g, o) / arm2(lk, C, g, o) for g, o in pivots]
        return jnp.stack(r) if r else jnp.zeros((0,), x.dtype)

    return jax.vmap(one)(X, U, V)


@_cache.kept()
def _states(lk: Linkage, coords):
    return jax.vmap(lk.state)(coords)


class _Locator:
    """The singular points found along one motion (`singularities`): each located to
    round-off from a sample (`X`, `U`, its `J_x`) and kept once, if within
    `[lo, hi]`, as `(kind, link, input, state, residual, last step)`."""

    def __init__(self, lk: Linkage, n: int, lo: float, hi: float, Jx, X, U):
        self.lk, self.n, self.lo, self.hi, self.Jx, self.X, self.U = lk, n, lo, hi, Jx, X, U
        self.found: list[tuple[str, str, float, np.ndarray, float, float]] = []

    def add(self, kind, link, z, res, du):
        u = float(z[self.n])
        if not self.lo <= u <= self.hi:
            return
        if any(e[0] == kind and e[1] == link and abs(u - e[2]) < 1e-9 for e in self.found):
            return
        self.found.append((kind, link, u, z[: self.n], res, du))

    def full_jacobian(self, x, u):
        return np.asarray(at_configuration(self.lk, np.asarray(x, float), np.asarray(u, float))[1])

    def change_from(self, x, u):
        w = np.linalg.svd(self.full_jacobian(x, u))[0][:, -1]
        z, res, du, good = locate("change", (), self.lk, np.concatenate([x, [u], w]), w, self.n)
        if good:
            self.add("change", "", z, res, du)

    def singular_from(self, k):
        """A dead centre by the bordered Newton; where it meets a rank drop of
        [J_x J_u] (or fails near one), a change point by its own system."""
        n, X, U = self.n, self.X, self.U
        v = np.linalg.svd(self.Jx[k])[2][-1]
        z, res, du, good = locate("input", (), self.lk, np.concatenate([X[k], [U[k]], v]), v, n)
        if good:
            sv = np.linalg.svd(self.full_jacobian(z[:n], z[n]), compute_uv=False)
            if sv[-1] / sv[0] >= RANK:
                self.add("input", "", z, res, du)
                return
            self.change_from(z[:n], z[n])
            return
        self.change_from(np.asarray(X[k]), U[k])


def singularities(lk: Linkage, motion, *, outputs=None, near: float = 0.05) -> Singularities:
    """Every dead centre, toggle and change point a motion of a one-input linkage
    approaches or crosses, located to round-off and typed (see the module notes).

    **Arguments:** `lk`: a planar or spherical linkage with one input (spatial: input
    singularities and change points only, no output links); `motion`: its `Motion`
    (`linkage.sweep`), or inputs, simulated first; `outputs`: the output links
    (moving links hinged to the ground; each one's angle about its pivot is an
    output), default every such link but the input's; `near`: a local minimum of the
    relative smallest singular value of `J_x` below this is searched for a dead centre.

    **Returns:** a `Singularities`.
    """
    owner = "linkage.singularities"
    if not isinstance(lk, Linkage):
        raise ValueError(f"{owner}: `lk` must be a Linkage; got {type(lk).__name__}")
    if lk.n_inputs != 1:
        raise ValueError(f"{owner}: {lk.name!r} has {lk.n_inputs} inputs; singular points along a motion need one")
    if not (isinstance(near, (int, float)) and 0 < near < 1):
        raise ValueError(f"{owner}: `near` must be a number in (0, 1); got {near!r}")
    if lk.geometry == "spatial" and outputs:
        raise ValueError(f"{owner}: output links (angles about a ground pivot) are planar or spherical")
    pivots = [] if lk.geometry == "spatial" else _output_pivots(lk, outputs)
    if not isinstance(motion, Motion):
        motion = sweep(lk, inputs=motion, condition=False, throw=False)
    else:
        check_motion(owner, lk, motion)
    if jnp.ndim(motion.inputs) != 1:
        raise ValueError(f"{owner}: `motion` must be one sweep (inputs of shape (N,)); got {jnp.shape(motion.inputs)}")
    ok = np.asarray(motion.converged)
    U = np.asarray(motion.inputs, dtype=float)
    N = U.shape[0]
    X = np.asarray(_states(lk, motion.coords))
    piv = tuple((g, o) for _, g, o in pivots)
    Jx, Ju = (np.asarray(a) for a in _scan(lk, X, U))
    n = Jx.shape[-1]
    s = np.linalg.svd(Jx, compute_uv=False)
    margin = np.where(ok, s[:, -1] / s[:, 0], np.nan)
    sign = np.where(ok, np.sign(np.linalg.det(Jx)), np.nan)
    with np.errstate(all="ignore"):
        V = -np.linalg.solve(Jx, Ju[..., None])[..., 0]
    V = np.where(np.isfinite(V), V, 0.0)
    rates = np.asarray(_rates(lk, X, U, V, piv)).reshape(N, len(pivots))
    rates = np.where(ok[:, None], rates, np.nan)

    step = np.nanmax(np.abs(np.diff(U))) if N > 1 else 1.0
    lo, hi = np.min(U[ok]) - step if ok.any() else 0.0, np.max(U[ok]) + step if ok.any() else 0.0
    loc = _Locator(lk, n, lo, hi, Jx, X, U)
    found, add, singular_from = loc.found, loc.add, loc.singular_from
    idx = np.flatnonzero(ok)
    for a, b in zip(idx[:-1], idx[1:]):
        if b == a + 1 and sign[a] * sign[b] < 0:
            singular_from(a if margin[a] < margin[b] else b)
    for k in idx:
        if (
            0 < k < N - 1
            and ok[k - 1]
            and ok[k + 1]
            and margin[k] < near
            and margin[k] <= min(margin[k - 1], margin[k + 1])
        ):
            singular_from(k)
    if idx.size and idx[-1] < N - 1:  # stopped: the dead centre beyond the last sample
        singular_from(idx[-1])
    for j, (name, g, o) in enumerate(pivots):
        r = rates[:, j]
        for a, b in zip(idx[:-1], idx[1:]):
            if b == a + 1 and r[a] * r[b] < 0:
                k = a if abs(r[a]) < abs(r[b]) else b
                z, res, du, good = locate("output", (g, o), lk, np.concatenate([X[k], [U[k]], V[k]]), V[k], n)
                if good:
                    add("output", name, z, res, du)
    found.sort(key=lambda e: e[2])
    coords = jnp.asarray(
        np.stack([np.asarray(at_configuration(lk, np.asarray(e[3], float), np.asarray(e[2], float))[2]) for e in found])
        if found
        else np.zeros((0,) + lk.coords.shape, lk.coords.dtype)
    )
    f64 = lambda v: jax.device_put(np.asarray(v, dtype=float))  # noqa: E731
    return Singularities(
        inputs=f64(U),
        margin=f64(margin),
        det_sign=f64(sign),
        rates=f64(rates),
        at=f64([e[2] for e in found]),
        coords=coords,
        residual=f64([e[4] for e in found]),
        step=f64([e[5] for e in found]),
        kinds=tuple(e[0] for e in found),
        links=tuple(e[1] for e in found),
        outputs=tuple(p[0] for p in pivots),
    )
