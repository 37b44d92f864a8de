"""Gear pairs and racks in a planar linkage description (its `"gears"` list).

A **gear pair** is two links that turn about revolute joints `J1`, `J2` of a third
link, their carrier, with pitch radii `r1`, `r2` (negative: an internal gear, a
ring). Rolling without slip at the pitch point is one equation between the turns
relative to the carrier, `r1 φ1 + r2 φ2 = 0` (Willis' relation: an external pair
turns opposite ways, an internal one the same way), and the pitch circles touch:
`|J1 J2| = |r1 + r2|`, checked on reading. A **rack and pinion** is a pinion turning
about `J1` on the carrier and a rack sliding along the carrier's prismatic joint
`J2` (a line): the rack slides `s = ± r φ`, the sign from the side of the line the
pinion's centre is on (the pitch point moves with the rack).

How a pair is placed. A turn of one gear that is a fixed multiple of another's is
not a function of the links' points (after a full turn of one, the other is at
another angle unless the ratio is a whole number), so a gear is not held by a
closure equation on points. It is **placed**, like an input link: when the carrier
and one gear of a pair are placed (the ground, an input link, or a gear placed
before), the other gear's turn relative to the carrier is a linear function of the
inputs, and its points follow by a rotation about its joint (a rack's by a slide
along its line), then the carrier's own motion. Gear trains rooted at the ground or
an input — a spur pair, a compound train, a planetary train with its arm as an input
or fixed, the geared five-bar, a rack-and-pinion steering — are all placed exactly,
and the closure solves the rest of the linkage. A pair whose carrier or both gears
the closure solves (gears on a coupler) is refused with that reason.

A gear or rack that has a single joint (a gear turning on its pivot alone) gets a
point of its own, `<link>.mark` (type `mark`: one pitch radius along x from the
pivot; a rack's at the foot of the pinion's centre on its line), so that it has a
frame: its turn and its inertia in the dynamics.

The tooth force (`joint_forces`): one unknown per pair, the force along the pitch
circles' common tangent at the pitch point on the second gear (the opposite on the
first); with a pressure angle `α` the force acts along the line of action, its
separating part `|F_t| tan α` pushing the gears apart (through both centres: it
changes the pins' reactions, not the torques).
"""

import math

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._geometry import dot, perp
from ._errors import LinkageError
from ._joints import GearMark

KINDS = ("gear", "rack")
KEYS = ("type", "links", "joints", "radii", "pressure_angle")
MARK = GearMark.letter
PRESSURE_ANGLE = math.radians(20.0)  # the standard involute tooth's


def _entry(path: str, g) -> str:
    """An entry's kind, its keys, links and joints checked for shape."""
    if not isinstance(g, dict):
        raise LinkageError(f"{path}: a mapping {{type, links, joints, radii}}; got {g!r}")
    extra = sorted(set(g) - set(KEYS))
    if extra:
        raise LinkageError(f"{path}: unknown key {extra[0]!r} (allowed: {KEYS})")
    kind = g.get("type", "gear")
    if kind not in KINDS:
        raise LinkageError(f"{path}.type: one of {KINDS}; got {kind!r}")
    for key in ("links", "joints"):
        v = g.get(key)
        if not (isinstance(v, list) and len(v) == 2 and all(isinstance(n, str) for n in v)):
            raise LinkageError(f"{path}.{key}: two names [{key[:-1].upper()}1, {key[:-1].upper()}2]; got {v!r}")
    if g["links"][0] == g["links"][1]:
        raise LinkageError(f"{path}.links: two different links; got {g['links']!r}")
    return kind


def _radii(path: str, g, kind: str) -> tuple[float, float]:
    want = 2 if kind == "gear" else 1
    raw = g.get("radii")
    ok = isinstance(raw, list) and len(raw) == want
    vals = [v for v in raw if isinstance(v, (int, float)) and not isinstance(v, bool)] if ok else []
    if not ok or len(vals) != want or not all(math.isfinite(v) and v != 0 for v in vals):
        what = "[r1, r2]: two non-zero pitch radii (negative: an internal gear)" if want == 2 else "[r]: the pinion's"
        raise LinkageError(f"{path}.radii: {what}; got {raw!r}")
    if kind == "rack":
        if vals[0] <= 0:
            raise LinkageError(f"{path}.radii: a pinion's pitch radius is > 0; got {raw!r}")
        return float(vals[0]), 0.0
    r1, r2 = (float(v) for v in vals)
    if r1 < 0 and r2 < 0:
        raise LinkageError(f"{path}.radii: two internal gears cannot mesh; got {raw!r}")
    if r1 + r2 == 0:
        raise LinkageError(f"{path}.radii: r1 + r2 = 0 puts both centres at one point; got {raw!r}")
    return r1, r2


