"""The live viewer (viser): what the server holds after its controls move, checked
against the geometry (the crank's turn, the links' lengths), a motion limit shown where
it happens, an edited design's curves and its saved description, and the command's one
line for a file it cannot read."""

import json

import numpy as np
import pytest

from diffmech import examples, linkage

# each test in the xdist group whose programs it shares (a module-wide mark would join the
# group names of the tests that name their own: "linkage_synthesis")
LINKAGE = pytest.mark.xdist_group("linkage")  # the four-bar's sweep programs, compiled once


@pytest.fixture(scope="module")
def viewer():
    v = linkage.view(examples.load("fourbar"))
    yield v
    v.close()


def _angle(X, a, b):
    d = np.asarray(X)[b, :2] - np.asarray(X)[a, :2]
    return float(np.arctan2(d[1], d[0]))


def _lengths(X, lk):
    X = np.asarray(X)
    return [float(np.linalg.norm(X[b, :2] - X[a, :2])) for a, b in ((0, 1), (1, 2), (2, 3), (1, 4), (2, 4))]


@LINKAGE
def test_the_input_slider_turns_the_crank_and_the_loop_stays_closed(viewer):
    lk = viewer.design
    X0 = np.asarray(lk.initial())
    viewer.sliders[0].value = 0.7  # as the page's slider sets it: its callback solves and draws
    assert viewer.inputs.tolist() == [0.7] and viewer.status.startswith("input [0.7]: closed")
    X = np.asarray(viewer.motion.coords[0])
    # the crank A→B turned by the input; the links (and the coupler triangle B, C, P) kept their lengths
    assert abs(_angle(X, 0, 1) - _angle(X0, 0, 1) - 0.7) <= 1e-12
    np.testing.assert_allclose(_lengths(X, lk), _lengths(X0, lk), rtol=0, atol=1e-12)
    assert np.allclose(X[[0, 3], :2], X0[[0, 3], :2], atol=0)  # the ground pivots stay


@LINKAGE
def test_a_motion_limit_is_shown_where_it_happens_and_the_last_configuration_stays(viewer, tmp_path):
    # the ground pivot D dragged out to 0.62 (its handle moved in the plane, as the page's
    # drag leaves it): s + l = 0.74 > p + q, the crank cannot turn fully
    viewer._drag.value = True
    assert sorted(viewer.handles) == ["A", "B", "C", "D", "P"]
    viewer.handles["D"].position = (0.62, 0.0, 0.0)
    viewer._dragged("D")
    viewer._drag.value = False
    assert viewer.handles == {} and np.asarray(viewer.design.coords)[3, :2].tolist() == [0.62, 0.0]
    n = viewer.curves["P"].shape[0]
    assert 1 < n < 180  # the coupler curve stops at the motion limit
    assert viewer.set_inputs([0.5]).endswith(f"(residual {float(viewer.motion.residual[0]):.1e})")
    reached = np.asarray(viewer.motion.coords[0])
    status = viewer.set_inputs([3.0])
    assert "motion_limit" in status and "last configuration reached" in status
    assert np.array_equal(np.asarray(viewer.motion.coords[0]), reached)  # the frame drawn is the last closed one
    # the edited design saved as a description loads back with its joint moved
    path = tmp_path / "edited.json"
    viewer.save(path)
    back = linkage.load(path)
    assert np.asarray(back.coords)[3, :2].tolist() == [0.62, 0.0]
    assert json.loads(path.read_text())["joints"]["D"]["coords"][:2] == [0.62, 0.0]
    viewer.set_joint("D", [0.3, 0.0])  # back to the bundled design (a full turn again)
    assert viewer.curves["P"].shape[0] == 180


