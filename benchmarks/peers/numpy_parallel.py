"""Peer baseline: plain NumPy per-step loop for the parallel mechanisms of seeds 002/004.

An independent, "typical engineer" implementation (no diffmech, no JAX) of the
one-step inverse kinematics and the Newton-Euler wrench solve of the Gough-Stewart
platform (seed 002) and the 3UPS-UPU-S (seed 004), with the models of
``docs/parallel_models.md``.  It is the baseline the jitted library version is
compared against: an ordinary Python ``for`` loop over time steps, vectorised
within a step over the chains.

Conventions: twist (w; v_O), wrench (f; tau about O), power = twist^T N wrench,
N = [[0, I], [I, 0]].  Unit screw of R joint: (e; r x e); of P joint: (0; e).

Per step k (t_k = k dt):

1. forward kinematics by the product of exponentials with the home screws xi_j;
   current space screw of joint j = Ad(g_{j-1}) xi_j;
2. platform twist and spatial acceleration from the exact derivatives of the
   trajectory (w from dR/dt R^T, v_O = dP/dt + P x w);
3. per chain q_dot = (S^T S)^{-1} S^T V_P (Eq. 14 of seed 002), q += dt q_dot (Eq. 15);
4. body twists V_b = sum_{j<=b} S_j q_dot_j, leg accelerations by the backward
   difference (V_b,k - V_b,k-1)/dt (Eq. 17), A_b,0 := A_b,1;
5. Newton-Euler of every massive body, with one unknown wrench per chain (the
   wrench w_end of its last joint on the platform): the wrench through joint j is
   w_end + sum of D_b = (momentum rate - gravity) of the massive bodies downstream of
   j in that chain.  Equations: platform balance (6) and xi_j^T N w_j = 0 for every
   passive joint; solved by np.linalg.lstsq (minimum-norm in the w_end's when
   underdetermined, as for the redundantly actuated 3UPS-UPU-S).  Actuator force
   of a P joint = xi_j^T N w_j = e_j . f_j (force from the lower to the upper limb
   along the leg).
"""

from __future__ import annotations

import time

import numpy as np

GRAVITY = np.array([0.0, 0.0, -9.81])
_N6 = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])


# --------------------------------------------------------------------------- helpers
def _hat(w):
    """Skew matrices of a (..., 3) array."""
    w = np.asarray(w, dtype=float)
    K = np.zeros(w.shape[:-1] + (3, 3))
    K[..., 0, 1], K[..., 0, 2] = -w[..., 2], w[..., 1]
    K[..., 1, 0], K[..., 1, 2] = w[..., 2], -w[..., 0]
    K[..., 2, 0], K[..., 2, 1] = -w[..., 1], w[..., 0]
    return K


def _vee(K):
    return np.array([K[2, 1], K[0, 2], K[1, 0]])


def _elem_rot(axis, th, dth, ddth):
    """Elementary rotation about coordinate axis and its first two time derivatives."""
    c, s = np.cos(th), np.sin(th)
    R = np.eye(3)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    # dR/dth = R K, K = hat(e_axis); d2R/dth2 = R K^2
    K = _hat(np.eye(3)[axis])
    RK = R @ K
    RKK = RK @ K
    return R, RK * dth, RKK * dth**2 + RK * ddth


def _compose(*factors):
    """Product R = R1 R2 R3 ... with derivatives, factors given as (R, dR, ddR)."""
    R, dR, ddR = factors[0]
    for R2, dR2, ddR2 in factors[1:]:
        R, dR, ddR = (R @ R2, dR @ R2 + R @ dR2, ddR @ R2 + 2.0 * dR @ dR2 + R @ ddR2)
    return R, dR, ddR


def _platform_motion(R, dR, ddR, P, dP, ddP):
    """Twist (w; v_O), spatial acceleration (dw; a_O) of a body with pose (R, P)."""
    w = _vee(dR @ R.T)
    dw = _vee(ddR @ R.T + dR @ dR.T)
    v_O = dP + np.cross(P, w)
    a_O = ddP + np.cross(dP, w) + np.cross(P, dw)
    return np.concatenate([w, v_O]), np.concatenate([dw, a_O])


def _rev(e, r):
    e = np.asarray(e, float)
    return np.concatenate([e, np.cross(r, e)])


