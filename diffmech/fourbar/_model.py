"""The planar four-bar as an Equinox module (Bai et al., Section 3)."""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._validate import check_array, is_traced


def _as_float(x) -> Array:
    return jnp.asarray(x, dtype=float)


def _host_float(x) -> np.ndarray:
    """A concrete value as a NumPy array of JAX's default float (float64 with x64)."""
    return np.asarray(x, dtype=jax.dtypes.canonicalize_dtype(float))


class FourBar(eqx.Module):
    """A planar four-bar linkage (all joints revolute).

    Convention (Bai et al., Fig. 2): ground pivots A = (0, 0) (crank) and D = (l4, 0)
    (rocker); crank AB, coupler BC, rocker DC with attitude vectors qA (A→B), qB (B→C),
    qD (D→C), so `l1 qA + l2 qB − l3 qD − l4 e1 = 0` (Eq. (25)). Angles anticlockwise
    from +x, SI units.

    **Fields** (array leaves, differentiable and vmappable; a leading batch axis on
    every field is a batch of designs):

    - `lengths`: `(l1, l2, l3, l4)`: crank AB, coupler BC, rocker CD, ground AD.
    - `masses`: `(m1, m2, m3)` of crank, coupler, rocker. Default: slender rods of
      1 kg/m, `m_i = l_i`.
    - `inertias`: `(J1, J2, J3)` about each centre of mass. Default: `m_i l_i² / 12`.
    - `com`: `((ρ1x, ρ1y), (ρ2x, ρ2y), (ρ3x, ρ3y))`, the centres of mass in the link
      frames (x along qA from A, along qB from B, along qD from D). Default: midpoints
      `(l_i / 2, 0)` (the seed gives none).
    - `gravity`: the gravity vector, default `(0, −9.81)`. Bai et al.'s potential,
      Eq. (53), corresponds to `(0, +9.81)`.

    **Static:**

    - `branch`: `+1` (default, the seed's) or `−1`. `+1` puts C above the ground line
      AD when the crank is at θA = 0; along any motion it is the sign of
      `sign(l4 − l1) · (qB × qD)`, which changes only through a singular (toggle)
      configuration, so it identifies the assembly mode everywhere.
    """

    lengths: Float[Array, "*batch 4"]
    masses: Float[Array, "*batch 3"]
    inertias: Float[Array, "*batch 3"]
    com: Float[Array, "*batch 3 2"]
    gravity: Float[Array, "*batch 2"]
    branch: int = eqx.field(static=True, default=1)

    def __init__(self, lengths, masses=None, inertias=None, com=None, gravity=(0.0, -9.81), branch: int = 1):
        owner = "FourBar"
        if branch not in (1, -1):
            raise ValueError(f"{owner}: `branch` must be +1 or -1; got {branch!r}")
        check_array(owner, "lengths", lengths, (4,), positive=True)
        # concrete numbers: the defaults in NumPy (an eager constructor compiles nothing)
        xp = jnp if is_traced(lengths, masses, inertias, com, gravity) else np
        as_float = _as_float if xp is jnp else _host_float
        lengths = as_float(lengths)
        batch = lengths.shape[:-1]
        links = lengths[..., :3]
        if masses is None:
            masses = links  # 1 kg/m slender rods
        check_array(owner, "masses", masses, (3,), positive=True, batch_shape=batch)
        masses = as_float(masses)
        if inertias is None:
            inertias = masses * links**2 / 12
        check_array(owner, "inertias", inertias, (3,), positive=True, batch_shape=batch)
        if com is None:
            com = xp.stack([links / 2, xp.zeros_like(links)], axis=-1)
        check_array(owner, "com", com, (3, 2), batch_shape=batch)
        gravity = as_float(gravity)
        if gravity.ndim == 1 and batch:  # traced or not: inside `jit` the default is traced
            gravity = xp.broadcast_to(gravity, batch + (2,))
        check_array(owner, "gravity", gravity, (2,), batch_shape=batch)
        self.lengths = _as_float(lengths)
        self.masses = _as_float(masses)
        self.inertias = _as_float(inertias)
        self.com = _as_float(com)
        self.gravity = _as_float(gravity)
        self.branch = int(branch)

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The leading batch shape of the design (`()` for one design)."""
        return tuple(self.lengths.shape[:-1])

    def __repr__(self) -> str:  # short, for error messages
        if is_traced(self.lengths):
            return f"FourBar(<traced>, branch={self.branch:+d})"
        ls = np.asarray(self.lengths)
        if ls.ndim == 1:
            return f"FourBar(lengths=({', '.join(f'{v:g}' for v in ls)}), branch={self.branch:+d})"
        return f"FourBar(batch {ls.shape[:-1]}, branch={self.branch:+d})"

    @classmethod
    def seed_crank_rocker(cls, **overrides) -> "FourBar":
        """Bai et al., Section 7: l = (0.12, 0.25, 0.26, 0.30) m, m = (0.1, 0.25, 0.18) kg,
        J = (0.001, 0.016, 0.006) kg m², COM at midpoints (not given in the paper)."""
        kw: dict[str, Any] = dict(
            lengths=(0.12, 0.25, 0.26, 0.30), masses=(0.1, 0.25, 0.18), inertias=(0.001, 0.016, 0.006)
        )
        kw.update(overrides)
        return cls(**kw)

    @classmethod
    def seed_parallelogram(cls, **overrides) -> "FourBar":
        """Bai et al., Section 7.3: l1 = l3 = 0.1 m, l2 = l4 = 0.25 m, masses and inertias
        as in Section 7."""
        kw: dict[str, Any] = dict(
            lengths=(0.1, 0.25, 0.1, 0.25), masses=(0.1, 0.25, 0.18), inertias=(0.001, 0.016, 0.006)
        )
        kw.update(overrides)
        return cls(**kw)
