"""Peer benchmark: MuJoCo forward dynamics of a planar linkage read from JSON.

Written for ``diffmech/linkage/data/theo_jansen.json`` (works for any planar
file of the same format whose prismatic joints can be made tree edges).

JSON semantics used
-------------------
* ``"R"`` joint: a pin at ``coords`` (initial configuration), shared by two or
  more links (a pin listed by k links makes all k coincide there).
* ``"P"`` joint: a line ``a x + b y + c = 0`` shared by exactly two links; the
  links keep their relative orientation and translate relative to each other
  along the line direction ``(b, -a) / hypot(a, b)`` (the offset ``c`` does not
  enter the dynamics).
* ``"tracer"``: a drawing point, ignored here.
* links: ``mass``, ``com`` (world, initial configuration), ``inertia`` (z, about
  the com); the ``ground`` link has no mass.  ``gravity`` (gx, gy).
* input: link ``L_in`` turns about joint ``J_in`` relative to the ground; ``u``
  is its rotation from the initial configuration (anticlockwise); the motor
  torque acts on ``L_in`` (and ``-tau`` on the ground).

How this maps onto MuJoCo
-------------------------
* Every link is a MuJoCo body.  Every body frame has the world orientation at
  the initial configuration, so ``qpos = 0`` IS the initial configuration and
  all local coordinates are world coordinates minus the body origin.  The
  ground is MuJoCo's world body.
* A spanning tree of the link graph (nodes = links, one edge per pair of links
  sharing a joint) is chosen by Kruskal's rule with priorities: first the input
  edge (so the input hinge is a tree DOF and ``u = qpos`` of that hinge), then
  every P edge (MuJoCo has no equality constraint that would close a prismatic
  pair, so P joints must be tree edges), then the R edges in order of their
  breadth-first depth from the ground (keeps the tree shallow).  The tree is
  then rooted at the ground.  Tree edges become ``hinge`` joints (axis z) placed
  at the pin (child body origin = pin), or a ``slide`` joint along the line's
  direction (child body origin = its com); a slide alone keeps the relative
  orientation fixed, as the P joint requires.
  For theo_jansen this gives (depth <= 2)::

      ground -> L1 (hinge J1, input)   ground -> L4 (hinge J5)   ground -> L5 (hinge J5)
      L1 -> L3 (hinge J2)              L4 -> L2 (slide J3)       L4 -> L6 (hinge J6)
      L5 -> L7 (hinge J4)

  i.e. the 0.05 kg slider block L2 slides on L4's line and is pinned to the
  crank L1 by a loop-closure constraint.
* Closures: for every R joint the links that list it are split into groups
  already joined by tree edges AT THAT JOINT; each further group is tied to the
  first by ``<connect site1=... site2=...>`` between two sites at the pin
  position (site form: the sites coincide at the initial configuration).
  theo_jansen: J2 (L1-L2), J4 (L5-L3), J7 (L6-L7) -> 3 connects = 6 planar
  rows; 7 tree DOFs - 6 = 1 DOF.  (The z row of every connect is identically
  satisfied and has a zero Jacobian for this planar tree.)
* ``<inertial>``: mass, pos = com, ``diaginertia = (I/2, I/2, I)``.  The x/y
  entries do not enter planar dynamics (angular velocity is along z, the
  inertia axes are aligned with z, so neither the z-z mass-matrix entries nor
  gyroscopic terms see them); a "small" x/y value is rejected by MuJoCo's
  compiler (A + B >= C), so the smallest equal value it accepts, I/2, is used.
* No geoms, contact disabled, no damping/armature/friction,
  gravity (gx, gy, 0).  Constraint softness: "default" = MuJoCo's defaults
  (solref (0.02, 1), solimp (0.9, 0.95, 0.001, 0.5, 2)); "stiff" = solref
  (2 dt, 1) -- exactly MuJoCo's ``refsafe`` lower bound on the time constant,
  so it is not altered -- and solimp (0.9999, 0.9999, 0.001, 0.5, 2).
  Integrators "Euler" (semi-implicit) and "RK4".
* Motor torque ``tau = tau0 + c * udot`` through a ``<general>`` actuator on the
  input hinge (gain 1, affine bias (0, 0, c), ctrl = tau0): MuJoCo evaluates it
  at every RK4 stage, so no Python is needed in the stepping loop.  Only this
  affine form is supported (``torque`` = None, a number, or ``(tau0, c)``).

Post-processing (independent of MuJoCo's energy / constraint bookkeeping)
-------------------------------------------------------------------------
At each save, ``mj_kinematics``/``mj_comPos``/``mj_comVel`` refresh the
position-dependent arrays for the current state (after ``mj_step`` they belong
to the state at the start of the step).  Then

* loop gap = max over connects of |site1 - site2| (``data.site_xpos``);
* E = T + V with, per moving body, the com velocity
  ``v = cvel_lin + w x (xipos - subtree_com[rootid])``, ``w = cvel_rot``,
  ``T = 1/2 m |v|^2 + 1/2 I w_z^2``, ``V = -m g . xipos``;
* W = int tau udot dt = tau0 (u - u0) + c int udot^2 dt, the last integral by
  composite Simpson over the per-step ``udot`` of the recorded run;
* energy_drift = max |E - E0 - W| / max T (over saves).
"""

