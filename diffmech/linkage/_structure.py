"""Structural analysis of planar and spherical linkages (Assur groups), and the
closed-form predictor it gives the closure core.

Structure. The ground and the input links are known. The rest is split, in solving
order, into the smallest sets of links that the links already known determine: a set
`S` of unknown links with `p` lower pairs among themselves and to known links is
determined when `2p ≥ 3|S|` (three degrees of freedom per link in the plane or on the
sphere, two constraints per R or P pair). Sets are searched by increasing size, so
each is minimal: an **Assur group**. Two links with three pairs are a dyad (class II),
typed by its joints in the order outer–inner–outer (RRR, RRP, RPR, PRP, RPP); a larger
group has Assur's class (the number of links of its closed contour, or the largest
number of inner pairs on one link when it has no contour: III for the triad of a
ternary link and three binary links) and order (its pairs to known links).

Prediction. Every dyad is solved in closed form from the poses of the links known
before it (each link's pose `X = R X₀ + t` from its initial coordinates): circle–
circle (RRR), circle–line (RRP), a unit normal from one dot product (RPR), line–line
(PRP), a translation from one dot product (RPP); on the sphere every dyad is the
intersection of two cones (its inner element keeps a dot product with each outer
one). Each dyad's assembly sign is read from the initial configuration. An input at
which a dyad cannot assemble is beyond a motion limit. A larger group is solved by a
search of one driver angle (`SearchPredictor`). A spatial linkage held by distances
alone is predicted point by point by trilateration (`_trilateration`). An actuator
input, or a spatial linkage with any other equation, has no closed form here: the
closure core's generic predictor solves it.
"""

import dataclasses
import functools
import itertools
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import _closure, _screw
from .._geometry import cross, dot, perp
from .._xla import jit
from . import _gears
from ._joints import KINDS
from ._model import Linkage, LinkageError, assemble_coords, compile_equations

DYADS = ("RRR", "RRP", "RPR", "PRP", "RPP")  # the planar dyads of the closed form, outer–inner–outer
_ROMAN = {2: "II", 3: "III", 4: "IV", 5: "V", 6: "VI", 7: "VII", 8: "VIII"}
_MAX_GROUP = 6  # links: larger groups are left unassigned (no bundled linkage has one)


@dataclasses.dataclass(frozen=True)
class Group:
    """One Assur group: `links` (names), `outer` (its joints to links solved before,
    in the order of `kind` for a dyad), `inner` (its joints between its own links),
    `kind` (a dyad's joint letters outer–inner–outer, e.g. `"RRP"`; else `"class IV
    order 2"`), `assur_class` (2 for a dyad) and `order` (its outer pairs), and
    whether the predictor solves it from the structure (`closed_form`: a dyad in closed
    form, a larger planar group by a search of one driver angle)."""

    kind: str
    links: tuple[str, ...]
    outer: tuple[str, ...]
    inner: tuple[str, ...]
    assur_class: int
    order: int
    closed_form: bool

    @property
    def is_dyad(self) -> bool:
        return self.assur_class == 2

    def __str__(self) -> str:
        how = ("closed form" if self.is_dyad else "search of one angle") if self.closed_form else "generic Newton"
        return (
            f"{self.kind:<18s} links {', '.join(self.links)}; outer {', '.join(self.outer)}; "
            f"inner {', '.join(self.inner)}  [{how}]"
        )