@LINKAGE
def test_the_overlays_singular_points_where_crank_and_coupler_line_up_and_the_worst_transmission(viewer):
    # a crank-rocker's rocker toggles where crank and coupler are in line (A, B, C
    # collinear); its transmission angle is extreme where the crank lines up with the
    # ground (θ = 0 or π), cos μ = (b² + c² − a² − d² ± 2ad) / 2bc
    viewer.set_joint("D", [0.3, 0.0])
    text = viewer.analyse(True)
    s = viewer.singular
    assert s.kinds == ("output", "output") and text.count("singularity") == 2
    for X in np.asarray(s.coords):
        ab, bc, ac = (np.linalg.norm(X[j, :2] - X[i, :2]) for i, j in ((0, 1), (1, 2), (0, 2)))
        assert min(abs(ac - (ab + bc)), abs(ac - abs(bc - ab))) <= 1e-9
    A, B, C, D = np.asarray(viewer.design.coords)[:4, :2]
    a, b, c, d = (float(np.linalg.norm(q - p)) for p, q in ((A, B), (B, C), (D, C), (A, D)))
    mu = [np.arccos((b * b + c * c - a * a - d * d + 2 * a * d * sign) / (2 * b * c)) for sign in (1.0, -1.0)]
    worst = min(min(m, np.pi - m) for m in mu)
    assert f"worst transmission {np.degrees(worst):.1f}°" in text
    assert viewer.analyse(False) == ""


@LINKAGE
def test_released_under_gravity_the_energy_balances_and_the_loop_stays_closed(viewer):
    viewer.set_inputs([0.3])
    viewer._torque.value, viewer._damping.value = 0.05, 0.001  # the page's drive law
    sim = viewer.release(1.0, viewer._drive(), realtime=False)
    assert bool(np.all(np.asarray(sim.converged))) and float(np.max(np.asarray(sim.residual))) <= 1e-10
    # E(t) − E(0) = the torque's work − the damping's dissipation: the integration's error only
    assert float(sim.energy_error) <= 1e-6
    assert abs(float(sim.work[-1])) > 1e-4 and float(sim.dissipated[-1]) > 1e-4
    assert abs(float(sim.u[0]) - 0.3) <= 1e-12 and float(np.ptp(np.asarray(sim.u))) > 1e-3  # it fell from 0.3
    assert viewer.status.startswith("released at [0.3] for 1 s: energy balance error")


@pytest.mark.xdist_group("parallel")  # the forward kinematics' program, compiled once
def test_a_stewart_platform_posed_by_its_sliders_is_one_of_the_assemblies_of_its_legs():
    from diffmech import parallel
    from diffmech.parallel._assembly import anchors

    mech = parallel.StewartPlatform()
    v = parallel.view(mech)
    try:
        for slider, value in zip(v.sliders, (0.01, -0.005, 0.004, 0.05, -0.03, 0.1)):
            slider.value = value  # as the page sets them
        R, d = v.pose
        # the legs from the joint centres (R c + d − a), and a rotation Rz Ry Rx
        a, c = (np.asarray(x) for x in anchors(mech))
        np.testing.assert_allclose(v.legs, np.linalg.norm(c @ R.T + d - a, axis=1), rtol=0, atol=1e-15)
        np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-15)
        assert abs(np.arctan2(R[1, 0], R[0, 0]) - 0.1) <= 1e-12 and np.allclose(d, [0.01, -0.005, 0.004])
        # the pose that set those legs is one of the platform's assemblies for them
        r = v.every_assembly()
        ok = np.asarray(r.valid)
        gaps = [
            np.abs(Ri - R).max() + np.abs(di - d).max()
            for Ri, di in zip(np.asarray(r.rotations)[ok], np.asarray(r.translations)[ok])
        ]
        assert min(gaps) <= 1e-10 and v.status.startswith(f"{int(r.count)} assemblies")
        # the workspace section through the reference point, at the pose's orientation:
        # its leg lengths at a grid point p are |R c + (p − R ref) − a|
        w = v.workspace_section(n=21)
        gx, gy, gz = (np.asarray(ax) for ax in w.axes)
        p = np.array([gx[3], gy[15], gz[0]])
        dp = p - R @ np.asarray(mech.reference)
        expect = np.linalg.norm(c @ R.T + dp - a, axis=1)
        np.testing.assert_allclose(np.asarray(w.lengths)[3, 15, 0], expect, rtol=0, atol=1e-12)
        assert abs(gz[0] - (R @ np.asarray(mech.reference) + d)[2]) <= 1e-15
        assert 0 < int(np.asarray(w.inside).sum()) < 21 * 21  # the section crosses the workspace's boundary
    finally:
        v.close()


