"""Parameter identification from measured motion, on the fitting layer (`diffmech.fit`).

`fourbar_tracer`: a four-bar's link lengths and coupler point from tracer positions
measured at known crank angles, in the four-bar's frame (A at the origin, D on +x).
The positions come from the closure core (a continuation sweep through the measured
angles, implicit gradients); samples where the candidate cannot be assembled are masked
out of the loss before the gradient.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from . import _fit
from .fourbar import _kinematics as fbk
from .fourbar._model import FourBar

__all__ = ["TracerFit", "fourbar_tracer"]


class _Kinematic(eqx.Module):
    lengths: Array
    point: Array


class TracerFit(eqx.Module):
    """`fourbar`, `point`: the identified lengths (in a `FourBar`) and coupler point;
    `rms`: the root-mean-square distance between the measured and fitted tracer
    positions; `fit`: the `diffmech.fit.FitResult`."""

    fourbar: FourBar
    point: Float[Array, "2"]
    rms: float
    fit: _fit.FitResult


def _tracer_loss(m, theta, points, branch):
    fb = FourBar(lengths=m.lengths, branch=branch)
    s = fbk.sweep_functional(fb, theta, condition=False)
    return _fit.masked_mean(fbk.coupler_point(fb, s.q, m.point) - points, s.converged)


def fourbar_tracer(theta_A, points, initial: FourBar, point0, *, steps: int = 200, gtol: float = 1e-13) -> TracerFit:
    """Identify a four-bar's lengths and coupler point from tracer positions.

    **Arguments:** `theta_A` `(N,)` measured crank angles, in the order of motion;
    `points` `(N, 2)` measured tracer positions (the four-bar's frame); `initial`: the
    starting design (its branch is kept); `point0`: the starting coupler point (coupler
    frame: origin B, x along B→C); `steps`, `gtol` as in `diffmech.fit.fit` (L-BFGS,
    lengths log-parametrised).

    **Returns:** a `TracerFit`. With noise-free data and a start in the basin the
    lengths are recovered to round-off; with noise σ the error grows like σ/√N.
    """
    theta = jnp.asarray(theta_A, dtype=initial.lengths.dtype)
    pts = jnp.asarray(points, dtype=initial.lengths.dtype)
    if theta.ndim != 1 or pts.shape != theta.shape + (2,):
        raise ValueError(f"fourbar_tracer: `theta_A` (N,) and `points` (N, 2) must match; got {theta.shape} and {pts.shape}")
    if not (np.all(np.isfinite(np.asarray(theta))) and np.all(np.isfinite(np.asarray(pts)))):
        raise ValueError("fourbar_tracer: `theta_A` and `points` must be finite")
    if initial.batch_shape:
        raise ValueError(f"fourbar_tracer: `initial` must be one design; got batch shape {initial.batch_shape}")
    m0 = _Kinematic(lengths=initial.lengths, point=jnp.asarray(point0, dtype=initial.lengths.dtype))
    res = _fit.fit(_tracer_loss, m0, theta, pts, initial.branch, positive=lambda m: m.lengths, steps=steps, gtol=gtol)
    rms = float(jnp.sqrt(res.loss))
    return TracerFit(fourbar=FourBar(lengths=res.model.lengths, branch=initial.branch), point=res.model.point, rms=rms, fit=res)