@dataclasses.dataclass(frozen=True)
class Structure:
    """A linkage's structure (`linkage.structure`): its `name` and `geometry`, the
    `ground` link, the `inputs` (input links, or `actuator J1–J2`), the links the gear
    pairs place with them (`geared`), the Assur `groups`
    in solving order, and the links no group determines (`unassigned`: the linkage is
    under-constrained there, or its group is larger than the search). `closed_form`:
    every group is solved from the structure (dyads in closed form, a larger planar
    group by a one-parameter search) and every input is a revolute or prismatic joint,
    so `linkage.sweep` predicts every input at once and the closure residual
    certifies. `irreducible`: the groups that are not dyads. `print(s)` for a table;
    `s.plot()` draws the initial configuration with each group in its colour."""

    name: str
    geometry: str
    ground: str
    inputs: tuple[str, ...]
    groups: tuple[Group, ...]
    unassigned: tuple[str, ...]
    closed_form: bool
    geared: tuple[str, ...] = ()  # the links the gear pairs place with the inputs
    _links: tuple = dataclasses.field(repr=False, compare=False, init=False, default=())
    _points: dict = dataclasses.field(repr=False, compare=False, init=False, default_factory=dict)

    @property
    def irreducible(self) -> tuple[Group, ...]:
        return tuple(g for g in self.groups if not g.is_dyad)

    def __str__(self) -> str:
        lines = [f"{self.geometry} linkage {self.name!r}: ground {self.ground}; input(s) {', '.join(self.inputs)}"]
        if self.geared:
            lines[0] += f"; placed by gears {', '.join(self.geared)}"
        for i, g in enumerate(self.groups, 1):
            lines.append(f"  {i}. {g}")
        if self.unassigned:
            lines.append(f"  not determined by any group of up to {_MAX_GROUP} links: {', '.join(self.unassigned)}")
        verdict = (
            "every group solved from the structure: all inputs at once, each certified by its closure residual"
            if self.closed_form
            else "solved by the generic predictor (continuation and interpolation)"
        )
        lines.append(f"  -> {verdict}")
        return "\n".join(lines)

    def plot(self, ax=None):
        """Draw the initial configuration (a sphere's linkage projected on x–y): the
        ground black, the inputs grey, each group's links in its own colour, labelled
        by kind.

        **Arguments:** `ax`: matplotlib axes to draw on (default: a new figure).

        **Returns:** the axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4.5))
        tab = plt.get_cmap("tab10")
        colours = [tab(i) for i in range(10)]
        role: dict[str, tuple[str, object]] = {self.ground: ("ground", "k")}
        role.update({name: ("input", "0.55") for name in self.inputs})
        for i, g in enumerate(self.groups):
            for name in g.links:
                role[name] = (f"{i + 1}. {g.kind}", colours[i % len(colours)])
        seen = set()
        for name, joints in self._links:
            label, colour = role.get(name, ("unassigned", "tab:red"))
            pts = np.array([self._points[j] for j in joints if j in self._points])
            if len(pts) == 0:
                continue
            if len(pts) > 2:  # a plate: its outline around its centroid
                c = pts.mean(axis=0)
                pts = pts[np.argsort(np.arctan2(pts[:, 1] - c[1], pts[:, 0] - c[0]))]
                pts = np.vstack([pts, pts[:1]])
            ax.plot(pts[:, 0], pts[:, 1], "-o", color=colour, lw=3, ms=5, label=None if label in seen else label)
            seen.add(label)
        for j, p in self._points.items():
            ax.annotate(j, p, textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_aspect("equal")
        ax.set_title(f"{self.name}: Assur groups")
        ax.legend(fontsize=8, loc="best")
        return ax


# --------------------------------------------------------------------------- analysis


def structure(lk: Linkage) -> Structure:
    """The structural analysis of a planar or spherical linkage: its ground, inputs and
    Assur groups in solving order, each dyad typed (RRR, RRP, RPR, PRP, RPP) and any
    larger group given its class and order (see `Structure`).

    **Arguments:** `lk`: the linkage.

    **Returns:** a `Structure` (`print` it for a table, `.plot()` to draw it).
    """
    if not isinstance(lk, Linkage):
        raise ValueError(f"linkage.structure: `lk` must be a Linkage; got {type(lk).__name__}")
    if lk.geometry == "spatial":
        raise LinkageError(
            f"linkage.structure: {lk.name!r} is spatial; Assur groups are defined here for planar and spherical "
            "linkages (a spatial linkage is predicted by trilateration where distances hold it, else by the "
            "closure core's generic predictor)"
        )
    plan = analyse(lk.topology, lk.names, lk.link_names)
    C = np.asarray(lk.initial())
    points = {lk.names[j]: C[j, :2] for j, t in enumerate(lk.types) if KINDS[t].is_point(lk.geometry)}
    links = tuple((lk.link_names[i], tuple(lk.names[j] for j in js)) for i, js in enumerate(lk.links))
    out = dataclasses.replace(plan.structure, name=lk.name)
    object.__setattr__(out, "_links", links)  # the drawing's data (not part of the structure)
    object.__setattr__(out, "_points", points)
    return out


@dataclasses.dataclass(frozen=True)
class _Analysis:
    structure: Structure
    # per dyad: (kind, link1, link2, outer a, known K1, inner c, outer b, known K2); per searched
    # group: ("group", driver, its R joint, the known link there, inner dyads, closing link);
    # None for a group the predictor does not solve (link and joint indices)
    steps: tuple


@functools.lru_cache(maxsize=128)
def analyse(topo, names: tuple, link_names: tuple) -> _Analysis:
    links = [set(js) for js in topo.links]
    kinds = [k for k, _, _ in topo.inputs]
    input_names = []
    for kind, link, joints in topo.inputs:
        if link >= 0:
            input_names.append(link_names[link])
        else:  # an actuator: a binary link of known length between its two joints
            links.append(set(joints))
            input_names.append(f"actuator {names[joints[0]]}–{names[joints[1]]}")
    lnames = list(link_names) + [n for n in input_names if n.startswith("actuator")]
    pair = [j for j, t in enumerate(topo.types) if KINDS[t].joint]
    holders = {j: frozenset(i for i, js in enumerate(links) if j in js) for j in pair}
    known = {topo.ground} | set(topo.placed_links)
    unknown = set(range(len(links))) - known

    def connected(S):
        S = set(S)
        seen, todo = set(), [next(iter(S))]
        while todo:
            i = todo.pop()
            if i not in seen:
                seen.add(i)
                todo += [k for H in holders.values() if i in H for k in H & S]
        return seen == S

    groups, steps = [], []
    while unknown:
        found = None
        for size in range(1, min(_MAX_GROUP, len(unknown)) + 1):
            for S in itertools.combinations(sorted(unknown), size):
                S = frozenset(S)
                if 2 * _pairs(holders, S, known) >= 3 * size and connected(S):
                    found = S
                    break
            if found:
                break
        if found is None:
            break
        group, step = _classify(sorted(found), known, holders, topo, names, lnames)
        groups.append(group)
        steps.append(step)
        known |= found
        unknown -= found
    ok = not unknown and all(s is not None for s in steps) and all(k in ("revolute", "prismatic") for k in kinds)
    s = Structure(
        name="",
        geometry=topo.geometry,
        ground=link_names[topo.ground],
        inputs=tuple(input_names),
        groups=tuple(groups),
        unassigned=tuple(lnames[i] for i in sorted(unknown)),
        closed_form=ok,
        geared=tuple(link_names[k] for k in _gears.driven_links(topo.gears)),
    )
    return _Analysis(structure=s, steps=tuple(steps))


def _classify(S, known, holders, topo, names, lnames):
    """A group's `Group` and, for a dyad the predictor solves, its step."""
    inner = sorted(j for j, H in holders.items() if len(H & set(S)) >= 2)
    outer = sorted(j for j, H in holders.items() if H & set(S) and H & known)
    letter = {j: topo.types[j] for j in holders}
    if len(S) == 2 and len(inner) == 1 and len(outer) == 2:
        (c,) = inner
        a, b = outer
        la = next(i for i in S if a in holders and i in holders[a])
        lb = next(i for i in S if i != la)
        if b not in holders or lb not in holders[b]:  # both outer joints on one link: not a dyad
            la = lb = None
    else:
        la = lb = None
    if la is not None:
        kind = letter[a] + letter[c] + letter[b]
        if kind not in DYADS:  # the canonical order (PRR is RRP read from its other end)
            kind, a, b, la, lb = kind[::-1], b, a, lb, la
        ka = min(holders[a] & known)
        kb = min(holders[b] & known)
        closed = topo.geometry == "spherical" or kind in DYADS
        group = Group(
            kind=kind,
            links=(lnames[la], lnames[lb]),
            outer=(names[a], names[b]),
            inner=(names[c],),
            assur_class=2,
            order=2,
            closed_form=closed,
        )
        return group, ((kind, la, lb, a, ka, c, b, kb) if closed else None)
    # a larger group: its class from its closed contour (links joined by inner pairs)
    edges = [(tuple(sorted(holders[j] & set(S)))) for j in inner]
    cycle = _longest_cycle(S, edges)
    if cycle:
        cls = cycle
    else:
        cls = max(sum(1 for e in edges if i in e) for i in S) if len(S) > 1 else 1
    order = len(outer)
    kind = f"class {_ROMAN.get(cls, cls)} order {order}" if len(S) > 1 else "rigid link"
    step = _reduce(S, known, holders, topo, names, lnames) if len(S) > 2 and topo.geometry == "planar" else None
    group = Group(
        kind=kind,
        links=tuple(lnames[i] for i in S),
        outer=tuple(names[j] for j in outer),
        inner=tuple(names[j] for j in inner),
        assur_class=cls,
        order=order,
        closed_form=step is not None,
    )
    return group, step