def add_marks(raw, geometry: str, links: dict, names: list, types: list, rows: list) -> dict:
    """The links' description with a mark (`<link>.mark`) on each gear or rack that
    has a single joint; `names`, `types` and `rows` are extended in place."""
    if raw is None or raw == []:
        return links
    if geometry != "planar":
        raise LinkageError(f"gears: gears and racks are planar elements; this linkage is {geometry}")
    if not isinstance(raw, list):
        raise LinkageError(f"gears: a list of {{type, links, joints, radii}}; got {raw!r}")
    out = dict(links)
    index = {n: i for i, n in enumerate(names)}
    for k, g in enumerate(raw):
        path = f"gears[{k}]"
        kind = _entry(path, g)
        radii = _radii(path, g, kind)
        for side, (ln, jn) in enumerate(zip(g["links"], g["joints"])):
            if ln not in out:
                raise LinkageError(f"{path}.links: unknown link {ln!r}; links are {list(out)}")
            if jn not in index:
                raise LinkageError(f"{path}.joints: unknown joint {jn!r}")
            spec = out[ln]
            members = spec.get("joints") if isinstance(spec, dict) else spec
            if not isinstance(members, (list, tuple)):
                continue  # (the links' reader names the error)
            mark = f"{ln}.{MARK}"
            if mark in members or sum(m in index and types[index[m]] != "tracer" for m in members) >= 2:
                continue
            if mark in index:
                raise LinkageError(f"joints.{mark}: the name of gear {ln}'s mark; rename it")
            at = np.asarray(rows[index[jn]], dtype=float)
            if kind == "rack" and side == 1:  # the pinion's centre's foot on the rack's line
                c = np.asarray(rows[index[g["joints"][0]]], dtype=float)
                h = at[0] * c[0] + at[1] * c[1] + at[2]
                row = np.array([c[0] - h * at[0], c[1] - h * at[1], 0.0])
            else:
                row = at + np.array([abs(radii[side]), 0.0, 0.0])
            names.append(mark)
            types.append(MARK)
            rows.append(row)
            index[mark] = len(names) - 1
            members = list(members) + [mark]
            out[ln] = {**spec, "joints": members} if isinstance(spec, dict) else members
    return out


class Train(eqx.Module):
    """A linkage's gears (static): `pairs`, per pair `(kind, L1, J1, L2, J2,
    carrier, sign)` (`sign`: the side of a rack's line its pinion's centre is on);
    `tree`, per link the gears place, in order, `(link, parent, joint, kind)`: it
    turns about its revolute `joint` on `parent` (kind "revolute") or, a rack, slides
    along its prismatic joint with it ("prismatic"), `parent` placed before it. (A
    module of this package, so that a kept program's key can describe it.)"""

    pairs: tuple = ()
    tree: tuple = ()

    def __bool__(self) -> bool:
        return bool(self.pairs)


def parse(raw, names, types, rows, link_names, link_tuples, ground: int, inputs) -> dict:
    """The `Linkage` fields of the gears: `gears`, a `Train`, and `gear_params`
    `(G, 3)`: per pair `(r1, r2, α)` (a rack's `r2` is 0)."""
    if raw is None or raw == []:
        return dict(gears=Train(), gear_params=None)
    index = {n: i for i, n in enumerate(names)}
    pairs, params = [], []
    for k, g in enumerate(raw):
        path = f"gears[{k}]"
        kind = _entry(path, g)
        la, lb = (link_names.index(n) for n in g["links"])
        ja, jb = (index[n] for n in g["joints"])
        for li, j in ((la, ja), (lb, jb)):
            if j not in link_tuples[li]:
                raise LinkageError(f"{path}.joints: {names[j]} is not on link {link_names[li]}")
        want_b = "R" if kind == "gear" else "P"
        if types[ja] != "R" or types[jb] != want_b:
            raise LinkageError(
                f"{path}.joints: "
                + (
                    "a gear turns about a revolute (R) joint with its carrier: both joints are R"
                    if kind == "gear"
                    else "a pinion turns about a revolute (R) joint, a rack slides along a prismatic (P) one"
                )
                + f"; got {types[ja]} and {types[jb]}"
            )
        carriers = [c for c, m in enumerate(link_tuples) if ja in m and jb in m and c not in (la, lb)]
        if len(carriers) != 1:
            raise LinkageError(
                f"{path}: joints {names[ja]} and {names[jb]} must both be on one other link, the carrier that holds "
                f"both axes; they are both on {[link_names[c] for c in carriers]}"
            )
        r1, r2 = _radii(path, g, kind)
        alpha = g.get("pressure_angle", PRESSURE_ANGLE)
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha < 1.2:
            raise LinkageError(f"{path}.pressure_angle: radians in [0, 1.2); got {alpha!r}")
        pairs.append((kind, la, ja, lb, jb, carriers[0], _side(path, kind, rows, names, ja, jb, r1, r2)))
        params.append((r1, r2, float(alpha)))
    P = np.asarray(params, dtype=float)
    train = Train(tuple(pairs), _tree(pairs, types, link_names, link_tuples, ground, inputs))
    _check_determined(train, P, link_names, inputs)
    return dict(gears=train, gear_params=P)