from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path

import numpy as np

# the import guard, the stiff softness and the MJCF/timing helpers are the four-bar peer's
try:
    from .mujoco_fourbar import _HAVE_MUJOCO, STIFF_SOLIMP, _bare_loop, _f, _vec, available, mujoco
except ImportError:  # run as a script from benchmarks/peers
    from mujoco_fourbar import _HAVE_MUJOCO, STIFF_SOLIMP, _bare_loop, _f, _vec, available, mujoco

__all__ = ["available", "simulate", "throughput", "build"]

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "diffmech" / "linkage" / "data" / "theo_jansen.json"


# --------------------------------------------------------------------------- topology


def _read(path):
    with open(path) as fh:
        spec = json.load(fh)
    if spec.get("geometry", "planar") != "planar":
        raise ValueError("only planar linkages are supported")
    ground = spec["ground"]
    links = {}
    for name, v in spec["links"].items():
        if name == ground:
            jl = v if isinstance(v, list) else v["joints"]
            links[name] = dict(joints=list(jl), mass=0.0, inertia=0.0, com=(0.0, 0.0))
        else:
            links[name] = dict(
                joints=list(v["joints"]), mass=float(v["mass"]), inertia=float(v["inertia"]), com=tuple(v["com"])
            )
    joints = {n: dict(type=j["type"], coords=tuple(float(c) for c in j["coords"])) for n, j in spec["joints"].items()}
    g = tuple(float(x) for x in spec.get("gravity", (0.0, -9.81)))
    inp = spec["input"]
    if inp.get("type", "revolute") != "revolute":
        raise ValueError("only a revolute input is supported")
    return spec, ground, links, joints, g, inp["link"], inp["joint"]


def _topology(ground, links, joints, in_link, in_joint):
    """Spanning tree (rooted at ground) + closure list."""
    at = {j: [l for l in links if j in links[l]["joints"]] for j in joints}
    edges = []  # (jname, a, b)
    for j, ls in at.items():
        t = joints[j]["type"]
        if t == "tracer":
            continue
        if t == "P" and len(ls) != 2:
            raise ValueError(f"P joint {j} must be shared by exactly two links")
        for i in range(len(ls)):
            for k in range(i + 1, len(ls)):
                edges.append((j, ls[i], ls[k]))
    # BFS depth of each link from ground in the link graph
    depth = {ground: 0}
    frontier = [ground]
    while frontier:
        nxt = []
        for l in frontier:
            for j, a, b in edges:
                for x, y in ((a, b), (b, a)):
                    if x == l and y not in depth:
                        depth[y] = depth[l] + 1
                        nxt.append(y)
        frontier = nxt
    if len(depth) != len(links):
        raise ValueError("link graph is not connected")

    def prio(e):
        j, a, b = e
        if j == in_joint and {a, b} == {in_link, ground}:
            return (0, 0)
        if joints[j]["type"] == "P":
            return (1, 0)
        return (2, min(depth[a], depth[b]) + max(depth[a], depth[b]))

    order = sorted(range(len(edges)), key=lambda i: (prio(edges[i]), i))
    parent_uf = {l: l for l in links}

    def find(x):
        while parent_uf[x] != x:
            parent_uf[x] = parent_uf[parent_uf[x]]
            x = parent_uf[x]
        return x

    tree = []
    for i in order:
        j, a, b = edges[i]
        ra, rb = find(a), find(b)
        if ra != rb:
            parent_uf[ra] = rb
            tree.append(edges[i])
        elif joints[j]["type"] == "P":
            raise ValueError(f"P joint {j} cannot be a tree edge")
    if not any(j == in_joint and {a, b} == {in_link, ground} for j, a, b in tree):
        raise ValueError("input edge not in tree")
    # root the tree at ground
    parent = {ground: None}
    children = {l: [] for l in links}
    frontier = [ground]
    while frontier:
        nxt = []
        for l in frontier:
            for j, a, b in tree:
                for x, y in ((a, b), (b, a)):
                    if x == l and y not in parent:
                        parent[y] = (l, j)
                        children[l].append(y)
                        nxt.append(y)
        frontier = nxt
    # closures: per R joint, groups of links joined by tree edges at that joint
    closures = []
    for j, ls in at.items():
        if joints[j]["type"] != "R" or len(ls) < 2:
            continue
        grp = {l: l for l in ls}

        def gfind(x):
            while grp[x] != x:
                x = grp[x]
            return x

        for tj, a, b in tree:
            if tj == j:
                grp[gfind(a)] = gfind(b)
        reps = []
        for l in sorted(ls, key=lambda l: depth[l]):  # nearest-to-ground rep first
            r = gfind(l)
            if all(gfind(x) != r for x in reps):
                reps.append(l)
        for other in reps[1:]:
            closures.append((j, reps[0], other))
    return tree, parent, children, closures, depth