def _pairs(holders, S, K):
    """The lower pairs the links `S` add to the known links `K`."""
    p = 0
    for H in holders.values():
        hs = len(H & S)
        if hs:
            p += hs if H & K else hs - 1
    return p


def _reduce(S, known, holders, topo, names, lnames):
    """A planar group larger than a dyad as a one-parameter search: a `driver` link
    turned by an angle φ about its R joint with a known link, after which the rest of
    the group is dyads and one closing link between two R joints already placed, whose
    length is the residual f(φ). The step, or None where no driver gives that."""
    for d in S:
        for r in sorted(j for j, H in holders.items() if d in H and H & known and topo.types[j] == "R"):
            kn, rest, inner, closing = set(known) | {d}, set(S) - {d}, [], None
            while rest:
                found = next(
                    (
                        frozenset(T)
                        for size in (1, 2)
                        for T in itertools.combinations(sorted(rest), size)
                        if 2 * _pairs(holders, frozenset(T), kn) >= 3 * size
                    ),
                    None,
                )
                if found is None:
                    break
                if len(found) == 2:
                    _, step = _classify(sorted(found), kn, holders, topo, names, lnames)
                    if step is None or step[0] not in DYADS:
                        break
                    inner.append(step)
                else:
                    (c,) = found
                    js = sorted(j for j, H in holders.items() if c in H and H & kn)
                    if closing is not None or len(js) != 2 or any(topo.types[j] != "R" for j in js):
                        break
                    closing = (c, js[0], min(holders[js[0]] & kn), js[1], min(holders[js[1]] & kn))
                kn |= found
                rest -= found
            if not rest and closing is not None:
                return ("group", d, r, min(holders[r] & known), tuple(inner), closing)
    return None


def _longest_cycle(nodes, edges) -> int:
    """The number of links in the longest simple cycle of inner pairs (0 if none)."""
    adj = {i: set() for i in nodes}
    for e in edges:
        for u, v in itertools.combinations(e, 2):
            adj[u].add(v)
            adj[v].add(u)
    best = 0

    def walk(start, node, path):
        nonlocal best
        for nxt in adj[node]:
            if nxt == start and len(path) >= 3:
                best = max(best, len(path))
            elif nxt not in path and nxt > start:
                walk(start, nxt, path | {nxt})

    for s in nodes:
        walk(s, s, {s})
    return best


# --------------------------------------------------------------------------- prediction


def predictor(lk: Linkage):
    """The closure core's predictor for `lk`: the dyads' closed form when the linkage
    decomposes into dyads (`structure(lk).closed_form`), a group's search where it has
    larger groups, trilateration for a spatial linkage held by distances alone
    (`_trilateration`), else None (the core's generic `Coarse` predictor)."""
    if lk.geometry == "spatial":
        steps = _trilateration(lk.topology, lk.names, lk.link_names)
        return None if steps is None else _spatial_closed_form(lk.topology, lk.names, lk.link_names)
    plan = analyse(lk.topology, lk.names, lk.link_names)
    if not plan.structure.closed_form:
        return None
    if any(step[0] == "group" for step in plan.steps):
        return _searched(lk.topology, lk.names, lk.link_names)
    return _closed_form(lk.topology, lk.names, lk.link_names)


def closed_form(lk: Linkage):
    """The closed form of a planar or spherical linkage that decomposes into dyads:
    `solution(u, prep) -> (x, assembles)` at one input `u` (`prep`: `_model.prepare`'s;
    each dyad on the side it has at the initial configuration, stretched straight
    where it cannot assemble, `assembles` then False); None where the linkage does
    not decompose into dyads."""
    if lk.geometry == "spatial":
        return None
    plan = analyse(lk.topology, lk.names, lk.link_names)
    if not plan.structure.closed_form or any(step[0] == "group" for step in plan.steps):
        return None
    return _closed_form(lk.topology, lk.names, lk.link_names).solution


def group_search(lk: Linkage):
    """For a planar linkage with a group larger than a dyad that the structure's search
    solves: `solve(inputs, prep) -> (x, reached)`, the configurations along a path of
    inputs (from the initial configuration's assembly modes on, each group's mode
    followed by continuity); None otherwise."""
    if lk.geometry != "planar":
        return None
    plan = analyse(lk.topology, lk.names, lk.link_names)
    if not plan.structure.closed_form or not any(step[0] == "group" for step in plan.steps):
        return None
    return _searched(lk.topology, lk.names, lk.link_names).solve


def revolute_dyads(lk: Linkage) -> tuple[tuple[int, int, int], ...]:
    """Each RRR dyad of `lk`'s decomposition as its joints `(outer a, inner c, outer
    b)`: its transmission angle is the angle at `c` between `c → a` and `c → b`."""
    plan = analyse(lk.topology, lk.names, lk.link_names)
    return tuple((st[3], st[5], st[6]) for st in plan.steps if st[0] == "RRR")


