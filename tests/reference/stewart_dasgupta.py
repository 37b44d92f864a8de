"""Independent reference: inverse dynamics of the seed-002 Gough-Stewart platform.

Newton-Euler formulation in the manner of Dasgupta & Mruthyunjaya (1998), written
from ``docs/parallel_models.md`` only; it is independent of ``diffmech`` (no screws,
no loop-closure solver, no finite differences).

* Kinematics in closed form from the prescribed platform pose (R(t), P(t)):
  C_p = P + R (C_p_home - P0), u = (C - A)/|C - A|, leg length l = |C - A|,
  actuator extension d = l - 0.05.  The leg (fixed and moving parts rotate together)
  has orientation R_leg = [e5, u x e5, u] [x', u0 x x', u0]^T with
  e6 = R y_l (second U axis, fixed in the platform) and e5 = unit(e6 x u) (first U
  axis, fixed in the moving leg), so the spin of the leg about u is kept exactly.
  Time derivatives (velocities, angular velocities, accelerations) are exact,
  by forward-mode AD (jax.jvp) of these pose functions in float64.
* Per leg: unknowns f_C (force of the platform on the moving leg at C) and mu (the
  U-joint torque mu n, n = e5 x e6).  Moments of the whole leg about the base
  sphere A (the S reaction and the internal P-joint wrench drop out):
      (C - A) x f_C + mu n = sum_i [ m_i (c_i - A) x (a_i - g) + J_i b + w x J_i w ].
* Platform: m (a_P - g) = F_ext - sum f_C,
  J b + w x J w = M_ext - sum [(C_p - P) x f_C + mu_p n_p]   (moments about P).
* 24 linear equations in 24 unknowns (np.linalg.solve, residual checked), then the
  actuator force F_p = u . (m2 (a2 - g) - f_C) from the moving leg's balance along u
  (F_p > 0 when the fixed leg pushes the moving leg towards C).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

__all__ = ["pose", "actuator_forces", "leg_lengths", "kinetic_energy"]

# ---- data (docs/parallel_models.md, seed 002) --------------------------------------
RB, RP, L_AB, L_AC = 0.05, 0.02, 0.05, 0.1
H0 = L_AC * np.cos(np.pi / 6)
P0 = np.array([0.0, 0.0, H0])
G = np.array([0.0, 0.0, -9.81])
M1, M2, MP = 3.0, 1.0, 10.0  # fixed leg, moving leg, platform
RHO, LL = 0.005, 0.05  # leg cylinder radius, length
J_PLAT = np.diag([0.001, 0.001, 0.002])  # about the COM, home orientation = I
AMP = dict(a=0.005, c=0.0005, alpha=0.1, beta=0.05, gamma=0.1)


def _geometry():
    phi = np.arange(6) * np.pi / 3
    s = np.where(np.arange(6) % 2 == 0, 1.0, -1.0)  # p odd -> +1
    dlt = np.arccos(RP / (2 * RB))
    A = RB * np.stack([np.cos(phi), np.sin(phi), np.zeros(6)], 1)
    psi = phi + s * dlt
    C = np.stack([RP * np.cos(psi), RP * np.sin(psi), np.full(6, H0)], 1)
    u0 = (C - A) / np.linalg.norm(C - A, axis=1, keepdims=True)
    hz = (C - A) * np.array([1.0, 1.0, 0.0])
    h = hz / np.linalg.norm(hz, axis=1, keepdims=True)
    xl = -h
    yl = np.cross(np.array([0.0, 0.0, 1.0]), xl)
    xp = np.cos(np.pi / 6) * xl + np.sin(np.pi / 6) * np.array([0.0, 0.0, 1.0])
    frame0 = np.stack([xp, np.cross(u0, xp), u0], 2)  # columns x', u0 x x', u0
    return A, C, u0, yl, xp, frame0


A_J, C_HOME, U0, YL, XP, FRAME0 = _geometry()


def _leg_inertia(m):
    ja, jt = m * RHO**2 / 2, m * (3 * RHO**2 + LL**2) / 12
    return np.stack([jt * np.eye(3) + (ja - jt) * np.outer(u, u) for u in U0])


J1_HOME, J2_HOME = _leg_inertia(M1), _leg_inertia(M2)


def _rx(q):
    c, s = jnp.cos(q), jnp.sin(q)
    return jnp.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _ry(q):
    c, s = jnp.cos(q), jnp.sin(q)
    return jnp.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _rz(q):
    c, s = jnp.cos(q), jnp.sin(q)
    return jnp.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _pose_j(t):
    a, c = AMP["a"], AMP["c"]
    al = AMP["alpha"] * (1 - jnp.cos(t))
    be = AMP["beta"] * jnp.sin(t)
    ga = -AMP["gamma"] * (1 - jnp.cos(t))
    R = _rz(ga) @ _ry(be) @ _rx(al)
    P = jnp.asarray(P0) + jnp.array([-a * jnp.sin(t), a * (1 - jnp.cos(t)), c * t])
    return R, P


def pose(t):
    """Platform pose (R (3,3), P (3,)) of the spiral trajectory at time t."""
    R, P = _pose_j(jnp.asarray(t, dtype=jnp.float64))
    return np.asarray(R), np.asarray(P)


def _unit(v):
    return v / jnp.linalg.norm(v, axis=-1, keepdims=True)


def _config(t):
    """(R_plat, P, R_legs (6,3,3), c1 (6,3), c2 (6,3), C (6,3), length (6,), n (6,3))."""
    R, P = _pose_j(t)
    C = P + (jnp.asarray(C_HOME) - jnp.asarray(P0)) @ R.T
    d = C - jnp.asarray(A_J)
    ell = jnp.linalg.norm(d, axis=1)
    u = d / ell[:, None]
    e6 = jnp.asarray(YL) @ R.T
    e5 = _unit(jnp.cross(e6, u))
    frame = jnp.stack([e5, jnp.cross(u, e5), u], 2)
    R_leg = frame @ jnp.transpose(jnp.asarray(FRAME0), (0, 2, 1))
    c1 = jnp.asarray(A_J) + 0.5 * L_AB * u
    c2 = C - 0.5 * LL * u
    n = jnp.cross(e5, e6)
    return R, P, R_leg, c1, c2, C, ell, n


def _d1(t):
    return jax.jvp(_config, (t,), (jnp.ones_like(t),))


def _d2(t):
    (q, dq), (_, ddq) = jax.jvp(_d1, (t,), (jnp.ones_like(t),))
    return q, dq, ddq


def _vee(S):
    return 0.5 * jnp.stack([S[..., 2, 1] - S[..., 1, 2], S[..., 0, 2] - S[..., 2, 0], S[..., 1, 0] - S[..., 0, 1]], -1)


def _mt(X):
    return jnp.swapaxes(X, -1, -2)


@jax.jit
def _state(t):
    """All kinematic quantities at time t (exact derivatives)."""
    q, dq, ddq = _d2(t)
    R, P, RL, c1, c2, C, ell, n = q
    dR, dP, dRL, dc1, dc2, _, dell, _ = dq
    ddR, ddP, ddRL, ddc1, ddc2, _, _, _ = ddq
    w, b = _vee(dR @ R.T), _vee(ddR @ R.T)  # (dR dR^T is symmetric)
    wl, bl = _vee(dRL @ _mt(RL)), _vee(ddRL @ _mt(RL))
    return dict(
        R=R,
        P=P,
        RL=RL,
        c1=c1,
        c2=c2,
        C=C,
        ell=ell,
        n=n,
        dell=dell,
        w=w,
        b=b,
        wl=wl,
        bl=bl,
        vP=dP,
        aP=ddP,
        v1=dc1,
        a1=ddc1,
        v2=dc2,
        a2=ddc2,
    )


def _ke(t):
    R, P, RL, c1, c2, C, ell, n = _config(t)
    dR, dP, dRL, dc1, dc2 = _d1(t)[1][:5]
    w, wl = _vee(dR @ R.T), _vee(dRL @ _mt(RL))
    Jp = R @ J_PLAT @ R.T
    J1 = RL @ J1_HOME @ _mt(RL)
    J2 = RL @ J2_HOME @ _mt(RL)
    ke = 0.5 * MP * dP @ dP + 0.5 * w @ Jp @ w
    ke += 0.5 * M1 * jnp.sum(dc1 * dc1) + 0.5 * jnp.einsum("pi,pij,pj->", wl, J1, wl)
    ke += 0.5 * M2 * jnp.sum(dc2 * dc2) + 0.5 * jnp.einsum("pi,pij,pj->", wl, J2, wl)
    return ke


_ke_jit = jax.jit(_ke)


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _solve(st, F_ext, M_ext):
    """Assemble and solve the 24 x 24 Newton-Euler system; returns (F_p (6,), residual)."""
    st = {k: np.asarray(v) for k, v in st.items()}
    A = np.zeros((24, 24))
    rhs = np.zeros(24)
    R, RL, w, wl, bl = st["R"], st["RL"], st["w"], st["wl"], st["bl"]
    for p in range(6):
        Ap, Cp, n = A_J[p], st["C"][p], st["n"][p]
        J1 = RL[p] @ J1_HOME[p] @ RL[p].T
        J2 = RL[p] @ J2_HOME[p] @ RL[p].T
        h = (
            M1 * np.cross(st["c1"][p] - Ap, st["a1"][p] - G)
            + M2 * np.cross(st["c2"][p] - Ap, st["a2"][p] - G)
            + (J1 + J2) @ bl[p]
            + np.cross(wl[p], (J1 + J2) @ wl[p])
        )
        A[3 * p : 3 * p + 3, 3 * p : 3 * p + 3] = _skew(Cp - Ap)
        A[3 * p : 3 * p + 3, 18 + p] = n
        rhs[3 * p : 3 * p + 3] = h
        # platform: -sum f_C = m (a_P - g) - F_ext ; -sum[(C-P) x f_C + mu n] = J b + w x J w - M_ext
        A[18:21, 3 * p : 3 * p + 3] = -np.eye(3)
        A[21:24, 3 * p : 3 * p + 3] = -_skew(Cp - st["P"])
        A[21:24, 18 + p] = -n
    Jp = R @ J_PLAT @ R.T
    rhs[18:21] = MP * (st["aP"] - G) - F_ext
    rhs[21:24] = Jp @ st["b"] + np.cross(w, Jp @ w) - M_ext
    x = np.linalg.solve(A, rhs)
    res = np.linalg.norm(A @ x - rhs) / max(np.linalg.norm(rhs), 1e-300)
    fC = x[:18].reshape(6, 3)
    u = (st["C"] - A_J) / st["ell"][:, None]
    Fp = np.einsum("pi,pi->p", u, M2 * (st["a2"] - G) - fC)
    return Fp, res


def actuator_forces(times, F_ext=(0, 0, 10.0), M_ext=(10.0, 0, 0)):
    """Six actuator (P-joint) forces along the trajectory, shape (N, 6)."""
    F_ext, M_ext = np.asarray(F_ext, float), np.asarray(M_ext, float)
    out = []
    for t in np.atleast_1d(np.asarray(times, float)):
        Fp, res = _solve(_state(jnp.float64(t)), F_ext, M_ext)
        assert res < 1e-10, f"Newton-Euler system residual {res:.2e} at t={t}"
        out.append(Fp)
    return np.array(out)


def leg_lengths(times):
    """Leg lengths |C_p - A_p| (m), shape (N, 6); the actuator extension is this - 0.05."""
    return np.array([np.asarray(_config(jnp.float64(t))[6]) for t in np.atleast_1d(np.asarray(times, float))])


def kinetic_energy(times):
    """Total kinetic energy of the 12 leg parts and the platform, shape (N,)."""
    return np.array([float(_ke_jit(jnp.float64(t))) for t in np.atleast_1d(np.asarray(times, float))])


if __name__ == "__main__":
    F_ext, M_ext = np.array([0, 0, 10.0]), np.array([10.0, 0, 0])
    np.set_printoptions(precision=10, linewidth=150)
    for t in (0.0, 1.3, 5.0):
        st = {k: np.asarray(v) for k, v in _state(jnp.float64(t)).items()}
        Fp = actuator_forces([t])[0]
        # power balance: sum F_p d' = dKE/dt - P_gravity - P_external
        h = 1e-4
        dke = (kinetic_energy([t + h])[0] - kinetic_energy([t - h])[0]) / (2 * h)
        dke_exact = float(jax.jvp(_ke, (jnp.float64(t),), (jnp.float64(1.0),))[1])
        p_grav = MP * G @ st["vP"] + M1 * np.sum(st["v1"] @ G) + M2 * np.sum(st["v2"] @ G)
        p_ext = F_ext @ st["vP"] + M_ext @ st["w"]
        p_act = Fp @ st["dell"]
        scale = abs(p_act) + abs(dke_exact) + abs(p_grav) + abs(p_ext)
        print(f"t = {t}")
        print("  leg lengths    :", leg_lengths([t])[0])
        print("  actuator forces:", Fp)
        print(f"  power balance residual (exact dKE/dt)  : {(p_act - (dke_exact - p_grav - p_ext)) / scale:.3e}")
        print(f"  power balance residual (central diff.) : {(p_act - (dke - p_grav - p_ext)) / scale:.3e}")
