"""Planar attitude vectors (Bai et al., Section 2): q = R(θ) e1 on the unit circle S¹."""

import jax.numpy as jnp
from jaxtyping import Array, Float


def attitude(theta: Float[Array, "*b"]) -> Float[Array, "*b 2"]:
    """The attitude vector q = R(θ) e1 = (cos θ, sin θ) (Eq. (18) of Bai et al.)."""
    return jnp.stack([jnp.cos(theta), jnp.sin(theta)], axis=-1)


def perp(q: Float[Array, "*b 2"]) -> Float[Array, "*b 2"]:
    """S1 q: q rotated by +90°."""
    return jnp.stack([-q[..., 1], q[..., 0]], axis=-1)


def cross(a: Float[Array, "*b 2"], b: Float[Array, "*b 2"]) -> Float[Array, "*b"]:
    """The planar cross product a × b = aᵀ S1ᵀ b = a_x b_y − a_y b_x."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def angle(q: Float[Array, "*b 2"]) -> Float[Array, "*b"]:
    """The angle θ of an attitude vector, in (−π, π]."""
    return jnp.arctan2(q[..., 1], q[..., 0])


def rotation(theta: Float[Array, ""]) -> Float[Array, "2 2"]:
    """The planar rotation matrix R(θ) (anticlockwise)."""
    c, s = jnp.cos(theta), jnp.sin(theta)
    return jnp.stack([jnp.stack([c, -s]), jnp.stack([s, c])])


def dot(a: Float[Array, "*b k"], b: Float[Array, "*b k"]) -> Float[Array, "*b"]:
    """a · b over the last axis, written element-wise: under `vmap` a `jnp.dot` of
    2- or 3-vectors becomes a batched `dot` that XLA:CPU runs one tiny matrix at a
    time (10x slower in the four-bar's sweep)."""
    out = a[..., 0] * b[..., 0]
    for i in range(1, a.shape[-1]):
        out = out + a[..., i] * b[..., i]
    return out


def unit(v: Float[Array, "*b k"]) -> Float[Array, "*b k"]:
    """v / |v| over the last axis."""
    return v / jnp.sqrt(dot(v, v))[..., None]