@pytest.mark.xdist_group("parallel")  # the 3UPS–UPU–S inverse kinematics' program, compiled once
def test_a_3ups_upu_s_tilted_by_its_sliders_closes_its_chains_on_the_platform():
    # the closure core's inverse kinematics puts each chain's last joint on the platform
    # where the solved pose carries its joint centre, and the platform's normal is the
    # sliders' (the mechanism realises the tilt; the rest follows)
    from diffmech import parallel
    from diffmech.parallel._assembly import anchors

    mech = parallel.ThreeUPSUPUS()
    v = parallel.view(mech)
    try:
        v.sliders[3].value, v.sliders[4].value = 0.15, -0.08
        assert "closed" in v.status
        Rp, dp = v.solved
        c = np.asarray(anchors(mech)[1])
        np.testing.assert_allclose(v.chain_ends, c @ Rp.T + dp, rtol=0, atol=1e-10)
        R, _ = v.pose
        np.testing.assert_allclose(Rp[:, 2], R[:, 2], rtol=0, atol=1e-10)
        v.sliders[2].value = 0.05  # a translation this mechanism cannot make: named, not drawn
        assert "unreachable_pose" in v.status
    finally:
        v.close()


@pytest.mark.xdist_group("synthesis")  # the search's programs of tests/test_synthesis.py (same sizes)
def test_synthesis_posed_by_clicks_finds_the_four_bar_whose_path_the_targets_are(tmp_path):
    from helpers import placed_crank_rocker

    from diffmech import synthesis

    pts, ok = placed_crank_rocker().path(np.linspace(0.0, 2 * np.pi, 13)[:-1:2] + 0.3)
    t = np.asarray(pts)
    v = synthesis.view(extent=0.6)
    try:
        for x, y in t:  # a click's ray from above the plane, slanted, meets z = 0 at the target

            class Click:
                ray_origin = (x + 0.2, y - 0.1, 2.0)
                ray_direction = tuple(np.array([-0.2, 0.1, -2.0]) / np.linalg.norm([-0.2, 0.1, -2.0]))

            v._clicked(Click)
        np.testing.assert_allclose(np.asarray(v.targets), t, rtol=0, atol=1e-14)
        r = v.search()  # cyclic order, the search's defaults (the page's)
        assert r.relative_error <= 1e-9  # the targets lie on a four-bar's path: it is found exactly
        # the next best designs, drawn faint: each distinct (lengths 0.1 % apart) from the best and the others
        L = np.asarray([np.asarray(d.lengths) for d in (r.design, *r.alternatives)])
        assert 1 <= len(r.alternatives) <= synthesis.ALTERNATIVES
        for i in range(len(L)):
            for j in range(i):
                assert np.max(np.abs(L[i] - L[j])) > 1e-3 * np.max(np.abs(L[j]))
        assert f"{len(r.alternatives)} other designs drawn faint" in v._status.content
        fit = [(done, total) for label, done, total in v.phases if label == "fit"]  # the bar followed the fit
        assert fit and all(0 < done <= total for done, total in fit) and fit == sorted(fit)
        # the page's search is the library's (on the clicked targets: a round-off from `t`
        # may end in another of the curve's three cognates, each exact)
        same = synthesis.path_generation(np.asarray(v.targets), cyclic_order=True)
        assert r.objective == same.objective
        v.save(tmp_path / "design.json")
        # a motion's poses come with angles: from a CSV's third column; clicked points have none
        csv = tmp_path / "poses.csv"
        np.savetxt(csv, np.c_[t, np.linspace(0.1, 0.6, len(t))], delimiter=",", header="x, y, angle")
        v.load_csv(csv)
        assert v.angles is not None and len(v.angles) == len(t) and v.angles[-1] == 0.6
        # the page's constraints: the transmission window in degrees, off until it is one
        assert v.constraints().transmission is None
        v._grashof.value, v._mu.value = True, (30.0, 150.0)
        c = v.constraints()
        assert c.grashof and np.allclose(c.transmission, np.radians([30.0, 150.0]), rtol=0, atol=1e-15)
        v.add_target(0.0, 0.0)
        v._task.value = "motion"
        with pytest.raises(ValueError, match="need angles"):
            v.search()
        lk = linkage.load(tmp_path / "design.json")
        P = np.asarray(linkage.sweep(lk, inputs=np.array([0.0])).coords)[0, lk.names.index("P"), :2]
        assert np.linalg.norm(P - t[0]) <= 1e-9 * np.ptp(t)  # saved assembled at its first target
    finally:
        v.close()


