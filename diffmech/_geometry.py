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
