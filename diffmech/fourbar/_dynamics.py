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
from typing import ClassVar, Literal, Unpack

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from .. import _closure
from .._drives import as_affine
from .._geometry import attitude, perp
from .._integrator import Integrator, IntegratorFields, Resolved, as_integrator
from .._result import RESULTS, AbstractResult, finish, save_status
from .._validate import (
    array_module,
    check_array,
    check_finite,
    check_integration,
    check_trailing,
    check_type,
    is_traced,
    renamed,
)
from .._xla import eager_program, filter_jit, host_array
from . import _kinematics as _k
from ._model import FourBar


def _links(q):
    return q[..., 0:2], q[..., 2:4], q[..., 4:6]


def com_positions(fb: FourBar, q: Float[Array, "6"]) -> Float[Array, "3 2"]:
    """Centres of mass of crank, coupler, rocker (Eqs. (37)–(46) with the offsets of
    `fb.com` in the link frames from A, B, D).

    **Arguments:** `fb`: the design (with its centres of mass); `q` `(6,)`: a
    configuration. **Returns:** `(3, 2)`: the crank's, coupler's and rocker's centres of
    mass (m).
    """
    l1, l4 = fb.lengths[0], fb.lengths[3]
    qA, qB, qD = _links(q)
    rho = fb.com
    B = l1 * qA
    D = jnp.stack([l4, jnp.zeros_like(l4)])
    r1 = rho[0, 0] * qA + rho[0, 1] * perp(qA)
    r2 = B + rho[1, 0] * qB + rho[1, 1] * perp(qB)
    r3 = D + rho[2, 0] * qD + rho[2, 1] * perp(qD)
    return jnp.stack([r1, r2, r3])


def link_rates(fb: FourBar, q: Float[Array, "6"], linearised: bool = False) -> Float[Array, "3"]:
    """K_N = (1, K): the angular velocities (ωA, ωB, ωD) per unit crank rate (Eq. (36)).
    `linearised`: K and its variation by the paper's Eqs. (74)–(81)
    (`velocity_ratios_linearised`) instead of Eq. (35) differentiated by JAX."""
    check_trailing("fourbar.link_rates", "q", q, (6,))
    K = _k.velocity_ratios_linearised(fb, q) if linearised else _k.velocity_ratios(fb, q)
    return jnp.concatenate([jnp.ones((1,), q.dtype), K])


def tangent(fb: FourBar, q: Float[Array, "6"], linearised: bool = False) -> Float[Array, "6"]:
    """δq = S_q K_N: the tangent of the constraint manifold per unit crank rate
    (Eq. (20) for each attitude vector, q̇ᵢ = ωᵢ S1 qᵢ).

    **Arguments:** `fb`: the design; `q` `(6,)`: a closed configuration; `linearised`:
    use the paper's linearised velocity ratios.
    """
    w = link_rates(fb, q, linearised)
    qA, qB, qD = _links(q)
    return jnp.concatenate([w[0] * perp(qA), w[1] * perp(qB), w[2] * perp(qD)])


def sigma(fb: FourBar, q: Float[Array, "6"], linearised: bool = False) -> Float[Array, ""]:
    """Σ(q) of Eq. (83): 2T/ω1², the generalised inertia about the crank.

    **Arguments:** `fb`: the design; `q` `(6,)`: a closed configuration; `linearised`:
    use the paper's linearised velocity ratios (Eqs. 80–81) instead of Eq. (35).
    """
    w = link_rates(fb, q, linearised)
    _, v = jax.jvp(lambda qq: com_positions(fb, qq), (q,), (tangent(fb, q, linearised),))
    return jnp.sum(fb.inertias * w**2) + jnp.sum(fb.masses * jnp.sum(v**2, axis=-1))


def potential(fb: FourBar, q: Float[Array, "6"]) -> Float[Array, ""]:
    """V = −Σ mᵢ gᵀ rᵢ (Eq. (53) with gravity as a vector; the paper's sign is
    `gravity = (0, +g)`).

    **Arguments:** `fb`: the design; `q` `(6,)`: a configuration. **Returns:** `V` (J).
    """
    return -jnp.sum(fb.masses * (com_positions(fb, q) @ fb.gravity))


