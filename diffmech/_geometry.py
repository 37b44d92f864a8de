"""Planar attitude vectors (Bai et al., Section 2): q = R(θ) e1 on the unit circle S¹."""

import jax
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


def similarity_match(z, ok, targets, weight, turns: int = 8, rounds: int = 6):
    """The similarity `w ↦ a w + b` (complex `a`, `b`) that lays a sampled curve onto
    points whose places along it are unknown: the curve's samples `z` `(K,)` (complex;
    those where `ok`) are first put on the points' centroid at their RMS size, turned
    by each of `turns` angles, then matched by `rounds` of iterative closest points
    (each point paired with its nearest sample, the similarity that fits the pairs best
    in the weighted least-squares sense, in closed form); the turn whose pairs end
    closest wins.

    **Arguments:** `z` `(K,)` complex, `ok` `(K,)` bool, `targets` `(n,)` complex,
    `weight` `(n,)` (≥ 0; a padding row 0), `turns`, `rounds`.

    **Returns:** `(a, b, E)`: the similarity and the weighted mean squared distance of
    each point to its nearest placed sample (inf where no sample is `ok`)."""
    dtype = weight.dtype
    cplx = jax.lax.complex
    w = weight / jnp.sum(weight)
    count = jnp.maximum(jnp.sum(ok), 1).astype(dtype)
    as_c = lambda x: cplx(x, jnp.zeros_like(x))  # noqa: E731
    z_mean = jnp.sum(jnp.where(ok, z, jnp.zeros_like(z))) / as_c(count)
    rms = jnp.sqrt(jnp.sum(jnp.where(ok, jnp.abs(z - z_mean) ** 2, 0.0)) / count)
    rms = jnp.maximum(rms, 1e-12)

    def distances(a, b):
        p = a * z + b  # (|target − sample|² in real arithmetic, without abs's square root)
        d = (targets.real[:, None] - p.real[None, :]) ** 2 + (targets.imag[:, None] - p.imag[None, :]) ** 2
        return jnp.where(ok[None, :], d, jnp.inf)

    def match(ab, _):
        a, b = ab
        return similarity_fit(z[jnp.argmin(distances(a, b), axis=1)], targets, weight), None

    def turned(u):
        a = u / as_c(rms)
        (a, b), _ = jax.lax.scan(match, (a, -a * z_mean), None, length=rounds)
        return a, b, jnp.sum(w * jnp.min(distances(a, b), axis=1))

    phi = jnp.linspace(0.0, 2 * jnp.pi, turns, endpoint=False, dtype=dtype)
    A, B, E = jax.vmap(turned)(cplx(jnp.cos(phi), jnp.sin(phi)))
    k = jnp.argmin(jnp.where(jnp.isfinite(E), E, jnp.inf))
    return A[k], B[k], E[k]


def similarity_fit(z, targets, weight):
    """The similarity `w ↦ a w + b` (complex) that takes the points `z` `(n,)` closest
    to their partners `targets` `(n,)` in the `weight`ed least-squares sense, in closed
    form: `(a, b)`."""
    cplx = jax.lax.complex
    as_c = lambda x: cplx(x, jnp.zeros_like(x))  # noqa: E731
    w = weight / jnp.sum(weight)
    zm, tm = jnp.sum(as_c(w) * z), jnp.sum(as_c(w) * targets)
    spread = jnp.maximum(jnp.sum(w * jnp.abs(z - zm) ** 2), 1e-300)
    a = jnp.sum(as_c(w) * jnp.conj(z - zm) * (targets - tm)) / as_c(spread)
    return a, tm - a * zm