@functools.lru_cache(maxsize=128)
def _closed_form(topo, names, link_names):
    """One `ClosedForm` per topology (a static field of the sweep: the same object, so
    the compiled program is reused across designs and calls)."""
    steps = analyse(topo, names, link_names).steps

    unknowns = compile_equations(topo, names, link_names).unknowns
    holders = {j: [i for i, js in enumerate(topo.links) if j in js] for j, _, _ in unknowns}

    def solution(u, prep):
        C0 = prep.C0
        poses = _known_poses(topo, C0, u, prep.lk.gear_params)
        ok = jnp.asarray(True)
        for step in steps:
            p1, p2, good = (dyad_sphere if topo.geometry == "spherical" else dyad_plane)(step, poses, C0)
            poses[step[1]], poses[step[2]] = p1, p2
            ok = ok & good
        parts = []
        for j, _, w in unknowns:
            R, t = poses[next(i for i in holders[j] if i in poses)]
            parts.append(_place(topo, j, C0[j], R, t))
        x = jnp.concatenate(parts) if parts else jnp.zeros((0,), C0.dtype)
        return x, ok

    return _closure.ClosedForm(solution)


def branch(lk: Linkage):
    """The branch invariant that goes with the closed form (None where there is
    none): the smallest of the dyads' signed assembly quantities, each times its sign
    at the initial configuration (positive on the initial assembly of every dyad; it
    passes zero only where a dyad is at its limit, as the closure Jacobian's
    determinant, a product of the dyads' own, does). Cheaper than the determinant:
    no Jacobian is needed when the conditioning is not asked for. A function of the
    state `(x, u, prep)`, or "det"."""
    fns = _branch_fns(lk)
    return fns[0] if isinstance(fns, tuple) else fns


def branch_of_coords(lk: Linkage):
    """`branch`'s invariant as a function of the joint coordinates `X` (assembled
    from the state) and the initial ones `C0`; None where `branch` is not a function
    of the state (no closed form, or the determinant)."""
    fns = _branch_fns(lk)
    return fns[1] if isinstance(fns, tuple) else None


def _branch_fns(lk: Linkage):
    pred = predictor(lk)
    if pred is None:
        return None
    if isinstance(pred, SearchPredictor):
        return "det"  # a group's assembly has no sign of its own: the closure Jacobian's determinant
    if isinstance(pred, TranslationClosedForm):
        # the body's side is its translation's sign only: where the rods are not exact
        # parallelograms the body also turns, and the closure can pass a singularity
        # the side does not see (a random design's constraint singularity, found by
        # the determinant's sign)
        return "det"
    if lk.geometry == "spatial":
        return _spatial_branch_fn(lk.topology, lk.names, lk.link_names)
    return _branch_fn(lk.topology, lk.names, lk.link_names)


@functools.lru_cache(maxsize=128)
def _branch_fn(topo, names, link_names):
    steps = analyse(topo, names, link_names).steps

    def of_coords(X, C0):
        value = jnp.asarray(1.0, X.dtype)
        for kind, _, _, a, _, c, b, _ in steps:
            if topo.geometry != "planar":  # the inner element's side of the outer ones' plane
                now, then = sphere_side(X, C0, a, c, b)
            else:
                now, then = dyad_side(kind, X, C0, a, c, b)
            value = jnp.minimum(value, sign_of(then) * now)
        return value

    def invariant(x, u, prep):
        return of_coords(assemble_coords(x, u, prep), prep.C0)

    # jitted (as the residual is): its index arrays then live inside its own program, not
    # as constants of the sweep's fallback, which a `custom_vmap` must not close over
    # (a batch of synthesis starts failed there)
    return jit(invariant), of_coords


def dyad_side(kind: str, X, C0, a, c, b):
    """A planar dyad's signed assembly quantity now (joint rows `X`) and at the initial
    configuration (`C0`): `(now, then)`; its sign changes only where the dyad is at a
    limit (the two assemblies meet)."""
    if kind == "RRR":
        return (
            cross(X[b, :2] - X[a, :2], X[c, :2] - X[a, :2]),
            cross(C0[b, :2] - C0[a, :2], C0[c, :2] - C0[a, :2]),
        )
    if kind == "RRP":  # which way along its line c is from a's foot
        return dot(perp(X[b, :2]), X[c, :2] - X[a, :2]), dot(perp(C0[b, :2]), C0[c, :2] - C0[a, :2])
    if kind == "RPR":  # the slider's normal against a − b
        return dot(X[c, :2], perp(X[a, :2] - X[b, :2])), dot(C0[c, :2], perp(C0[a, :2] - C0[b, :2]))
    if kind == "PRP":  # the two lines' angle (parallel: the dyad is singular)
        return cross(X[a, :2], X[b, :2]), cross(C0[a, :2], C0[b, :2])
    # RPP: the inner slider's normal against the outer one's direction
    return dot(X[c, :2], perp(X[b, :2])), dot(C0[c, :2], perp(C0[b, :2]))


# --------------------------------------------------------------------------- spatial points by trilateration
#
# A spatial linkage described by distances (S–S links, R joints as two points of their
# axis), driven by links: each unknown point held by three distances to points already
# known is one of the two intersections of three spheres, the one on the side of the
# three centres' plane where it starts. The RSSR's coupler joint is such a point
# (spheres about the crank's joint and two points of the rocker's axis), as are the
# double wishbone's ball joints.
#
# A body held by three parallelograms of S–S rods (the delta robot's platform: each
# arm carries two equal, parallel rods) keeps its orientation where each pair's arm
# side keeps its direction (along the arm's turning axis), and then only translates:
# its translation `t` is at the rod's length from each of three arm ends less the
# platform point's initial position, so again the intersection of three spheres, on
# the side where `t = 0` starts. Which rods pair is read from the topology; whether
# the body really translates is a matter of dimensions (exact parallelograms), so the
# prediction is certified by one Newton step on the whole closure (a design a few
# ulps off parallel, as 12-digit coordinates are, is then closed to round-off; one
# further off is solved by the core's fallback), and the branch is checked by the
# closure Jacobian's determinant (`branch`).


