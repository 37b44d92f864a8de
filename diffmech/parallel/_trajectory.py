"""Platform trajectories: the pose of the platform's reference point sampled at given
times, with its first and second time derivatives taken exactly by `jax.jvp`."""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import _screw
from .._validate import as_floats, check_scalar, is_traced
from .._xla import eager_program


class Trajectory(eqx.Module):
    """A sampled platform trajectory.

    **Fields:** `times` `(N,)`; the platform rotation `R`, `Rdot`, `Rddot` `(N, 3, 3)`;
    the reference point's `position`, `velocity`, `acceleration` `(N, 3)`. All are
    array leaves: a batch of trajectories is a `Trajectory` with a leading axis.
    """

    times: Float[Array, " N"]
    R: Float[Array, "N 3 3"]
    Rdot: Float[Array, "N 3 3"]
    Rddot: Float[Array, "N 3 3"]
    position: Float[Array, "N 3"]
    velocity: Float[Array, "N 3"]
    acceleration: Float[Array, "N 3"]

    @property
    def twist(self) -> Float[Array, "N 6"]:
        """The platform's space twist `(ω; v)` (v: velocity of the point at the origin)."""
        return _screw.twist_of(self.R, self.position, self.Rdot, self.velocity)

    def displacement(self, reference):
        """The platform displacement from home `(R, d)` with `d = position − R·reference`,
        and its first and second time derivatives."""
        ref = jnp.asarray(reference)
        d = self.position - self.R @ ref
        dd = self.velocity - self.Rdot @ ref
        ddd = self.acceleration - self.Rddot @ ref
        return (self.R, d), (self.Rdot, dd), (self.Rddot, ddd)


def trajectory(rotation: Callable, position: Callable, times) -> Trajectory:
    """Sample a trajectory from functions of time.

    **Arguments:**

    - `rotation`: `t -> (3, 3)` rotation matrix of the platform (relative to its home
      orientation, space frame), written with `jax.numpy` so it can be differentiated.
    - `position`: `t -> (3,)` position of the platform's reference point.
    - `times`: `(N,)` sample times.

    **Returns:** a `Trajectory`; velocities and accelerations are exact (nested `jax.jvp`).
    """
    for name, f in (("rotation", rotation), ("position", position)):
        if not callable(f):
            raise ValueError(f"parallel.trajectory: `{name}` must be a function of time; got {f!r:.80}")
    if not is_traced(times):
        t = as_floats("parallel.trajectory", "times", times)
        if t.ndim != 1 or t.size < 2:
            raise ValueError(f"parallel.trajectory: `times` must be 1-D with at least 2 samples; got shape {t.shape}")
    traj = _sampled(rotation, position, jnp.asarray(times, dtype=float))
    if not is_traced(traj):
        check(traj)  # shapes, finite samples, increasing times, rotations
    return traj


@eager_program
def _sampled(rotation, position, times) -> Trajectory:
    """`trajectory`'s samples: one program per pair of functions when called eagerly
    (op by op, the seed's spiral compiled 42 small programs). A function object is part
    of the program's key: the bundled trajectories are `eqx.Module`s whose numbers are
    data (`_Spiral`, `_Tilt`), so other numbers compile nothing."""

    def derivs(f, t):
        one = jnp.ones_like(t)
        d1 = lambda s: jax.jvp(f, (s,), (one,))[1]  # noqa: E731
        v, a = jax.jvp(d1, (t,), (one,))
        return f(t), v, a

    R, Rd, Rdd = jax.vmap(lambda t: derivs(rotation, t))(times)
    p, v, a = jax.vmap(lambda t: derivs(position, t))(times)
    return Trajectory(times, R, Rd, Rdd, p, v, a)


def _rx(a):
    return _screw.rotation(jnp.array([1.0, 0.0, 0.0]), a)


def _ry(a):
    return _screw.rotation(jnp.array([0.0, 1.0, 0.0]), a)


def _rz(a):
    return _screw.rotation(jnp.array([0.0, 0.0, 1.0]), a)


def uniform_times(duration: float = 10.0, dt: float = 1e-3) -> Float[Array, " N"]:
    """`N = round(duration / dt)` times `k·dt`, k = 0..N−1 (the seeds' 10,000 steps);
    `duration` and `dt` in seconds."""
    check_scalar("parallel.uniform_times", "duration", duration, positive=True)
    check_scalar("parallel.uniform_times", "dt", dt, positive=True)
    n = int(round(duration / dt))
    if n < 1:
        raise ValueError(f"parallel.uniform_times: `dt` = {dt} is longer than `duration` = {duration}: no sample")
    return jnp.arange(n, dtype=float) * dt