# --------------------------------------------------------------------------- model


class Linkage:
    """MJCF model of one linkage file + bookkeeping for post-processing."""

    def __init__(self, path, dt=1e-3, integrator="RK4", stiff=False, torque=None, mass_scale=None):
        if not _HAVE_MUJOCO:
            raise RuntimeError("mujoco is not installed")
        if integrator not in ("Euler", "RK4"):
            raise ValueError(f"integrator must be 'Euler' or 'RK4', got {integrator!r}")
        spec, ground, links, joints, g, in_link, in_joint = _read(path)
        self.ground, self.links, self.joints, self.gravity = ground, links, joints, g
        self.in_link, self.in_joint = in_link, in_joint
        self.tree, self.parent, self.children, self.closures, _ = _topology(ground, links, joints, in_link, in_joint)
        if torque is None:
            self.tau0, self.c = 0.0, 0.0
        elif np.isscalar(torque):
            self.tau0, self.c = float(torque), 0.0
        else:
            self.tau0, self.c = (float(x) for x in torque)
        self.driven = torque is not None
        self.dt = float(dt)
        self.xml = self._xml(dt, integrator, stiff, mass_scale or {})
        self.model = mujoco.MjModel.from_xml_string(self.xml)
        self.data = mujoco.MjData(self.model)
        m = self.model
        bid = lambda n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n)  # noqa: E731
        self.moving = [l for l in links if l != ground]
        self.body_ids = np.array([bid(l) for l in self.moving])
        self.inertia_z = np.array([links[l]["inertia"] for l in self.moving])
        self.inertia_z = self.inertia_z * np.array([mass_scale.get(l, 1.0) if mass_scale else 1.0 for l in self.moving])
        jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, f"t_{in_link}")
        self.iu_qpos = int(m.jnt_qposadr[jid])
        self.iu_qvel = int(m.jnt_dofadr[jid])
        self.site_pairs = np.array(
            [
                [
                    mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, f"c{k}_1"),
                    mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, f"c{k}_2"),
                ]
                for k in range(len(self.closures))
            ],
            dtype=int,
        ).reshape(-1, 2)

    # ---------------------------------------------------------------- MJCF
    def _origin(self, l):
        if l == self.ground:
            return (0.0, 0.0)
        p, j = self.parent[l]
        if self.joints[j]["type"] == "R":
            return self.joints[j]["coords"]
        return tuple(self.links[l]["com"])

    def _xml(self, dt, integrator, stiff, mass_scale):
        gx, gy = self.gravity
        eq_extra = ""
        if stiff:
            eq_extra = f' solref="{_vec(2.0 * dt, 1.0)}" solimp="{_vec(*STIFF_SOLIMP)}"'
        sites = {l: [] for l in self.links}
        for k, (j, a, b) in enumerate(self.closures):
            x, y = self.joints[j]["coords"]
            for s, l in ((1, a), (2, b)):
                ox, oy = self._origin(l)
                sites[l].append(f'<site name="c{k}_{s}" pos="{_vec(x - ox, y - oy, 0.0)}"/>')

        def body(l, ind):
            p, j = self.parent[l]
            ox, oy = self._origin(l)
            px, py = self._origin(p)
            lk = self.links[l]
            sc = mass_scale.get(l, 1.0)
            m, I = lk["mass"] * sc, lk["inertia"] * sc
            cx, cy = lk["com"]
            jt = self.joints[j]
            if jt["type"] == "R":
                jx = f'<joint name="t_{l}" type="hinge" axis="0 0 1" pos="0 0 0"/>'
            else:
                a, b, _c = jt["coords"]
                h = math.hypot(a, b)
                jx = f'<joint name="t_{l}" type="slide" axis="{_vec(b / h, -a / h, 0.0)}" pos="0 0 0"/>'
            pad = "  " * ind
            out = [
                f'{pad}<body name="{l}" pos="{_vec(ox - px, oy - py, 0.0)}">',
                f"{pad}  {jx}",
                f'{pad}  <inertial pos="{_vec(cx - ox, cy - oy, 0.0)}" mass="{_f(m)}" '
                f'diaginertia="{_vec(I / 2, I / 2, I)}"/>',
            ]
            out += [f"{pad}  {s}" for s in sites[l]]
            for ch in self.children[l]:
                out += body(ch, ind + 1)
            out.append(f"{pad}</body>")
            return out

        wb = [f"    {s}" for s in sites[self.ground]]
        for ch in self.children[self.ground]:
            wb += body(ch, 2)
        eqs = [
            f'    <connect name="{j}_{a}_{b}" site1="c{k}_1" site2="c{k}_2"{eq_extra}/>'
            for k, (j, a, b) in enumerate(self.closures)
        ]
        act = ""
        if self.driven:
            act = (
                "  <actuator>\n"
                f'    <general name="motor" joint="t_{self.in_link}" gaintype="fixed" gainprm="1" '
                f'biastype="affine" biasprm="{_vec(0.0, 0.0, self.c)}" ctrllimited="false" forcelimited="false"/>\n'
                "  </actuator>\n"
            )
        nl = "\n"
        return f"""<mujoco model="linkage">
  <compiler angle="radian"/>
  <option timestep="{_f(dt)}" integrator="{integrator}" gravity="{_vec(gx, gy, 0.0)}">
    <flag contact="disable"/>
  </option>
  <worldbody>
{nl.join(wb)}
  </worldbody>
  <equality>
{nl.join(eqs)}
  </equality>
{act}</mujoco>
"""

    # ---------------------------------------------------------------- state
    def reset(self):
        mujoco.mj_resetData(self.model, self.data)  # qpos0 = 0 = initial configuration, qvel = 0
        if self.driven:
            self.data.ctrl[0] = self.tau0

    def refresh(self):
        """Position/velocity-dependent arrays for the CURRENT qpos/qvel (no solver)."""
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        mujoco.mj_comVel(self.model, self.data)

    def loop_gap(self):
        if len(self.site_pairs) == 0:
            return 0.0
        x = self.data.site_xpos
        return float(np.max(np.linalg.norm(x[self.site_pairs[:, 0]] - x[self.site_pairs[:, 1]], axis=1)))

    def energies(self):
        """(T, V) from body poses and velocities (call refresh() first)."""
        m, d = self.model, self.data
        b = self.body_ids
        mass = m.body_mass[b]
        cv = d.cvel[b]
        w = cv[:, :3]
        ref = d.subtree_com[m.body_rootid[b]]
        v = cv[:, 3:] + np.cross(w, d.xipos[b] - ref)
        T = 0.5 * float(np.sum(mass * np.sum(v * v, axis=1))) + 0.5 * float(np.sum(self.inertia_z * w[:, 2] ** 2))
        g = np.array([self.gravity[0], self.gravity[1], 0.0])
        V = -float(np.sum(mass * (d.xipos[b] @ g)))
        return T, V