def _pri(e):
    return np.concatenate([np.zeros(3), np.asarray(e, float)])


def _momentum_rate_minus_gravity(m, c, J, V, A):
    """D = d/dt(momentum screw) - gravity wrench for bodies (vectorised over axis 0).

    m (B,), c (B,3) COM, J (B,3,3) world inertia about COM, V, A (B,6) twist and
    spatial acceleration.  Returns (B,6) wrench (f; tau about O)."""
    w, vO = V[:, :3], V[:, 3:]
    dw, aO = A[:, :3], A[:, 3:]
    vc = vO + np.cross(w, c)
    ac = aO + np.cross(dw, c) + np.cross(w, vc)
    f = m[:, None] * (ac - GRAVITY)
    Jw = np.einsum("bij,bj->bi", J, w)
    tau = np.cross(c, f) + np.einsum("bij,bj->bi", J, dw) + np.cross(w, Jw)
    return np.concatenate([f, tau], axis=1)


# --------------------------------------------------------------------------- model
class _Mechanism:
    """Chains padded to a common number of joints (padding: zero screw, q = 0)."""

    def __init__(self, chains, platform_mass, platform_J, trajectory, load):
        # chains: list of dict(xi=(n,6), home=(n,), kinds=str, bodies=[(j, m, c, J)])
        C = len(chains)
        n = max(len(ch["kinds"]) for ch in chains)
        self.C, self.n = C, n
        self.n_joints = np.array([len(ch["kinds"]) for ch in chains])
        self.xi = np.zeros((C, n, 6))
        self.home = np.full((C, n), np.nan)
        self.pad = np.ones((C, n))
        passive, act = [], []
        for c, ch in enumerate(chains):
            k = len(ch["kinds"])
            self.xi[c, :k] = ch["xi"]
            self.home[c, :k] = ch["home"]
            self.pad[c, :k] = 0.0
            for j, kind in enumerate(ch["kinds"]):
                (act if kind == "A" else passive).append((c, j))
        self.pas_c, self.pas_j = (np.array(a) for a in zip(*passive))
        self.act_c, self.act_j = (np.array(a) for a in zip(*act))
        bodies = [(c, j, m, cc, J) for c, ch in enumerate(chains) for (j, m, cc, J) in ch["bodies"]]
        self.b_c = np.array([b[0] for b in bodies])
        self.b_j = np.array([b[1] for b in bodies])
        self.b_m = np.array([b[2] for b in bodies], float)
        self.b_com = np.array([b[3] for b in bodies], float)
        self.b_J = np.array([b[4] for b in bodies], float)
        self.pm = float(platform_mass)
        self.pJ = np.asarray(platform_J, float)
        self.trajectory = trajectory  # t -> (R, dR, ddR, P, dP, ddP, com)
        self.load = load  # (t, R, P) -> external wrench on the platform
        # constant part of the linear system: platform rows
        self.n_rows = 6 + len(self.pas_c)
        self.A0 = np.zeros((self.n_rows, 6 * C))
        for c in range(C):
            self.A0[:6, 6 * c : 6 * c + 6] = np.eye(6)
        self.rows = 6 + np.arange(len(self.pas_c))
        self.cols = 6 * self.pas_c[:, None] + np.arange(6)

    # ---- kinematics ------------------------------------------------------
    def fk(self, q):
        """Space screws S (C,6,n) and poses (R_all (C,n,3,3), p_all (C,n,3)) after each joint."""
        C, n = self.C, self.n
        R = np.broadcast_to(np.eye(3), (C, 3, 3)).copy()
        p = np.zeros((C, 3))
        S = np.zeros((C, 6, n))
        R_all = np.empty((C, n, 3, 3))
        p_all = np.empty((C, n, 3))
        eye = np.eye(3)
        for j in range(n):
            w, v = self.xi[:, j, :3], self.xi[:, j, 3:]
            Rw = np.einsum("cab,cb->ca", R, w)
            Rv = np.einsum("cab,cb->ca", R, v)
            S[:, :3, j] = Rw
            S[:, 3:, j] = np.cross(p, Rw) + Rv
            # exp(xi q): Rodrigues (|w| = 1 or w = 0 for P joints / padding)
            th = q[:, j][:, None, None]
            K = _hat(w)
            K2 = K @ K
            Re = eye + np.sin(th) * K + (1.0 - np.cos(th)) * K2
            Ve = th * eye + (1.0 - np.cos(th)) * K + (th - np.sin(th)) * K2
            pe = np.einsum("cab,cb->ca", Ve, v)
            p = p + np.einsum("cab,cb->ca", R, pe)
            R = R @ Re
            R_all[:, j], p_all[:, j] = R, p
        return S, R_all, p_all

    # ---- dynamics ----------------------------------------------------------
    def dynamics(self, st, A_legs):
        """Actuator forces and lstsq residual for one step.

        st: dict with the step's S, R_all, p_all, Vb (C,6,n) and platform data."""
        S, R_all, p_all, Vb = st["S"], st["R_all"], st["p_all"], st["Vb"]
        # legs
        Rb = R_all[self.b_c, self.b_j]
        com = np.einsum("bij,bj->bi", Rb, self.b_com) + p_all[self.b_c, self.b_j]
        J = Rb @ self.b_J @ Rb.transpose(0, 2, 1)
        V = Vb[self.b_c, :, self.b_j]
        A = A_legs[self.b_c, :, self.b_j]
        D = _momentum_rate_minus_gravity(self.b_m, com, J, V, A)
        # downstream sums s[c, j] = sum_{massive b >= j in chain c} D_b
        Dm = np.zeros((self.C, self.n, 6))
        np.add.at(Dm, (self.b_c, self.b_j), D)
        s = np.cumsum(Dm[:, ::-1], axis=1)[:, ::-1]
        # platform
        Rp = st["Rp"]
        Jp = Rp @ self.pJ @ Rp.T
        Dp = _momentum_rate_minus_gravity(
            np.array([self.pm]), st["com_p"][None], Jp[None], st["VP"][None], st["AP"][None]
        )[0]
        # linear system in the w_end's
        A_sys = self.A0.copy()
        b = np.empty(self.n_rows)
        b[:6] = Dp - st["F_ext"]
        xi_p = S[self.pas_c, :, self.pas_j]  # (np, 6)
        Nxi = xi_p @ _N6  # rows xi^T N
        A_sys[self.rows[:, None], self.cols] = Nxi
        b[6:] = -np.einsum("ri,ri->r", Nxi, s[self.pas_c, self.pas_j])
        x, *_ = np.linalg.lstsq(A_sys, b, rcond=None)
        resid = np.max(np.abs(A_sys @ x - b)) / max(1.0, np.max(np.abs(b)))
        w_end = x.reshape(self.C, 6)
        w_act = w_end[self.act_c] + s[self.act_c, self.act_j]
        xi_a = S[self.act_c, :, self.act_j]
        forces = np.einsum("ri,ri->r", xi_a @ _N6, w_act)
        return forces, resid

    # ---- the per-step loop ---------------------------------------------------
    def run(self, n_steps, dt):
        C, n = self.C, self.n
        q = np.zeros((C, n))
        labels = np.empty((n_steps, C, n))
        rates = np.empty((n_steps, C, n))
        forces = np.empty((n_steps, len(self.act_c)))
        resid = np.empty(n_steps)
        kin_resid = np.empty(n_steps)
        eye_pad = self.pad[:, :, None] * np.eye(n)
        mask = np.where(self.pad > 0, np.nan, 0.0)
        Vb_prev = st0 = None
        for k in range(n_steps):
            t = k * dt
            R, dR, ddR, P, dP, ddP, com_p = self.trajectory(t)
            VP, AP = _platform_motion(R, dR, ddR, P, dP, ddP)
            S, R_all, p_all = self.fk(q)
            St = S.transpose(0, 2, 1)
            qd = np.linalg.solve(St @ S + eye_pad, (St @ VP)[..., None])[..., 0]  # (C, n)
            SQ = S * qd[:, None, :]
            Vb = np.cumsum(SQ, axis=2)  # body twists
            kin_resid[k] = np.max(np.abs(Vb[np.arange(C), :, self.n_joints - 1] - VP))
            labels[k] = self.home + q + mask
            rates[k] = qd + mask
            q = q + dt * qd
            st = dict(S=S, R_all=R_all, p_all=p_all, Vb=Vb, Rp=R, com_p=com_p, VP=VP, AP=AP, F_ext=self.load(t, R, P))
            if k == 0:
                st0 = st
            else:
                A_legs = (Vb - Vb_prev) / dt
                forces[k], resid[k] = self.dynamics(st, A_legs)
                if k == 1:
                    forces[0], resid[0] = self.dynamics(st0, A_legs)
            Vb_prev = Vb
        if n_steps == 1:
            forces[0], resid[0] = self.dynamics(st0, np.zeros_like(Vb_prev))
        return dict(labels=labels, rates=rates, actuator_forces=forces, residual=resid, kinematic_residual=kin_resid)


