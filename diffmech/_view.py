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
import numpy as np

from ._result import status_name
from ._validate import ArgumentTypeError
from .linkage import _schema
from .linkage._joints import KINDS
from .linkage._model import Linkage
from .linkage._simulate import Motion, default_inputs, sweep

__all__ = ["LinkageViewer", "free_port", "view"]

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


class LinkageViewer:
    """A linkage shown live by a viser server (see the module). `url` is the page's
    address; `inputs` the input values shown, `motion` their solution (a one-row
    `Motion`), `status` its text, `curves` the tracers' curves `{name: (N, 3)}` over
    the linkage's range, `design` the linkage as edited. `set_inputs`, `set_joint`,
    `play` drive it from Python as the page's controls do; `close` stops the server.
    """

    def __init__(self, lk: Linkage, *, host: str = "127.0.0.1", port: int | None = None, label: str | None = None):
        if not isinstance(lk, Linkage):
            raise ArgumentTypeError(f"linkage.view: `lk` must be a Linkage; got {type(lk).__name__}")
        viser = _viser()
        self.host, self.port = host, free_port(host) if port is None else int(port)
        self.server = viser.ViserServer(host=host, port=self.port, label=label or f"diffmech: {lk.name}", verbose=False)
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
            self._save_path = gui.add_text("save as", f"{lk.name}_edited.json")
            save = gui.add_button("save")
            save.on_click(lambda _e: self.save(self._save_path.value))

    def _camera(self) -> None:
        lk = self.design
        X = _points3(lk, np.asarray(lk.initial()))
        centre = X.mean(axis=0)
        size = float(np.max(np.ptp(X, axis=0))) or 1.0
        cam = self.server.initial_camera
        if _planar(lk):  # face-on
            cam.position = (float(centre[0]), float(centre[1]), float(centre[2] + 2.5 * size))
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

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

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
        self.server.stop()


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