def build(path=DEFAULT_DATA, **kw) -> Linkage:
    """The MJCF model object (``.xml``, ``.model``, ``.data``, ``.tree``, ``.closures``)."""
    return Linkage(path, **kw)


def _simpson_cum(y, dt, idx):
    """int_0^{t_idx[k]} y dt at the indices idx (composite Simpson per segment,
    trapezoid on a segment with an odd number of steps)."""
    out = np.zeros(len(idx))
    acc, prev = 0.0, 0
    for k, i in enumerate(idx):
        n = i - prev
        if n > 0:
            seg = y[prev : i + 1]
            if n % 2 == 0:
                acc += dt / 3.0 * (seg[0] + seg[-1] + 4.0 * seg[1:-1:2].sum() + 2.0 * seg[2:-1:2].sum())
            else:
                acc += dt * (0.5 * (seg[0] + seg[-1]) + seg[1:-1].sum())
        out[k] = acc
        prev = i
    return out


# --------------------------------------------------------------------------- API


def simulate(path=DEFAULT_DATA, t1=5.0, dt=1e-3, integrator="RK4", stiff=False, torque=None, save_every_s=0.1) -> dict:
    """Integrate the linkage from rest at its initial configuration to t1.

    ``torque``: None (free motion), a number tau0, or a pair (tau0, c) for
    tau = tau0 + c * udot on the input link.
    """
    lk = Linkage(path, dt=dt, integrator=integrator, stiff=stiff, torque=torque)
    model, data = lk.model, lk.data
    n_steps = int(round(t1 / dt))
    every = max(1, int(round(save_every_s / dt)))
    idx = list(range(0, n_steps + 1, every))
    if idx[-1] != n_steps:
        idx.append(n_steps)
    idx = np.array(idx)

    # recorded run (not timed)
    lk.reset()
    t_rec0 = time.perf_counter()
    ud = np.empty(n_steps + 1)
    qvel = data.qvel
    iu = lk.iu_qvel
    ud[0] = qvel[iu]
    u = np.empty(len(idx))
    udot = np.empty(len(idx))
    T = np.empty(len(idx))
    V = np.empty(len(idx))
    gap = np.empty(len(idx))
    step = mujoco.mj_step
    nxt = 0
    for i in range(n_steps + 1):
        if i > 0:
            step(model, data)
            ud[i] = qvel[iu]
        if i == idx[nxt]:
            lk.refresh()
            u[nxt] = data.qpos[lk.iu_qpos]
            udot[nxt] = qvel[iu]
            T[nxt], V[nxt] = lk.energies()
            gap[nxt] = lk.loop_gap()
            nxt += 1
    wall_recorded = time.perf_counter() - t_rec0
    finite = bool(np.all(np.isfinite(data.qpos)) and np.all(np.isfinite(data.qvel)))

    # bare stepping loop, median of 3
    bare = []
    for _ in range(3):
        lk.reset()
        bare.append(_bare_loop(model, data, n_steps))
    wall_s_bare = statistics.median(bare)

    W = lk.tau0 * (u - u[0]) + lk.c * _simpson_cum(ud * ud, dt, idx)
    E = T + V
    tmax = float(np.max(T))
    err = np.abs(E - E[0] - W)
    return {
        "t": idx * dt,
        "u": u - u[0],  # hinge qpos is continuous (already unwrapped), 0 at start
        "udot": udot,
        "wall_s_bare": wall_s_bare,
        "wall_s_runs": bare,
        "wall_s_recorded": wall_recorded,
        "max_loop_gap": float(np.nanmax(gap)) if finite else float("nan"),
        "loop_gap": gap,
        "energy": E,
        "kinetic": T,
        "work": W,
        "energy_drift": float(np.max(err) / tmax) if (tmax > 0 and finite) else float("nan"),
        "n_steps": n_steps,
        "sim_per_wall": n_steps * dt / wall_s_bare if wall_s_bare > 0 else float("inf"),
        "finite": finite,
        "integrator": integrator,
        "stiff": bool(stiff),
        "dt": float(dt),
        "mujoco_version": mujoco.__version__,
    }


