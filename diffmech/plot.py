"""Matplotlib figures and notebook animations (imported on demand: `diffmech.plot`)."""

from typing import Any

import jax.numpy as jnp
import numpy as np

from . import fourbar as _fb
from ._validate import ArgumentTypeError as _ArgumentTypeError, as_floats as _as_floats, check_count as _check_count


def _axes(ax, **kw) -> Any:
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    if ax is None:
        _, ax = plt.subplots(**kw)
    elif not isinstance(ax, Axes):
        raise ValueError(f"plot: `ax` must be matplotlib axes or None; got {ax!r:.80}")
    return ax


def _check_motion(who, lk, motion):
    """A linkage `Motion` of `lk` with at least one converged step, named where not."""
    from .linkage import Linkage, Motion

    if not isinstance(lk, Linkage):
        raise ValueError(f"plot.{who}: `lk` must be a Linkage; got {type(lk).__name__}")
    if not isinstance(motion, Motion):
        raise ValueError(f"plot.{who}: `motion` must be a Motion (linkage.sweep); got {type(motion).__name__}")
    if motion.coords.shape[-2] != len(lk.names) or motion.coords.ndim != 3:
        raise ValueError(
            f"plot.{who}: `motion` is not a single motion of {lk.name!r} ({motion.coords.shape[-2]} joints against "
            f"{len(lk.names)})"
        )
    if not bool(np.any(np.asarray(motion.converged))):
        raise ValueError(f"plot.{who}: `motion` has no converged step to draw (its status: {motion.status})")


def _figure(who, fig, figsize):
    """`fig`, or a new figure of `figsize` where None; anything else is named."""
    import matplotlib.figure
    import matplotlib.pyplot as plt

    if fig is None:
        return plt.figure(figsize=figsize)
    if not isinstance(fig, matplotlib.figure.Figure):
        raise _ArgumentTypeError(f"{who}: `fig` must be a matplotlib figure or None; got {fig!r:.80}")
    return fig


def _one_design(who, fb):
    """Drawings are of one four-bar: a `FourBar` without batch axes."""
    if not isinstance(fb, _fb.FourBar) or fb.batch_shape:
        shape = getattr(fb, "batch_shape", None)
        raise ValueError(f"{who}: `fb` must be one FourBar (no batch axes); got {type(fb).__name__} {shape or ''}")