def _side(path, kind, rows, names, ja, jb, r1, r2) -> int:
    """A gear pair's pitch circles checked to touch; a rack's side (±1)."""
    a, b = np.asarray(rows[ja], dtype=float), np.asarray(rows[jb], dtype=float)
    if kind == "gear":
        d = float(np.hypot(*(b - a)[:2]))
        if abs(d - abs(r1 + r2)) > 1e-9 * max(d, abs(r1) + abs(r2)):
            raise LinkageError(
                f"{path}.radii: meshing pitch circles have their centres |r1 + r2| = {abs(r1 + r2):.12g} apart; "
                f"{names[ja]} and {names[jb]} are {d:.12g} apart"
            )
        return 1
    h = b[0] * a[0] + b[1] * a[1] + b[2]
    if abs(h) <= 1e-12 * max(1.0, float(np.abs(a[:2]).max())):
        raise LinkageError(
            f"{path}: the pinion's centre {names[ja]} lies on the rack's line {names[jb]}: the side the rack meshes "
            "on is undefined"
        )
    return 1 if h > 0 else -1


def _tree(pairs, types, link_names, link_tuples, ground: int, inputs) -> tuple:
    """The links the gears place, each with the placed link it turns on (a gear on its
    pair's carrier, a carrier on a link it shares a revolute joint with), grown
    outwards from the ground and the inputs."""
    placed = {ground} | {link for _, link, _ in inputs if link >= 0}
    moving = {k for kind, la, _, lb, _, c, _ in pairs for k in (la, lb, c)} - placed
    on = {}  # link -> (parent, joint, kind): as a gear on its carrier
    for kind, la, ja, lb, jb, c, _ in pairs:
        on.setdefault(la, (c, ja, "revolute"))
        on.setdefault(lb, (c, jb, "revolute" if kind == "gear" else "prismatic"))
    tree, done = [], set(placed)
    while moving - done:
        for link in sorted(moving - done):
            if link in on and on[link][0] in done:
                tree.append((link,) + on[link])
                break
            shared = [
                (k, j)
                for k in sorted(done)
                for j in link_tuples[link]
                if j in link_tuples[k] and types[j] == "R" and link not in on
            ]
            if shared:
                tree.append((link, shared[0][0], shared[0][1], "revolute"))
                break
        else:
            stuck = sorted(moving - done)
            raise LinkageError(
                f"gears: {[link_names[k] for k in stuck]} turn on no link the ground, an input or the gears place "
                "(a gear is placed on its carrier, a carrier on a pivot of a placed link): gear trains rooted at the "
                "ground or an input, not gears on links the closure solves"
            )
        done.add(tree[-1][0])
    return tuple(tree)


def _check_determined(train: Train, P, link_names, inputs) -> None:
    """The pairs' equations determine the placed gears' turns and slides (square and
    regular at the description's radii)."""
    n, m = len(train.tree), len(train.pairs)
    if n != m:
        raise LinkageError(
            f"gears: {m} gear pair(s) for {n} link(s) they place ({[link_names[t[0]] for t in train.tree]}): "
            + (
                "the pairs over-constrain them (a pair between two links already placed locks the inputs)"
                if m > n
                else "the pairs leave some turns free (add an input or a pair)"
            )
        )
    M = _matrix(train, P, np)
    if np.linalg.cond(M) > 1e12:
        raise LinkageError(
            "gears: the pairs' equations are singular at these radii (the train's turns are not determined by its "
            "inputs)"
        )