# --------------------------------------------------------------------------- Stewart
def _cylinder_inertia(m, u, rho, ell):
    uu = np.outer(u, u)
    return m * (3 * rho**2 + ell**2) / 12.0 * (np.eye(3) - uu) + m * rho**2 / 2.0 * uu


def _stewart_model(a=0.005, c=0.0005, rot_amp=0.1, rot_amp_y=0.05):
    Rb, rp, L = 0.05, 0.02, 0.1
    tilt = np.pi / 6
    h0 = L * np.cos(tilt)
    Delta = np.arccos(rp / (2 * Rb))
    z = np.array([0.0, 0.0, 1.0])
    chains = []
    for k in range(6):
        phi = k * np.pi / 3
        sgn = 1.0 if k % 2 == 0 else -1.0
        A = Rb * np.array([np.cos(phi), np.sin(phi), 0.0])
        psi = phi + sgn * Delta
        Cp = np.array([rp * np.cos(psi), rp * np.sin(psi), h0])
        u = (Cp - A) / np.linalg.norm(Cp - A)
        hz = (Cp - A) * np.array([1, 1, 0])
        h = hz / np.linalg.norm(hz)
        xl = -h
        yl = np.cross(z, xl)
        xp = np.cos(tilt) * xl + np.sin(tilt) * z
        xi = np.array([_rev(yl, A), _rev(xp, A), _rev(u, A), _pri(u), _rev(xp, Cp), _rev(yl, Cp)])
        home = np.array([-np.pi / 6, 0.0, 0.0, 0.05, 0.0, np.pi / 6])
        ell, rho = 0.05, 0.005
        bodies = [
            (2, 3.0, A + 0.025 * u, _cylinder_inertia(3.0, u, rho, ell)),
            (3, 1.0, Cp - 0.025 * u, _cylinder_inertia(1.0, u, rho, ell)),
        ]
        chains.append(dict(xi=xi, home=home, kinds="RRRARR", bodies=bodies))
    P0 = np.array([0.0, 0.0, h0])

    def trajectory(t):
        st, ct = np.sin(t), np.cos(t)
        al = (rot_amp * (1 - ct), rot_amp * st, rot_amp * ct)
        be = (rot_amp_y * st, rot_amp_y * ct, -rot_amp_y * st)
        ga = (-rot_amp * (1 - ct), -rot_amp * st, -rot_amp * ct)
        R, dR, ddR = _compose(_elem_rot(2, *ga), _elem_rot(1, *be), _elem_rot(0, *al))
        P = P0 + np.array([-a * st, a * (1 - ct), c * t])
        dP = np.array([-a * ct, a * st, c])
        ddP = np.array([a * st, a * ct, 0.0])
        return R, dR, ddR, P, dP, ddP, P

    F_P, M_P = np.array([0.0, 0.0, 10.0]), np.array([10.0, 0.0, 0.0])

    def load(t, R, P):
        return np.concatenate([F_P, np.cross(P, F_P) + M_P])

    return _Mechanism(chains, 10.0, np.diag([0.001, 0.001, 0.002]), trajectory, load)