def momentum(fb: FourBar, q: Float[Array, "6"], omega_A) -> Float[Array, ""]:
    """Π1 = Σ(q) ωA (Eq. (82)).

    **Arguments:** `fb`: the design; `q` `(6,)`: a closed configuration; `omega_A`: the
    crank's rate (rad/s). **Returns:** Π1 (kg·m²/s).
    """
    check_finite("fourbar.momentum", {"q": q, "omega_A": omega_A})
    return sigma(fb, q) * omega_A


def energy(fb: FourBar, Pi, q: Float[Array, "*n 6"]) -> Float[Array, "*n"]:
    """Total mechanical energy H = Π1²/(2Σ) + V (batched over leading axes of q).

    **Arguments:** `fb`: the design; `Pi`: the crank momentum Π1 (kg·m²/s); `q` `(...,
    6)`: configurations. **Returns:** `H = T + V` (J).
    """

    def one(P, qq):
        return P**2 / (2 * sigma(fb, qq)) + potential(fb, qq)

    check_trailing("fourbar.energy", "q", q, (6,))
    if np.size(Pi) != 1 and np.shape(Pi) != np.shape(q)[:-1]:
        raise ValueError(
            f"fourbar.energy: `Pi` must be one value or one per configuration, shape {np.shape(q)[:-1]}; got shape "
            f"{np.shape(Pi)}"
        )
    Pi = jnp.broadcast_to(jnp.asarray(Pi, dtype=q.dtype), q.shape[:-1])
    if q.ndim == 1:
        return one(Pi, q)
    return jax.vmap(one)(jnp.reshape(Pi, (-1,)), q.reshape(-1, 6)).reshape(q.shape[:-1])


def crank_torque(fb: FourBar, theta_A, omega_A, alpha_A) -> Float[Array, "*n"]:
    """Inverse dynamics: the crank torque that drives the motion (θA, ωA, αA) (no
    damping), from the reduced model's equation of motion
    τ = Σ(q) αA + ½ δΣ ωA² + δV (Eqs. (82)–(84) solved for the torque; δ: the
    derivative along the constraint per unit crank angle). Batched over leading axes
    of the three arguments; q from the closure core on `fb.branch`.

    **Arguments:** `fb`: the design; `theta_A`, `omega_A`, `alpha_A`: the crank's angle
    (rad), rate (rad/s) and acceleration (rad/s²), each of shape `*n`. **Returns:** the
    torque (N·m), shape `*n`; NaN where the design does not assemble at θA (no motion
    to drive there).
    """
    shapes = {k: np.shape(v) for k, v in (("theta_A", theta_A), ("omega_A", omega_A), ("alpha_A", alpha_A))}
    try:
        np.broadcast_shapes(*shapes.values())
    except ValueError:
        raise ValueError(
            f"fourbar.crank_torque: the shapes of theta_A, omega_A, alpha_A do not broadcast; got {shapes}"
        )
    return _crank_torque(fb, *(host_array(v, fb.lengths.dtype) for v in (theta_A, omega_A, alpha_A)))


@eager_program  # one program eagerly (op by op: ~100 small ones to compile)
def _crank_torque(fb: FourBar, theta_A, omega_A, alpha_A):
    th, w, a = jnp.broadcast_arrays(theta_A, omega_A, alpha_A)

    def one(th_, w_, a_):
        q, ok = closure_q(fb, th_)
        tq = tangent(fb, q)
        s, ds = jax.jvp(lambda qq: sigma(fb, qq), (q,), (tq,))
        _, dV = jax.jvp(lambda qq: potential(fb, qq), (q,), (tq,))
        return jnp.where(ok, s * a_ + 0.5 * ds * w_**2 + dV, jnp.nan)

    if th.ndim == 0:
        return one(th, w, a)
    return jax.vmap(one)(th.reshape(-1), w.reshape(-1), a.reshape(-1)).reshape(th.shape)