def fourbar_attitudes(sweeps: dict, fig=None):
    """Bai et al. Fig. 3: the components of qB and qD over the crank angle and the
    error ‖q‖ − 1, one marker style per labelled sweep (`{label: Sweep}`).
    The error panel is on a symmetric-log scale, so exact zeros show.

    **Arguments:** `sweeps`: `{label: Sweep}`; `fig`: a figure to draw in (default: a
    new one). **Returns:** the figure.
    """

    if not isinstance(sweeps, dict) or not sweeps or not all(isinstance(v, _fb.Sweep) for v in sweeps.values()):
        raise ValueError(
            f"plot.fourbar_attitudes: `sweeps` must be a non-empty dict {{label: Sweep}}; got {sweeps!r:.80}"
        )

    for label, s in sweeps.items():
        if np.ndim(s.q) != 2:
            raise ValueError(
                f"plot.fourbar_attitudes: sweep {label!r} must be of one design (q of shape (N, 6)); got q of shape "
                f"{np.shape(s.q)}"
            )
        if not np.any(np.asarray(s.converged)):
            raise ValueError(f"plot.fourbar_attitudes: sweep {label!r} has no converged crank angle to draw")
    fig = _figure("plot.fourbar_attitudes", fig, (10, 6.5))
    axs = fig.subplots(2, 2, sharex=True)
    markers = ["o", "s", "^", "x", "d"]
    for k, (label, s) in enumerate(sweeps.items()):
        ok = np.asarray(s.converged)
        th = np.degrees(np.asarray(s.theta_A))[ok]
        q = np.asarray(s.q)[ok]
        m = markers[k % len(markers)]
        for col, (name, sl) in enumerate((("q_B", slice(2, 4)), ("q_D", slice(4, 6)))):
            v = q[:, sl]
            axs[0, col].plot(th, v[:, 0], m, ms=3, label=f"{label}: x")
            axs[0, col].plot(th, v[:, 1], m, ms=3, mfc="none", label=f"{label}: y")
            axs[0, col].set_title(f"${name}$")
            err = np.linalg.norm(v, axis=1) - 1
            axs[1, col].plot(th, err, m, ms=3, label=label)
            axs[1, col].set_yscale("symlog", linthresh=1e-17)
            axs[1, col].set_ylabel(r"$\|q\| - 1$")
    for ax in axs[1]:
        ax.set_xlabel("crank angle θA (deg)")
        ax.axhspan(-2.3e-16, 2.3e-16, color="0.9", zorder=0, label="round-off band (±ε)")
    axs[0, 0].legend(fontsize=7, ncol=2)
    axs[1, 0].legend(fontsize=7)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def fourbar_track(fb, q, *, every: int = 10, point=None, ax=None, color="C0"):
    """Bai et al. Fig. 4: the mechanism drawn at every `every`-th configuration of `q`
    (`(N, 6)`, converged rows only), with the paths of B and C (and of a coupler
    point `point` in the coupler frame, if given).

    **Arguments:** `fb`: the design; `q`, `every`, `point` as above; `ax`: axes to draw
    in (default: new ones); `color`: a matplotlib colour. **Returns:** the axes.
    """
    _check_count("plot.fourbar_track", "every", every)
    _one_design("plot.fourbar_track", fb)
    q = _as_floats("plot.fourbar_track", "q", q)
    if q.ndim != 2 or q.shape[1] != 6 or q.shape[0] < 1:
        raise ValueError(f"plot.fourbar_track: `q` must be configurations (N, 6), N ≥ 1; got shape {q.shape}")
    if point is not None and np.shape(point) != (2,):
        raise ValueError(f"plot.fourbar_track: `point` must be (p_x, p_y); got shape {np.shape(point)}")
    ax = _axes(ax, figsize=(6, 5))
    P = {k: np.asarray(v) for k, v in _fb.joint_positions(fb, jnp.asarray(q)).items()}
    for i in range(0, len(q), every):
        xs = [P["A"][i, 0], P["B"][i, 0], P["C"][i, 0], P["D"][i, 0]]
        ys = [P["A"][i, 1], P["B"][i, 1], P["C"][i, 1], P["D"][i, 1]]
        ax.plot(xs, ys, "-o", color=color, alpha=0.35, lw=1, ms=2)
    ax.plot(P["B"][:, 0], P["B"][:, 1], "k:", lw=1, label="path of B")
    ax.plot(P["C"][:, 0], P["C"][:, 1], "r-", lw=1.2, label="path of C")
    if point is not None:
        cp = np.asarray(_fb.coupler_point(fb, jnp.asarray(q), point))
        ax.plot(cp[:, 0], cp[:, 1], "g-", lw=1.5, label="coupler curve")
    ax.plot([0, float(np.asarray(fb.lengths)[3])], [0, 0], "k^", ms=9)
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.legend(fontsize=8)
    return ax


