"""Topology as data: a planar or spherical linkage's plan as padded index arrays, so
that one compiled program serves every linkage of its size class.

A linkage's topology (which equations join which joints, which link moves with which
input, the dyads' solving order) is static everywhere else in this package: each
topology is a program of its own, compiled for seconds. Here the same plan is held in
integer arrays, padded to a **size class**, and traced: the compiled simulation of
one planar linkage is reused by every other linkage of its class, whatever its
joints, links and dyads.

What a class fixes (`SizeClass`): the state's length `n` (the unknown coordinates,
rounded up the ladder `_N`), the joint rows `J` (joints, tracers and three dummy
joints, a power of two), the links `L`, the tracers of each frame kind and the number
of inputs. Everything else is data:

- **equations**: every rigidity form of `_equations` (distance, carried point, carried
  and sliding line, offset, angle, unit) has `n` (or `n/2`, `n/3`: a form of two or
  three rows) instance rows, the unused ones pointing at the dummy joints (`D0 = 0`,
  `D1 = (1, 0, 0)`, `D2 = (0, 1, 0)`; `D1` read as a line is `x = 0`), where every
  form is finite and its constants too, so that no NaN enters a derivative through a
  masked row. `slot` picks each state slot's equation row from the padded rows, in the
  order of `_model.residual`'s rows (the same square system, row for row); a slot past
  the linkage's own `n` is the identity `r = x`, whose unknown stays 0. Its Jacobian is
  the linkage's own, bordered by an identity block: the same Newton steps, the same
  determinant; the condition number is taken on the linkage's own columns (`active`);
- **assembly**: every joint row is picked from the initial coordinates, the input
  links' moved rows or the state by one gather (`src`); the tracers' rows by another
  (`tsrc`);
- **the dyads' closed form**: a `lax.scan` over the solving schedule (`steps`: kind,
  links, joints), each step a `lax.switch` on the dyad's kind (RRR, RRP, RPR, PRP, RPP,
  or a padding step that does nothing), on the link poses held as arrays; the same
  closed forms as `_structure` (`dyad_plane`), and the branch invariant from the same
  signed quantities (`_structure.dyad_side`).

Which linkages: planar or spherical (whose dyads are one closed form, two cones, and
whose dummy joints are the three unit axes), not over-constrained, decomposed into
dyads (the closed form of `_structure.predictor`), every input a revolute or
prismatic link on the ground, no gears (`eligible`). The others keep their per-topology program.
"""

import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .. import _closure, _screw
from .._validate import Recent, array_module
from .._xla import jit
from . import _model, _structure
from ._equations import EQUATIONS, TRACERS
from ._joints import KINDS as JOINT_KINDS
from ._model import Linkage

# each geometry's forms, in the order of the residual's rows (`_model.rigidity_rows`)
KINDS = {
    "planar": ("dist", "pcarry", "lcarry", "lslide", "offset", "angle", "unit"),
    "spherical": ("sdot", "scarry", "scarry2", "unit"),
}
# the state lengths of the classes: exact (`None`); a padded state costs its cube in
# the per-input inverse that gives the condition number, the sweep's largest part
# (docs/benchmarks.md, "Measurements behind the code")
_N = None
_EXACT = True
_DUMMIES = 3
# each geometry's tracer frame kinds, in the order of `tsrc` (a dict's order is not kept)
_FRAMES = {"planar": ("pp", "pl"), "spherical": ("ss",)}
# the dummy joints' rows: every padded form finite and well conditioned on them
_DUMMY_ROWS = {
    "planar": ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
    "spherical": ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),
}
_SPHERE = ("sphere",)  # a spherical dyad's one closed form (two cones), whatever its joints


def _ladder(v: int, rungs=None) -> int:
    if rungs is not None:
        return next((r for r in rungs if r >= v), 1 << max(v - 1, 1).bit_length())
    return max(8, 1 << max(v - 1, 1).bit_length())


def _capacity(v: int) -> int:
    """An equation form's or the schedule's rows in a class: exact (`_EXACT`), else the
    next power of two."""
    return v if _EXACT else _pow2(v)


def _pow2(v: int) -> int:
    return 1 if v <= 1 else 1 << (v - 1).bit_length()


def _position(kind: str, k: int, i: int, r: int) -> int:
    """Row `r` of instance `i` in a form's block of `k` instances (the layout of its
    `residual`: instance-major, or a form's normal rows before its offsets)."""
    if kind == "pcarry":
        return 2 * i + r
    if kind == "lcarry":
        return 2 * i + r if r < 2 else 2 * k + i
    if kind == "lslide":
        return i if r == 0 else k + i
    if kind in ("scarry", "scarry2"):
        return EQUATIONS[kind].rows * i + r
    return i