def _matrix(train: Train, P, xp):
    """The pairs' equations' matrix in the placed links' turns (a rack's slide)."""
    col = {t[0]: i for i, t in enumerate(train.tree)}
    rows = []
    for (kind, la, _, lb, _, c, sign), p in zip(train.pairs, P):
        row = [xp.zeros((), dtype=P.dtype) for _ in col]
        for link, coef, _ in _coefficients(kind, la, lb, c, sign, p):
            if link in col:
                row[col[link]] = row[col[link]] + coef
        rows.append(xp.stack(row))
    return xp.stack(rows)


def _coefficients(kind, la, lb, c, sign, p):
    """A pair's equation as `(link, coefficient, "turn" or "slide")` terms in the
    links' turns and a rack's slide: `r1 (ψ1 − ψc) + r2 (ψ2 − ψc) = 0`; a rack
    `s − ± r (ψ1 − ψc) = 0`."""
    if kind == "gear":
        return [(la, p[0], "turn"), (lb, p[1], "turn"), (c, -p[0] - p[1], "turn")]
    return [(lb, 1.0 + 0 * p[0], "slide"), (la, -sign * p[0], "turn"), (c, sign * p[0], "turn")]


def driven_links(train) -> tuple[int, ...]:
    """The links the gears place, in order."""
    return tuple(t[0] for t in train.tree) if train else ()


def motions(topo, gear_params, values) -> list:
    """Per link the gears place, in order: `(link, steps)`, `steps` the elementary
    motions that carry its points from the initial configuration, innermost first:
    `(kind, joint, amount)` for `moved_planar` (its turn about its joint on its parent,
    or its slide along it, then its parent's). The turns solve the pairs' equations,
    linear in the inputs. `topo`: the linkage's `_Topology`; `gear_params` its
    `gear_params`; `values`: each input's value."""
    train = topo.gears
    if not train:
        return []
    P = gear_params
    turn, steps, slide = {topo.ground: 0.0}, {topo.ground: []}, {}
    for (kind, link, joints), ui in zip(topo.inputs, values):
        if link >= 0:
            turn[link] = ui if kind == "revolute" else 0.0
            steps[link] = [(kind, joints[0], ui)]
            if kind == "prismatic":
                slide[link] = ui
    # the pairs' equations: the placed links' terms move to the right-hand side
    col = {t[0] for t in train.tree}
    rhs = []
    for (kind, la, _, lb, _, c, sign), p in zip(train.pairs, P):
        known = {"turn": turn, "slide": slide}
        terms = [
            coef * known[what][link] for link, coef, what in _coefficients(kind, la, lb, c, sign, p) if link not in col
        ]
        rhs.append(-sum(terms) if terms else jnp.zeros((), P.dtype))
    q = jnp.linalg.solve(_matrix(train, P, jnp), jnp.stack([jnp.asarray(v, P.dtype) for v in rhs]))
    out = []
    for i, (link, parent, joint, kind) in enumerate(train.tree):
        if kind == "prismatic":
            turn[link] = turn[parent]
            move = (kind, joint, q[i])
        else:
            turn[link] = q[i]
            move = (kind, joint, q[i] - turn[parent])
        steps[link] = [move] + steps[parent]
        out.append((link, steps[link]))
    return out


def pitch(X, lk):
    """Per pair at coordinates `X`: the pitch point `P` `(G, 2)`, the tangent `t` the
    tangential force is measured along, and the unit `e` the separating force on the
    second gear points along (`(G, 2)` each)."""
    pairs = lk.gears.pairs
    kinds = np.asarray([g[0] == "gear" for g in pairs])
    ja = np.asarray([g[2] for g in pairs])
    jb = np.asarray([g[4] for g in pairs])
    sign = jnp.asarray([float(g[6]) for g in pairs], X.dtype)
    r1, r2 = lk.gear_params[:, 0], lk.gear_params[:, 1]
    ca, cb = X[ja, :2], X[jb, :2]
    # gears: P on the line of centres, r1 / (r1 + r2) of the way from J1
    d = cb - ca
    denom = jnp.where(kinds, r1 + r2, 1.0)
    Pg = ca + (r1 / denom)[:, None] * d
    # racks: the pinion's centre moved r1 towards the line (its normal n, the slide (n_y, −n_x))
    n = X[jb, :2]
    Pr = ca - (sign * r1)[:, None] * n
    P = jnp.where(kinds[:, None], Pg, Pr)
    dg = d / jnp.sqrt(dot(d, d))[:, None]
    t = jnp.where(kinds[:, None], perp(dg), jnp.stack([n[:, 1], -n[:, 0]], axis=1))
    e = jnp.sign(r1)[:, None] * (P - ca) / jnp.abs(r1)[:, None]
    return P, t, e
