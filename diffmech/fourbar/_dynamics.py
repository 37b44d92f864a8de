"""Four-bar dynamics without multipliers: the reduced Hamiltonian model of Bai et al.
(2024), Sections 4–6, integrated with Diffrax.

Everything is a function of the attitude vectors q = (qA, qB, qD) on the constraint
manifold, and every variation is a `jax.jvp` along the manifold's tangent
δq = S_q K_N (per unit crank rate; Eqs. (35), (48)–(50)) instead of the printed
Eqs. (62)–(81):

- Σ(q) (Eq. (83)): the generalised inertia about the crank, Σ = K_Nᵀ J K_N + Σᵢ mᵢ|vᵢ|²
  with vᵢ the COM velocities per unit ωA (a jvp of the COM positions along δq);
- Π1 = Σ ω1 (Eq. (82)), H = Π1²/(2Σ) + V;
- Eq. (84): dΠ1/dt = Π1²/(2Σ²) δΣ − δV (+ crank torque − joint damping);
- Eq. (85): dq/dt = (Π1/Σ) δq.

Modes: `"paper"`, the 7-D ODE in (Π1, q) (Eqs. (84)–(85)); `"minimal"`, the ODE in
(θA, Π1) with qB, qD recovered by the closure core at every evaluation (loop closure
at round-off by construction, the default).
"""

from collections.abc import Callable

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._geometry import attitude, perp
from . import _kinematics as _k
from ._model import FourBar


def _links(q):
    return q[..., 0:2], q[..., 2:4], q[..., 4:6]


def com_positions(fb: FourBar, q: Float[Array, "6"]) -> Float[Array, "3 2"]:
    """Centres of mass of crank, coupler, rocker (Eqs. (37)–(46) with the offsets of
    `fb.com` in the link frames from A, B, D)."""
    l1, l3, l4 = fb.lengths[0], fb.lengths[2], fb.lengths[3]
    qA, qB, qD = _links(q)
    rho = fb.com
    B = l1 * qA
    D = jnp.stack([l4, jnp.zeros_like(l4)])
    r1 = rho[0, 0] * qA + rho[0, 1] * perp(qA)
    r2 = B + rho[1, 0] * qB + rho[1, 1] * perp(qB)
    r3 = D + rho[2, 0] * qD + rho[2, 1] * perp(qD)
    return jnp.stack([r1, r2, r3])


def link_rates(fb: FourBar, q: Float[Array, "6"]) -> Float[Array, "3"]:
    """K_N = (1, K): the angular velocities (ωA, ωB, ωD) per unit crank rate (Eq. (36))."""
    return jnp.concatenate([jnp.ones((1,), q.dtype), _k.velocity_ratios(fb, q)])


def tangent(fb: FourBar, q: Float[Array, "6"]) -> Float[Array, "6"]:
    """δq = S_q K_N: the tangent of the constraint manifold per unit crank rate
    (Eq. (20) for each attitude vector, q̇ᵢ = ωᵢ S1 qᵢ)."""
    w = link_rates(fb, q)
    qA, qB, qD = _links(q)
    return jnp.concatenate([w[0] * perp(qA), w[1] * perp(qB), w[2] * perp(qD)])


def sigma(fb: FourBar, q: Float[Array, "6"]) -> Float[Array, ""]:
    """Σ(q) of Eq. (83): 2T/ω1², the generalised inertia about the crank."""
    w = link_rates(fb, q)
    _, v = jax.jvp(lambda qq: com_positions(fb, qq), (q,), (tangent(fb, q),))
    return jnp.sum(fb.inertias * w**2) + jnp.sum(fb.masses * jnp.sum(v**2, axis=-1))


def potential(fb: FourBar, q: Float[Array, "6"]) -> Float[Array, ""]:
    """V = −Σ mᵢ gᵀ rᵢ (Eq. (53) with gravity as a vector; the paper's sign is
    `gravity = (0, +g)`)."""
    return -jnp.sum(fb.masses * (com_positions(fb, q) @ fb.gravity))


def momentum(fb: FourBar, q: Float[Array, "6"], omega_A) -> Float[Array, ""]:
    """Π1 = Σ(q) ωA (Eq. (82))."""
    return sigma(fb, q) * omega_A