_FIELDS = ("slot", "active", "line", "src", "pivot", "link", "prismatic", "steps", "holder", "x_src", "tsrc")


class Plan(eqx.Module):
    """A planar linkage's topology as padded integer arrays (see the module docstring),
    packed in one array (`data`; one argument to pass to a program, not twenty: 0.2 ms
    of a warm call's dispatch) and read by name. Two linkages of one size class give
    plans of the same layout: one compiled program.

    - `groups[form]` `(capacity, width)`: each equation's joints (dummy rows beyond the
      linkage's); `slot` `(n,)`: each state slot's row in the padded residual; `active`
      `(n,)`: the linkage's own slots;
    - `line` `(J,)`: a planar line's row (a P joint); `src` `(J, 3)`: each coordinate's
      index in `[C0, moved rows of each input, x, 0]`; `pivot`, `link`, `prismatic`
      `(k,)`: each input's joint, link and kind;
    - `steps` `(S, 8)`: the dyads (kind in `dyads`, or `len(dyads)`: padding; link 1,
      link 2, a, known 1, c, b, known 2); `holder` `(J,)`: a link carrying each joint;
      `x_src` `(n,)`: each state slot's index in the joints' flat coordinates;
    - `tracers[frame]` `(T, 3)`: tracer and frame rows; `tsrc` `(J, 3)`: each
      coordinate's index in `[X, the carried tracers of each frame kind]`.
    """

    data: Array
    layout: tuple = eqx.field(static=True)  # (name, offset, shape) per array
    n_inputs: int = eqx.field(static=True)
    n_links: int = eqx.field(static=True)
    geometry: str = eqx.field(static=True)
    kinds: tuple = eqx.field(static=True)  # the equation forms it has, in `KINDS` order
    dyads: tuple = eqx.field(static=True)  # the dyad kinds its schedule has

    def get(self, name: str) -> Array:
        """One of the packed arrays (booleans as integers)."""
        for key, start, shape in self.layout:
            if key == name:
                return self.data[start : start + math.prod(shape)].reshape(shape)
        raise KeyError(name)

    def shape(self, name: str) -> tuple:
        """One packed array's shape (no operation on the data)."""
        return next(shape for key, _, shape in self.layout if key == name)

    def __getattr__(self, name):
        if name in _FIELDS:
            a = self.get(name)
            return a != 0 if name in ("active", "line", "prismatic") else a
        raise AttributeError(name)

    @property
    def groups(self) -> dict:
        return {kind: self.get("g_" + kind) for kind in self.kinds}

    @property
    def tracers(self) -> dict:
        return {kind: self.get("t_" + kind) for kind in _FRAMES[self.geometry]}

    @property
    def dim(self) -> int:
        return 2 if self.geometry == "planar" else 3


def _pack(arrays: dict, **static) -> Plan:
    layout, parts, start = [], [], 0
    for name, a in arrays.items():
        a = np.asarray(a, np.int32)
        layout.append((name, start, a.shape))
        parts.append(a.reshape(-1))
        start += a.size
    return Plan(data=jax.device_put(np.concatenate(parts)), layout=tuple(layout), **static)


def eligible(lk: Linkage) -> bool:
    """Whether `lk`'s simulation runs on a plan (planar or spherical, square, in dyads,
    inputs on links)."""
    return (
        lk.geometry in ("planar", "spherical")
        and not lk.over_constrained
        and not lk.gears
        and all(kind in ("revolute", "prismatic") and link >= 0 for kind, link, _ in lk.topology.inputs)
        and type(_structure.predictor(lk)) is _closure.ClosedForm
    )


def plan(lk: Linkage) -> Plan:
    """`lk`'s plan (`eligible(lk)` must hold), on the device, built once per topology."""
    return _plan(lk.topology, lk.names, lk.link_names)