@functools.lru_cache(maxsize=128)
def _trilateration(topo, names, link_names):
    """The static steps, in an order where each one's centres are known:
    `("point", j, a, b, c)`: the unknown point `j` from its three centres `a, b, c`;
    `("body", points, ((p1, a1), (p2, a2), (p3, a3)))`: a translating body's unknown
    `points`, from three rods `p_i`–`a_i` of three parallelograms. None where the
    linkage is not of that kind (an equation other than a distance or a body's own
    carried point, an input held by an equation, an unknown that is not a point, more
    equations than unknowns, or a point left over)."""

    plan = compile_equations(topo, names, link_names)
    if any(kind not in ("dist", "tcarry") and rows.size for kind, rows in plan.groups.items()):
        return None
    if plan.n_equations != plan.n_unknowns or any(w != 3 for _, _, w in plan.unknowns):
        return None
    if not plan.unknowns or any(link < 0 for _, link, _ in topo.inputs):
        return None
    pairs = [tuple(int(v) for v in row) for row in plan.groups["dist"]]
    unknown = {j for j, _, _ in plan.unknowns}
    known = set(range(len(names))) - unknown
    steps = []
    while unknown:
        found = None
        for j in sorted(unknown):
            centres = [q if p == j else p for p, q in pairs if j in (p, q) and (q if p == j else p) in known]
            if len(centres) >= 3:
                found = ("point", j, *centres[:3])
                break
        if found is None:
            found = _translating_body(topo, pairs, unknown, known)
        if found is None:
            return None
        steps.append(found)
        placed = {found[1]} if found[0] == "point" else set(found[1])
        unknown -= placed
        known |= placed
    return tuple(steps)


def _translating_body(topo, pairs, unknown, known):
    """A `("body", points, rods)` step: a link all of whose points are unknown, held
    to known links by at least three parallelograms (two S–S rods `p`–`a`, `q`–`b`
    with `p, q` on the body and `a, b` on one known link, each pair on another link);
    None if there is none. Carried points (tracers) are placed with the body by the
    tracers' own rule."""
    for body, joints in enumerate(topo.links):
        points = tuple(j for j in joints if j in unknown)
        if not points or any(j in known and any(j in pq for pq in pairs) for j in joints):
            continue
        rods = [(p, a) if p in points else (a, p) for p, a in pairs if (p in points) != (a in points)]
        rods = [(p, a) for p, a in rods if a in known]
        found, used = [], set()
        for (p, a), (q, b) in itertools.combinations(rods, 2):
            holders = [k for k, js in enumerate(topo.links) if a in js and b in js and k != body]
            if p == q or a == b or not holders or holders[0] in used or {p, a} & {r for pr in found for r in pr}:
                continue
            used.add(holders[0])
            found.append((p, a))
        if len(found) >= 3 and all(j in points for j in unknown & set(joints)):
            return ("body", points, tuple(found[:3]))
    return None


def _plane_frame(a, b, c):
    """An orthonormal frame `(ex, ey, ez)` of the plane through `a, b, c` (ex along
    b − a), and the coordinates `(d, i, j)` of b and c in it."""
    ab, ac = b - a, c - a
    d = jnp.sqrt(dot(ab, ab))
    ex = ab / d
    i = dot(ex, ac)
    ey = ac - i * ex
    j = jnp.sqrt(dot(ey, ey))
    ey = ey / j
    return ex, ey, jnp.cross(ex, ey), d, i, j


def _trilaterate(a, b, c, ra, rb, rc, side):
    """The point at distances `ra, rb, rc` from `a, b, c` on the `side` (±1) of their
    plane (along ex × ey), and whether the three spheres meet."""
    ex, ey, ez, d, i, j = _plane_frame(a, b, c)
    x = (ra**2 - rb**2 + d**2) / (2 * d)
    y = (ra**2 - rc**2 + i**2 + j**2) / (2 * j) - i * x / j
    zz = ra**2 - x**2 - y**2
    return a + x * ex + y * ey + side * jnp.sqrt(jnp.maximum(zz, 0.0)) * ez, zz >= 0


def _side(X, j, a, b, c):
    """Which side of the plane of `a, b, c` the point `j` is on (a signed volume)."""
    return dot(X[j] - X[a], jnp.cross(X[b] - X[a], X[c] - X[a]))


@functools.lru_cache(maxsize=128)
def _spatial_closed_form(topo, names, link_names):
    """The trilateration's `ClosedForm` (one object per topology, as `_closed_form`)."""

    steps = _trilateration(topo, names, link_names)
    assert steps is not None  # `predictor` asks for this only where there are steps
    unknowns = compile_equations(topo, names, link_names).unknowns

    def solution(u, prep):
        C0 = prep.C0
        X = assemble_coords(None, u, prep)  # the input links moved; the unknown points where they start
        ok = jnp.asarray(True)
        for step in steps:
            if step[0] == "point":
                _, j, a, b, c = step
                ra, rb, rc = (jnp.sqrt(dot(C0[j] - C0[k], C0[j] - C0[k])) for k in (a, b, c))
                p, good = _trilaterate(X[a], X[b], X[c], ra, rb, rc, sign_of(_side(C0, j, a, b, c)))
                X = X.at[j].set(p)
            else:  # a translating body: `t` from the spheres about each arm end less its point
                _, points, rods = step
                (c1, c2, c3), (r1, r2, r3) = zip(
                    *((X[a] - C0[p], jnp.sqrt(dot(C0[p] - C0[a], C0[p] - C0[a]))) for p, a in rods)
                )
                t, good = _trilaterate(c1, c2, c3, r1, r2, r3, sign_of(_body_side(C0, rods)))
                idx = jnp.asarray(points)
                X = X.at[idx].set(C0[idx] + t)
            ok = ok & good
        return jnp.concatenate([X[j] for j, _, _ in unknowns]), ok

    return TranslationClosedForm(solution) if any(st[0] == "body" for st in steps) else _closure.ClosedForm(solution)


class TranslationClosedForm(_closure.AbstractClosedForm):
    """The trilateration's closed form with a translating body, exact only where its
    parallelograms are (the corrector takes one Newton step to certify it)."""

    solution: Callable = eqx.field(static=True)


def _body_side(X, rods):
    """A translating body's side of its three centres' plane: with the rod vectors
    `d_i = X[p_i] − X[a_i]` (`t` less each centre), `d₁ · ((d₁ − d₂) × (d₁ − d₃))`."""
    d1, d2, d3 = (X[p] - X[a] for p, a in rods)
    return dot(d1, jnp.cross(d1 - d2, d1 - d3))