def fourbar_dynamics(traj, *, title: str = "", fig=None):
    """Bai et al. Figs. 5 and 7: the crank momentum Π1 and the attitude components
    (qA, qB, qD) against time, with the loop-closure residual (symmetric-log scale, so
    exact zeros show) and the relative energy error H(t)/H(0) − 1.

    **Arguments:** `traj`: a `fourbar.simulate_dynamics` trajectory; `title`: the figure's title;
    `fig`: a figure to draw in (default: a new one). **Returns:** the figure.
    """

    if not isinstance(traj, _fb.Simulation):
        raise ValueError(
            f"plot.fourbar_dynamics: `traj` must be a fourbar.simulate_dynamics result; got {type(traj).__name__}"
        )

    fig = _figure("plot.fourbar_dynamics", fig, (10, 6.5))
    axs = fig.subplots(2, 2, sharex=True)
    t = np.asarray(traj.ts)
    q = np.asarray(traj.q)
    axs[0, 0].plot(t, np.asarray(traj.Pi), "k-")
    axs[0, 0].set_ylabel(r"$\Pi_1$ (kg m$^2$/s)")
    for k, (name, c, lw) in enumerate((("q_A", "C0", 4), ("q_B", "C1", 1.5), ("q_D", "C2", 1.5))):
        # qA drawn wide and pale: on a parallelogram qD = qA lies on top of it
        a = 0.45 if k == 0 else 1.0
        axs[0, 1].plot(t, q[:, 2 * k], "-", color=c, lw=lw, alpha=a, label=f"${name}$ x")
        axs[0, 1].plot(t, q[:, 2 * k + 1], "--", color=c, lw=lw, alpha=a, label=f"${name}$ y")
    axs[0, 1].legend(fontsize=7, ncol=3)
    axs[0, 1].set_ylabel("attitude components")
    axs[1, 0].plot(t, np.asarray(traj.residual), "k.", ms=2)
    axs[1, 0].set_yscale("symlog", linthresh=1e-17)
    axs[1, 0].set_ylabel("closure residual")
    E = np.asarray(traj.energy)
    axs[1, 1].plot(t, (E - E[0]) / max(abs(E[0]), 1e-300), "k-", lw=0.8)
    axs[1, 1].ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    axs[1, 1].set_ylabel("H(t)/H(0) − 1")
    for ax in axs[1]:
        ax.set_xlabel("t (s)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def animate_fourbar(fb, sweep, *, point=None, interval: int = 30):
    """A `matplotlib.animation.FuncAnimation` of a four-bar sweep (display it in a
    notebook with `IPython.display.HTML(anim.to_jshtml())`).

    **Arguments:** `fb`: the design; `sweep`: its `Sweep`; `point`: a coupler point
    `(p_x, p_y)` (m) whose path is drawn; `interval`: ms per frame.
    """
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation

    who = "plot.animate_fourbar"
    _one_design(who, fb)
    if not isinstance(sweep, _fb.Sweep) or np.ndim(sweep.q) != 2:
        raise ValueError(f"{who}: `sweep` must be a fourbar.sweep result of one design; got {type(sweep).__name__}")
    if not np.any(np.asarray(sweep.converged)):
        raise ValueError(f"{who}: `sweep` has no converged crank angle to animate")
    _check_count(who, "interval", interval)
    ok = np.asarray(sweep.converged)
    q = np.asarray(sweep.q)[ok]
    P = {k: np.asarray(v) for k, v in _fb.joint_positions(fb, jnp.asarray(q)).items()}
    fig, ax = plt.subplots(figsize=(5, 4))
    fourbar_track(fb, q, every=len(q) + 1, point=point, ax=ax)
    (line,) = ax.plot([], [], "-o", color="C0", lw=2)

    def frame(i):
        line.set_data(
            [P["A"][i, 0], P["B"][i, 0], P["C"][i, 0], P["D"][i, 0]],
            [P["A"][i, 1], P["B"][i, 1], P["C"][i, 1], P["D"][i, 1]],
        )
        return (line,)

    anim = FuncAnimation(fig, frame, frames=len(q), interval=interval, blit=True)
    plt.close(fig)
    return anim


def _segments(lk, C):
    """Line segments drawing each link at one configuration `C` (J, 3): between its
    points (tracers included), closed polygons for ternary and larger links. Lines
    and planes are not drawn as segments."""
    segs = []
    for link in lk.links:
        pts = [j for j in link if lk.types[j] not in ("P", "axis")]
        if len(pts) < 2:
            continue
        ring = pts + [pts[0]] if len(pts) > 2 else pts
        segs.append(np.asarray(C)[ring, : lk.dim])
    return segs


def linkage_curve(lk, motion, *, tracers=None, every: int = 15, ax: Any = None, title=None):
    """A linkage's coupler curve(s) (the seed's Figs. 2, 3, 6, 7, 8): the tracer paths
    over the converged steps, the mechanism drawn at its initial configuration (solid)
    and every `every`-th step (faint), planar lines drawn across the view. 2-D for
    planar linkages, 3-D (with the unit sphere for a spherical one) otherwise.
    Returns the axes.

    **Arguments:** `lk`: the linkage; `motion`: its `Motion`; `tracers`: the joints
    whose paths are drawn (default: the tracers); `every`; `ax`: axes (default: new
    ones); `title`: the axes' title.
    """
    import matplotlib.pyplot as plt

    _check_motion("linkage_curve", lk, motion)
    _check_count("plot.linkage_curve", "every", every)
    if tracers is not None and any(t not in lk.names for t in tracers):
        bad = [t for t in tracers if t not in lk.names]
        raise ValueError(f"plot.linkage_curve: `tracers` {bad} are not joints of {lk.name!r} ({', '.join(lk.names)})")
    three = lk.dim == 3
    if ax is not None:
        _axes(ax)
    if ax is None:
        fig = plt.figure(figsize=(6, 5))
        ax = fig.add_subplot(projection="3d" if three else None)
    ok = np.asarray(motion.converged)
    C = np.asarray(motion.coords)[ok]
    tracers = tracers or [n for n, t in zip(lk.names, lk.types) if t == "tracer"]
    for i in list(range(0, len(C), every)):
        for seg in _segments(lk, C[i]):
            ax.plot(*seg.T, "-", color="0.6", lw=0.7, alpha=0.5)
    for seg in _segments(lk, C[0]):
        ax.plot(*seg.T, "-o", color="C0", lw=2, ms=3)
    ground = [j for j in lk.links[lk.ground] if lk.types[j] not in ("P", "axis")]
    if ground:
        ax.plot(*np.asarray(C[0])[ground, : lk.dim].T, "k^", ms=8, label="ground joints")
    for k, name in enumerate(tracers):
        path = np.asarray(motion.path(name))[ok]
        ax.plot(*path.T, "-", color=f"C{k + 1}", lw=1.8, label=f"path of {name}")
    if lk.geometry == "planar":
        lo, hi = C[..., :2].reshape(-1, 2).min(0), C[..., :2].reshape(-1, 2).max(0)
        pad = 0.1 * (hi - lo).max()
        for j in (j for j, t in enumerate(lk.types) if t == "P"):
            a, b, c = C[0, j]
            t = np.linspace(-1, 1, 2) * (hi - lo).max() * 2
            foot = -c * np.array([a, b])
            xy = foot + t[:, None] * np.array([b, -a])
            ax.plot(*xy.T, "--", color="0.3", lw=0.8)
        ax.set_xlim(lo[0] - pad, hi[0] + pad)
        ax.set_ylim(lo[1] - pad, hi[1] + pad)
        ax.set_aspect("equal")
    else:
        if lk.geometry == "spherical":
            u, v = np.mgrid[0 : 2 * np.pi : 24j, 0 : np.pi : 12j]
            ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.4)
        ax.set_box_aspect((1, 1, 1))
        ax.set_zlabel("z")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(title or f"{lk.name}: {int(ok.sum())} of {len(ok)} steps")
    ax.legend(fontsize=7)
    return ax


