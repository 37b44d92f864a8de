"""Screw algebra on arrays.

Convention (DESIGN.md): a twist is `(ω; v)` with `v` the velocity of the point at the
origin (`v = r × ω` for a rotation about an axis through `r`); a wrench is `(f; τ)`
with `τ` the moment about the origin. Their pairing (power) is the reciprocal product
`twistᵀ N wrench = ω·τ + v·f` with `N = [[0, I], [I, 0]]`. A displacement is a pair
`(R, p)` acting on points as `x ↦ R x + p`. Every function broadcasts over leading axes.
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._validate import check_trailing, check_type, is_traced

# a NumPy constant: a JAX array here would start JAX's backend at `import diffmech`
# (before `jax.distributed.initialize` could run) and fix its dtype before the user
# enables float64
N_MATRIX = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])
N_MATRIX.flags.writeable = False


def _trailing(owner: str, **arrays: tuple) -> None:
    """Each `name=(value, trailing)`: `value`'s shape ends in `trailing` (static: free
    under `jit`); a `ValueError` naming `screw.owner` and the argument otherwise."""
    for name, (value, trailing) in arrays.items():
        check_trailing(f"screw.{owner}", name, value, trailing)


def _unit(owner: str, name: str, axis, part: slice = slice(None)) -> None:
    """A concrete `axis[..., part]` (an eager call) must be a unit vector (traced ones
    are the caller's: a building block inside `jit` cannot raise on values)."""
    if is_traced(axis):
        return
    n = np.linalg.norm(np.asarray(axis, dtype=float)[..., part], axis=-1)
    if not np.all(np.abs(n - 1.0) <= 1e-6):
        raise ValueError(f"screw.{owner}: `{name}` must be a unit vector; got norm {np.round(n, 6).tolist()}")


def matmul(A: Float[Array, "*b 3 3"], B: Float[Array, "*b 3 3"]) -> Float[Array, "*b 3 3"]:
    """`A @ B` for 3×3 matrices as element-wise products and sums (under `vmap`, XLA:CPU
    turns `@` on tiny matrices into batched dots that cost ~10× more)."""
    return jnp.sum(A[..., :, :, None] * B[..., None, :, :], axis=-2)


def matvec(A: Float[Array, "*b 3 3"], v: Float[Array, "*b 3"]) -> Float[Array, "*b 3"]:
    """`A @ v` for a 3×3 matrix, element-wise (see `matmul`)."""
    return jnp.sum(A * v[..., None, :], axis=-1)


def skew(a: Float[Array, "*b 3"]) -> Float[Array, "*b 3 3"]:
    """The matrix `â` with `â x = a × x`.

    **Arguments:** `a` `(..., 3)`. **Returns:** `[a]×` `(..., 3, 3)`.
    """
    _trailing("skew", a=(a, (3,)))
    z = jnp.zeros_like(a[..., 0])
    x, y, w = a[..., 0], a[..., 1], a[..., 2]
    return jnp.stack([jnp.stack([z, -w, y], -1), jnp.stack([w, z, -x], -1), jnp.stack([-y, x, z], -1)], -2)


def vee(A: Float[Array, "*b 3 3"]) -> Float[Array, "*b 3"]:
    """The vector of the skew-symmetric part of `A` (inverse of `skew` on skew matrices)."""
    _trailing("vee", A=(A, (3, 3)))
    return 0.5 * jnp.stack([A[..., 2, 1] - A[..., 1, 2], A[..., 0, 2] - A[..., 2, 0], A[..., 1, 0] - A[..., 0, 1]], -1)


def rotation(axis: Float[Array, "*b 3"], angle: Float[Array, "*b"]) -> Float[Array, "*b 3 3"]:
    """Rotation by `angle` about the unit vector `axis` (Rodrigues)."""
    _trailing("rotation", axis=(axis, (3,)))
    _unit("rotation", "axis", axis)
    K = skew(axis)
    s, c = jnp.sin(angle)[..., None, None], jnp.cos(angle)[..., None, None]
    return jnp.eye(3, dtype=K.dtype) + s * K + (1 - c) * matmul(K, K)


def rotation_vector(phi: Float[Array, "*b 3"]) -> Float[Array, "*b 3 3"]:
    """`exp(φ̂)`, the rotation by `|φ|` about `φ/|φ|`; smooth (and differentiable) at φ = 0.

    **Arguments:** `phi` `(..., 3)`: a rotation vector (rad). **Returns:** `(..., 3,
    3)`.
    """
    _trailing("rotation_vector", phi=(phi, (3,)))
    t2 = jnp.sum(phi * phi, -1)
    small = t2 < 1e-8
    t2s = jnp.where(small, 1.0, t2)
    t = jnp.sqrt(t2s)
    a = jnp.where(small, 1 - t2 / 6 + t2 * t2 / 120, jnp.sin(t) / t)
    b = jnp.where(small, 0.5 - t2 / 24 + t2 * t2 / 720, (1 - jnp.cos(t)) / t2s)
    K = skew(phi)
    return jnp.eye(3, dtype=phi.dtype) + a[..., None, None] * K + b[..., None, None] * matmul(K, K)


def revolute(axis: Float[Array, "*b 3"], point: Float[Array, "*b 3"]) -> Float[Array, "*b 6"]:
    """Unit twist of a revolute joint about the unit `axis` through `point`: `(e; r × e)`."""
    _trailing("revolute", axis=(axis, (3,)), point=(point, (3,)))
    _unit("revolute", "axis", axis)
    return jnp.concatenate([axis, jnp.cross(point, axis)], -1)


def prismatic(axis: Float[Array, "*b 3"]) -> Float[Array, "*b 6"]:
    """Unit twist of a prismatic joint along the unit `axis`: `(0; e)`."""
    _trailing("prismatic", axis=(axis, (3,)))
    _unit("prismatic", "axis", axis)
    return jnp.concatenate([jnp.zeros_like(axis), axis], -1)


def wrench(force: Float[Array, "*b 3"], point: Float[Array, "*b 3"], moment=None) -> Float[Array, "*b 6"]:
    """The wrench `(f; r × f + m)` of a force `f` acting at `point` plus a couple `m`.

    **Arguments:** `force` `(..., 3)` (N) applied at `point` `(..., 3)` (m); `moment`
    `(..., 3)` (N·m, default zero). **Returns:** `(..., 6)`.
    """
    _trailing("wrench", force=(force, (3,)), point=(point, (3,)))
    if moment is not None:
        _trailing("wrench", moment=(moment, (3,)))
    tau = jnp.cross(point, force)
    if moment is not None:
        tau = tau + moment
    return jnp.concatenate([force, tau], -1)


def reciprocal(twist: Float[Array, "*b 6"], wrench_: Float[Array, "*b 6"]) -> Float[Array, "*b"]:
    """Reciprocal product `twistᵀ N wrench = ω·τ + v·f` (the power of the wrench on the twist).

    **Arguments:** `twist`, `wrench_` `(..., 6)`. **Returns:** the reciprocal product (W
    when the twist is a velocity in rad/s and m/s and the wrench in N and N·m).
    """
    _trailing("reciprocal", twist=(twist, (6,)), wrench_=(wrench_, (6,)))
    return jnp.sum(twist[..., :3] * wrench_[..., 3:] + twist[..., 3:] * wrench_[..., :3], -1)


def adjoint(R: Float[Array, "*b 3 3"], p: Float[Array, "*b 3"]) -> Float[Array, "*b 6 6"]:
    """The 6×6 matrix moving a twist `(ω; v)` — or, identically in this ordering, a
    wrench `(f; τ)` — with the displacement `(R, p)`: `(Rω; p × Rω + R v)`.

    **Arguments:** `R` `(..., 3, 3)`: a rotation; `p` `(..., 3)`: a translation (m).
    **Returns:** `(..., 6, 6)`.
    """
    _trailing("adjoint", R=(R, (3, 3)), p=(p, (3,)))
    Z = jnp.zeros_like(R)
    return jnp.concatenate([jnp.concatenate([R, Z], -1), jnp.concatenate([matmul(skew(p), R), R], -1)], -2)


def transform(R: Float[Array, "*b 3 3"], p: Float[Array, "*b 3"], s: Float[Array, "*b 6"]) -> Float[Array, "*b 6"]:
    """`adjoint(R, p) @ s` without forming the matrix.

    **Arguments:** `R` `(..., 3, 3)`, `p` `(..., 3)`: a displacement; `s` `(..., 6)`: a
    screw. **Returns:** the moved screw `(..., 6)`.
    """
    _trailing("transform", R=(R, (3, 3)), p=(p, (3,)), s=(s, (6,)))
    a = matvec(R, s[..., :3])
    b = matvec(R, s[..., 3:])
    return jnp.concatenate([a, jnp.cross(p, a) + b], -1)


def exp(twist: Float[Array, "*b 6"], theta: Float[Array, "*b"], prismatic_: bool):
    """Displacement `(R, p)` of the unit joint twist moved by `theta`: a rotation by
    `theta` about the axis (revolute), or a translation `theta·e` (prismatic).

    **Arguments:** `twist` `(..., 6)`: a unit joint twist; `theta`: the displacement
    (rad, or m for a prismatic joint); `prismatic_`: whether the joint is prismatic.
    """
    _trailing("exp", twist=(twist, (6,)))
    check_type("screw.exp", "prismatic_", prismatic_, (bool, np.bool_), "a bool")
    _unit("exp", "twist's direction (ω, or v of a prismatic twist)", twist, slice(3, 6) if prismatic_ else slice(0, 3))
    if prismatic_:
        R = jnp.broadcast_to(jnp.eye(3, dtype=twist.dtype), twist.shape[:-1] + (3, 3))
        return R, theta[..., None] * twist[..., 3:]
    e, v = twist[..., :3], twist[..., 3:]
    R = rotation(e, theta)
    r = jnp.cross(e, v)  # the point of the axis closest to the origin (|e| = 1)
    return R, r - matvec(R, r)


def compose(a, b):
    """Displacement `a ∘ b` (apply `b`, then `a`)."""
    for name, (R, p) in (("a", a), ("b", b)):
        check_trailing("screw.compose", f"{name}[0] (R)", R, (3, 3))
        check_trailing("screw.compose", f"{name}[1] (p)", p, (3,))
    Ra, pa = a
    Rb, pb = b
    return matmul(Ra, Rb), matvec(Ra, pb) + pa


def twist_of(R, p, Rdot, pdot) -> Float[Array, "*b 6"]:
    """Space twist `(ω; v)` of a moving displacement with time derivative `(Ṙ, ṗ)`:
    `ω̂ = Ṙ Rᵀ`, `v = ṗ − ω × p`.

    **Arguments:** `R`, `p`: a pose (rotation, position in m); `Rdot`, `pdot`: their
    time derivatives. **Returns:** the space twist `(..., 6)` (rad/s, m/s).
    """
    _trailing("twist_of", R=(R, (3, 3)), p=(p, (3,)), Rdot=(Rdot, (3, 3)), pdot=(pdot, (3,)))
    w = vee(matmul(Rdot, jnp.swapaxes(R, -1, -2)))
    return jnp.concatenate([w, pdot - jnp.cross(w, p)], -1)