@LINKAGE
def test_the_command_names_a_file_it_cannot_read(tmp_path, capsys):
    from diffmech._cli import main

    assert main(["view", str(tmp_path / "nothing.step"), "--no-browser"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing.step" in err[0]


def _chromium():
    import os
    import shutil

    path = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no Chromium under CI (.ci/run installs it before the tests)")
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    return path


@LINKAGE
def test_in_a_real_browser_the_pages_own_controls_move_the_input_and_a_joint(tmp_path):
    # headless Chromium opens the page; the DevTools protocol presses the arrow key on
    # the input slider (20 steps) and on joint A's x slider (10 steps), as a hand would;
    # the server then holds that input, the crank turned by it, and A moved
    import base64
    import io
    import os
    import subprocess
    import time
    import urllib.request

    import imageio.v3 as iio
    from websockets.sync.client import connect

    from diffmech._view import free_port

    browser = _chromium()
    lk = examples.load("fourbar")
    v = linkage.view(lk)
    port = free_port()
    proc = subprocess.Popen(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--remote-debugging-port={port}",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,800", v.url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        page = None
        for _ in range(200):
            try:
                targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json"))
                page = next(t for t in targets if t["type"] == "page")
                break
            except Exception:
                time.sleep(0.1)
        assert page is not None, "Chromium's DevTools did not answer"
        ws = connect(page["webSocketDebuggerUrl"], max_size=2**26)
        ids = iter(range(1, 10**6))

        def call(method, **params):
            i = next(ids)
            ws.send(json.dumps({"id": i, "method": method, "params": params}))
            while True:
                m = json.loads(ws.recv())
                if m.get("id") == i:
                    return m["result"]

        def js(expr):
            return call("Runtime.evaluate", expression=expr, returnByValue=True)["result"].get("value")

        def until(check, what):
            for _ in range(300):
                if check():
                    return
                time.sleep(0.05)
            raise AssertionError(f"the server never held {what}: input {v.inputs}, A {np.asarray(v.design.coords)[0]}")

        until(lambda: (js("document.querySelectorAll('[role=slider]').length") or 0) >= 3, "the page's sliders")

        def press(index, times):
            js(f"document.querySelectorAll('[role=slider]')[{index}].focus()")
            for _ in range(times):
                for kind in ("keyDown", "keyUp"):
                    call(
                        "Input.dispatchKeyEvent",
                        type=kind,
                        key="ArrowRight",
                        code="ArrowRight",
                        windowsVirtualKeyCode=39,
                    )

        lo, hi = v._range(lk)
        press(0, 20)
        # (the page rounds a slider's value to 6 decimals)
        until(lambda: abs(v.inputs[0] - 20 * (hi - lo) / 720) <= 1e-6, "the input after 20 steps")
        X0, X = np.asarray(lk.initial()), np.asarray(v.motion.coords[0])
        assert abs(_angle(X, 0, 1) - _angle(X0, 0, 1) - v.inputs[0]) <= 1e-12 and "closed" in v.status
        size = float(np.max(np.abs(np.asarray(lk.coords))))
        press(1, 10)
        until(lambda: abs(float(v.design.coords[0, 0]) - 10 * size / 500) <= 1e-6, "joint A moved 10 steps")
        png = base64.b64decode(call("Page.captureScreenshot", format="png")["data"])
        shots = os.environ.get("DIFFMECH_ARTIFACTS", str(tmp_path))
        os.makedirs(shots, exist_ok=True)
        with open(os.path.join(shots, "viewer_fourbar.png"), "wb") as f:
            f.write(png)
        img = iio.imread(io.BytesIO(png))
        assert img.ndim == 3 and img.std() > 5  # not blank
        ws.close()
    finally:
        proc.kill()
        proc.wait()
        v.close()