def animate_linkage(lk, motion, *, interval: int = 40):
    """A `matplotlib.animation.FuncAnimation` of a linkage's motion over its converged
    steps, with the tracer paths (in a notebook: `HTML(anim.to_jshtml())`).

    **Arguments:** `lk`: the linkage; `motion`: its `Motion`; `interval`: ms per frame.
    """
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation

    _check_motion("animate_linkage", lk, motion)
    ok = np.asarray(motion.converged)
    C = np.asarray(motion.coords)[ok]
    ax: Any = linkage_curve(lk, motion, every=len(C) + 1)
    fig = ax.figure
    lines = [ax.plot(*seg.T, "-o", color="C3", lw=2, ms=3)[0] for seg in _segments(lk, C[0])]

    def frame(i):
        for line, seg in zip(lines, _segments(lk, C[i])):
            line.set_data(seg[:, 0], seg[:, 1])
            if lk.dim == 3:
                line.set_3d_properties(seg[:, 2])
        return lines

    anim = FuncAnimation(fig, frame, frames=len(C), interval=interval, blit=lk.dim == 2)
    plt.close(fig)
    return anim


__all__ = [
    "fourbar_attitudes",
    "fourbar_track",
    "fourbar_dynamics",
    "animate_fourbar",
    "linkage_curve",
    "animate_linkage",
]