class Drive(eqx.Module):
    """Applied crank torque and viscous joint damping.

    - `torque`: `torque(t, theta_A, omega_A) -> τ` (N m on the crank about A), or None;
      a function, or a drive law whose numbers are data (`ConstantTorque`,
      `AffineTorque`, `ServoTorque`, `TorqueSeries`: other numbers, the same compiled
      program; each new function object compiles again; no torque, a `ConstantTorque`
      and an `AffineTorque` run one program);
    - `damping` `(4,)`: coefficients (cA, cB, cC, cD) (N m s) of the joints A
      (crank–ground), B (coupler–crank), C (rocker–coupler), D (rocker–ground).
    """

    # not static: a drive law (`AffineTorque`, ...: an Equinox module) is traced, its
    # numbers arrays; a plain function, not an array, stays static to `eqx.filter_jit`
    torque: Callable | None = None
    damping: Float[Array, "4"] = eqx.field(default_factory=lambda: jax.device_put(np.zeros(4)))

    def __check_init__(self):
        if self.torque is not None and not callable(self.torque):
            raise ValueError(
                f"fourbar.Drive: `torque` must be a function torque(t, θA, ωA) or None; got {self.torque!r}"
            )
        check_array("fourbar.Drive", "damping", self.damping, (4,))

    def generalised_force(self, fb, t, theta_A, omega_A, q):
        w = link_rates(fb, q)
        rel = jnp.stack([w[0], w[1] - w[0], w[2] - w[1], w[2]])  # joint rates per unit ωA
        Q = -omega_A * jnp.sum(self.damping * rel**2)
        if self.torque is not None:
            Q = Q + self.torque(t, theta_A, omega_A)
        return Q

    def power(self, fb, t, theta_A, omega_A, q):
        return self.generalised_force(fb, t, theta_A, omega_A, q) * omega_A


def _pi_dot(fb, drive, t, theta_A, Pi, q, linearised):
    tq = tangent(fb, q, linearised)
    s, ds = jax.jvp(lambda qq: sigma(fb, qq, linearised), (q,), (tq,))
    _, dV = jax.jvp(lambda qq: potential(fb, qq), (q,), (tq,))
    omega = Pi / s
    Q = drive.generalised_force(fb, t, theta_A, omega, q)
    return Pi**2 / (2 * s**2) * ds - dV + Q, omega, tq


# Newton steps after the circle intersection in every right-hand side: none. The
# closed form closes the loop to round-off wherever the crank angle can be assembled
# (the closure core certifies it, `root` with no step: residual ≤ its atol, else a
# failed status), as the sweep's `Newton(0)` does; the derivatives are the implicit
# function theorem's at that point either way. Two steps had cost 0.6 µs per lane each
# under vmap (docs/benchmarks.md, "Measurements behind the code")
_NEWTON_STEPS = 0


def closure_q(fb, theta_A):
    """q on `fb.branch` at θA: by the closure core, or by the parallelogram mode's
    closed form (qB = e1, qD = qA), which stays exact through its change points."""
    par = _k.is_parallelogram_mode(fb)
    qA = attitude(theta_A)
    # the unused solve gets a regular angle: at a change point its Jacobian is singular
    th = jnp.where(par, 0.5 * jnp.pi, theta_A)
    # the circle intersection closes the loop to round-off (`_NEWTON_STEPS`: none
    # added), certified by the core's `root`, whose custom_root gives the implicit
    # derivatives
    guess, _ = _k.closed_form(jax.lax.stop_gradient(fb), jax.lax.stop_gradient(th))
    sol = _closure.root(
        _k.residual, guess, th, fb, min_steps=_NEWTON_STEPS, max_steps=_NEWTON_STEPS, robust=False, throw=False
    )
    x = jnp.where(par, jnp.concatenate([jnp.array([1.0, 0.0], dtype=qA.dtype), qA]), sol.value)
    ok = par | ((sol.result == _closure.RESULTS.successful) & jnp.all(jnp.isfinite(sol.value)))
    return jnp.concatenate([qA, x]), ok


def _rotate(q, phi):
    # exp(φ S1) q for each attitude vector: a rotation, so unit norms hold exactly
    c, s_ = jnp.cos(phi), jnp.sin(phi)
    qs = q.reshape(3, 2)
    return (c[:, None] * qs + s_[:, None] * jax.vmap(perp)(qs)).reshape(6)


# each vector field jitted (a drive's own function static, by identity): traced once
# per signature, not at each of Diffrax's traces of it in a solve (as the linkage's)
@filter_jit
def _rhs_minimal(t, y, args):
    fb, drive, lin = args
    theta_A, Pi = y[0], y[1]
    q, _ = closure_q(fb, theta_A)
    dPi, omega, _ = _pi_dot(fb, drive, t, theta_A, Pi, q, lin)
    return jnp.stack([omega, dPi])