def stewart(n_steps=10_000, dt=1e-3):
    """Gough-Stewart platform (seed 002).  labels, rates: (N, 6 chains, 6 joints);
    actuator_forces: (N, 6) prismatic forces [N]; residual: (N,) lstsq residual."""
    return _stewart_model().run(n_steps, dt)


# --------------------------------------------------------------------------- 3UPS-UPU-S
def _ups_upu_s_model(a=0.1, c=-0.1):
    H, Rb, rp, L = 3 * np.sqrt(3) / 10, 0.8, 0.5, 0.6
    z = np.array([0.0, 0.0, 1.0])
    m_limb = 1.42
    J_limb = np.diag([0.0556, 1.14, 1.16])
    chains = []
    for i, deg in enumerate([180.0, 270.0, 0.0, 90.0]):
        phi = np.deg2rad(deg)
        rho = np.array([np.cos(phi), np.sin(phi), 0.0])
        tt = np.array([-np.sin(phi), np.cos(phi), 0.0])
        A = Rb * rho
        Cp = rp * rho + H * z
        u = (Cp - A) / L
        w = np.cross(tt, u)
        F = np.column_stack([u, tt, np.cross(u, tt)])  # limb frame at home
        Jh = F @ J_limb @ F.T
        xi = [_rev(rho, A), _rev(tt, A), _pri(u), _rev(w, Cp), _rev(tt, Cp)]
        home = [0.0, -np.pi / 6, 0.3, 0.0, np.pi / 6]
        kinds = "RRARR"
        if i > 0:  # UPS: spherical at C
            xi.append(_rev(u, Cp))
            home.append(0.0)
            kinds += "R"
        bodies = [(1, m_limb, A + 0.15 * u, Jh), (2, m_limb, Cp - 0.15 * u, Jh)]
        chains.append(dict(xi=np.array(xi), home=np.array(home), kinds=kinds, bodies=bodies))
    O = np.zeros(3)
    chains.append(
        dict(
            xi=np.array([_rev([1, 0, 0], O), _rev([0, 1, 0], O), _rev([0, 0, 1], O)]),
            home=np.zeros(3),
            kinds="RRR",
            bodies=[],
        )
    )
    E0 = H * z

    def trajectory(t):
        st, ct = np.sin(t), np.cos(t)
        al = (a * ct + c, -a * st, -a * ct)
        be = (a * st, a * ct, -a * st)
        R, dR, ddR = _compose(_elem_rot(0, *al), _elem_rot(1, *be))
        E, dE, ddE = R @ E0, dR @ E0, ddR @ E0
        return R, dR, ddR, E, dE, ddE, E

    F_E, T_E = np.array([0.0, 0.0, 1000.0]), np.array([1000.0, 0.0, 0.0])

    def load(t, R, E):
        return np.concatenate([F_E, np.cross(E, F_E) + T_E])

    return _Mechanism(chains, 2.87, np.diag([68.7, 68.7, 92.1]), trajectory, load)