def throughput(path=DEFAULT_DATA, n_runs=64, t1=1.0, dt=1e-3, integrator="RK4", stiff=False, seed=0) -> dict:
    """Simulated seconds per wall second, one thread, ``n_runs`` sequential free-release
    runs of designs whose moving-link masses (and, consistently, z inertias: a
    density change) are scaled by independent factors ~ U[0.9, 1.1].  The model
    is edited in place (``body_mass``/``body_inertia`` + ``mj_setConst``, not
    timed); only the stepping loops are timed."""
    lk = Linkage(path, dt=dt, integrator=integrator, stiff=stiff)
    m, d = lk.model, lk.data
    b = lk.body_ids
    mass0 = m.body_mass[b].copy()
    inert0 = m.body_inertia[b].copy()
    rng = np.random.default_rng(seed)
    n_steps = max(1, int(round(t1 / dt)))
    total = 0.0
    u_end = np.empty(n_runs)
    for r in range(n_runs):
        f = rng.uniform(0.9, 1.1, size=len(b))
        m.body_mass[b] = mass0 * f
        m.body_inertia[b] = inert0 * f[:, None]
        mujoco.mj_setConst(m, d)
        lk.reset()
        total += _bare_loop(m, d, n_steps)
        u_end[r] = d.qpos[lk.iu_qpos]
    m.body_mass[b] = mass0
    m.body_inertia[b] = inert0
    mujoco.mj_setConst(m, d)
    sim = n_runs * n_steps * dt
    return {
        "sim_per_wall": sim / total,
        "wall_s": total,
        "sim_s": sim,
        "n_runs": n_runs,
        "n_steps": n_steps,
        "u_end": u_end,
        "integrator": integrator,
        "stiff": bool(stiff),
        "dt": float(dt),
    }