@functools.lru_cache(maxsize=128)
def _plan(topo, names, link_names) -> Plan:
    base = _model.compile_equations(topo, names, link_names)
    steps = _structure.analyse(topo, names, link_names).steps
    J, L, k = len(names), len(topo.links), len(topo.inputs)
    n = base.n_unknowns if _N is None else _ladder(base.n_unknowns, _N)
    Jp = _ladder(J + _DUMMIES)
    Lp = max(4, _pow2(L))
    D0, D1, D2 = J, J + 1, J + 2
    pad = {
        "dist": (D0, D1),
        "pcarry": (D0, D1, D2),
        "lcarry": (D0, D2, D1),
        "lslide": (D0, D2, D1),
        "offset": (D0, D1),
        "angle": (D1, D1),
        "unit": (D1,),
        "sdot": (D0, D1),
        "scarry": (D0, D1, D2),
        "scarry2": (D0, D1, D2),
    }
    kinds = tuple(kind for kind in KINDS[topo.geometry] if len(base.groups[kind]))
    if topo.geometry == "spherical":
        dyads, steps = _SPHERE, tuple(("sphere", *step[1:]) for step in steps)
    else:
        dyads = tuple(kind for kind in _structure.DYADS if any(step[0] == kind for step in steps))
    groups, offsets, size = {}, {}, 0
    for kind in kinds:
        rows = base.groups[kind]
        cap = _capacity(len(rows))
        g = np.tile(np.array(pad[kind], np.int32), (cap, 1))
        g[: len(rows)] = rows
        groups[kind] = g
        offsets[kind] = size
        size += cap * EQUATIONS[kind].rows
    # each of the linkage's residual rows (kind by kind, as `_model.rigidity_rows` lays them)
    slot = []
    for kind in kinds:
        count, per, cap = len(base.groups[kind]), EQUATIONS[kind].rows, len(groups[kind])
        where = {_position(kind, count, i, r): (i, r) for i in range(count) for r in range(per)}
        slot += [offsets[kind] + _position(kind, cap, *where[p]) for p in range(count * per)]
    assert len(slot) == base.n_unknowns, (len(slot), base.n_unknowns)
    active = np.arange(n) < len(slot)
    slot = np.array(slot + [0] * (n - len(slot)), np.int32)

    line = np.zeros(Jp, bool)
    line[:J] = [not JOINT_KINDS[t].is_point(topo.geometry) for t in topo.types]
    # assembly: [C0 (Jp·3), moved rows of input 0 (Jp·3), ..., x (n), 0]
    src = np.arange(Jp * 3, dtype=np.int32).reshape(Jp, 3)
    for i, (_, link, _) in enumerate(topo.inputs):
        for j in topo.links[link]:
            if j not in topo.links[topo.ground]:
                src[j] = (1 + i) * Jp * 3 + 3 * j + np.arange(3)
    xs, zero = (1 + k) * Jp * 3, (1 + k) * Jp * 3 + n
    x_src = np.full(n, Jp * 3, np.int32)
    for j, o, w in base.unknowns:
        src[j] = [xs + o, xs + o + 1, xs + o + 2 if w == 3 else zero]
        x_src[o : o + w] = 3 * j + np.arange(w)
    pivot = np.array([joints[0] for _, _, joints in topo.inputs], np.int32)
    link = np.array([lk_ for _, lk_, _ in topo.inputs], np.int32)
    prismatic = np.array([kind == "prismatic" for kind, _, _ in topo.inputs])

    table = np.zeros((_capacity(len(steps)), 8), np.int32)
    table[:, 0] = len(dyads)  # a padding step
    for s, (kind, *rest) in enumerate(steps):
        table[s] = (dyads.index(kind), *rest)
    holder = np.array([min([i for i, js in enumerate(topo.links) if j in js] or [0]) for j in range(J)], np.int32)
    holder = np.concatenate([holder, np.zeros(Jp - J, np.int32)])

    tracers, tsrc, size = {}, np.arange(Jp * 3, dtype=np.int32).reshape(Jp, 3), Jp * 3
    w = 2 if topo.geometry == "planar" else 3  # a tracer's carried coordinates
    for kind in _FRAMES[topo.geometry]:
        rows = _model.tracer_rows(base, kind)
        cap = _pow2(max(1, len(rows)))
        t = np.tile(np.array((D2, D0, D1), np.int32), (cap, 1))
        t[: len(rows)] = rows
        tracers[kind] = t
        for i, j in enumerate(rows[:, 0]):
            tsrc[j, :w] = size + w * i + np.arange(w)
        size += w * cap
    arrays = dict(
        slot=slot,
        active=active,
        line=line,
        src=src,
        pivot=pivot,
        link=link,
        prismatic=prismatic,
        steps=table,
        holder=holder,
        x_src=x_src,
        tsrc=tsrc,
    )
    arrays.update({"g_" + kind: g for kind, g in groups.items()})
    arrays.update({"t_" + kind: t for kind, t in tracers.items()})
    return _pack(arrays, n_inputs=k, n_links=Lp, geometry=topo.geometry, kinds=kinds, dyads=dyads)


