"""A second identical eager call compiles nothing: backend compilations counted by
`jax.monitoring` while a call runs again (on a new but equal object where the README
builds one per call: a bundled example is a fresh `Linkage` each time)."""

import contextlib
import pathlib
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import DOUBLE_ROCKER

from diffmech import RESULTS, examples, linkage
from diffmech._result import code
from diffmech._xla import size_class

pytestmark = pytest.mark.xdist_group("linkage")  # the linkage worker: its programs compile once

_EVENT = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def compilations():
    """The backend compilations made inside the block (a list, filled as they happen)."""
    seen, on = [], [True]

    def listen(event, duration, **kwargs):
        if on[0] and event == _EVENT:
            seen.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield seen
    finally:
        on[0] = False


@pytest.mark.parametrize("name", ["theo_jansen"])
def test_a_linkages_second_simulation_compiles_nothing(name, monkeypatch):
    """The initial configuration's check is made inside the one program on every call
    (it was a static flag that flipped after a linkage's first call: every linkage paid
    its compile twice)."""
    from diffmech.linkage import _simulate

    # a length no other test compiles (not padded to its length class): with a shared one,
    # the programs other tests compiled first would hide a second compilation
    monkeypatch.setattr(_simulate, "_LENGTHS", ())
    steps = 61
    first = linkage.sweep(examples.load(name), steps=steps)
    with compilations() as seen:
        linkage.sweep(examples.load(name), steps=steps)  # a new object: its first call, checked
        lk = examples.load(name)
        linkage.sweep(lk, steps=steps)
        same = linkage.sweep(lk, steps=steps)  # the same object again (its check made)
    assert seen == [], len(seen)
    np.testing.assert_array_equal(np.asarray(first.coords), np.asarray(same.coords))


def test_loads_added_to_a_linkage_compile_none_of_its_kinematics_again(monkeypatch):
    """A linkage's loads are static fields its motion does not read: the same linkage
    with a spring and a force added shares the programs of its motion (a designer's
    spring compiles no kinematics again), and the motion is the same, bit for bit."""
    from diffmech.linkage import _simulate

    monkeypatch.setattr(_simulate, "_LENGTHS", ())  # a length of its own (see above)
    steps = 59
    spec = examples.stephenson2().to_dict()  # no plan (a group larger than a dyad): the linkage is the program's
    bare = linkage.sweep(linkage.Linkage.from_dict(spec), steps=steps)
    spec["loads"] = [
        {"type": "spring", "joints": ["J2", "J5"], "links": ["L1", "L5"], "stiffness": 40.0},
        {"type": "force", "joint": "J8", "link": "L4", "force": [0.0, -9.0]},
    ]
    loaded = linkage.Linkage.from_dict(spec)
    with compilations() as seen:
        m = linkage.sweep(loaded, steps=steps)
    assert seen == [], len(seen)
    np.testing.assert_array_equal(np.asarray(m.coords), np.asarray(bare.coords))


def _other_topologies():
    """Two linkages of the four-bar's size class but not its topology: its tracer carried
    by the rocker, and an inverted slider-crank driven along a ground line."""
    spec = examples.fourbar().to_dict()
    for name, link in spec["links"].items():
        joints = link["joints"] if isinstance(link, dict) else link
        joints[:] = [j for j in joints if j != "P"] + (["P"] if name == "rocker" else [])
    slider = {
        "name": "slider",
        "geometry": "planar",
        "joints": {
            "G": {"type": "P", "coords": [0.0, 1.0, -0.05]},
            "B": {"type": "R", "coords": [0.0, 0.05]},
            "C": {"type": "R", "coords": [0.2, 0.25]},
            "D": {"type": "R", "coords": [0.1, 0.3]},
        },
        "links": {"slider": ["G", "B"], "coupler": ["B", "C"], "rocker": ["C", "D"], "ground": ["G", "D"]},
        "ground": "ground",
        "input": {"type": "prismatic", "link": "slider", "joint": "G"},
    }
    return linkage.Linkage.from_dict(spec), linkage.Linkage.from_dict(slider)