# --------------------------------------------------------------------------- table


def _main():
    import sys

    path = DEFAULT_DATA
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "tests" / "reference"))
    import linkage_absolute as ref

    t1 = 5.0
    lk = Linkage(path)
    print(f"mujoco {mujoco.__version__}; file {path.name}")
    print("tree:", ", ".join(f"{lk.parent[l][0]}->{l} ({lk.parent[l][1]})" for l in lk.parent if lk.parent[l]))
    print("connects:", ", ".join(f"{j}: {a}-{b}" for j, a, b in lk.closures))
    mo = ref.load(path)
    t_eval = np.round(np.arange(0.0, t1 + 1e-9, 0.1), 12)
    cases = {"free": None, "driven 50-5w": (50.0, -5.0)}
    refs = {}
    for name, tq in cases.items():
        fn = None if tq is None else (lambda t, u, w, a=tq[0], c=tq[1]: a + c * w)
        t0 = time.perf_counter()
        fw = ref.forward(mo, t_eval, torque=fn, rtol=1e-12, atol=1e-12)
        refs[name] = fw["u"][-1]
        print(f"reference {name}: u(5) = {fw['u'][-1]:.12f} rad  ({time.perf_counter() - t0:.1f} s)")
    hdr = (
        f"{'case':13s} {'integ':5s} {'dt':>6s} {'soft':7s} {'bare_s':>8s} {'sim/wall':>9s} {'call_s':>7s} "
        f"{'max_gap[m]':>10s} {'E_drift':>9s} {'u(5)':>13s} {'|u-uref|':>9s}"
    )
    print(hdr)
    print("-" * len(hdr))
    for name, tq in cases.items():
        for integ in ("Euler", "RK4"):
            for dt in (1e-3, 1e-4):
                for stiff in (False, True):
                    t0 = time.perf_counter()
                    r = simulate(path, t1=t1, dt=dt, integrator=integ, stiff=stiff, torque=tq)
                    call = time.perf_counter() - t0
                    u5 = r["u"][-1]
                    print(
                        f"{name:13s} {integ:5s} {dt:6.0e} {'stiff' if stiff else 'default':7s} "
                        f"{r['wall_s_bare']:8.3f} {r['sim_per_wall']:9.1f} {call:7.2f} "
                        f"{r['max_loop_gap']:10.2e} {r['energy_drift']:9.2e} {u5:13.9f} {abs(u5 - refs[name]):9.2e}",
                        flush=True,
                    )
    for integ in ("Euler", "RK4"):
        th = throughput(path, integrator=integ)
        print(
            f"throughput {integ} dt=1e-3 default, 64 runs x 1 s, masses x U[0.9,1.1]: "
            f"{th['sim_per_wall']:.1f} sim-s/wall-s ({th['wall_s']:.2f} s)"
        )


if __name__ == "__main__":
    _main()