def class_of(lk: Linkage) -> tuple:
    """`lk`'s size class: what its plan's program is compiled for (the state's length,
    joint rows, links, each equation form's and the schedule's capacity, the dyad
    kinds, each tracer frame's capacity, the inputs). Linkages of one class share it."""
    p = plan(lk)
    return (p.geometry, p.layout, p.n_inputs, p.n_links, p.kinds, p.dyads)


def arguments(lk: Linkage):
    """`(plan, padded coordinates, max_step)` of a concrete linkage on the device, or
    None where `lk` is not `eligible`; remembered for the last 16 linkages (a warm call
    passes them as they are, and asks nothing of the linkage again)."""
    return _ARGUMENTS.value(
        lk, lambda k: (plan(k), jax.device_put(coords(k)), jax.device_put(max_step(k))) if eligible(k) else None
    )


_ARGUMENTS = Recent()


def coords(lk: Linkage):
    """`lk.coords` padded to its plan's joint rows, with the dummy joints (on the host
    where concrete)."""
    Jp = plan(lk).shape("src")[0]
    J = len(lk.names)
    xp = array_module(lk.coords)
    dummies = xp.asarray(_DUMMY_ROWS[lk.geometry], dtype=lk.coords.dtype)
    rest = xp.broadcast_to(dummies[:1], (Jp - J - _DUMMIES, 3))  # unused rows: finite, of unit length
    return xp.concatenate([xp.asarray(lk.coords), dummies, rest])


# --------------------------------------------------------------------------- evaluation


class Prepared(eqx.Module):
    """A plan with its initial coordinates and the constants of its equations and
    tracers (the closure core's `params`)."""

    plan: Plan
    C0: Array
    k: dict


def prepare(p: Plan, C: Array) -> Prepared:
    """The constants of every (padded) equation and tracer from the padded coordinates
    `C` (lines normalised, as `Linkage.initial`)."""
    if p.geometry == "planar":
        n = jnp.sqrt(C[:, 0] ** 2 + C[:, 1] ** 2)
        C0 = jnp.where(p.line[:, None], C / jnp.where(p.line, n, 1.0)[:, None], C)
    else:
        C0 = C / jnp.sqrt(C[:, 0] ** 2 + C[:, 1] ** 2 + C[:, 2] ** 2)[:, None]
    sl = slice(0, p.dim)
    k = {kind: EQUATIONS[kind].constants(C0, p.groups[kind], sl) for kind in p.kinds}
    for kind in _FRAMES[p.geometry]:
        k["t_" + kind] = TRACERS[kind].constants(C0, p.tracers[kind])
    return Prepared(plan=p, C0=C0, k=k)


def _inputs(p: Plan, u):
    return [u] if p.n_inputs == 1 else [u[i] for i in range(p.n_inputs)]


def assemble(x, u, prep: Prepared) -> Array:
    """All joint rows (tracers at their initial values) from the state `x` at input `u`."""
    p, C = prep.plan, prep.C0
    parts = [C.reshape(-1)]
    for i, ui in enumerate(_inputs(p, u)):
        if p.geometry == "spherical":  # a turn about the pivot's axis or the slider plane's pole
            parts.append((C @ _screw.rotation(C[p.pivot[i]], ui).T).reshape(-1))
            continue
        turned = _model.moved_planar(C, p.pivot[i], C, p.line, ui, "revolute")
        slid = _model.moved_planar(C, p.pivot[i], C, p.line, ui, "prismatic")
        parts.append(jnp.where(p.prismatic[i], slid, turned).reshape(-1))
    parts += [x.astype(C.dtype), jnp.zeros((1,), C.dtype)]
    return jnp.concatenate(parts)[p.src]


def carry_tracers(prep: Prepared, X) -> Array:
    """`X` with every tracer carried by its link's frame."""
    p = prep.plan
    parts = [X.reshape(-1)]
    for kind in _FRAMES[p.geometry]:
        new = TRACERS[kind].carry(X, p.tracers[kind], prep.k["t_" + kind]).astype(X.dtype)
        parts.append(new[:, :2].reshape(-1) if p.geometry == "planar" else new.reshape(-1))
    return jnp.concatenate(parts)[p.tsrc]


def joints(x, u, prep: Prepared) -> Array:
    """Every joint row, tracers carried (`_model.joint_coords`)."""
    return carry_tracers(prep, assemble(x, u, prep))


def state(prep: Prepared, X) -> Array:
    """The state read from joint rows `X` (0 in the padding slots)."""
    return jnp.concatenate([X.reshape(-1), jnp.zeros((1,), X.dtype)])[prep.plan.x_src]