@filter_jit
def _rhs_paper(t, y, args):
    fb, drive, lin = args
    Pi, q = y[0], y[1:]
    theta_A = jnp.arctan2(q[1], q[0])
    dPi, omega, tq = _pi_dot(fb, drive, t, theta_A, Pi, q, lin)
    return jnp.concatenate([dPi[None], omega * tq])


@filter_jit
def _rhs_lie(t, y, args):
    # y = (Π1, φA, φB, φD) with qᵢ(t) = exp(φᵢ S1) qᵢ(0). SO(2) is abelian, so the
    # Munthe-Kaas form of a Runge–Kutta method is the method applied to the rotation
    # angles (dexp is the identity): every stage rotates the attitude vectors
    fb, drive, lin, q0 = args
    Pi, phi = y[0], y[1:]
    q = _rotate(q0, phi)
    theta_A = jnp.arctan2(q[1], q[0])
    dPi, omega, _ = _pi_dot(fb, drive, t, theta_A, Pi, q, lin)
    return jnp.concatenate([dPi[None], omega * link_rates(fb, q, lin)])


class Simulation(AbstractResult):
    """A four-bar's motion, saved at `ts` (the contract of every result:
    `diffmech._result.AbstractResult`, one sample per save).

    - `ts`; `Pi` (Π1); `q` (`(T, 6)` attitude vectors); `theta_A` (unwrapped);
      `omega_A`;
    - `energy`: H at each save (its drift is the integration error; with a `Drive`,
      compare its change with the work, `Drive.power` integrated over time);
    - `residual`: the closure's loop gap (m) and unit-norm error per save;
    - `energy_drift`: max |H(t) − H(0)| / max T(t) (T the kinetic energy); meaningful
      without a drive (with one, compare H with the work done);
    - `converged`: per save, False from the first save that the integrator did not
      reach (Diffrax stopped: `status` is its cause, e.g. `max_steps_reached`) or
      where the closure core did not close the loop (mode `"minimal"`, e.g. at a
      toggle position of a non-Grashof crank: `motion_limit`); `status` per save,
      `result` the first failure; `ok`: all saves converged;
    - `solver_result`: Diffrax's own status; `num_steps`: accepted steps.
    """

    ts: Float[Array, " T"]
    Pi: Float[Array, " T"]
    q: Float[Array, "T 6"]
    theta_A: Float[Array, " T"]
    omega_A: Float[Array, " T"]
    energy: Float[Array, " T"]
    residual: Float[Array, " T"]
    energy_drift: Float[Array, ""]
    converged: Bool[Array, " T"]
    status: RESULTS
    solver_result: diffrax.RESULTS
    num_steps: Array

    _values: ClassVar[str] = "q"
    _inputs: ClassVar[str] = "ts"

    @property
    def ok(self) -> Array:
        return jnp.all(self.converged, axis=-1)


def project(fb: FourBar, q0) -> Float[Array, "6"]:
    """Project an approximate configuration onto the constraint: keep the crank angle
    of `q0` (atan2 of qA) and solve the closure on `fb.branch`.

    **Arguments:** `fb`: the design; `q0` `(6,)`: an approximate configuration.
    **Returns:** `q` `(6,)` on the constraint.
    """
    check_trailing("fourbar.project", "q0", q0, (6,))
    if not is_traced(q0):
        a = np.asarray(q0, float)
        if not np.all(np.isfinite(a)) or not np.any(a[..., :2]):
            raise ValueError(
                f"fourbar.project: `q0` must be finite with a non-zero qA (its crank angle); got {a.tolist()}"
            )
    q0 = jnp.asarray(q0, dtype=fb.lengths.dtype)
    theta = jnp.arctan2(q0[1], q0[0])
    q, _ = closure_q(fb, theta)
    return q


_MODES = ("minimal", "lie", "paper")


