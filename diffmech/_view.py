"""A live viewer of a linkage in the browser (viser: a three.js scene and GUI controls
served by Python, embeddable in Jupyter): the links as bars and plates, the joints as
points, each tracer's curve over the linkage's range, a slider per input and
play/pause. Every frame is the closure core's solution at the slider's input
(`linkage.sweep` from the initial configuration along the input), with its status:
a motion limit, a change point or a branch switch is shown where it happens and the
last configuration reached stays drawn. A joint's coordinates can be edited (a
slider per coordinate): the curves are recomputed, and the design saved as a
description.

viser is an optional dependency (`pip install "diffmech[view]"`), imported only here.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._progress import listening
from ._result import status_name
from ._validate import ArgumentTypeError
from .linkage import _schema
from .linkage._joints import KINDS
from .linkage._model import Linkage
from .linkage._simulate import Motion, default_inputs, sweep

__all__ = ["LinkageViewer", "ParallelViewer", "SynthesisViewer", "free_port", "view"]

# colours (RGB 0–255): moving links, the ground, joints, curves, a failed input
_LINK, _GROUND, _JOINT, _CURVE, _FAIL = (40, 90, 200), (120, 120, 120), (20, 20, 20), (230, 120, 20), (210, 30, 30)


def _viser() -> Any:
    try:
        import viser
    except ImportError:  # pragma: no cover - the extra is part of the test set-up
        raise ImportError('the viewer needs viser: pip install "diffmech[view]" (or pip install viser)') from None
    return viser


def free_port(host: str = "127.0.0.1") -> int:
    """A free TCP port on `host` (the operating system's choice)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class _Page:
    """A page served by viser on `host` at `port` (default: a free one): its `server`,
    its `url`, `close`."""

    def _serve(self, label: str, host: str, port: int | None) -> None:
        viser = _viser()
        self.host, self.port = host, free_port(host) if port is None else int(port)
        self.server = viser.ViserServer(host=host, port=self.port, label=label, verbose=False)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def close(self) -> None:
        """Stop the server."""
        self.server.stop()


class LinkageViewer(_Page):
    """A linkage shown live by a viser server (see the module). `url` is the page's
    address; `inputs` the input values shown, `motion` their solution (a one-row
    `Motion`), `status` its text, `curves` the tracers' curves `{name: (N, 3)}` over
    the linkage's range, `design` the linkage as edited. `set_inputs`, `set_joint`,
    `play` drive it from Python as the page's controls do; `close` stops the server.
    """

    def __init__(self, lk: Linkage, *, host: str = "127.0.0.1", port: int | None = None, label: str | None = None):
        if not isinstance(lk, Linkage):
            raise ArgumentTypeError(f"linkage.view: `lk` must be a Linkage; got {type(lk).__name__}")
        self._serve(label or f"diffmech: {lk.name}", host, port)
        self.design = lk
        self._lock = threading.RLock()
        self._playing = threading.Event()
        self._player: threading.Thread | None = None
        self.inputs = np.zeros(lk.n_inputs)
        self.motion: Motion | None = None
        self.curves: dict[str, np.ndarray] = {}
        self.status = ""
        self._controls()
        self._camera()
        self.set_design(lk)

    # ---------------------------------------------------------------- the page's controls

    def _controls(self) -> None:
        lk, gui = self.design, self.server.gui
        self._status = gui.add_markdown("")
        lo, hi = self._range(lk)
        self.sliders = []
        for i in range(lk.n_inputs):
            s = gui.add_slider(f"input {i}" if lk.n_inputs > 1 else "input", lo, hi, (hi - lo) / 720, 0.0)
            s.on_update(lambda _e: self.set_inputs([sl.value for sl in self.sliders]))
            self.sliders.append(s)
        self._play = gui.add_checkbox("play", False)
        self._play.on_update(lambda _e: self.play(self._play.value))
        points = [n for n, t in zip(lk.names, lk.types) if _is_point(lk, t) and t != _schema.AXIS]
        with gui.add_folder("edit the design"):
            self._joint = gui.add_dropdown("joint", tuple(points), initial_value=points[0])
            size = float(np.max(np.abs(np.asarray(lk.coords)))) or 1.0
            self._coords = [
                gui.add_slider(axis, -2 * size, 2 * size, size / 500, 0.0) for axis in "xyz"[: 2 if _planar(lk) else 3]
            ]
            self._joint.on_update(lambda _e: self._show_joint())
            for c in self._coords:
                c.on_update(lambda _e: self._edited())
            self._drag = None
            if _planar(lk):
                drag = self._drag = gui.add_checkbox("drag the joints", False)
                drag.on_update(lambda _e: self._gizmos(bool(drag.value)))
            self._save_path = gui.add_text("save as", f"{lk.name}_edited.json")
            save = gui.add_button("save")
            save.on_click(lambda _e: self.save(self._save_path.value))
        with gui.add_folder("dynamics"):
            self._t1 = gui.add_number("seconds", 5.0, min=0.1, max=60.0, step=0.1)
            self._torque = gui.add_number("input torque (N m or N)", 0.0, step=0.01)
            self._damping = gui.add_number("input damping", 0.0, min=0.0, step=0.001)
            release = gui.add_button("release under gravity")
            release.on_click(lambda _e: self.release(float(self._t1.value), self._drive()))
            self._dyn = gui.add_markdown("")
        if lk.n_inputs == 1 and lk.geometry != "spatial":
            with gui.add_folder("analysis"):
                show = gui.add_checkbox("singular points, transmission", False)
                show.on_update(lambda _e: self.analyse(show.value))
                self._analysis = gui.add_markdown("")

    def _camera(self) -> None:
        lk = self.design
        X = _points3(lk, np.asarray(lk.initial()))
        centre = X.mean(axis=0)
        size = float(np.max(np.ptp(X, axis=0))) or 1.0
        cam = self.server.initial_camera
        if _planar(lk):  # face-on, y up
            self.server.scene.set_up_direction("+y")
            cam.position = (float(centre[0]), float(centre[1]), float(centre[2] + 1.8 * size))
            cam.up = (0.0, 1.0, 0.0)
        else:
            cam.position = tuple(float(v) for v in centre + 2.0 * size * np.array([1.0, -1.0, 0.8]))
            cam.up = (0.0, 0.0, 1.0)
        cam.look_at = tuple(float(v) for v in centre)

    @staticmethod
    def _range(lk: Linkage) -> tuple[float, float]:
        if lk.n_inputs == 1:
            u = np.asarray(default_inputs(lk))
            lo, hi = float(min(u.min(), 0.0)), float(max(u.max(), 0.0))
            return (lo, hi) if hi > lo else (-1.0, 1.0)
        return -np.pi, np.pi

    # ---------------------------------------------------------------- what it shows

    def set_design(self, lk: Linkage) -> None:
        """Show `lk` (an edited design of the same topology): its curves over its range,
        then its configuration at the inputs shown."""
        with self._lock:
            self.design = lk
            self.curves = {}
            if lk.n_inputs == 1:
                m = sweep(lk, condition=False)
                ok = np.asarray(m.converged)
                coords = np.asarray(m.coords)
                for j, (n, t) in enumerate(zip(lk.names, lk.types)):
                    if KINDS[t].carried:
                        self.curves[n] = _points3(lk, coords[ok, j][:, None])[:, 0]
            for n, c in self.curves.items():
                if len(c) > 1:
                    seg = np.stack([c[:-1], c[1:]], axis=1)
                    self.server.scene.add_line_segments(f"/curves/{n}", seg, _CURVE, thickness=_thickness(lk) / 2)
            self._show_joint()
            self.set_inputs(self.inputs)

    def set_inputs(self, values) -> str:
        """Solve and draw the configuration at input `values` (one per input); returns
        the status shown."""
        lk = self.design
        u = np.asarray(values, dtype=float).reshape(lk.n_inputs)
        with self._lock:
            m = sweep(lk, inputs=u if lk.n_inputs == 1 else u[None], condition=False, throw=False)
            ok = bool(np.asarray(m.converged)[0])
            self.inputs = u
            if ok:
                self.motion = m
                self._draw(np.asarray(m.coords)[0], _LINK)
                self.status = f"input {np.array2string(u, precision=4)}: closed (residual {float(m.residual[0]):.1e})"
            else:
                last = self.motion if self.motion is not None else None
                if last is not None:
                    self._draw(np.asarray(last.coords)[0], _FAIL)
                why = status_name(m.result)
                self.status = (
                    f"input {np.array2string(u, precision=4)}: {why} (the last configuration reached is drawn)"
                )
            self._status.content = self.status
        return self.status

    def _draw(self, X: np.ndarray, colour) -> None:
        lk, scene = self.design, self.server.scene
        P = _points3(lk, X)
        segments, ground = [], []
        for k, members in enumerate(lk.links):
            pts = [j for j in members if _is_point(lk, lk.types[j]) and lk.types[j] != _schema.AXIS]
            loop = list(zip(pts, pts[1:] + pts[:1])) if len(pts) > 2 else list(zip(pts, pts[1:]))
            (ground if k == lk.ground else segments).extend((P[a], P[b]) for a, b in loop)
        w = _thickness(lk)
        if segments:
            scene.add_line_segments("/links", np.asarray(segments), colour, thickness=w)
        if ground:
            scene.add_line_segments("/ground", np.asarray(ground), _GROUND, thickness=w)
        axes = [
            (P[j], P[lk.names.index(n + _schema.AXIS_SUFFIX)])
            for j, n in enumerate(lk.names)
            if n + _schema.AXIS_SUFFIX in lk.names
        ]
        if axes:
            scene.add_line_segments("/axes", np.asarray(axes), _GROUND, thickness=w / 3)
        joints = np.asarray([P[j] for j, t in enumerate(lk.types) if _is_point(lk, t) and t != _schema.AXIS])
        scene.add_point_cloud("/joints", joints, _JOINT, point_size=2.5 * w, point_shape="circle")

    # ---------------------------------------------------------------- editing

    def _show_joint(self) -> None:
        lk = self.design
        j = lk.names.index(self._joint.value)
        row = np.asarray(lk.coords)[j]
        self._editing = True
        try:
            for c, v in zip(self._coords, row):
                c.value = float(v)
        finally:
            self._editing = False

    def _edited(self) -> None:
        if getattr(self, "_editing", False):
            return
        self.set_joint(self._joint.value, [c.value for c in self._coords])

    def _gizmos(self, on: bool) -> None:
        """Draggable handles (in the plane) on the description's joints (its initial
        configuration, input 0): a drag moves the joint as `set_joint` does."""
        for h in getattr(self, "handles", {}).values():
            h.remove()
        self.handles = {}
        if not on:
            return
        lk = self.design
        P = _points3(lk, np.asarray(lk.coords))
        scale = 12 * _thickness(lk)
        for j, (n, t) in enumerate(zip(lk.names, lk.types)):
            if _is_point(lk, t) and t != _schema.AXIS:
                h = self.server.scene.add_transform_controls(
                    f"/drag/{n}", scale=scale, active_axes=(True, True, False), disable_rotations=True, position=P[j]
                )
                h.on_update(lambda _e, name=n: self._dragged(name))
                self.handles[n] = h

    def _dragged(self, name: str) -> None:
        """A handle was dragged: move its joint there."""
        x, y = (float(v) for v in np.asarray(self.handles[name].position)[:2])
        self.set_joint(name, [x, y])

    def set_joint(self, name: str, coords) -> Linkage:
        """Move joint `name` of the design to `coords` (its first 2 or 3 coordinates)
        and show the edited design; returns it."""
        lk = self.design
        if name not in lk.names:
            raise ValueError(f"linkage.view: no joint {name!r}; joints are {lk.names}")
        j = lk.names.index(name)
        c = np.asarray(lk.coords).copy()
        v = np.asarray(coords, dtype=float)
        c[j, : v.shape[0]] = v
        edited = eqx.tree_at(lambda m: m.coords, lk, np.asarray(c, dtype=np.asarray(lk.coords).dtype))
        self.set_design(edited)
        return edited

    def save(self, path) -> None:
        """Save the design shown as a description (JSON or TOML, by the suffix)."""
        self.design.save(path)

    # ---------------------------------------------------------------- dynamics and analysis

    def release(self, t1: float = 5.0, drive=None, *, realtime: bool = True):
        """Release the design at the input shown, from rest, under gravity (and
        `drive`) for `t1` seconds (`linkage.simulate_dynamics`; a design without mass
        properties gets uniform rods, `linkage.rod_mass_properties`), and play it back
        in real time (`realtime`) with its energy balance and loop gap beside it.
        Returns the `Simulation`."""
        from .linkage._dynamics import rod_mass_properties, simulate_dynamics

        lk = self.design
        moving = [k for k in range(len(lk.links)) if k != lk.ground]
        if not np.any(np.asarray(lk.masses)[moving]):
            lk = rod_mass_properties(lk)
        u0 = self.inputs if lk.n_inputs > 1 else float(self.inputs[0])
        sim = simulate_dynamics(lk, u0, 0.0 * np.asarray(u0), t1, drive=drive)
        self.simulation = sim
        ts, coords = np.asarray(sim.ts), np.asarray(sim.coords)
        ok, gap = np.asarray(sim.converged), np.asarray(sim.residual)
        n = int(ok.sum()) if not ok.all() else len(ts)
        summary = (
            f"released at {np.array2string(np.asarray(self.inputs), precision=3)} for {t1:g} s: energy balance "
            f"error {float(sim.energy_error):.1e}, loop gap ≤ {float(np.nanmax(gap[:n])):.1e}"
            + ("" if ok.all() else f"; stopped at t = {ts[n - 1]:.3g} s ({status_name(sim.result)})")
        )
        self._dyn.content = summary
        self.status = summary
        if realtime:
            threading.Thread(target=self._replay, args=(ts[:n], coords[:n], gap[:n]), daemon=True).start()
        return sim

    def _drive(self):
        """The drive law the page sets: a constant input torque and a viscous damping
        (the same compiled program for any of their values), or None."""
        from ._drives import ConstantTorque
        from .linkage._dynamics import Drive

        tau, c = float(self._torque.value), float(self._damping.value)
        if tau == 0.0 and c == 0.0:
            return None
        return Drive(
            torque=ConstantTorque(np.full(self.design.n_inputs, tau) if self.design.n_inputs > 1 else tau), damping=c
        )

    def _replay(self, ts, coords, gap) -> None:
        t0 = time.perf_counter()
        for k in range(len(ts)):
            time.sleep(max(0.0, t0 + ts[k] - ts[0] - time.perf_counter()))
            with self._lock:
                self._draw(coords[k], _LINK)
                self._status.content = f"t = {ts[k]:.3f} s, loop gap {gap[k]:.1e}"

    def analyse(self, on: bool = True) -> str:
        """Show (or hide) the singular points along the design's range, each drawn as
        its configuration's joints in red, and each dyad's worst transmission angle.
        Returns the text shown."""
        from .linkage._analysis import transmission
        from .linkage._singular import singularities

        scene, lk = self.server.scene, self.design
        if not on:
            scene.add_point_cloud("/singular", np.zeros((0, 3)), _FAIL, point_size=0.0, visible=False)
            self._analysis.content = ""
            return ""
        m = sweep(lk, condition=False)
        s = singularities(lk, m)
        lines = [f"{k} singularity at input {float(a):.6g}" for k, a in zip(s.kinds, np.asarray(s.at))]
        if len(s.kinds):
            P = np.concatenate([_points3(lk, np.asarray(c)) for c in np.asarray(s.coords)])
            scene.add_point_cloud("/singular", P, _FAIL, point_size=3 * _thickness(lk), point_shape="circle")
        tr = transmission(lk, m)
        worst, at = tr.minimum()
        lines += [
            f"{g}: worst transmission {np.degrees(w):.1f}° at input {a:.4g}" for g, w, a in zip(tr.groups, worst, at)
        ]
        text = "\n\n".join(lines) or "no singular point along the range"
        self._analysis.content = text
        self.singular = s
        return text

    # ---------------------------------------------------------------- playing

    def play(self, on: bool = True, fps: float = 60.0, period: float = 4.0) -> None:
        """Play the motion (the first input through its range in `period` seconds at
        `fps` frames a second), or pause it."""
        if not on:
            self._playing.clear()
            return
        if self._playing.is_set():
            return
        self._playing.set()
        lo, hi = self._range(self.design)

        def run():
            t0 = time.perf_counter()
            frame = 0
            while self._playing.is_set():
                phase = ((time.perf_counter() - t0) / period) % 1.0
                u = self.inputs.copy()
                u[0] = lo + (hi - lo) * phase
                self.set_inputs(u)
                frame += 1  # the next frame's time: a steady `fps` whatever a frame took
                time.sleep(max(0.0, t0 + frame / fps - time.perf_counter()))

        self._player = threading.Thread(target=run, daemon=True)
        self._player.start()

    def close(self) -> None:
        """Stop playing and stop the server."""
        self._playing.clear()
        if self._player is not None:
            self._player.join(timeout=2.0)
        super().close()


class ParallelViewer(_Page):
    """A parallel mechanism shown live: a slider per pose coordinate (x, y, z and
    roll, pitch, yaw of the platform's displacement from home), the base and platform
    through their chains' joint centres, and each chain at that pose. A Gough–Stewart
    platform's legs are straight (their lengths shown; every assembly for them,
    `forward_kinematics`, and the workspace section on request); any other
    mechanism's chains are drawn through their joints where the closure core's
    inverse kinematics puts them (`joints`). `pose` is `(R, d)`; `legs` the distances
    between the chains' joint centres; `assemblies` the last `Assemblies` found."""

    def __init__(self, mech, *, host: str = "127.0.0.1", port: int | None = None):
        from .parallel._assembly import anchors
        from .parallel._model import AbstractParallelMechanism, StewartPlatform

        if not isinstance(mech, AbstractParallelMechanism):
            raise ArgumentTypeError(f"parallel.view: `mech` must be a parallel mechanism; got {type(mech).__name__}")
        self.mech = mech
        self.stewart = isinstance(mech, StewartPlatform)
        self._serve(f"diffmech: {type(mech).__name__}", host, port)
        a, c = anchors(mech)
        self.base, self.top = np.asarray(a, dtype=float), np.asarray(c, dtype=float)
        size = float(np.max(np.ptp(self.base, axis=0)))
        self._w = 0.01 * size
        gui = self.server.gui
        self._status = gui.add_markdown("")
        self.sliders = [gui.add_slider(n, -0.3 * size, 0.3 * size, size / 1000, 0.0) for n in ("x", "y", "z")]
        self.sliders += [gui.add_slider(n, -0.5, 0.5, 0.001, 0.0) for n in ("roll", "pitch", "yaw")]
        for sl in self.sliders:
            sl.on_update(lambda _e: self.set_pose([q.value for q in self.sliders]))
        if self.stewart:
            every = gui.add_button("every assembly for these legs")
            every.on_click(lambda _e: self.every_assembly())
            section = gui.add_button("workspace section at this height and orientation")
            section.on_click(lambda _e: self.workspace_section())
        cam = self.server.initial_camera
        centre = self.base.mean(axis=0)
        cam.position = tuple(float(v) for v in centre + size * np.array([1.6, -1.6, 1.2]))
        cam.look_at = tuple(float(v) for v in centre)
        cam.up = (0.0, 0.0, 1.0)
        self.assemblies = None
        self.set_pose(np.zeros(6))

    def set_pose(self, q) -> str:
        """Draw the platform displaced by `q` = (x, y, z, roll, pitch, yaw) from home
        (`R = Rz(yaw) Ry(pitch) Rx(roll)`); returns the status shown."""
        q = np.asarray(q, dtype=float)
        R, d = _rpy(*q[3:]), q[:3]
        self.pose = (R, d)
        top = self.top @ R.T + d
        self.legs = np.linalg.norm(top - self.base, axis=1)
        scene = self.server.scene
        ring = lambda P: np.stack([P, np.roll(P, -1, axis=0)], axis=1)  # noqa: E731
        scene.add_line_segments("/base", ring(self.base), _GROUND, thickness=self._w)
        if self.stewart:  # straight legs between the joint centres (closed form)
            scene.add_line_segments("/platform", ring(top), _LINK, thickness=self._w)
            scene.add_line_segments("/legs", np.stack([self.base, top], axis=1), _CURVE, thickness=self._w / 2)
            scene.add_point_cloud("/joints", np.concatenate([self.base, top]), _JOINT, point_size=2.5 * self._w)
            self.status = "legs " + np.array2string(self.legs, precision=5)
        else:  # each chain's joints where the closure core's inverse kinematics puts them
            self.status = self._chains(q)
        self._status.content = self.status
        return self.status

    def _chains(self, q) -> str:
        """Solve the inverse kinematics from home along a straight path to pose `q`
        (the closure core, `parallel.inverse_kinematics`) and draw each chain through
        its revolute joints' points to its platform joint."""
        from .parallel._kinematics import chain_poses, inverse_kinematics
        from .parallel._trajectory import Trajectory

        mech, n = self.mech, 9
        s_ = np.linspace(0.0, 1.0, n)
        Rs = np.stack([_rpy(*(si * q[3:])) for si in s_])
        ref = np.asarray(mech.reference, dtype=float)
        pos = np.einsum("nij,j->ni", Rs, ref) + s_[:, None] * q[:3]
        zero3, zero33 = np.zeros((n, 3)), np.zeros((n, 3, 3))
        traj = Trajectory(*(jnp.asarray(a) for a in (s_, Rs, zero33, zero33, pos, zero3, zero3)))
        kin = inverse_kinematics(mech, traj, throw=False)
        if not bool(np.asarray(kin.converged)[-1]):
            return f"pose {np.array2string(q, precision=4)}: {status_name(kin.result)} (not drawn)"
        theta = np.asarray(kin.labels)[-1] - np.asarray(mech.home_labels())
        # the platform where the closure puts it (a mechanism realises only some of the
        # pose's coordinates: the 3UPS–UPU–S its normal, the rest follows)
        self.solved = (np.asarray(kin.platform_R)[-1], np.asarray(kin.platform_d)[-1])
        Rp, dp = self.solved
        ring = np.stack([self.top @ Rp.T + dp, np.roll(self.top @ Rp.T + dp, -1, axis=0)], axis=1)
        self.server.scene.add_line_segments("/platform", ring, _LINK, thickness=self._w)
        segs, joints, ends, k = [], [], [], 0
        for ch in mech.chains:
            th = theta[k : k + ch.n]
            k += ch.n
            Rj, pj = (np.asarray(a) for a in chain_poses(ch, jnp.asarray(th)))
            pts = [np.asarray(ch.points[0], dtype=float)]
            for j in range(1, ch.n):
                if ch.kinds[j] == "R":
                    pts.append(Rj[j - 1] @ np.asarray(ch.points[j], dtype=float) + pj[j - 1])
            pts.append(Rj[-1] @ np.asarray(ch.attach, dtype=float) + pj[-1])
            segs += [(a, b) for a, b in zip(pts[:-1], pts[1:]) if np.linalg.norm(b - a) > 1e-12]
            joints += pts
            ends.append(pts[-1])
        scene = self.server.scene
        scene.add_line_segments("/legs", np.asarray(segs), _CURVE, thickness=self._w / 2)
        scene.add_point_cloud("/joints", np.asarray(joints), _JOINT, point_size=2.5 * self._w)
        self.joints, self.chain_ends = np.asarray(joints), np.asarray(ends)
        return f"pose {np.array2string(q, precision=4)}: closed (residual {float(np.asarray(kin.residual)[-1]):.1e})"

    def every_assembly(self):
        """Every assembly of the platform for the leg lengths shown (each platform drawn
        faint); returns the `Assemblies`."""
        from .parallel._assembly import forward_kinematics

        r = forward_kinematics(self.mech, self.legs)
        self.assemblies = r
        ok = np.asarray(r.valid)
        Rs, ds = np.asarray(r.rotations)[ok], np.asarray(r.translations)[ok]
        rings = [np.stack([P, np.roll(P, -1, axis=0)], axis=1) for P in (self.top @ R.T + d for R, d in zip(Rs, ds))]
        if rings:
            self.server.scene.add_line_segments("/assemblies", np.concatenate(rings), _FAIL, thickness=self._w / 3)
        self.status = f"{int(r.count)} assemblies for legs {np.array2string(self.legs, precision=5)}"
        self._status.content = self.status
        return r

    def workspace_section(self, n: int = 41):
        """The constant-orientation workspace in the horizontal plane through the
        platform's reference point at the pose shown (`parallel.workspace` on an
        `n × n` grid, ± the base's size around home): the reference points
        inside drawn in the plane, the type-II singularity locus in red. Returns the
        `Workspace`."""
        from .parallel._workspace import workspace

        R, d = self.pose
        ref = R @ np.asarray(self.mech.reference, dtype=float) + d
        half = float(np.max(np.ptp(self.base, axis=0)))
        x = np.linspace(-half, half, n) + float(self.mech.reference[0])
        y = np.linspace(-half, half, n) + float(self.mech.reference[1])
        w = workspace(self.mech, x, y, np.array([ref[2]]), orientation=R, section=float(ref[2]))
        self.workspace = w
        inside = np.asarray(w.inside)[:, :, 0]
        X, Y = np.meshgrid(x, y, indexing="ij")
        pts = np.c_[X[inside], Y[inside], np.full(int(inside.sum()), ref[2])]
        scene = self.server.scene
        scene.add_point_cloud("/workspace", pts, (40, 160, 60), point_size=0.6 * (x[1] - x[0]))
        locus = np.asarray(w.locus)
        locus = locus[np.all(np.isfinite(locus), axis=1)]
        if locus.size:
            loc3 = np.c_[locus[:, :2], np.full(len(locus), ref[2])]
            scene.add_point_cloud("/singular", loc3, _FAIL, point_size=0.3 * (x[1] - x[0]))
        self.status = (
            f"workspace section at z = {ref[2]:.4g}: {int(inside.sum())} of {n * n} grid points inside, "
            f"{len(locus)} points on the singularity locus"
        )
        self._status.content = self.status
        return w


class SynthesisViewer(_Page):
    """Synthesis posed in the browser: click target points in the plane (or load a CSV
    of `x, y` rows; `x, y, angle` rows for a motion's poses), choose the task (path or
    motion generation), the timing and the constraints, run the search
    (`synthesis.synthesize`) with a progress bar following each phase's meter, see the
    best four-bar drawn through the targets (its coupler curve and its links at the
    first target), and save it as a description. `targets` `(n, 2)`; `angles` the
    poses' angles or None; `result` the last `Synthesis`; `phases` the search's meter
    updates `(label, done, total)`."""

    def __init__(self, targets=None, *, host: str = "127.0.0.1", port: int | None = None, extent: float = 1.0):
        self._serve("diffmech: path synthesis", host, port)
        self.extent, self._w = float(extent), 0.006 * float(extent)
        self.targets: list[tuple[float, float]] = []
        self.result = None
        scene, gui = self.server.scene, self.server.gui
        scene.add_grid("/grid", width=2 * extent, height=2 * extent, plane="xy")
        scene.on_click()(self._clicked)
        cam = self.server.initial_camera
        self.server.scene.set_up_direction("+y")
        cam.position, cam.look_at, cam.up = (0.0, 0.0, 2.5 * extent), (0.0, 0.0, 0.0), (0.0, 1.0, 0.0)
        self._status = gui.add_markdown("click the plane to add target points")
        self.angles: list[float] | None = None  # a motion's poses' angles (a CSV's third column)
        self._task = gui.add_dropdown("task", ("path", "motion"), initial_value="path")
        self._timing = gui.add_dropdown("timing", ("cyclic order", "free"), initial_value="cyclic order")
        self._grashof = gui.add_checkbox("Grashof", False)
        self._full = gui.add_checkbox("crank turns fully", False)
        self._mu = gui.add_vector2(
            "transmission angle within (°; 0 0: free)", (0.0, 0.0), min=(0.0, 0.0), max=(180.0, 180.0)
        )
        # the search's defaults (`synthesis.MultiStart`); `quick`: L-BFGS from random starts, no screen
        self._starts = gui.add_number("starts", 64, min=1, max=4096, step=1)
        self._steps = gui.add_number("steps", 100, min=1, max=5000, step=1)
        self._screen = gui.add_number("screen", 4096, min=0, max=100000, step=1)
        self._quick = gui.add_checkbox("quick", False)
        self._progress = gui.add_progress_bar(0.0, animated=False)
        gui.add_button("search").on_click(lambda _e: threading.Thread(target=self.search, daemon=True).start())
        gui.add_button("clear the targets").on_click(lambda _e: self.clear())
        self._csv = gui.add_text("CSV of x, y rows", "targets.csv")
        gui.add_button("load").on_click(lambda _e: self.load_csv(self._csv.value))
        self._save_path = gui.add_text("save as", "design.json")
        gui.add_button("save").on_click(lambda _e: self.save(self._save_path.value))
        for x, y in np.asarray(targets if targets is not None else np.zeros((0, 2)), dtype=float).reshape(-1, 2):
            self.add_target(x, y)

    def _clicked(self, event) -> None:
        o, d = np.asarray(event.ray_origin), np.asarray(event.ray_direction)
        if abs(d[2]) > 1e-12:  # where the ray meets the plane z = 0
            p = o - o[2] / d[2] * d
            self.add_target(float(p[0]), float(p[1]))

    def add_target(self, x: float, y: float) -> None:
        """Add a target point (world units); a click has no angle, so a motion's poses
        come from a CSV."""
        self.targets.append((float(x), float(y)))
        self.angles = None
        self._draw_targets()

    def clear(self) -> None:
        self.targets, self.angles = [], None
        self._draw_targets()

    def load_csv(self, path) -> None:
        """Replace the targets by the `x, y` rows of a CSV file (a header row allowed)."""
        try:
            rows = np.loadtxt(path, delimiter=",", ndmin=2, comments="#")
        except ValueError:
            rows = np.loadtxt(path, delimiter=",", ndmin=2, comments="#", skiprows=1)
        if rows.ndim != 2 or rows.shape[1] < 2:
            raise ValueError(f"synthesis.view: {path} must hold rows 'x, y' (or 'x, y, angle'); got shape {rows.shape}")
        self.targets = [(float(x), float(y)) for x, y in rows[:, :2]]
        self.angles = [float(a) for a in rows[:, 2]] if rows.shape[1] >= 3 else None
        self._draw_targets()

    def _draw_targets(self) -> None:
        P = np.c_[np.asarray(self.targets, dtype=float).reshape(-1, 2), np.zeros(len(self.targets))]
        self.server.scene.add_point_cloud("/targets", P, _FAIL, point_size=3 * self._w, point_shape="circle")
        self._status.content = f"{len(self.targets)} target points"

    def search(self):
        """Search for the best four-bar through the targets with the settings shown;
        draws and returns the `Synthesis`."""
        from . import _synthesis as S

        t = np.asarray(self.targets, dtype=float)
        timing = "cyclic" if self._timing.value == "cyclic order" else "free"
        if self._task.value == "motion":
            if self.angles is None:
                self._status.content = "a motion's poses need angles: load a CSV of 'x, y, angle' rows"
                raise ValueError("synthesis.view: a motion's poses need angles (a CSV of 'x, y, angle' rows)")
            task = S.Motion(np.c_[t, self.angles], timing)
        else:
            task = S.Path(t, timing)
        constraints = self.constraints()
        quick = bool(self._quick.value)
        search = S.MultiStart(
            starts=int(self._starts.value),
            steps=int(self._steps.value),
            screen=0 if quick else int(self._screen.value),
            quick=quick,
            progress=True,
        )
        self._progress.animated, self._progress.value = True, 0.0
        self._status.content = f"searching: {search.starts} starts through {len(t)} targets"
        self.phases = []

        def progress(label: str, done: int, total: int, extra: str) -> None:  # each phase's meter: the bar
            self.phases.append((label, done, total))
            self._progress.value = 100.0 * done / max(total, 1)
            self._status.content = f"{label}: {done}/{total} {extra}"

        try:
            with listening(progress):
                r = S.synthesize(task, constraints, search)
        except (ValueError, RuntimeError) as e:
            self._status.content = f"search failed: {e}"
            raise
        finally:
            self._progress.animated, self._progress.value = False, 100.0
        self.result = r
        d = r.design
        assert isinstance(d, S.PlacedFourBar)  # a four-bar's search
        theta = np.linspace(0.0, 2 * np.pi, 361)
        curve, ok = (np.asarray(a) for a in d.path(theta))
        c3 = np.c_[curve[ok], np.zeros(int(ok.sum()))]
        scene = self.server.scene
        scene.add_line_segments("/design/curve", np.stack([c3[:-1], c3[1:]], axis=1), _CURVE, thickness=self._w / 2)
        J = {k: np.r_[np.asarray(v, dtype=float), 0.0] for k, v in d.joints(np.asarray(r.inputs)[0]).items()}
        bars = [
            (J[a], J[b]) for a, b in (("A", "B"), ("B", "C"), ("C", "D"), ("B", "P"), ("C", "P")) if a in J and b in J
        ]
        scene.add_line_segments("/design/links", np.asarray(bars), _LINK, thickness=self._w)
        for k in range(S.ALTERNATIVES):  # the next best distinct designs, faint (old ones cleared)
            segs = np.zeros((1, 2, 3))
            if k < len(r.alternatives):
                c, okk = (np.asarray(a) for a in r.alternatives[k].path(theta))
                ck = np.c_[c[okk], np.zeros(int(okk.sum()))]
                segs = np.stack([ck[:-1], ck[1:]], axis=1) if len(ck) > 1 else segs
            scene.add_line_segments(
                f"/design/alternative{k}", segs, _GROUND, thickness=self._w / 3, visible=k < len(r.alternatives)
            )
        self._status.content = (
            f"best design: relative error {r.relative_error:.2e}, objective {r.objective:.3e}; "
            f"{len(r.alternatives)} other designs drawn faint"
        )
        return r

    def constraints(self):
        """The `Constraints` the page sets: Grashof, full rotation, the transmission
        angle's window (degrees on the page; none while its upper bound is not above
        its lower)."""
        from . import _synthesis as S

        lo, hi = (float(v) for v in self._mu.value)
        window = (float(np.radians(lo)), float(np.radians(hi))) if hi > lo else None
        return S.Constraints(
            grashof=bool(self._grashof.value), full_rotation=bool(self._full.value), transmission=window
        )

    def save(self, path) -> None:
        """Save the best design found as a linkage description (`synthesis.save_design`)."""
        from . import _synthesis as S

        if self.result is None:
            raise ValueError("synthesis.view: no design yet: search first")
        S.save_design(self.result, path)


def _rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def _planar(lk: Linkage) -> bool:
    return lk.geometry == "planar"


def _is_point(lk: Linkage, t: str) -> bool:
    return t == _schema.AXIS or KINDS[t].is_point(lk.geometry) or KINDS[t].carried


def _points3(lk: Linkage, X: np.ndarray) -> np.ndarray:
    """Joint rows as 3-D points (a planar point in z = 0)."""
    X = np.asarray(X, dtype=float)
    if _planar(lk):
        return np.concatenate([X[..., :2], np.zeros(X.shape[:-1] + (1,))], axis=-1)
    return X[..., :3]


def _thickness(lk: Linkage) -> float:
    X = _points3(lk, np.asarray(lk.initial()))
    return 0.012 * (float(np.max(np.ptp(X, axis=0))) or 1.0)


def view(lk: Linkage, *, host: str = "127.0.0.1", port: int | None = None) -> LinkageViewer:
    """Show a linkage live in the browser (see `LinkageViewer`): a page served from
    Python on `host` (default 127.0.0.1: this machine only) at `port` (default: a free
    one), its address in `url`. In Jupyter, `viewer.server.scene.show()` embeds it.

    **Arguments:** `lk`: the linkage; `host`, `port`. **Returns:** the `LinkageViewer`
    (call `close()` to stop it).
    """
    return LinkageViewer(lk, host=host, port=port)