def ups_upu_s(n_steps=10_000, dt=1e-3):
    """3UPS-UPU-S (seed 004).  labels, rates: (N, 5 chains, 6) padded with NaN
    (chain 1 UPU has 5 joints, chains 2-4 UPS 6, chain 5 S 3); actuator_forces:
    (N, 4) prismatic forces [N] of chains 1-4 (minimum-norm over the chains'
    end wrenches); residual: (N,) lstsq residual."""
    return _ups_upu_s_model().run(n_steps, dt)


# --------------------------------------------------------------------------- main
if __name__ == "__main__":
    np.set_printoptions(precision=6, suppress=True, linewidth=120)
    N = 1000
    for name, fn in [("Gough-Stewart (002)", stewart), ("3UPS-UPU-S (004)", ups_upu_s)]:
        fn(n_steps=20)  # warm-up
        t0 = time.perf_counter()
        out = fn(n_steps=N)
        wall = time.perf_counter() - t0
        print(f"\n=== {name}: N = {N}, {wall:.3f} s, {wall / N * 1e6:.1f} us/step ({wall / N:.3e} s/step)")
        print("P labels at step 0:", out["labels"][0][:, 3 if "Stewart" in name else 2][: 4 if "UPU" in name else 6])
        print(f"leg labels at step {N - 1} (rows = chains, NaN = no joint):")
        print(out["labels"][-1])
        for k in (0, 500, 999):
            print(f"actuator forces at step {k}:", out["actuator_forces"][k])
        print(f"max lstsq residual (relative): {out['residual'].max():.2e}")
        print(f"max kinematic residual |S qd - V_P| over steps: {out['kinematic_residual'].max():.2e}")