def simulate_dynamics(
    fb: FourBar,
    q0,
    Pi0,
    t1: float,
    *,
    saveat: Float[Array, " T"] | None = None,
    t0: float = 0.0,
    mode: Literal["minimal", "lie", "paper"] = "minimal",
    integrator: Integrator | None = None,
    drive: Drive | None = None,
    linearised: bool = False,
    throw: bool = False,
    **separate: Unpack[IntegratorFields],
) -> Simulation:
    """Simulate the four-bar by the reduced Hamiltonian model (Eqs. (82)–(85)).

    **Arguments:**

    - `fb`: the design (gravity, masses, inertias and COM offsets are used).
    - `q0`: initial attitude vectors (6); may be approximate (e.g. the paper's printed
      q0): it is projected onto the constraint at its crank angle on `fb.branch`.
    - `Pi0`: initial crank momentum Π1 (`momentum(fb, q, omega_A)` converts a rate).
    - `t1`, `t0`: time span (s); `saveat`: save times (default 501 points).
    - `mode`:
        - `"minimal"` (default): the ODE in (θA, Π1), qB and qD from the closure core
          at every evaluation: loop closure and unit norms at round-off at every save,
          energy drift at the integrator's tolerance;
        - `"lie"`: (Π1, q) with the attitude vectors advanced by rotations
          (qᵢ = exp(φᵢ S1) qᵢ(0), a Lie-group Runge–Kutta on SO(2)³): unit norms exact,
          the loop gap drifts at the tolerance;
        - `"paper"`: the 7-D ODE of Eqs. (84)–(85) in (Π1, q) as printed: both unit
          norms and the loop drift at the tolerance.
    - `integrator`: an `Integrator` (the Diffrax solver, default Dopri8, its PID
      controller's `rtol`, `atol`, the step budget `max_steps`, the `adjoint` for
      gradients, default recursive checkpointing); its fields may be given as
      separate keywords instead (`solver`, `rtol`, `atol`, `max_steps`, `adjoint`;
      e.g. `solver="tsit5"`).
    - `drive`: a `Drive` (crank torque, joint damping).
    - `linearised`: K and δK by the paper's linearised constraint, Eqs. (74)–(81)
      (corrected), instead of Eq. (35) differentiated by JAX; same results.
    - `throw`: raise at the first save not reached or not closed (a
      `diffmech.ConvergenceError` for an integrator's failure, a
      `diffmech.MotionLimitError` where the loop cannot close). Default False: read
      `converged`, `status`, `result` (see `diffmech._result`).

    Works under `jax.vmap` (designs, initial states) and `jax.grad`. On a
    parallelogram's parallelogram mode the change points θA = 0, π are passed
    exactly (`is_parallelogram_mode`).

    **Returns:** a `Simulation`.
    """
    if mode not in _MODES:
        raise ValueError(f"fourbar.simulate_dynamics: `mode` must be one of {_MODES}; got {mode!r}")
    owner = "fourbar.simulate_dynamics"
    integ = as_integrator(owner, integrator, dict(separate))
    dt = fb.lengths.dtype
    xp = array_module(q0, Pi0, t0, t1, saveat, integ.rtol, integ.atol)
    integ = integ.resolved(owner, dt, xp)
    check_type("fourbar.simulate_dynamics", "drive", drive, (Drive, type(None)), "a fourbar.Drive or None")
    for name, v in (("t0", t0), ("t1", t1)):
        if np.ndim(v) != 0:
            raise ValueError(f"fourbar.simulate_dynamics: `{name}` must be one time (s); got shape {np.shape(v)}")
    if np.shape(q0) != (6,):
        raise ValueError(
            f"fourbar.simulate_dynamics: `q0` must hold the 6 attitude components (qA, qB, qD); "
            f"got shape {np.shape(q0)}"
        )
    if not is_traced(q0) and not np.any(np.asarray(q0, dtype=float)[:2]):
        raise ValueError(
            f"fourbar.simulate_dynamics: `q0` needs a non-zero qA (its crank angle); got {np.asarray(q0).tolist()}"
        )
    if np.shape(Pi0) != ():
        raise ValueError(
            f"fourbar.simulate_dynamics: `Pi0` must be a scalar (the crank momentum Π1); got shape {np.shape(Pi0)}"
        )
    check_integration("fourbar.simulate_dynamics", {"q0": q0, "Pi0": Pi0}, t0, t1, saveat, integ.max_steps)
    if not is_traced(t1, t0) and not float(t1) > float(t0):
        raise ValueError(f"fourbar.simulate_dynamics: need t1 > t0; got t0={t0}, t1={t1}")
    ts = xp.linspace(t0, t1, 501, dtype=dt) if saveat is None else xp.asarray(saveat, dtype=dt)
    drive = drive if drive is not None else Drive()
    # free motion, a constant and an affine torque as one law: one compiled program
    drive = Drive(torque=as_affine(drive.torque), damping=drive.damping)
    out = _simulate(
        fb,
        xp.asarray(q0, dtype=dt),
        xp.asarray(Pi0, dtype=dt),
        xp.asarray(t0, dtype=dt),
        xp.asarray(t1, dtype=dt),
        ts,
        drive,
        integ,
        mode,
        linearised,
    )
    return finish(out, throw, "fourbar.simulate_dynamics")


