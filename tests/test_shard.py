"""Batches across devices (`diffmech.shard`) and the `diffmech sweep` command, with
several forced CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=N,
which must be set before JAX starts: each case runs in a fresh process)."""

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).parent.parent


def _env(devices):
    # the suite's compiler flags (conftest) plus the forced device count
    flags = os.environ.get("XLA_FLAGS", "")
    return dict(os.environ, XLA_FLAGS=f"{flags} --xla_force_host_platform_device_count={devices}", JAX_PLATFORMS="cpu")


def _python(code, devices, timeout=300):
    env = _env(devices)
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


@pytest.mark.slow  # ~40 s: two compilations of a batched adaptive ODE solve in a fresh process
def test_dynamic_simulations_on_one_and_four_devices(tmp_path):
    """A batch of dynamic simulations (adaptive Diffrax solves of the seed crank-rocker
    from 11 initial crank rates) on 1 and 4 forced CPU devices: equal to 1e-10 rad and
    to unbatched solves — not bitwise: 4 devices differ from 1 by ~3e-12 rad
    (measured), round-off amplified by the adaptive step control."""
    out = tmp_path / "res.npz"
    _python(
        f"""
        import jax, numpy as np, jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        import diffmech as dm
        from diffmech import shard, fourbar as fbk
        fb = dm.FourBar.seed_crank_rocker()
        w0 = jnp.linspace(-3.0, 3.0, 11)
        def simulate(w):
            q0 = fbk.assemble(fb, 0.0)
            tr = fbk.simulate_dynamics(fb, q0, fbk.momentum(fb, q0, w), 0.5, saveat=jnp.linspace(0.0, 0.5, 6))
            return tr.theta_A
        res = {{f"th{{d}}": shard.run(simulate, w0, devices=d, per_device=2) for d in (1, 4)}}
        res["th_ref"] = np.stack([np.asarray(simulate(w)) for w in w0[::5]])
        np.savez("{out}", **res)
    """,
        4,
    )
    r = np.load(out)
    np.testing.assert_allclose(r["th4"], r["th1"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(r["th1"][::5], r["th_ref"], rtol=0, atol=1e-10)


def _cli(args, devices, **kw):
    env = _env(devices)
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; from diffmech._cli import main; sys.exit(main())", "sweep", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_cli_sweep_on_several_devices_resumes_and_equals_one_device(tmp_path):
    """`diffmech sweep` on 4 forced CPU devices, killed after its first chunk, started
    again: the finished chunk is not recomputed, and RESULT.npz equals the run on one
    device (same masks, round-off) and the closed form of the four-bar's closure (a crank-rocker
    turns fully; a design that cannot is masked past its limit)."""
    rng = np.random.default_rng(1)
    n = 290  # ragged: chunks of 4 (4 devices), the last one padded
    L = np.column_stack(
        [rng.uniform(0.05, 0.2, n), rng.uniform(0.2, 0.4, n), rng.uniform(0.2, 0.4, n), rng.uniform(0.25, 0.35, n)]
    )
    L[0] = (0.12, 0.25, 0.26, 0.30)  # the seed's crank-rocker
    designs = tmp_path / "designs.npz"
    np.savez(designs, lengths=L)
    out4, out1 = tmp_path / "r4.npz", tmp_path / "r1.npz"
    # chunks of 4 designs (1 per device): dozens of chunks, so that the run is still going
    # when the first chunk is on disk (a sweep of 100 designs takes milliseconds)
    args = [str(designs), "--steps", "24", "--per-device", "1"]
    p = _cli([*args, "--devices", "all", "--out", str(out4)], 4)
    first = pathlib.Path(str(out4) + ".chunks") / "chunk_000000.npz"
    t0 = time.time()
    while not first.exists() and p.poll() is None and time.time() - t0 < 240:
        time.sleep(0.002)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert first.exists() and not out4.exists(), "the run finished before it could be interrupted"
    finished = [f for f in first.parent.glob("chunk_*.npz") if ".tmp" not in f.name]
    p = _cli([*args, "--devices", "all", "--out", str(out4)], 4)
    text, err = p.communicate(timeout=300)
    assert p.returncode == 0, err[-3000:]
    # the chunks finished before the kill were loaded, not recomputed (the folder is gone
    # once RESULT.npz is written, so the run reports what it did), and only the rest ran
    assert "resumed: " in text, text
    resumed = int(text.split("resumed: ")[1].split()[0])
    computed = int(text.split("loaded from")[1].split(",")[1].split()[0])
    assert resumed == len(finished) >= 1 and resumed + computed == -(-n // 4)
    p = _cli([*args, "--devices", "1", "--out", str(out1)], 4)
    text, err = p.communicate(timeout=300)
    assert p.returncode == 0, err[-3000:]
    assert "on 1 cpu device" in text
    a, b = np.load(out4), np.load(out1)
    assert not pathlib.Path(str(out4) + ".chunks").exists()
    assert a["q"].shape == (n, 24, 6) and a["converged"].shape == (n, 24)
    np.testing.assert_array_equal(a["converged"], b["converged"])
    # NaN where masked, alike; random designs come close to toggle positions, where the
    # conditioning lifts the device-count round-off to ~3e-15 (measured)
    np.testing.assert_allclose(a["q"], b["q"], rtol=0, atol=1e-13)
    np.testing.assert_allclose(a["theta_A"], 2 * np.pi * np.arange(24) / 24, rtol=0, atol=0)
    # the seed crank-rocker: C from the circle intersection, independently
    l1, l2, l3, l4 = L[0]
    th = a["theta_A"]
    B = l1 * np.stack([np.cos(th), np.sin(th)], -1)
    D = np.array([l4, 0.0])
    d = np.linalg.norm(D - B, axis=-1)
    x = (d**2 + l2**2 - l3**2) / (2 * d)
    e = (D - B) / d[:, None]
    C = B + x[:, None] * e + np.sqrt(l2**2 - x**2)[:, None] * np.stack([-e[:, 1], e[:, 0]], -1)
    assert a["converged"][0].all()
    np.testing.assert_allclose(a["q"][0, :, 2:4], (C - B) / l2, atol=1e-12)
    np.testing.assert_allclose(a["q"][0, :, 4:6], (C - D) / l3, atol=1e-12)
    assert np.isnan(a["q"][~a["converged"]]).all() and (~a["converged"]).any()


def test_cli_sweep_names_bad_input(tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, lengths=np.array([[0.1, 0.2, -0.3, 0.3]]))
    p = _cli([str(bad), "--steps", "8", "--out", str(tmp_path / "o.npz")], 1)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2 and "positive" in err and "[0]" in err


MULTI = """
import sys
from diffmech import shard  # importing diffmech does not start JAX's backend
pid, port, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
shard.initialize(f"localhost:{port}", num_processes=2, process_id=pid, local_devices=2)
import jax, numpy as np, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
import diffmech as dm
from diffmech import fourbar as fbk
assert jax.process_count() == 2 and len(jax.devices()) == 4 and len(jax.local_devices()) == 2
rng = np.random.default_rng(0)
L = np.column_stack([rng.uniform(0.05, 0.2, 37), rng.uniform(0.2, 0.4, 37), rng.uniform(0.2, 0.4, 37),
                     np.full(37, 0.3)])
th = jnp.linspace(0.0, 2 * np.pi, 40, endpoint=False)
def sweep(lengths):
    s = fbk.sweep_functional(dm.FourBar(lengths=lengths), th, condition=False)
    return s.q, s.converged
q, c = shard.run(sweep, jnp.asarray(L), devices="all", per_device=5)
np.savez(out, q=q, c=c)
jax.distributed.shutdown()
"""


def test_same_results_on_one_two_four_devices_and_two_processes(tmp_path):
    """A ragged batch (37 four-bars, some unable to turn fully) swept by `shard.run`:
    on 1, 2 and 4 forced CPU devices of one process, equal to round-off with the same
    masks, and equal to the
    library's own vmapped sweep to round-off (failed designs masked alike); and by two
    processes on this machine (2 CPU devices each) joined by `jax.distributed`
    (`shard.initialize`, gloo collectives): the batch spread over the 4 devices of
    both, each process gets all the results, bitwise those of one process."""
    import socket

    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS",)}
    env["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "")
    env["JAX_PLATFORMS"] = "cpu"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", MULTI, str(i), str(port), str(tmp_path / f"p{i}.npz")],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in (0, 1)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    single = tmp_path / "single.npz"
    _python(
        f"""
        import jax, numpy as np, jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        import diffmech as dm
        from diffmech import shard, fourbar as fbk
        assert len(jax.devices()) == 4
        rng = np.random.default_rng(0)
        L = np.column_stack([rng.uniform(0.05, 0.2, 37), rng.uniform(0.2, 0.4, 37), rng.uniform(0.2, 0.4, 37),
                             np.full(37, 0.3)])
        th = jnp.linspace(0.0, 2 * np.pi, 40, endpoint=False)
        def sweep(lengths):
            s = fbk.sweep_functional(dm.FourBar(lengths=lengths), th, condition=False)
            return s.q, s.converged
        res = {{}}
        for d in (1, 2, 4):
            res[f"q{{d}}"], res[f"c{{d}}"] = shard.run(sweep, jnp.asarray(L), devices=d, per_device=5)
        ref = fbk.sweep(dm.FourBar(lengths=jnp.asarray(L)), th, condition=False)
        res["q_ref"], res["c_ref"] = np.asarray(ref.q), np.asarray(ref.converged)
        np.savez("{single}", **res)
    """,
        4,
    )
    ref = np.load(single)
    # one process, 1, 2 and 4 devices (ragged: 37 designs, chunks of 5 per device): the same
    # masks, configurations equal to round-off. (Not bitwise since the sweep solves all
    # angles at once: the per-device programs of different device counts are compiled
    # apart and differ by 1-2 ulp, measured 5.6e-16, also on one core and with one
    # intra-op thread; see the issue-20 note.)
    for d in (2, 4):
        np.testing.assert_array_equal(ref[f"c{d}"], ref["c1"])
        np.testing.assert_allclose(ref[f"q{d}"], ref["q1"], rtol=0, atol=1e-14)
    assert ref["q1"].shape == (37, 40, 6) and 0 < (~ref["c1"].all(axis=1)).sum() < 37  # some stop at a limit
    # and equal to the library's own vmapped sweep, failed designs masked alike
    np.testing.assert_array_equal(ref["c1"], ref["c_ref"])
    np.testing.assert_allclose(ref["q1"][ref["c1"]], ref["q_ref"][ref["c_ref"]], rtol=0, atol=1e-14)
    # two processes: each got every result, bitwise those of one process
    for i in (0, 1):
        r = np.load(tmp_path / f"p{i}.npz")
        assert np.array_equal(r["q"], ref["q4"], equal_nan=True) and np.array_equal(r["c"], ref["c4"])


@pytest.mark.slow  # ~1–2 min: linkage, wrench-solve and fit programs compiled in a fresh process
def test_linkage_sweeps_wrench_solves_and_multistart_fits_on_one_and_four_devices(tmp_path):
    """The other batch computations through `shard.run`, 1 against 4 forced CPU
    devices: a Stephenson-II swept for a batch of perturbed designs, Gough–Stewart
    actuator forces (Newton–Euler wrench solve along a trajectory) for a batch of
    payload masses, and a multi-start of four-bar tracer fits (Adam steps on
    `identify`'s masked tracer loss inside the program; `diffmech.fit.fit` itself is an
    eager driver and runs its starts on one device).
    Each equals its single-device result, and the wrench solves equal the library's
    unbatched call."""
    out = tmp_path / "res.npz"
    _python(
        f"""
        import jax, numpy as np, jax.numpy as jnp, equinox as eqx
        jax.config.update("jax_enable_x64", True)
        import diffmech as dm
        from diffmech import _identify, shard, parallel as par, identify, fourbar as fbk
        rng = np.random.default_rng(0)
        six = dm.examples.stephenson2()
        coords = six.coords[None] * (1 + 1e-3 * rng.normal(size=(6,) + six.coords.shape))
        u = jnp.linspace(0.0, 1.0, 20)
        def lk(c):
            m = dm.linkage.sweep_functional(eqx.tree_at(lambda k: k.coords, six, c), u, condition=False)
            return m.coords, m.converged
        mech = par.StewartPlatform()
        traj = par.stewart_spiral(mech, jnp.linspace(0.0, 2 * np.pi, 40))
        kin = par.inverse_kinematics(mech, traj)
        masses = jnp.linspace(5.0, 15.0, 7)
        def forces(m):
            M = eqx.tree_at(lambda x: x.mass, mech, m)
            return par.inverse_dynamics(M, traj, kinematics=kin).actuator_forces
        theta = jnp.linspace(0.0, 2 * jnp.pi, 25)[:-1]
        true = dm.FourBar(lengths=(0.12, 0.25, 0.26, 0.30))
        pts = fbk.coupler_point(true, fbk.sweep(true, theta).q, jnp.array([0.1, 0.05]))
        starts = jnp.asarray(true.lengths) * (1 + 0.03 * jnp.asarray(rng.normal(size=(5, 4))))
        def fit(l0):  # one start of a tracer fit: 150 Adam steps on identify's masked loss, inside jit
            import optax
            opt = optax.adam(1e-3)
            m0 = _identify._Kinematic(lengths=l0, point=jnp.array([0.09, 0.06]))
            def step(_, c):
                m, s = c
                g = jax.grad(_identify._tracer_loss)(m, theta, pts, 1)
                upd, s = opt.update(g, s)
                return optax.apply_updates(m, upd), s
            m, _ = jax.lax.fori_loop(0, 150, step, (m0, opt.init(m0)))
            return m.lengths, _identify._tracer_loss(m0, theta, pts, 1), _identify._tracer_loss(m, theta, pts, 1)
        res = {{}}
        for d in (1, 4):
            res[f"lk{{d}}"], res[f"lkc{{d}}"] = shard.run(lk, coords, devices=d, per_device=2)
            res[f"f{{d}}"] = shard.run(forces, masses, devices=d, per_device=2)
            res[f"fit{{d}}"], res[f"loss0{{d}}"], res[f"loss{{d}}"] = shard.run(fit, starts, devices=d, per_device=2)
        res["f_ref"] = np.stack([np.asarray(forces(m)) for m in masses[::3]])
        np.savez("{out}", **res)
    """,
        4,
    )
    r = np.load(out)
    for k in ("lk", "lkc", "f", "fit", "loss"):
        np.testing.assert_allclose(r[k + "4"], r[k + "1"], rtol=0, atol=1e-12, err_msg=k)
    assert r["lkc1"].all()
    np.testing.assert_allclose(r["f1"][::3], r["f_ref"], rtol=1e-12, atol=1e-9)
    assert np.all(r["loss1"] < 0.5 * r["loss01"]), (r["loss01"], r["loss1"])  # every start went downhill


def test_fit_spreads_its_starts_over_devices(tmp_path):
    """`diffmech.fit.fit(..., starts=6, devices=4)` on 4 forced CPU devices (padded to
    8 starts, partitioned by XLA along the starts): the same minimum and history
    shapes as on one device, the padding stripped."""
    out = tmp_path / "res.npz"
    _python(
        f"""
        import jax, numpy as np, jax.numpy as jnp, equinox as eqx
        jax.config.update("jax_enable_x64", True)
        from diffmech import fit
        class Decay(eqx.Module):
            amplitude: jax.Array
            offset: jax.Array
        t = jnp.linspace(0.0, 3.0, 40)
        y = 2.5 * jnp.exp(-t) - 0.7
        def loss(m, y):
            return jnp.mean((m.amplitude * jnp.exp(-t) + m.offset - y) ** 2)
        res = {{}}
        for name, d in (("one", None), ("four", 4)):
            r = fit.fit(loss, Decay(jnp.asarray(1.0), jnp.asarray(0.0)), y, positive=lambda m: m.amplitude,
                        steps=60, starts=6, seed=0, devices=d)
            res[name + "_loss"], res[name + "_amp"] = np.asarray(r.loss), np.asarray(r.params.amplitude)
            res[name + "_hist"], res[name + "_steps"] = np.asarray(r.history.loss), np.asarray(r.steps)
            res[name + "_best"] = np.asarray(r.model.amplitude)
        np.savez("{out}", **res)
    """,
        4,
    )
    r = np.load(out)
    assert r["four_loss"].shape == (6,) and r["four_hist"].shape == r["one_hist"].shape
    np.testing.assert_allclose(r["four_amp"], r["one_amp"], rtol=1e-12)
    np.testing.assert_allclose(r["four_loss"], r["one_loss"], rtol=0, atol=1e-20)
    np.testing.assert_allclose(r["four_best"], 2.5, rtol=1e-10)


def test_cli_sweep_float32_mode_keeps_float32_accuracy(tmp_path):
    """`diffmech sweep --float32` (x64 off): float32 attitudes within 1e-5 of the
    float64 run (round-off of float32 at these sizes ~1e-7, amplified near the
    limits), the same mask away from the motion limits, unit attitude vectors to
    float32 precision."""
    rng = np.random.default_rng(2)
    L = np.column_stack(
        [rng.uniform(0.05, 0.2, 40), rng.uniform(0.2, 0.4, 40), rng.uniform(0.2, 0.4, 40), rng.uniform(0.25, 0.35, 40)]
    )
    np.savez(tmp_path / "d.npz", lengths=L)
    outs = {}
    for flag in ((), ("--float32",)):
        out = tmp_path / f"r{len(flag)}.npz"
        p = _cli([str(tmp_path / "d.npz"), "--steps", "36", "--devices", "1", *flag, "--out", str(out)], 1)
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        outs[len(flag)] = np.load(out)
    d, s = outs[0], outs[1]
    assert d["q"].dtype == np.float64 and s["q"].dtype == np.float32
    both = d["converged"] & s["converged"]
    assert both.mean() > 0.99 * d["converged"].mean()
    assert np.abs(s["q"][both] - d["q"][both]).max() < 1e-5
    norms = np.linalg.norm(s["q"][both].reshape(-1, 3, 2).astype(np.float64), axis=-1)
    assert np.abs(norms - 1).max() < 1e-6
