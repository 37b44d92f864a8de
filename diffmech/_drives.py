"""Drive laws as data: the torque on an input as an Equinox module whose numbers are
array leaves, so that a law with other numbers runs the same compiled program (a
Python function is part of the program: each new function object compiles again).
Each is called as `torque(t, u, udot)`, like a function given to `fourbar.Drive` or
`linkage.Drive`; with `k` inputs, each number is a scalar or `(k,)`."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._validate import as_floats, is_traced


def _numbers(owner, **fields):
    """Each field as a float array, finite (eager), named when not."""
    out = []
    for name, v in fields.items():
        if not is_traced(v):
            a = as_floats(owner, name, v)
            if not np.all(np.isfinite(a)):
                raise ValueError(f"{owner}: `{name}` must be finite; got {a.tolist()!r:.80}")
        out.append(jnp.asarray(v, dtype=float))
    return out


def _samples(owner, times, values):
    """Sample times (strictly increasing, at least two) and values, first axis the time."""
    t, y = _numbers(owner, times=times, values=values)
    if not is_traced(times) and (t.ndim != 1 or t.shape[0] < 2 or not bool(jnp.all(jnp.diff(t) > 0))):
        raise ValueError(f"{owner}: `times` must be at least two strictly increasing sample times; got {t.shape}")
    if not is_traced(values) and (y.ndim < 1 or y.shape[0] != t.shape[0]):
        raise ValueError(f"{owner}: `values` must have one row per sample time ({t.shape[0]}); got {y.shape}")
    return t, y


def _interp(t, times, values):
    """Linear interpolation in time (held at the ends) of rows `values` `(T, ...)`, and
    its slope."""
    k = jnp.clip(jnp.searchsorted(times, t, side="right") - 1, 0, times.shape[0] - 2)
    h = times[k + 1] - times[k]
    s = jnp.clip((t - times[k]) / h, 0.0, 1.0)
    slope = (values[k + 1] - values[k]) / h
    inside = (t >= times[0]) & (t <= times[-1])
    return values[k] + s * (values[k + 1] - values[k]), jnp.where(inside, slope, 0.0)


class ConstantTorque(eqx.Module):
    """A constant torque (force on a prismatic input): `τ = torque`.

    **Arguments:** `torque`: N m (N), a scalar or one per input `(k,)`.
    """

    torque: Float[Array, "*k"]

    def __init__(self, torque):
        (self.torque,) = _numbers("ConstantTorque", torque=torque)

    def __call__(self, t, u, udot):
        return jnp.broadcast_to(self.torque, jnp.shape(udot)).astype(jnp.result_type(udot, float))


class AffineTorque(eqx.Module):
    """A torque affine in the input's speed: `τ = torque − slope · u̇` (a DC motor's
    line: stall torque and its fall per unit speed).

    **Arguments:** `torque`: at rest (N m, or N); `slope`: its fall per unit speed (N m s);
    each a scalar or one per input `(k,)`.
    """

    torque: Float[Array, "*k"]
    slope: Float[Array, "*k"]

    def __init__(self, torque, slope):
        self.torque, self.slope = _numbers("AffineTorque", torque=torque, slope=slope)

    def __call__(self, t, u, udot):
        return self.torque - self.slope * udot


class ServoTorque(eqx.Module):
    """A PD servo on a trajectory given by samples: `τ = kp (u_ref(t) − u) + kd
    (u̇_ref(t) − u̇)`, `u_ref` interpolated linearly between `(times, positions)` (held
    at the ends) and `u̇_ref` its slope.

    **Arguments:** `times` `(T,)`: increasing sample times (s); `positions` `(T,)` or
    `(T, k)`: the input's reference there; `kp`, `kd`: the gains (N m per rad, N m s per
    rad).
    """

    times: Float[Array, " T"]
    positions: Float[Array, " T *k"]
    kp: Float[Array, "*k"]
    kd: Float[Array, "*k"]

    def __init__(self, times, positions, kp, kd):
        self.times, self.positions = _samples("ServoTorque", times, positions)
        self.kp, self.kd = _numbers("ServoTorque", kp=kp, kd=kd)

    def __call__(self, t, u, udot):
        ref, rate = _interp(t, self.times, self.positions)
        return self.kp * (ref - u) + self.kd * (rate - udot)


class TorqueSeries(eqx.Module):
    """A torque time series: `τ(t)` interpolated linearly between `(times, values)`
    (held at the ends).

    **Arguments:** `times` `(T,)`: increasing sample times (s); `values` `(T,)` or
    `(T, k)`: the torque there (N m, or N).
    """

    times: Float[Array, " T"]
    values: Float[Array, " T *k"]

    def __init__(self, times, values):
        self.times, self.values = _samples("TorqueSeries", times, values)

    def __call__(self, t, u, udot):
        return _interp(t, self.times, self.values)[0] + jnp.zeros_like(udot)


def as_affine(torque):
    """No torque, a `ConstantTorque` or an `AffineTorque` as one `AffineTorque` (`τ = a
    − b u̇` with `b = 0`, or `a = b = 0`: the same numbers, `0 · u̇` adding an exact
    zero): a program is compiled per law's structure, so free motion and these laws
    then share one; any other law or function is returned as it is."""
    if torque is None:
        return AffineTorque(0.0, 0.0)
    if isinstance(torque, ConstantTorque):
        return AffineTorque(torque.torque, jnp.zeros_like(torque.torque))
    return torque