def test_a_further_topology_of_the_class_compiles_nothing():
    """Topology as data: the four-bar's simulation program serves another topology of
    its size class (a tracer on another link; a prismatic input and its line) without
    compiling; each answer is the linkage's own (the tracer on the rocker: its
    distances to C and D kept; the slider: B on its line)."""
    from diffmech.linkage import _plan, _simulate

    steps = 37  # the class's program for this length is compiled by the first call below
    four = examples.fourbar()
    linkage.sweep(four, steps=steps)
    rocker_tracer, slider = _other_topologies()
    assert _plan.class_of(rocker_tracer) == _plan.class_of(four) == _plan.class_of(slider)
    assert rocker_tracer.topology != four.topology
    programs = _simulate._plan_jit._cache_size()
    with compilations() as seen:
        a = linkage.sweep(rocker_tracer, steps=steps)
        b = linkage.sweep(slider, steps=steps, step=0.004)
    assert seen == [], len(seen)
    assert _simulate._plan_jit._cache_size() == programs
    assert bool(a.converged.all()) and bool(b.converged.all())
    P, C, D = (np.asarray(a[n]) for n in ("P", "C", "D"))
    for Q in (C, D):
        d = np.linalg.norm(P - Q, axis=1)
        assert np.max(np.abs(d - d[0])) <= 1e-12
    B = np.asarray(b["B"])
    np.testing.assert_allclose(B[:, 1], 0.05, rtol=0, atol=1e-15)
    np.testing.assert_allclose(B[:, 0], np.asarray(b.inputs), rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", ["theo_jansen", "rssr", "double_rocker"])
def test_a_path_of_another_length_in_its_class_compiles_no_simulation_and_is_the_same_motion(name, monkeypatch):
    """An eager path is padded to its length class by repeating its last input: a path
    of another length in the class compiles no simulation program (only the small ones
    that take the motion's rows), and its motion is, field by field and bit for bit,
    the one solved at the path's own length (each length its own program). On a plan
    (the Jansen leg), per topology (the RSSR, spatial), across both sides of the initial
    configuration, and past a motion limit (the padding repeats a failed input)."""
    from diffmech.linkage import _simulate

    lk = linkage.Linkage.from_dict(DOUBLE_ROCKER) if name == "double_rocker" else examples.load(name)
    path = np.linspace(-0.5, 3.0, 45) if name != "double_rocker" else np.linspace(0.0, 3.0, 45)
    assert size_class(45, _simulate._LENGTHS) == size_class(41, _simulate._LENGTHS) == 48
    linkage.sweep(lk, inputs=path[:41])
    programs = (_simulate._plan_jit, _simulate._simulate_jit, _simulate._first_rows_jit, _simulate._rows_jit)
    before = [p._cache_size() for p in programs]
    with compilations() as seen:
        a = linkage.sweep(lk, inputs=path)
    made = [p._cache_size() - b for p, b in zip(programs, before)]
    assert made[:2] == [0, 0] and len(seen) == sum(made[2:]), (made, len(seen))
    monkeypatch.setattr(_simulate, "_LENGTHS", ())  # each length its own program
    b = linkage.sweep(lk, inputs=path)
    assert a.coords.shape[0] == b.coords.shape[0] == 45
    for field in ("inputs", "coords", "condition", "residual"):
        np.testing.assert_array_equal(np.asarray(getattr(a, field)), np.asarray(getattr(b, field)), err_msg=field)
    np.testing.assert_array_equal(np.asarray(a.converged), np.asarray(b.converged))
    np.testing.assert_array_equal(np.asarray(code(a.status)), np.asarray(code(b.status)))
    if name == "double_rocker":
        assert 0 < int(np.asarray(a.converged).sum()) < 45 and a.result == RESULTS.motion_limit


def test_simulate_functional_is_one_program_eagerly_and_under_a_top_level_grad():
    """`simulate_functional` called eagerly, or differentiated by a `jax.grad` at the top
    level, compiles its sweep as a few whole programs (op by op, as JAX runs a function
    that is not jitted, the same calls compiled 150–500 small programs); the gradient is
    the central difference's."""
    import equinox as eqx
    import jax.numpy as jnp

    lk = examples.fourbar()
    path = jnp.linspace(0.0, 1.0, 7)
    d, p = lk.names.index("D"), lk.names.index("P")

    def end(dx):  # the tracer's x at the end of the path, the rocker's pivot moved by dx
        k = eqx.tree_at(lambda k_: k_.coords, lk, lk.coords.at[d, 0].add(dx))
        return linkage.sweep_functional(k, path).coords[-1, p, 0]

    with compilations() as eager:
        value = end(0.0)
    with compilations() as grad:
        g = jax.grad(end)(0.0)
    assert len(eager) <= 12 and len(grad) <= 24, (len(eager), len(grad))
    h = 1e-6
    fd = (float(end(h)) - float(end(-h))) / (2 * h)
    assert np.isfinite(float(value)) and abs(float(g) - fd) <= 1e-6 * max(1.0, abs(fd)), (float(g), fd)


_PROBE = """
import sys
import jax
jax.config.update("jax_enable_x64", True)
hits, traced = [], []
HIT = "/jax/compilation_cache/cache_hits"
jax.monitoring.register_event_listener(lambda e, **k: hits.append(e) if e == HIT else None)
jax.monitoring.register_event_duration_secs_listener(
    lambda e, d, fun_name=None, **k: traced.append(fun_name) if e.endswith("jaxpr_trace_duration") else None
)
import jax.numpy as jnp
import diffmech as dm
dm.cache(sys.argv[1])
fb = dm.FourBar(lengths=jnp.array([0.12, 0.25, 0.26, 0.30]))
s = dm.fourbar.sweep(fb, jnp.linspace(0.0, 6.0, 97))  # a kept program (diffmech's)
swept = sum(str(f).startswith("_sweep_lengths_program") for f in traced)
# your own program: from JAX's cache
jax.jit(lambda L: dm.fourbar.sweep_functional(dm.FourBar(lengths=L), jnp.linspace(0.0, 6.0, 97)).q)(fb.lengths)
print(len(hits), swept, int(s.converged.sum()))
"""


def test_the_persistent_cache_serves_a_second_process(tmp_path):
    """`diffmech.cache(path)`: the first process writes its programs there, a second
    one loads them instead of compiling them (a program of the user's own from JAX's
    cache; the sweep's kept compiled by diffmech, not even traced)."""
    import subprocess
    import sys

    env = dict(__import__("os").environ)
    runs = [
        subprocess.run(
            [sys.executable, "-c", _PROBE, str(tmp_path)], capture_output=True, text=True, env=env, timeout=300
        )
        for _ in range(2)
    ]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    (cold, swept0, n0), (warm, swept1, n1) = (map(int, r.stdout.split()) for r in runs)
    assert n0 == n1 == 97
    assert cold == 0 and warm >= 1  # JAX's cache served the second process
    assert swept0 == 1 and swept1 == 0  # the sweep's program was loaded compiled, not traced
    assert any(tmp_path.iterdir())
    with pytest.raises(ValueError, match="min_compile_time"):
        __import__("diffmech").cache(tmp_path, min_compile_time=-1)


_KEPT = """
import sys
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
import diffmech as dm
from diffmech import examples, linkage
sys.path.insert(0, sys.argv[2])
from test_first_call import _other_topologies
traced = []
jax.monitoring.register_event_duration_secs_listener(
    lambda e, d, fun_name=None, **k: traced.append(fun_name) if e.endswith("jaxpr_trace_duration") else None
)
dm.cache(sys.argv[1])
for name in sys.argv[3:]:
    lk = {"fourbar": examples.fourbar, "rscr": examples.rscr}.get(name, lambda: _other_topologies()[0])()
    traced.clear()
    m = linkage.sweep(lk)
    np.save(f"{sys.argv[1]}/{name}.{len(sys.argv)}.npy", np.asarray(m.coords))
    print(name, sum(str(f).startswith(("_plan_program", "_simulate_program")) for f in traced), int(m.converged.sum()))
"""


def test_kept_programs_answer_a_later_process_without_tracing(tmp_path):
    """With `diffmech.cache(path)` the simulation programs are kept compiled on disk: a
    later process simulates the same linkages, and another topology of the four-bar's
    size class, without tracing, lowering or compiling them, and gets the same motions,
    bit for bit (the same executables), as the process that compiled them, and as this
    one. The RSCR's program has LAPACK calls, which a process sets up when it lowers
    one: loaded without that, such a program crashed the process."""
    import subprocess
    import sys

    tests = str(pathlib.Path(__file__).parent)

    def run(*names):
        r = subprocess.run(
            [sys.executable, "-c", _KEPT, str(tmp_path), tests, *names], capture_output=True, text=True, timeout=300
        )
        assert r.returncode == 0, r.stderr[-2000:]
        return [line.split() for line in r.stdout.splitlines()]

    first = run("fourbar", "rscr")
    later = run("fourbar", "rocker_tracer", "rscr")
    assert first == [["fourbar", "1", "180"], ["rscr", "1", "180"]]  # traced and compiled once
    assert later == [["fourbar", "0", "180"], ["rocker_tracer", "0", "180"], ["rscr", "0", "180"]]  # loaded
    assert len(list((tmp_path / "programs").glob("*.bin"))) == 2
    for name in ("fourbar", "rscr"):
        np.testing.assert_array_equal(np.load(tmp_path / f"{name}.6.npy"), np.load(tmp_path / f"{name}.5.npy"))
    here = {"fourbar": linkage.sweep(examples.fourbar()), "rocker_tracer": linkage.sweep(_other_topologies()[0])}
    for name, m in here.items():
        np.testing.assert_allclose(np.load(tmp_path / f"{name}.6.npy"), np.asarray(m.coords), rtol=0, atol=1e-13)
    # the kept files lost, JAX's cache (in the same folder) answers the compilation: an
    # executable it answered is not kept again (serialised again, it lacked its machine
    # code, and the next process failed: "Function iota.41_kernel not found")
    shutil.rmtree(tmp_path / "programs")
    assert run("fourbar") == run("fourbar") == [["fourbar", "1", "180"]]
    np.testing.assert_array_equal(np.load(tmp_path / "fourbar.4.npy"), np.load(tmp_path / "fourbar.5.npy"))


def test_a_kept_program_that_fails_falls_back_to_the_programs_own_jit(tmp_path, monkeypatch):
    """The kept-program path never breaks a call: a file that does not load is
    compiled again, and a failure while compiling flat falls back to the program's
    own jit (whose result, or error, the caller gets)."""
    from diffmech import _cache

    monkeypatch.setattr(_cache, "_PROGRAM_FOLDER", tmp_path)
    keys = []

    def failing(key, *args):
        keys.append(key)
        raise RuntimeError("cannot compile flat")

    monkeypatch.setattr(_cache, "_compile", failing)
    x = np.arange(3.0)
    out = _cache.program("plus", lambda v, k: v + k, jax.jit(lambda v, k: v + k, static_argnums=1), (x,), (2,))
    np.testing.assert_array_equal(np.asarray(out), x + 2)
    assert len(keys) == 1 and not _cache._LOADED.get(keys[0])
    (tmp_path / f"{keys[0]}.bin").write_bytes(b"not a kept program")
    assert _cache._load(keys[0]) is None  # compiled again, not a crash


def test_only_programs_whose_static_part_is_diffmechs_own_are_kept(tmp_path, monkeypatch):
    """A kept program's key holds its arguments' non-array part as text: numbers,
    this package's classes, its module-level functions (by name) and the optimisers it
    builds and names. Anything else (a lambda, an optax object diffmech did not build)
    is not kept, and the call is the program's own jit; the answers are the same."""
    import optax

    from diffmech import _cache, _fit, _geometry

    monkeypatch.setattr(_cache, "_PROGRAM_FOLDER", tmp_path)

    def f(x, fn, opt):
        state = [a for a in jax.tree.leaves(opt.init(x)) if jnp.issubdtype(a.dtype, jnp.floating)]
        return fn(x) + sum(jnp.sum(a) for a in state)  # the optimiser's moments start at 0

    kept = _cache.kept()(f)
    scope = {"perp": _geometry.perp}
    exec("def exec_defined(v):\n    return perp(v)", scope)  # noqa: S102
    exec_defined = scope["exec_defined"]
    assert exec_defined.__module__ is None
    x = np.array([0.3, -0.7])
    named, _ = _fit._optimizer("adam", None)
    cases = [
        (_geometry.perp, named, True),  # a module-level function of diffmech, a named optimiser
        (lambda v: _geometry.perp(v), named, False),  # a lambda: its name says nothing of its code
        (_geometry.perp, optax.adam(1e-2), False),  # an optax object diffmech did not build
        (exec_defined, named, False),  # a function of no module (made by `exec`, as in a notebook's magic)
    ]
    for k, (fn, opt, keep) in enumerate(cases):
        np.testing.assert_array_equal(np.asarray(kept(x, fn, opt)), [0.7, 0.3])
        assert len(list(tmp_path.glob("*.bin"))) == int(keep) + (k > 0), k


def test_drive_laws_are_data_other_numbers_compile_nothing():
    """The drive laws give the torque their formulas say (against NumPy's
    interpolation), and a law with other numbers runs the same compiled program, for
    a linkage's dynamics and the four-bar's; a simulation under a law keeps its energy
    balance (the drive's work by the same law)."""
    import jax.numpy as jnp

    from diffmech import fourbar

    ts = np.array([0.0, 0.2, 0.5, 1.0])
    ys = np.array([0.0, 1.0, -0.5, 2.0])
    t = np.linspace(-0.1, 1.1, 13)
    series = linkage.TorqueSeries(ts, ys)
    np.testing.assert_allclose([float(series(s, 0.0, 0.0)) for s in t], np.interp(t, ts, ys), rtol=0, atol=1e-15)
    servo = linkage.ServoTorque(ts, ys, 30.0, 2.0)
    for s in (0.1, 0.3, 0.7):
        k = np.searchsorted(ts, s) - 1
        rate = (ys[k + 1] - ys[k]) / (ts[k + 1] - ts[k])
        want = 30.0 * (np.interp(s, ts, ys) - 0.4) + 2.0 * (rate - 1.5)
        assert float(servo(s, 0.4, 1.5)) == pytest.approx(want, rel=1e-14)
    assert float(linkage.AffineTorque(50.0, 5.0)(0.0, 0.0, 3.0)) == 35.0
    with pytest.raises(ValueError, match="strictly increasing"):
        linkage.TorqueSeries([0.0, 0.0], [1.0, 2.0])

    lk = linkage.rod_mass_properties(examples.fourbar())
    kw = dict(saveat=np.linspace(0.0, 0.2, 5))
    a = linkage.simulate_dynamics(lk, 0.0, 1.0, 0.2, drive=linkage.Drive(torque=linkage.AffineTorque(0.5, 0.05)), **kw)
    fb = fourbar.FourBar(jnp.array([0.12, 0.25, 0.26, 0.30]))
    q0 = fourbar.assemble(fb, 0.0)
    f = fourbar.simulate_dynamics(
        fb, q0, 0.0, 0.2, saveat=np.linspace(0.0, 0.2, 5), drive=fourbar.Drive(fourbar.ConstantTorque(0.1))
    )
    with compilations() as seen:
        b = linkage.simulate_dynamics(
            lk, 0.0, 1.0, 0.2, drive=linkage.Drive(torque=linkage.AffineTorque(0.8, 0.02)), **kw
        )
        g = fourbar.simulate_dynamics(
            fb, q0, 0.0, 0.2, saveat=np.linspace(0.0, 0.2, 5), drive=fourbar.Drive(fourbar.ConstantTorque(0.2))
        )
        # free motion, a constant torque, another damping: the same law's program
        free = linkage.simulate_dynamics(lk, 0.0, 1.0, 0.2, **kw)
        c = linkage.simulate_dynamics(
            lk, 0.0, 1.0, 0.2, drive=linkage.Drive(torque=linkage.ConstantTorque(0.8), damping=0.1), **kw
        )
        h = fourbar.simulate_dynamics(fb, q0, 0.0, 0.2, saveat=np.linspace(0.0, 0.2, 5))
        # other save times, as many as their size class holds: the same program
        d = linkage.simulate_dynamics(
            lk,
            0.0,
            1.0,
            0.2,
            drive=linkage.Drive(torque=linkage.AffineTorque(0.5, 0.05)),
            saveat=np.linspace(0, 0.2, 7),
        )
    assert seen == [], len(seen)
    # its own saves (the padding cut off), on the same integration as `a`'s: equal at the ends, bit for bit
    assert d.ts.shape == d.u.shape == (7,) and d.coords.shape[0] == 7 and bool(np.all(d.converged))
    np.testing.assert_array_equal(np.asarray(d.ts), np.linspace(0, 0.2, 7))
    assert float(d.u[-1]) == float(a.u[-1]) and float(d.energy[-1]) == float(a.energy[-1])
    sims = (a, b, free, c)
    assert all(bool(np.all(s.converged)) for s in sims) and bool(np.all(f.converged & g.converged & h.converged))
    assert float(b.u[-1]) > float(a.u[-1])  # more torque, further
    assert all(float(s.energy_error) < 1e-8 for s in sims)
    # the work of each law: none free; τ Δu for a constant torque; the damper's loss
    assert float(np.max(np.abs(np.asarray(free.work)))) == 0.0
    np.testing.assert_allclose(np.asarray(c.work), 0.8 * (np.asarray(c.u) - float(c.u[0])), rtol=1e-12, atol=1e-15)
    assert float(c.dissipated[-1]) > 0.0 and float(free.dissipated[-1]) == 0.0
    assert float(h.energy_drift) < 1e-8  # free: the energy kept


def test_eager_programs_take_new_numbers_without_compiling_and_inline_in_a_program():
    """An entry point that runs as one program eagerly (`_xla.eager_program`) takes
    other numbers without compiling (Python floats are passed as arrays): a Stewart
    platform of other dimensions and the seed's spiral of another radius, whose poses
    follow their closed forms; inside another program, with every argument a constant
    (JAX refuses compiler options there), the same entry point is inlined."""
    import jax.numpy as jnp

    from diffmech import FourBar, fourbar, parallel

    times = np.linspace(0.0, 0.5, 11)
    parallel.stewart_spiral(parallel.StewartPlatform(), times)
    with compilations() as seen:
        mech = parallel.StewartPlatform(base_radius=0.06, tilt=0.5)
        traj = parallel.stewart_spiral(mech, times, radius=0.004, rise=0.001)
    assert seen == [], len(seen)
    anchors = np.array([np.asarray(c.points[0]) for c in mech.chains])
    np.testing.assert_allclose(np.hypot(anchors[:, 0], anchors[:, 1]), 0.06, rtol=0, atol=1e-15)
    helix = np.c_[-0.004 * np.sin(times), 0.004 * (1 - np.cos(times)), 0.001 * times]
    np.testing.assert_allclose(np.asarray(traj.position - mech.reference), helix, rtol=0, atol=1e-15)

    fb = FourBar(lengths=(0.3, 0.3, 0.3, 0.5))  # non-Grashof: the crank stops short of π
    inside = jax.jit(lambda: fourbar.crank_limits(fb).theta_max)()  # every argument a constant
    c_max = (0.3**2 + 0.5**2 - (0.3 + 0.3) ** 2) / (2 * 0.3 * 0.5)
    assert float(inside) == pytest.approx(np.arccos(c_max), abs=1e-15)
    assert float(jnp.asarray(inside)) == float(fourbar.crank_limits(fb).theta_max)


def test_eager_entry_points_compile_one_program_not_one_per_operation():
    """A public function called eagerly compiles one program on its first call with
    new shapes, not one per JAX operation (op by op, `linkage.rates` compiled 141
    small programs, 5 s for Stephenson-II; `fourbar.crank_torque` ~100). Shapes no
    other test uses (23 samples), so that programs compiled before cannot hide the
    count."""
    from diffmech import FourBar, fourbar, identify

    fb = FourBar(lengths=(0.12, 0.25, 0.26, 0.30))
    th = np.linspace(0.1, 1.2, 23)
    lk = examples.rssr()
    motion = linkage.sweep(lk, steps=23)
    x0 = lk.x0()
    q = np.asarray(fourbar.assemble(fb, th))
    framed = [n for n, f in zip(lk.link_names, lk.plan.frames) if f is not None]  # not the S–S rod
    calls = {
        "fourbar.crank_torque": lambda: fourbar.crank_torque(fb, th, 1.0 + 0 * th, 0 * th),
        "fourbar.closure_residual": lambda: fourbar.closure_residual(fb, q),
        "identify.fourbar_regressor": lambda: identify.fourbar_regressor(fb, th, 1.0 + 0 * th, 0 * th),
        "identify.fourbar_base_parameters": lambda: identify.fourbar_base_parameters(
            FourBar(lengths=np.tile([0.12, 0.25, 0.26, 0.30], (23, 1)))
        ),
        "linkage.rates": lambda: linkage.rates(lk, x0, 0.0, 1.0, 0.0),
        "linkage.link_pose": lambda: linkage.link_pose(lk, motion, framed[-1]),
        "linkage.motion_rates": lambda: linkage.motion_rates(lk, motion, 1.0, 0.5),
    }
    for name, call in calls.items():
        with compilations() as seen:
            jax.block_until_ready(call())
        assert len(seen) <= 1, (name, len(seen))