@filter_jit
def _simulate(fb, q0, Pi0, t0, t1, ts, drive, integ: Resolved, mode, linearised):
    # a non-finite initial state (possible only under a transformation: the eager entry
    # refuses one) is reported `nonfinite` at once: the integration runs on a finite
    # stand-in with a zero vector field (a few steps, not max_steps), every save masked
    nonfinite = ~(jnp.all(jnp.isfinite(q0)) & jnp.isfinite(Pi0))
    q0 = jnp.where(nonfinite, np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0]).astype(q0.dtype), q0)
    Pi0 = jnp.where(nonfinite, jnp.zeros_like(Pi0), Pi0)
    q_init = project(fb, q0)
    theta0 = jnp.arctan2(q_init[1], q_init[0])
    if mode == "minimal":
        rhs, y0, args = _rhs_minimal, jnp.stack([theta0, Pi0]), (fb, drive, linearised)
    elif mode == "paper":
        rhs, y0, args = _rhs_paper, jnp.concatenate([Pi0[None], q_init]), (fb, drive, linearised)
    else:
        rhs, y0, args = (
            _rhs_lie,
            jnp.concatenate([Pi0[None], jnp.zeros(3, q_init.dtype)]),
            (fb, drive, linearised, q_init),
        )
    term = diffrax.ODETerm(lambda t, y, a: jnp.where(nonfinite, jnp.zeros_like(y), rhs(t, y, a)))
    sol = diffrax.diffeqsolve(
        term,
        integ.solver,
        t0,
        t1,
        None,
        y0,
        args=args,  # dt0=None: first step chosen by the controller
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=integ.controller(),
        max_steps=integ.max_steps,
        adjoint=integ.adjoint,
        throw=False,
    )
    ys = sol.ys
    assert ys is not None  # saved at `ts`
    ok = jnp.ones(ts.shape, bool)
    if mode == "minimal":
        theta, Pi = ys[:, 0], ys[:, 1]
        q, ok = jax.vmap(lambda th: closure_q(fb, th))(theta)
    elif mode == "paper":
        Pi, q = ys[:, 0], ys[:, 1:]
        theta = jnp.unwrap(jnp.arctan2(q[:, 1], q[:, 0]))
    else:
        Pi, q = ys[:, 0], jax.vmap(lambda p: _rotate(q_init, p))(ys[:, 1:])
        theta = theta0 + ys[:, 1]
    s = jax.vmap(lambda qq: sigma(fb, qq, linearised))(q)
    H = energy(fb, Pi, q)
    T = Pi**2 / (2 * s)
    converged, status = save_status(sol.result, ys, ok)
    converged = converged & ~nonfinite
    status = jax.vmap(lambda st: RESULTS.where(nonfinite, RESULTS.nonfinite, st))(status)
    return Simulation(
        ts=ts,
        Pi=Pi,
        q=q,
        theta_A=theta,
        omega_A=Pi / s,
        energy=H,
        residual=_k.closure_residual(fb, q),
        energy_drift=jnp.max(jnp.abs(H - H[0])) / jnp.max(T),
        converged=converged,
        status=status,
        solver_result=sol.result,
        num_steps=sol.stats["num_accepted_steps"],
    )


# the former name (one version): integrating the equations of motion in time is
# `simulate_dynamics` in every family
simulate = renamed(simulate_dynamics, "fourbar.simulate", "fourbar.simulate_dynamics")