@jit
def residual(x, u, prep: Prepared) -> Array:
    """The padded square system: the linkage's rigidity equations in its own slots, `x`
    in the others (jitted so that it is traced once per signature, as `_model.prepared_residual`)."""
    X = assemble(x, u, prep)
    rows = jnp.concatenate(
        [
            EQUATIONS[kind].residual(X, prep.plan.groups[kind], prep.k[kind], u, slice(0, prep.plan.dim))
            for kind in prep.plan.kinds
        ]
    )
    return jnp.where(prep.plan.active, rows[prep.plan.slot], x)


# --------------------------------------------------------------------------- the dyads' closed form


class _Poses:
    """Link poses held as arrays, read as `_structure`'s dict of poses."""

    def __init__(self, R, t):
        self.R, self.t = R, t

    def __getitem__(self, i):
        return self.R[i], self.t[i]


def _known(prep: Prepared, u):
    """The ground's and every input link's pose at `u`: `(R (L, 2, 2), t (L, 2))`."""
    p, C0 = prep.plan, prep.C0
    d = p.dim
    R = jnp.broadcast_to(jnp.eye(d, dtype=C0.dtype), (p.n_links, d, d))
    t = jnp.zeros((p.n_links, d), C0.dtype)
    for i, ui in enumerate(_inputs(p, u)):
        if p.geometry == "spherical":
            R = R.at[p.link[i]].set(_screw.rotation(C0[p.pivot[i]], ui))
            continue
        Rr, tr = _structure.known_pose("revolute", C0, p.pivot[i], ui)
        Rp, tp = _structure.known_pose("prismatic", C0, p.pivot[i], ui)
        R = R.at[p.link[i]].set(jnp.where(p.prismatic[i], Rp, Rr))
        t = t.at[p.link[i]].set(jnp.where(p.prismatic[i], tp, tr))
    return R, t


def _solve_dyads(u, prep: Prepared):
    """The closed form: `(x, assemblable)` at input `u`."""
    C0 = prep.C0
    R, t = _known(prep, u)

    def branch(kind):
        def run(R, t, step):
            dyad = _structure.dyad_sphere if kind == "sphere" else _structure.dyad_plane
            (R1, t1), (R2, t2), good = dyad((kind, *step[1:]), _Poses(R, t), C0)
            R = R.at[step[1]].set(R1).at[step[2]].set(R2)
            t = t.at[step[1]].set(t1).at[step[2]].set(t2)
            return R, t, good

        return run

    branches = [branch(kind) for kind in prep.plan.dyads] + [lambda R, t, step: (R, t, jnp.asarray(True))]

    def body(carry, step):
        R, t, ok = carry
        R, t, good = jax.lax.switch(step[0], branches, R, t, step)
        return (R, t, ok & good), None

    (R, t, ok), _ = jax.lax.scan(body, (R, t, jnp.asarray(True)), prep.plan.steps)
    h = prep.plan.holder
    if prep.plan.geometry == "spherical":
        X = jax.vmap(_structure.place_sphere)(C0, R[h])
    else:
        X = jax.vmap(_structure.place_planar)(prep.plan.line, C0, R[h], t[h])
    return state(prep, X), ok


CLOSED_FORM = _closure.ClosedForm(_solve_dyads)


def branch(x, u, prep: Prepared):
    """The dyads' branch invariant (`_structure.branch`) on the plan."""
    X, C0 = assemble(x, u, prep), prep.C0

    dyads = prep.plan.dyads
    if not dyads:
        return jnp.asarray(1.0, X.dtype)

    def side(step):
        kinds = [functools.partial(_side, kind, X, C0) for kind in dyads]
        now, then = jax.lax.switch(jnp.minimum(step[0], len(dyads) - 1), kinds, step)
        return jnp.where(step[0] == len(dyads), jnp.inf, _structure.sign_of(then) * now)

    return jnp.minimum(jnp.asarray(1.0, X.dtype), jnp.min(jax.vmap(side)(prep.plan.steps)))


def _side(kind, X, C0, step):
    if kind == "sphere":
        return _structure.sphere_side(X, C0, step[3], step[5], step[6])
    return _structure.dyad_side(kind, X, C0, step[3], step[5], step[6])


branch_jit = jit(branch)


def max_step(lk: Linkage) -> np.ndarray:
    """The continuation's longest input step (see `_simulate._sweep_options`, which
    reads it): 15° for an angle, else 15 of the linkage's default steps; as data."""
    angle = all(kind in ("revolute", "turn") for kind, _, _ in lk.topology.inputs) or lk.geometry == "spherical"
    return np.asarray(math.pi / 12 if angle else 15 * (lk.step if lk.step is not None else 0.01), lk.coords.dtype)