def stewart_spiral(mechanism, times=None, *, radius=0.005, rise=0.0005, roll=0.1, pitch=0.05, yaw=0.1) -> Trajectory:
    """The six-degree-of-freedom spiral of seed 002 as reconstructed in
    `docs/parallel_models.md`: the platform centre on a helix,
    `P(t) = P0 + (−a sin t, a (1 − cos t), c t)`, and `R = Rz(γ) Ry(β) Rx(α)` with
    `α = roll (1 − cos t)`, `β = pitch sin t`, `γ = −yaw (1 − cos t)`.

    **Arguments:** `mechanism`: the platform; `times` `(N,)` (s; default:
    `uniform_times()`; `t` in the formulas, used as the angle in rad); `radius` (m):
    the helix's radius `a`; `rise` (m per unit of `t`): its rise `c`; `roll`, `pitch`,
    `yaw` (rad): the amplitudes of `α`, `β`, `γ`.
    """
    times = uniform_times() if times is None else times
    spiral = _Spiral(
        jnp.asarray(mechanism.reference), *(jnp.asarray(v, float) for v in (radius, rise, roll, pitch, yaw))
    )
    return trajectory(spiral.rotation, spiral.position, times)


class _Spiral(eqx.Module):
    """`stewart_spiral`'s pose as a function of time; its numbers are data."""

    P0: Array
    radius: Array
    rise: Array
    roll: Array
    pitch: Array
    yaw: Array

    def rotation(self, t):
        return _rz(-self.yaw * (1 - jnp.cos(t))) @ _ry(self.pitch * jnp.sin(t)) @ _rx(self.roll * (1 - jnp.cos(t)))

    def position(self, t):
        return self.P0 + jnp.stack([-self.radius * jnp.sin(t), self.radius * (1 - jnp.cos(t)), self.rise * t])


def tilt_circle(mechanism, times=None, *, amplitude=0.1, offset=-0.1) -> Trajectory:
    """The trajectory of seed 004 (Eqs. 50–51 read as rotations, `docs/parallel_models.md`):
    `R(t) = Rx(α) Ry(β)`, `α = amplitude·cos t + offset`, `β = amplitude·sin t`, and the
    reference point E at `R(t)·E0` (the platform turns about O). With the default
    offset the motion starts at home; the paper's printed offset is +0.2.

    **Arguments:** `mechanism`: the 3UPS–UPU–S; `times` `(N,)` (s; default:
    `uniform_times()`); `amplitude`, `offset` (rad): the tilt's amplitude and offset.
    """
    times = uniform_times() if times is None else times
    tilt = _Tilt(jnp.asarray(mechanism.reference), *(jnp.asarray(v, float) for v in (amplitude, offset)))
    return trajectory(tilt.rotation, tilt.position, times)


class _Tilt(eqx.Module):
    """`tilt_circle`'s pose as a function of time; its numbers are data."""

    E0: Array
    amplitude: Array
    offset: Array

    def rotation(self, t):
        return _rx(self.amplitude * jnp.cos(t) + self.offset) @ _ry(self.amplitude * jnp.sin(t))

    def position(self, t):
        return self.rotation(t) @ self.E0


def check(traj: Trajectory, *, uniform: bool = False) -> None:
    """Eager checks: finite samples, increasing times (and uniform steps if asked);
    `ValueError` naming the first bad sample."""
    times = np.asarray(traj.times)
    if times.ndim != 1 or times.size < 2:
        raise ValueError(f"Trajectory: `times` must be 1-D with at least 2 samples; got shape {times.shape}")
    shapes = {"R": (3, 3), "Rdot": (3, 3), "Rddot": (3, 3), "position": (3,), "velocity": (3,), "acceleration": (3,)}
    for name, trailing in shapes.items():
        shape = np.shape(getattr(traj, name))
        if shape != (times.size, *trailing):
            raise ValueError(f"Trajectory: `{name}` must have shape {(times.size, *trailing)}; got {shape}")
    for name in ("times", *shapes):
        a = np.asarray(getattr(traj, name)).reshape(times.size, -1)
        bad = ~np.all(np.isfinite(a), axis=1)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"Trajectory: `{name}` is not finite at sample {k} (t = {times[k]!r}): {a[k].tolist()}")
    steps = np.diff(times)
    if np.any(steps <= 0):
        k = int(np.argmax(steps <= 0))
        raise ValueError(f"Trajectory: times must increase; t[{k}] = {times[k]} ≥ t[{k + 1}] = {times[k + 1]}")
    if uniform and not np.allclose(steps, steps[0], rtol=max(1e-9, 1e3 * float(np.finfo(steps.dtype).eps)), atol=0):
        raise ValueError(
            f"Trajectory: the one-step scheme needs a uniform time step; steps range over [{steps.min()}, "
            f"{steps.max()}]"
        )
    R = np.asarray(traj.R)
    err = np.abs(np.einsum("nij,nkj->nik", R, R) - np.eye(3)).max(axis=(1, 2))
    tol = max(1e-9, 1e3 * float(np.finfo(R.dtype).eps))  # float32: 1.2e-4 (round-off of a product of rotations)
    if np.any(err > tol):
        k = int(np.argmax(err > tol))
        raise ValueError(f"Trajectory: `R` is not a rotation at sample {k} (t = {times[k]}): |RRᵀ − I| = {err[k]:.3g}")