def energy(fb: FourBar, Pi, q: Float[Array, "*n 6"]) -> Float[Array, "*n"]:
    """Total mechanical energy H = Π1²/(2Σ) + V (batched over leading axes of q)."""
    def one(P, qq):
        return P**2 / (2 * sigma(fb, qq)) + potential(fb, qq)
    Pi = jnp.asarray(Pi, dtype=q.dtype)
    if q.ndim == 1:
        return one(Pi, q)
    return jax.vmap(one)(jnp.reshape(Pi, (-1,)), q.reshape(-1, 6)).reshape(q.shape[:-1])


class Drive(eqx.Module):
    """Applied crank torque and viscous joint damping.

    - `torque(t, theta_A, omega_A) -> τ` (N m on the crank about A), or None;
    - `damping`: coefficients (cA, cB, cC, cD) (N m s) of the joints A (crank–ground),
      B (coupler–crank), C (rocker–coupler), D (rocker–ground).
    """

    torque: Callable | None = eqx.field(static=True, default=None)
    damping: Float[Array, "4"] = eqx.field(default_factory=lambda: jnp.zeros(4))

    def generalised_force(self, fb, t, theta_A, omega_A, q):
        w = link_rates(fb, q)
        rel = jnp.stack([w[0], w[1] - w[0], w[2] - w[1], w[2]])  # joint rates per unit ωA
        Q = -omega_A * jnp.sum(self.damping * rel**2)
        if self.torque is not None:
            Q = Q + self.torque(t, theta_A, omega_A)
        return Q

    def power(self, fb, t, theta_A, omega_A, q):
        return self.generalised_force(fb, t, theta_A, omega_A, q) * omega_A


def _pi_dot(fb, drive, t, theta_A, Pi, q):
    tq = tangent(fb, q)
    s, ds = jax.jvp(lambda qq: sigma(fb, qq), (q,), (tq,))
    _, dV = jax.jvp(lambda qq: potential(fb, qq), (q,), (tq,))
    omega = Pi / s
    Q = drive.generalised_force(fb, t, theta_A, omega, q)
    return Pi**2 / (2 * s**2) * ds - dV + Q, omega, tq


def _closure_q(fb, theta_A):
    sol = _k.solve_position(fb, theta_A, condition=False)
    return jnp.concatenate([attitude(theta_A), sol.value]), sol


def _rhs_minimal(t, y, args):
    fb, drive = args
    theta_A, Pi = y[0], y[1]
    q, _ = _closure_q(fb, theta_A)
    dPi, omega, _ = _pi_dot(fb, drive, t, theta_A, Pi, q)
    return jnp.stack([omega, dPi])


def _rhs_paper(t, y, args):
    fb, drive = args
    Pi, q = y[0], y[1:]
    theta_A = jnp.arctan2(q[1], q[0])
    dPi, omega, tq = _pi_dot(fb, drive, t, theta_A, Pi, q)
    return jnp.concatenate([dPi[None], omega * tq])


class Trajectory(eqx.Module):
    """A four-bar trajectory.

    - `ts`; `Pi` (Π1); `q` (`(T, 6)` attitude vectors); `theta_A` (unwrapped);
      `omega_A`;
    - `energy`: H at each save (its drift is the integration error; with a `Drive`,
      compare its change with the work, `Drive.power` integrated over time);
    - `closure_residual`: loop gap and unit-norm error per save;
    - `result`: Diffrax's status; `num_steps`: accepted and rejected steps.
    """

    ts: Float[Array, " T"]
    Pi: Float[Array, " T"]
    q: Float[Array, "T 6"]
    theta_A: Float[Array, " T"]
    omega_A: Float[Array, " T"]
    energy: Float[Array, " T"]
    closure_residual: Float[Array, " T"]
    result: diffrax.RESULTS
    num_steps: Array


_SOLVERS = {"tsit5": diffrax.Tsit5, "dopri5": diffrax.Dopri5, "dopri8": diffrax.Dopri8}