def time_series(times, values, labels, *, ax=None, title: str = "", ylabel: str = ""):
    """Plot the columns of `values` `(N, k)` against `times`, one labelled line each
    (the joint and force histories of the parallel-mechanism figures).

    **Arguments:** `times` `(N,)`; `values` `(N, k)`; `labels`: k line labels; `ax`:
    axes (default: new ones); `title`, `ylabel`: the axes' title and y label.
    **Returns:** the axes.
    """
    t, v = _as_floats("plot.time_series", "times", times), _as_floats("plot.time_series", "values", values)
    v = v[:, None] if v.ndim == 1 else v
    if t.ndim != 1 or v.ndim != 2 or v.shape[0] != t.shape[0] or v.shape[1] != len(labels):
        raise ValueError(
            f"plot.time_series: `values` must be (N, k) for `times` (N,) and k `labels`; got {v.shape}, {t.shape} and "
            f"{len(labels)} labels"
        )
    ax = _axes(ax)
    for i, lab in enumerate(labels):
        ax.plot(t, v[:, i], lw=1.0, label=lab)
    ax.set_xlabel("t [s]")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=6, ncol=max(1, len(labels) // 6))
    return ax


def synthesis(result, targets, *, ax=None, title: str | None = None):
    """Target points against a synthesised design (`diffmech.synthesis.path_generation`):
    the targets, the design's coupler curve (closure core; a four-bar over one crank
    revolution from its first target, a linkage over its input range), its points at
    the targets and the mechanism at the first target.

    **Arguments:** `result`: a `Synthesis`; `targets` `(n, 2)`: the target points (m);
    `ax`: axes (default: new ones); `title`: the axes' title. **Returns:** the axes.
    """
    import jax.numpy as jnp

    from . import linkage as _lk
    from ._synthesis import PlacedFourBar, Synthesis

    if not isinstance(result, Synthesis):
        raise ValueError(f"plot.synthesis: `result` must be a Synthesis; got {type(result).__name__}")
    t = _as_floats("plot.synthesis", "targets", targets)
    n = np.shape(result.points)[0]
    width = 3 if "max_angle_error" in result.constraints else 2
    if t.ndim != 2 or t.shape[0] != n or t.shape[1] not in (2, width):
        raise ValueError(f"plot.synthesis: `targets` must be the result's {n} targets, ({n}, {width}); got {t.shape}")
    ax = _axes(ax, figsize=(6, 5))
    d: Any = result.design
    u = np.asarray(result.inputs)
    if "offsets" in result.constraints:  # function generation: the rocker angle against the crank angle
        from . import fourbar as _fb

        a, b = result.constraints["offsets"]
        th = np.linspace(u.min(), u.max(), 181)
        s = _fb.sweep(d.fourbar, th, condition=False)
        psi = np.unwrap(np.arctan2(np.asarray(s.q)[:, 5], np.asarray(s.q)[:, 4]))
        psi = np.where(np.asarray(s.converged), psi, np.nan)
        p = np.asarray(result.points)
        shift = 2 * np.pi * np.round((p[0, 1] - psi[np.argmin(np.abs(th - p[0, 0]))]) / (2 * np.pi))
        ax.plot(th, psi + shift, "-", color="C0", lw=1.5, label="rocker angle (closure core)")
        ax.plot(t[:, 0] + a, t[:, 1] + b, "o", mfc="none", color="C3", ms=9, label="targets (with the offsets)")
        ax.plot(p[:, 0], p[:, 1], "x", color="C0", ms=7, label=f"design (mean error {result.error:.2e} rad)")
        ax.set_xlabel("crank angle (rad)")
        ax.set_ylabel("rocker angle (rad)")
        ax.legend(fontsize=8, loc="best")
        ax.set_title(title or f"function generation: objective {result.objective:.2e} rad²")
        return ax
    if isinstance(d, PlacedFourBar):
        curve, ok = d.path(u[0] + np.linspace(0.0, 2 * np.pi, 361))
        curve = np.where(np.asarray(ok)[:, None], np.asarray(curve), np.nan)
        j = {k: np.asarray(v) for k, v in d.joints(u[0]).items()}
        for a, b in (("A", "B"), ("B", "C"), ("C", "D"), ("B", "P"), ("C", "P")):
            ax.plot([j[a][0], j[b][0]], [j[a][1], j[b][1]], "-", color="0.35", lw=2)
        ax.plot([j["A"][0], j["D"][0]], [j["A"][1], j["D"][1]], "^", color="0.2", ms=9, label="ground pivots")
    else:
        m = _lk.sweep(d, inputs=jnp.linspace(float(u.min()), float(u.max()), 181), condition=False)
        k = int(np.argmin(np.linalg.norm(np.asarray(m.coords)[0, :, :2] - np.asarray(result.points)[0], axis=1)))
        curve = np.where(np.asarray(m.converged)[:, None], np.asarray(m.coords)[:, k, :2], np.nan)
    ax.plot(curve[:, 0], curve[:, 1], "-", color="C0", lw=1.5, label="coupler curve (closure core)")
    ax.plot(t[:, 0], t[:, 1], "o", mfc="none", color="C3", ms=9, label="targets")
    p = np.asarray(result.points)
    ax.plot(p[:, 0], p[:, 1], "x", color="C0", ms=7, label=f"design at targets (mean error {result.error:.2e})")
    if t.shape[1] == 3 and "body_angle" in result.constraints:  # motion generation: the body's orientations
        from . import fourbar as _fb

        size = 0.15 * float(np.sqrt(np.mean(np.sum((t[:, :2] - t[:, :2].mean(0)) ** 2, 1))))
        q = np.asarray(_fb.assemble(d.fourbar, jnp.asarray(u)))
        phi = float(d.angle) + np.arctan2(q[:, 3], q[:, 2]) + result.constraints["body_angle"]
        for (x, y, a), (px, py), f in zip(t, p, phi):
            ax.plot([x, x + size * np.cos(a)], [y, y + size * np.sin(a)], "-", color="C3", lw=2)
            ax.plot([px, px + size * np.cos(f)], [py, py + size * np.sin(f)], "--", color="C0", lw=1.2)
    ax.set_aspect("equal")
    ax.legend(fontsize=8, loc="best")
    task = "motion" if t.shape[1] == 3 else "path"
    ax.set_title(title or f"{task} generation: relative error {result.relative_error:.1e}")
    return ax


def singularities(s, *, ax=None, title: str | None = None):
    """The singularity margin and the output links' rates along a sweep, with every
    located singular point marked at its input (`linkage.singularities`).

    **Arguments:** `s`: a `linkage.Singularities`; `ax`: axes (default: new ones);
    `title`: the axes' title. **Returns:** the axes.
    """
    from .linkage import Singularities

    if not isinstance(s, Singularities):
        raise ValueError(f"plot.singularities: `s` must be a linkage.Singularities; got {type(s).__name__}")
    ax = _axes(ax)
    u = np.asarray(s.inputs)
    ax.plot(u, np.asarray(s.margin), "k-", lw=1.5, label="margin σmin/σmax of ∂Φ/∂x")
    rates = np.asarray(s.rates)
    scale = np.nanmax(np.abs(rates)) if rates.size and np.isfinite(rates).any() else 1.0
    for j, name in enumerate(s.outputs):
        ax.plot(u, rates[:, j] / scale, lw=1.0, label=f"{name} rate (scaled)")
    colours = {"input": "C3", "output": "C2", "change": "C4"}
    for kind, link, at in s.events():
        ax.axvline(at, color=colours[kind], ls="--", lw=1.0)
        ax.annotate(
            f"{kind}{' ' + link if link else ''}\n{at:.6f}",
            (at, 0.95),
            xycoords=("data", "axes fraction"),
            fontsize=7,
            rotation=90,
            va="top",
            ha="right",
            color=colours[kind],
        )
    ax.axhline(0.0, color="0.6", lw=0.5)
    ax.set_xlabel("input")
    ax.set_title(title or f"{len(s.at)} singular points")
    ax.legend(fontsize=7, loc="lower left")
    return ax


def workspace(w, *, ax=None, title: str | None = None):
    """A workspace's section: the reachable grid points (shaded by why not: a leg too
    short, too long, a joint past its range) and the type-II singularity locus
    (`parallel.workspace`); the Stewart platform's at its `section` height.

    **Arguments:** `w`: a `parallel.Workspace`; `ax`: axes (default: new ones);
    `title`: the axes' title. **Returns:** the axes.
    """
    from matplotlib.colors import ListedColormap

    from .parallel import Workspace

    if not isinstance(w, Workspace):
        raise ValueError(f"plot.workspace: `w` must be a parallel.Workspace; got {type(w).__name__}")
    ax = _axes(ax)
    x, y = np.asarray(w.axes[0]), np.asarray(w.axes[1])
    reason = np.asarray(w.reason)
    if reason.ndim == 3:  # the z slice nearest the section
        reason = reason[:, :, int(np.argmin(np.abs(np.asarray(w.axes[2]) - w.section)))]
    cmap = ListedColormap(["#9ecae1", "#f0f0f0", "#d9d9d9", "#fdd0a2"])
    ax.pcolormesh(x, y, reason.T, cmap=cmap, vmin=-0.5, vmax=3.5, shading="nearest")
    L = np.asarray(w.locus)
    if L.size:
        ax.plot(L[:, 0], L[:, 1], "-", color="C3", lw=1.5, label="type-II singularity (det J = 0)")
        ax.legend(fontsize=7, loc="upper right")
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    where = "" if np.isnan(w.section) else f" at z = {w.section:g}"
    ax.set_title(title or f"workspace (blue){where}: size {w.size:.4g}")
    return ax


def assemblies(mech, asm, *, index=(), fig=None):
    """Every assembly of a Gough–Stewart platform for one set of leg lengths
    (`parallel.forward_kinematics`), one 3-D panel each: base, legs and platform.

    **Arguments:** `mech`: the `StewartPlatform`; `asm`: its `Assemblies`; `index`: the
    leg-length vector's index in a batch; `fig`: a figure (default: a new one).
    **Returns:** the figure.
    """
    import matplotlib.pyplot as plt

    from .parallel import Assemblies
    from .parallel._assembly import anchors

    if not isinstance(asm, Assemblies):
        raise ValueError(f"plot.assemblies: `asm` must be a parallel.Assemblies; got {type(asm).__name__}")
    valid = np.asarray(asm.valid)[index]
    Rs, ds = np.asarray(asm.rotations)[index][valid], np.asarray(asm.translations)[index][valid]
    a, c = (np.asarray(v) for v in anchors(mech))
    k = len(Rs)
    cols = min(4, max(k, 1))
    rows = max(1, -(-k // cols))
    fig = fig or plt.figure(figsize=(3 * cols, 3 * rows))
    ring = list(range(6)) + [0]
    for i, (R, d) in enumerate(zip(Rs, ds)):
        ax = fig.add_subplot(rows, cols, i + 1, projection="3d")
        C = c @ R.T + d
        ax.plot(*a[ring].T, "k-", lw=1.5)
        ax.plot(*C[ring].T, "-", color="C0", lw=2)
        for j in range(6):
            ax.plot(*np.stack([a[j], C[j]]).T, "-", color="C3", lw=1)
        ax.set_title(f"assembly {i + 1}", fontsize=8)
        ax.set_box_aspect((1, 1, 1))
        ax.tick_params(labelsize=5)
    fig.suptitle(f"{k} real assemblies", fontsize=10)
    return fig