@functools.lru_cache(maxsize=128)
def _spatial_branch_fn(topo, names, link_names):
    """The trilateration's branch invariant: each point's side of its centres' plane
    times its side at the initial configuration, the smallest of them (as
    `_branch_fn`)."""

    steps = _trilateration(topo, names, link_names)
    assert steps is not None

    def of_coords(X, C0):
        value = jnp.asarray(1.0, X.dtype)
        for _, j, a, b, c in steps:  # points only: a translating body's closed form takes the determinant
            value = jnp.minimum(value, sign_of(_side(C0, j, a, b, c)) * _side(X, j, a, b, c))
        return value

    def invariant(x, u, prep):
        return of_coords(assemble_coords(x, u, prep), prep.C0)

    return jit(invariant), of_coords


def _known_poses(topo, C0, u, gear_params=None):
    """The poses `(R, t)` of the ground (identity), of every input link at `u` and of
    every gear a gear pair places (`gear_params`: the pairs' radii)."""
    d = 2 if topo.geometry == "planar" else 3
    eye, zero = jnp.eye(d, dtype=C0.dtype), jnp.zeros((d,), C0.dtype)
    poses = {topo.ground: (eye, zero)}
    us = [u] if len(topo.inputs) == 1 else [u[i] for i in range(len(topo.inputs))]
    for (kind, link, (s, *_)), ui in zip(topo.inputs, us):
        if topo.geometry == "planar":
            poses[link] = known_pose(kind, C0, s, ui)
        else:  # about the pivot's axis or the slider plane's pole
            poses[link] = (_screw.rotation(C0[s], ui), zero)
    for link, steps in _gears.motions(topo, gear_params, us):  # each step's pose, then its carrier's
        R, t = eye, zero
        for kind, s, amount in steps:
            Ri, ti = known_pose(kind, C0, s, amount)
            R, t = Ri @ R, Ri @ t + ti
        poses[link] = (R, t)
    return poses


def known_pose(kind: str, C0, s, u):
    """A planar input link's pose `(R, t)` at its input `u`: turned about its pivot
    `C0[s]` ("revolute"), or slid along the ground line `C0[s]`, direction `(b, −a)`."""
    if kind == "revolute":
        c, sn = jnp.cos(u), jnp.sin(u)
        R = jnp.stack([jnp.stack([c, -sn]), jnp.stack([sn, c])])
        return R, C0[s, :2] - _mv(R, C0[s, :2])
    return jnp.eye(2, dtype=C0.dtype), u * jnp.stack([C0[s, 1], -C0[s, 0]])


def place_planar(line, c0, R, t):
    """A planar element's row after the pose `(R, t)` of a link that carries it: a
    point `R p₀ + t` (third column 0), or where `line` a line `n·p + c = 0`, `n = R n₀`,
    `c = c₀ − n·t`."""
    n = _mv(R, c0)[:2]
    as_line = jnp.concatenate([n, (c0[2] - dot(n, t))[None]])
    as_point = jnp.concatenate([_mv(R, c0)[:2] + t, jnp.zeros((1,), c0.dtype)])
    return jnp.where(line, as_line, as_point)


def place_sphere(c0, R):
    """A spherical element's row after its link's rotation `R`: `R c₀`."""
    return _mv(R, c0)


def sphere_side(X, C0, a, c, b):
    """A spherical dyad's signed assembly quantity now and at the initial configuration:
    the inner element's side of the outer ones' plane, `(now, then)`."""
    return dot(X[c], jnp.cross(X[a], X[b])), dot(C0[c], jnp.cross(C0[a], C0[b]))


def _place(topo, j, c0, R, t):
    """An element's coordinates after the pose `(R, t)` of a link that carries it."""
    if topo.geometry == "planar":
        if topo.types[j] == "P":  # a line n·p + c = 0: n = R n₀, c = c₀ − n·t
            n = _mv(R, c0)[:2]
            return jnp.concatenate([n, (c0[2] - dot(n, t))[None]])
        return _mv(R, c0)[:2] + t
    return _mv(R, c0)


def _mv(R, v):
    """`R v`, written element-wise (under `vmap` a matrix-vector product of a 2×2 or
    3×3 becomes a batched `dot` that XLA:CPU runs one tiny product at a time)."""
    return jnp.stack([dot(R[i], v) for i in range(R.shape[0])])


def _mmT(A, B):
    """`A Bᵀ`, element-wise (see `_mv`)."""
    return jnp.stack([jnp.stack([dot(A[i], B[j]) for j in range(B.shape[0])]) for i in range(A.shape[0])])


def _rot2(v0, v):
    """The planar rotation taking the direction of `v0` to that of `v`."""
    k = 1 / jnp.sqrt(dot(v0, v0) * dot(v, v))
    c, s = dot(v0, v) * k, cross(v0, v) * k
    return jnp.stack([jnp.stack([c, -s]), jnp.stack([s, c])])


def sign_of(v):
    return jnp.where(v < 0, -1.0, 1.0).astype(v.dtype)