def project(fb: FourBar, q0) -> Float[Array, "6"]:
    """Project an approximate configuration onto the constraint: keep the crank angle
    of `q0` (atan2 of qA) and solve the closure on `fb.branch`."""
    q0 = jnp.asarray(q0, dtype=fb.lengths.dtype)
    theta = jnp.arctan2(q0[1], q0[0])
    q, _ = _closure_q(fb, theta)
    return q


def simulate(
    fb: FourBar,
    q0,
    Pi0,
    t1: float,
    *,
    saveat: Float[Array, " T"] | None = None,
    t0: float = 0.0,
    mode: str = "minimal",
    solver: str = "dopri8",
    rtol: float = 1e-10,
    atol: float = 1e-12,
    drive: Drive | None = None,
    max_steps: int = 100_000,
    adjoint: diffrax.AbstractAdjoint | None = None,
) -> Trajectory:
    """Simulate the four-bar by the reduced Hamiltonian model (Eqs. (82)–(85)).

    **Arguments:**

    - `fb`: the design (gravity, masses, inertias and COM offsets are used).
    - `q0`: initial attitude vectors (6); may be approximate (e.g. the paper's printed
      q0): it is projected onto the constraint at its crank angle on `fb.branch`.
    - `Pi0`: initial crank momentum Π1 (`momentum(fb, q, omega_A)` converts a rate).
    - `t1`, `t0`: time span (s); `saveat`: save times (default 501 points).
    - `mode`: `"minimal"` (default: (θA, Π1) with qB, qD from the closure core, loop
      closed to round-off at every save) or `"paper"` (the 7-D ODE of Eqs. (84)–(85)
      in (Π1, q), which drifts off the constraint at the integrator's tolerance).
    - `solver`: `"tsit5"`, `"dopri5"` or `"dopri8"`, with a PID step-size controller at
      `rtol`, `atol`.
    - `drive`: a `Drive` (crank torque, joint damping).
    - `adjoint`: a Diffrax adjoint for gradients (default: recursive checkpointing).

    **Returns:** a `Trajectory`.
    """
    dt = fb.lengths.dtype
    drive = drive if drive is not None else Drive()
    q_init = project(fb, q0)
    theta0 = jnp.arctan2(q_init[1], q_init[0])
    Pi0 = jnp.asarray(Pi0, dtype=dt)
    ts = jnp.linspace(t0, t1, 501, dtype=dt) if saveat is None else jnp.asarray(saveat, dtype=dt)
    if mode == "minimal":
        term, y0 = diffrax.ODETerm(_rhs_minimal), jnp.stack([theta0, Pi0])
    elif mode == "paper":
        term, y0 = diffrax.ODETerm(_rhs_paper), jnp.concatenate([Pi0[None], q_init])
    else:
        raise ValueError(f"simulate: `mode` must be 'minimal' or 'paper'; got {mode!r}")
    if solver not in _SOLVERS:
        raise ValueError(f"simulate: `solver` must be one of {sorted(_SOLVERS)}; got {solver!r}")
    sol = diffrax.diffeqsolve(
        term, _SOLVERS[solver](), t0, t1, None, y0, args=(fb, drive),  # dt0=None: first step chosen by the controller
        saveat=diffrax.SaveAt(ts=ts), stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol, dtmin=None),
        max_steps=max_steps, adjoint=adjoint if adjoint is not None else diffrax.RecursiveCheckpointAdjoint(),
        throw=False,
    )
    ys = sol.ys
    if mode == "minimal":
        theta, Pi = ys[:, 0], ys[:, 1]
        q = jax.vmap(lambda th: _closure_q(fb, th)[0])(theta)
    else:
        Pi, q = ys[:, 0], ys[:, 1:]
        theta = jnp.unwrap(jnp.arctan2(q[:, 1], q[:, 0]))
    s = jax.vmap(lambda qq: sigma(fb, qq))(q)
    return Trajectory(
        ts=ts, Pi=Pi, q=q, theta_A=theta, omega_A=Pi / s, energy=energy(fb, Pi, q),
        closure_residual=_k.closure_residual(fb, q), result=sol.result, num_steps=sol.stats["num_steps"],
    )