def dyad_plane(step, poses, C0, keep_side=False):
    """A planar dyad's two link poses and whether it assembles (with `keep_side`, a
    PRP's or RPP's only on the side of its singular configuration where it starts:
    inside a group's search, the pole where its lines turn parallel is not a root)."""
    kind, l1, l2, a, k1, c, b, k2 = step
    (Ra, ta), (Rb, tb) = poses[k1], poses[k2]
    a0, b0, c0 = C0[a, :2], C0[b, :2], C0[c, :2]

    def direction(R, j):  # a line's world direction (along it), from its normal
        return perp(_mv(R, C0[j, :2]))

    if kind == "RRR":  # circle–circle
        A, B = _mv(Ra, a0) + ta, _mv(Rb, b0) + tb
        e, e0 = B - A, b0 - a0
        d2 = dot(e, e)
        r1s, r2s = dot(c0 - a0, c0 - a0), dot(c0 - b0, c0 - b0)
        al = (r1s - r2s + d2) / (2 * d2)
        h2 = r1s / d2 - al**2
        C = A + al * e + sign_of(cross(e0, c0 - a0)) * jnp.sqrt(jnp.maximum(h2, 0)) * perp(e)
        R1, R2 = _rot2(c0 - a0, C - A), _rot2(c0 - b0, C - B)
        return (R1, A - _mv(R1, a0)), (R2, B - _mv(R2, b0)), h2 >= 0
    if kind == "RRP":  # circle (about A) and the line c slides on with link 2 (its angle fixed by b)
        A = _mv(Ra, a0) + ta
        dvec = direction(Rb, b)
        base = _mv(Rb, c0) + tb  # c with link 2 at no slide
        w, w0 = base - A, c0 - a0
        dw = dot(dvec, w)
        disc = dw**2 - dot(w, w) + dot(w0, w0)
        lam = -dw + sign_of(dot(perp(C0[b, :2]), w0)) * jnp.sqrt(jnp.maximum(disc, 0))
        C = base + lam * dvec
        R1 = _rot2(c0 - a0, C - A)
        return (R1, A - _mv(R1, a0)), (Rb, tb + lam * dvec), disc >= 0
    if kind == "RPR":  # both links turn alike; the slider's normal from n·(A − B) = n₀·(a₀ − b₀)
        A, B = _mv(Ra, a0) + ta, _mv(Rb, b0) + tb
        n0 = C0[c, :2]
        e, e0 = A - B, a0 - b0
        de = dot(n0, e0)
        ee = dot(e, e)
        disc = ee - de**2
        n = (de * e + sign_of(dot(n0, perp(e0))) * jnp.sqrt(jnp.maximum(disc, 0)) * perp(e)) / ee
        R = _rot2(n0, n)
        return (R, A - _mv(R, a0)), (R, B - _mv(R, b0)), disc >= 0
    if kind == "PRP":  # line–line: each link keeps its known link's angle and slides on its line
        d1, d2 = direction(Ra, a), direction(Rb, b)
        q = (_mv(Rb, c0) + tb) - (_mv(Ra, c0) + ta)
        det = cross(d1, -d2)
        ok = jnp.abs(det) > 1e-12 * jnp.sqrt(dot(d1, d1) * dot(d2, d2))
        if keep_side:
            ok = ok & (sign_of(det) == sign_of(cross(perp(C0[a, :2]), -perp(C0[b, :2]))))
        det = jnp.where(ok, det, 1.0)
        lam1, lam2 = cross(q, -d2) / det, cross(d1, q) / det
        return (Ra, ta + lam1 * d1), (Rb, tb + lam2 * d2), ok
    # RPP: link 1 turns about A with link 2's angle (fixed by b); link 2 slides on b
    A = _mv(Ra, a0) + ta
    t1 = A - _mv(Rb, a0)
    dvec, n = direction(Rb, b), _mv(Rb, C0[c, :2])
    nd = dot(n, dvec)
    ok = jnp.abs(nd) > 1e-12
    if keep_side:
        ok = ok & (sign_of(nd) == sign_of(dot(C0[c, :2], perp(C0[b, :2]))))
    lam = dot(n, t1 - tb) / jnp.where(ok, nd, 1.0)
    return (Rb, t1), (Rb, tb + lam * dvec), ok


def _frame3(u, v):
    """The orthonormal frame (columns) of unit `u` and `v`'s component normal to it."""
    w = v - dot(v, u) * u
    w = w / jnp.sqrt(dot(w, w))
    return jnp.stack([u, w, jnp.cross(u, w)], axis=-1)


def dyad_sphere(step, poses, C0):
    """A spherical dyad: its inner element `C` keeps its dot products with the outer
    elements `A` and `B` (points or poles), the intersection of two cones."""
    _, l1, l2, a, k1, c, b, k2 = step
    (Ra, _), (Rb, _) = poses[k1], poses[k2]
    a0, b0, c0 = C0[a], C0[b], C0[c]
    A, B = _mv(Ra, a0), _mv(Rb, b0)
    g, ca, cb = dot(A, B), dot(a0, c0), dot(b0, c0)
    s2 = 1 - g**2
    al, be = (ca - g * cb) / s2, (cb - g * ca) / s2
    disc = (1 - al * ca - be * cb) / s2
    C = al * A + be * B + sign_of(dot(c0, jnp.cross(a0, b0))) * jnp.sqrt(jnp.maximum(disc, 0)) * jnp.cross(A, B)
    R1 = _mmT(_frame3(A, C), _frame3(a0, c0))
    R2 = _mmT(_frame3(B, C), _frame3(b0, c0))
    zero = jnp.zeros((3,), C0.dtype)
    return (R1, zero), (R2, zero), disc >= 0


# --------------------------------------------------------------------------- larger groups by search

_GRID = 96  # driver angles sampled per input (roots closer than 2π/96 may be missed: see `_select`)
_ROOTS = 6  # assembly modes kept per input
_REFINE = 8  # safeguarded Newton steps on the root followed
_TRUST = 0.5  # grid steps: a root further than this from the last two's extrapolation is not trusted


class SearchPredictor(_closure.AbstractPredictor):
    """The closed form of a linkage with a group larger than a dyad: its dyads in
    closed form, each larger group by a search of its driver's angle (every root of the
    closing residual bracketed on a grid: all assembly modes; the one that continues
    the previous input's, from the initial configuration's on, refined by safeguarded
    Newton). An input
    where the search finds no root near the last is left to the core's fallback (not
    proved unreachable: a group's limit is located by continuation)."""

    solve: Callable = eqx.field(static=True)

    def predict(self, opts, x0, inputs, params):
        x, reached = self.solve(inputs, params)
        return _closure.Prediction(guess=x, reached=reached, unreachable=jnp.zeros(reached.shape, bool))


def _pose_at(poses, k, C0, j):
    R, t = poses[k]
    return _mv(R, C0[j, :2]) + t


def _group_chain(step, poses, C0, phi):
    """A group's link poses at the driver angle `phi`, the closing residual and whether
    every inner dyad assembles."""
    _, d, r, kr, inner, (c, j1, k1, j2, k2) = step
    poses = dict(poses)
    P = _pose_at(poses, kr, C0, r)
    cs, sn = jnp.cos(phi), jnp.sin(phi)
    R = jnp.stack([jnp.stack([cs, -sn]), jnp.stack([sn, cs])])
    poses[d] = (R, P - _mv(R, C0[r, :2]))
    ok = jnp.asarray(True)
    for st in inner:
        p1, p2, good = dyad_plane(st, poses, C0, keep_side=True)
        poses[st[1]], poses[st[2]] = p1, p2
        ok = ok & good
    J1, J2 = _pose_at(poses, k1, C0, j1), _pose_at(poses, k2, C0, j2)
    e0, e = C0[j2, :2] - C0[j1, :2], J2 - J1
    r0 = jnp.sqrt(dot(e0, e0))
    Rc = _rot2(e0, e)
    poses[c] = (Rc, J1 - _mv(Rc, C0[j1, :2]))
    return (dot(e, e) - r0**2) / (2 * r0), ok, poses


def _brackets(step, poses, C0):
    """One input's assembly modes: the grid intervals of φ where the closing residual
    changes sign with every inner dyad assembled, `(lower ends (K,), their residuals,
    the upper ends' residuals, found (K,))`."""
    # (offset by half a step: the initial configuration's root, φ = 0, inside a cell,
    # never on a grid point where round-off could hide its sign change)
    grid = jnp.linspace(-jnp.pi, jnp.pi, _GRID, endpoint=False, dtype=C0.dtype) + jnp.pi / _GRID
    f, ok = jax.vmap(lambda ph: _group_chain(step, poses, C0, ph)[:2])(grid)
    g, okn = jnp.roll(f, -1), jnp.roll(ok, -1)
    bracket = ok & okn & (jnp.sign(f) != jnp.sign(g))
    (k,) = jnp.nonzero(bracket, size=_ROOTS, fill_value=0)
    return grid[k], f[k], g[k], bracket[k]


def _refine(step, poses, C0, lo, flo, fhi):
    """The root of the closing residual in `[lo, lo + h]` (h the grid's step): Newton from
    the secant's point, kept inside the shrinking bracket (bisection where a step
    leaves it)."""
    hi = lo + 2 * jnp.pi / _GRID
    ph = lo - flo * (hi - lo) / (fhi - flo)

    def body(_, c):
        lo, hi, ph = c
        val, der = jax.jvp(lambda a: _group_chain(step, poses, C0, a)[0], (ph,), (jnp.ones_like(ph),))
        same = jnp.sign(val) == jnp.sign(flo)
        lo, hi = jnp.where(same, ph, lo), jnp.where(same, hi, ph)
        nxt = ph - val / der
        inside = (nxt >= lo) & (nxt <= hi) & jnp.isfinite(nxt)
        return lo, hi, jnp.where(val == 0, ph, jnp.where(inside, nxt, (lo + hi) / 2))

    ph = jax.lax.fori_loop(0, _REFINE, body, (lo, hi, ph))[2]
    return (ph + jnp.pi) % (2 * jnp.pi) - jnp.pi


def _select(est, found):
    """Per input, the assembly mode (its bracket's index) that continues the previous
    inputs', from φ = 0 (the initial configuration, input 0): the root nearest to the
    extrapolation of the last two (`est`: each bracket's secant estimate). False from
    the first input where it is more than `_TRUST` of the grid's step from that
    extrapolation (a root lost between two grid points, two modes meeting: the core's
    fallback then continues from there)."""
    tol = _TRUST * 2 * jnp.pi / _GRID

    def step(carry, c):
        prev, rate = carry
        ph, ok = c
        dist = jnp.abs((ph - (prev + rate) + jnp.pi) % (2 * jnp.pi) - jnp.pi)
        dist = jnp.where(ok, dist, jnp.inf)
        i = jnp.argmin(dist)
        good = dist[i] <= tol
        move = (ph[i] - prev + jnp.pi) % (2 * jnp.pi) - jnp.pi
        return (jnp.where(good, prev + move, prev), jnp.where(good, move, rate)), (i, good)

    zero = jnp.zeros((), est.dtype)
    _, (idx, good) = jax.lax.scan(step, (zero, zero), (est, found))
    return idx, jnp.cumprod(good).astype(bool)  # after a lost mode, nothing is trusted


@functools.lru_cache(maxsize=128)
def _searched(topo, names, link_names):
    """One `SearchPredictor` per topology (see `_closed_form`)."""

    steps = analyse(topo, names, link_names).steps
    unknowns = compile_equations(topo, names, link_names).unknowns
    holders = {j: [i for i, js in enumerate(topo.links) if j in js] for j, _, _ in unknowns}

    def solve(inputs, prep):
        C0 = prep.C0
        poses = jax.vmap(lambda u: _known_poses(topo, C0, u, prep.lk.gear_params))(inputs)
        reached = jnp.ones(inputs.shape[:1], bool)
        for st in steps:
            if st[0] == "group":
                lo, flo, fhi, found = jax.vmap(lambda p: _brackets(st, p, C0))(poses)
                est = lo - flo * (2 * jnp.pi / _GRID) / (fhi - flo)  # each mode's secant estimate
                idx, good = _select(jnp.where(found, est, 0.0), found)
                pick = jax.vmap(lambda a, i: a[i])
                sel = jax.vmap(lambda p, a, b, c: _refine(st, p, C0, a, b, c))(
                    poses, pick(lo, idx), pick(flo, idx), pick(fhi, idx)
                )
                _, ok, new = jax.vmap(lambda p, a: _group_chain(st, p, C0, a))(poses, sel)
                poses.update(new)
                reached = reached & good & ok
            else:
                p1, p2, good = jax.vmap(lambda p: dyad_plane(st, p, C0))(poses)
                poses[st[1]], poses[st[2]] = p1, p2
                reached = reached & good

        def place(p):
            parts = [_place(topo, j, C0[j], *p[next(i for i in holders[j] if i in p)]) for j, _, _ in unknowns]
            return jnp.concatenate(parts)

        return jax.vmap(place)(poses), reached

    return SearchPredictor(solve)
