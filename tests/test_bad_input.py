"""Bad input gets a clear error at the door: a property-based search (hypothesis) over
the public entry points and the CLI, each called with one argument spoiled (NaN, ±inf,
negative or zero where a count or a span is meant, a wrong shape, empty, a string, out
of order). Every outcome must be a `ValueError` (or subclass) whose message names the
spoiled argument, raised before anything is compiled; the CLI must exit with code 2 and
one line on stderr, never a traceback. Each call is checked eagerly, so an example
costs milliseconds: `EXAMPLES` spoiled calls per run.

Inputs that are valid but out of order, or poses out of reach, are answers, not errors:
tests/test_linkage.py and tests/test_parallel.py check those results against sequential
continuation and the task."""

import contextlib
import io
import os
import subprocess
import sys

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import diffmech as dm
from diffmech import closure, fourbar, identify, linkage, parallel, shard, synthesis
from diffmech._cli import main

EXAMPLES = 150

FB = dm.FourBar(lengths=(0.12, 0.25, 0.26, 0.30))
LK = dm.examples.fourbar()
STEWART = parallel.StewartPlatform()
TRAJ = parallel.stewart_spiral(STEWART, jnp.arange(0.0, 0.05, 0.01))
Q0 = fourbar.assemble(FB, 0.0)
TARGETS = np.c_[np.cos(np.linspace(0, 5, 8)), np.sin(np.linspace(0, 5, 8))]

NUMBER = st.sampled_from([float("nan"), float("inf"), -float("inf")])
SHAPE = st.sampled_from([np.zeros((0,)), np.zeros((2, 2, 2)), "x"])


def _spoil_array(good, bad):
    """`good` with one entry replaced by the non-finite `bad` (or `bad` itself if it is
    not a number: a wrong shape or type)."""
    if not isinstance(bad, float):
        return bad
    a = np.array(good, dtype=float, copy=True)
    a.reshape(-1)[a.size // 2] = bad
    return a


# (entry point, argument name, strategy of bad values, how to call with the bad value)
CASES = [
    ("fourbar.assemble", "theta_A", NUMBER, lambda v: fourbar.assemble(FB, v)),
    ("fourbar.sweep", "theta_A_values", NUMBER, lambda v: fourbar.sweep(FB, _spoil_array(np.linspace(0, 1, 5), v))),
    (
        "fourbar.simulate_dynamics",
        "q0",
        st.one_of(NUMBER, SHAPE),
        lambda v: fourbar.simulate_dynamics(FB, _spoil_array(Q0, v), 0.0, 1.0),
    ),
    ("fourbar.simulate_dynamics", "Pi0", NUMBER, lambda v: fourbar.simulate_dynamics(FB, Q0, v, 1.0)),
    (
        "fourbar.simulate_dynamics",
        "t1",
        st.one_of(NUMBER, st.floats(-5, 0)),
        lambda v: fourbar.simulate_dynamics(FB, Q0, 0.0, v),
    ),
    (
        "fourbar.simulate_dynamics",
        "saveat",
        st.one_of(NUMBER, st.sampled_from([np.array([0.5, 0.2]), np.array([-0.1, 0.5]), np.array([0.5, 1.5])])),
        lambda v: fourbar.simulate_dynamics(FB, Q0, 0.0, 1.0, saveat=_spoil_array(np.linspace(0, 1, 4), v)),
    ),
    (
        "fourbar.simulate_dynamics",
        "max_steps",
        st.one_of(st.integers(-3, 0), st.sampled_from([1.5, "10"])),
        lambda v: fourbar.simulate_dynamics(FB, Q0, 0.0, 1.0, max_steps=v),
    ),
    (
        "linkage.sweep",
        "inputs",
        st.one_of(NUMBER, SHAPE),
        lambda v: linkage.sweep(LK, inputs=_spoil_array(np.linspace(0, 1, 5), v)),
    ),
    ("fourbar.rates", "omega_A", NUMBER, lambda v: fourbar.rates(FB, Q0, 0.0, v)),
    ("fourbar.rates", "q", NUMBER, lambda v: fourbar.rates(FB, _spoil_array(Q0, v), 0.0, 1.0)),
    (
        "linkage.joint_forces",
        "u",
        st.one_of(NUMBER, SHAPE),
        lambda v: linkage.joint_forces(LK, _spoil_array(np.linspace(0, 1, 5), v), 1.0, 0.0),
    ),
    ("linkage.joint_forces", "udot", NUMBER, lambda v: linkage.joint_forces(LK, np.linspace(0, 1, 5), v, 0.0)),
    ("linkage.motion_rates", "motion", st.sampled_from([None, 1.0, "x"]), lambda v: linkage.motion_rates(LK, v)),
    ("linkage.simulate_dynamics", "udot0", NUMBER, lambda v: linkage.simulate_dynamics(LK, v, 1.0)),
    (
        "linkage.simulate_dynamics",
        "t1",
        st.one_of(NUMBER, st.floats(-5, 0)),
        lambda v: linkage.simulate_dynamics(LK, 0.0, v),
    ),
    (
        "linkage.simulate_dynamics",
        "saveat",
        st.one_of(NUMBER, st.sampled_from([np.array([0.5, 0.2]), np.array([0.5, 1.5]), np.zeros((0,))])),
        lambda v: linkage.simulate_dynamics(LK, 0.0, 1.0, saveat=_spoil_array(np.linspace(0, 1, 4), v)),
    ),
    (
        "linkage.simulate_dynamics",
        "max_steps",
        st.one_of(st.integers(-3, 0), st.sampled_from([2.5, "10"])),
        lambda v: linkage.simulate_dynamics(LK, 0.0, 1.0, max_steps=v),
    ),
    (
        "parallel.inverse_kinematics",
        "position",
        NUMBER,
        lambda v: parallel.inverse_kinematics(
            STEWART, eqx.tree_at(lambda t: t.position, TRAJ, jnp.asarray(_spoil_array(TRAJ.position, v)))
        ),
    ),
    (
        "parallel.inverse_kinematics",
        "R",
        st.sampled_from([(slice(None), slice(0, 2)), (slice(None), slice(None), slice(0, 1))]),
        lambda v: parallel.inverse_kinematics(STEWART, eqx.tree_at(lambda t: t.R, TRAJ, TRAJ.R[v])),
    ),
    (
        "closure.sweep",
        "inputs",
        SHAPE,
        lambda v: closure.sweep(lambda x, u, p: x - u, jnp.zeros(1), v if isinstance(v, str) else v[:0], None),
    ),
    ("linkage.solve", "u", st.one_of(NUMBER, SHAPE), lambda v: linkage.solve(LK, v)),
    (
        "linkage.mobility",
        "coords",
        NUMBER,
        lambda v: linkage.mobility(eqx.tree_at(lambda k: k.coords, LK, jnp.asarray(_spoil_array(LK.coords, v)))),
    ),
    (
        "closure.rates",
        "udot",
        NUMBER,
        lambda v: closure.rates(lambda x, u, p: x - u, jnp.array([0.5]), 0.5, None, v),
    ),
    (
        "identify.fourbar_regressor",
        "omega_A",
        NUMBER,
        lambda v: identify.fourbar_regressor(FB, np.zeros(3), _spoil_array(np.ones(3), v), np.zeros(3)),
    ),
    (
        "synthesis.function_generation",
        "theta_in",
        st.one_of(NUMBER, SHAPE),
        lambda v: synthesis.function_generation(_spoil_array([0.1, 0.5, 0.9], v), [0.2, 0.4, 0.7], starts=2, steps=2),
    ),
    ("shard.run", "fn", st.sampled_from([3, "f", None]), lambda v: shard.run(v, jnp.zeros((3, 2)))),
    (
        "parallel.inverse_kinematics",
        "stride",
        st.one_of(st.integers(-5, 0), st.sampled_from([1.5, "2"])),
        lambda v: parallel.inverse_kinematics(STEWART, TRAJ, stride=v),
    ),
    (
        "parallel.inverse_kinematics",
        "method",
        st.text(max_size=5),
        lambda v: parallel.inverse_kinematics(STEWART, TRAJ, method=v),
    ),
    (
        "synthesis.path_generation",
        "target_points",
        st.one_of(NUMBER, SHAPE),
        lambda v: synthesis.path_generation(_spoil_array(TARGETS, v), starts=2, steps=2),
    ),
    (
        "synthesis.path_generation",
        "starts",
        st.integers(-3, 0),
        lambda v: synthesis.path_generation(TARGETS, starts=v, steps=2),
    ),
    (
        "synthesis.path_generation",
        "steps",
        st.integers(-3, 0),
        lambda v: synthesis.path_generation(TARGETS, starts=2, steps=v),
    ),
]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(data=st.data())
def test_a_spoiled_argument_is_named_at_the_door(data):
    owner, name, values, call = data.draw(st.sampled_from(CASES))
    value = data.draw(values)
    if name == "method" and value in ("exact", "one_step"):
        return  # a valid method
    with pytest.raises(ValueError) as info:
        call(value)
    msg = str(info.value)
    assert name in msg, (owner, name, value, msg)
    if isinstance(value, float) and not np.isfinite(value):  # the real cause, not a consequence of it
        assert "finite" in msg, (owner, name, value, msg)


CLI = [
    (["demo", "--t1"], ["-1", "0", "nan", "inf", "x"]),
    (["synthesize", "t.csv", "--starts"], ["0", "-2", "1.5", "x"]),
    (["synthesize", "t.csv", "--steps"], ["0", "-1", "x"]),
    (["sweep", "designs.npz", "--out", "o.npz", "--steps"], ["0", "-4", "x"]),
    (["sweep", "designs.npz", "--out", "o.npz", "--steps", "8", "--per-device"], ["0", "-1"]),
    (["sweep", "designs.npz", "--out", "o.npz", "--steps", "8", "--devices"], ["0", "-1", "two"]),
]


def _cli(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's own errors
            code = e.code
    return code, err.getvalue()


@settings(max_examples=40, deadline=None, derandomize=True)
@given(case=st.sampled_from(CLI), data=st.data())
def test_the_cli_rejects_a_bad_option_in_one_line(case, data, tmp_path_factory):
    prefix, bad = case
    value = data.draw(st.sampled_from(bad))
    folder = tmp_path_factory.mktemp("cli")
    np.savez(folder / "designs.npz", lengths=np.array([[0.12, 0.25, 0.26, 0.30]]))
    (folder / "t.csv").write_text("0,0\n1,1\n2,0\n")
    argv = [str(folder / a) if a.endswith((".npz", ".csv")) else a for a in prefix] + [value]
    code, err = _cli(argv)
    assert code == 2, (argv, code, err)
    assert "Traceback" not in err and err.strip() and prefix[-1] in err, err


def test_the_cli_names_a_file_it_cannot_use(tmp_path):
    """Files, not options: a CSV given to `sweep` (no advice to unpickle), an output that
    exists, a missing file; each one line, exit code 2, before any computation."""
    csv = tmp_path / "designs.csv"
    csv.write_text("0.12,0.25,0.26,0.30\n")
    code, err = _cli(["sweep", str(csv), "--steps", "8", "--out", str(tmp_path / "o.npz")])
    assert code == 2 and "not a NumPy .npz archive" in err and "pickle" not in err, err
    good = tmp_path / "designs.npz"
    np.savez(good, lengths=np.array([[0.12, 0.25, 0.26, 0.30]]))
    (tmp_path / "exists.npz").write_bytes(b"")
    code, err = _cli(["sweep", str(good), "--steps", "8", "--out", str(tmp_path / "exists.npz")])
    assert code == 2 and "exists" in err, err
    code, err = _cli(["sweep", str(tmp_path / "missing.npz"), "--steps", "8", "--out", str(tmp_path / "o2.npz")])
    assert code == 2 and "no such file" in err, err
    code, err = _cli(["synthesize", str(tmp_path / "missing.csv")])
    assert code == 2 and "no such file" in err, err
    # output folders that cannot be used are named before computing (were tracebacks,
    # `synthesize` after its whole search)
    (tmp_path / "afile").write_text("")
    targets = tmp_path / "t.csv"
    targets.write_text("0,0\n1,1\n2,0\n0,1\n")
    for argv in (
        ["demo", "--out", str(tmp_path / "afile")],
        ["synthesize", str(targets), "--out", str(tmp_path / "afile")],
    ):
        code, err = _cli(argv)
        assert code == 2 and "is not a folder" in err, err
    code, err = _cli(["demo", "--out", str(tmp_path / "afile" / "x")])
    assert code == 2 and "cannot create the folder" in err, err
    problem = tmp_path / "p.json"
    problem.write_text('{"targets": [[0, 0], [1, 1], [2, 0]], "starts": "many"}')
    code, err = _cli(["synthesize", str(problem)])
    assert code == 2 and "`starts` must be an integer" in err, err
    words = tmp_path / "words.npz"
    np.savez(words, lengths=np.array([["a", "b", "c", "d"]]))
    code, err = _cli(["sweep", str(words), "--steps", "8", "--out", str(tmp_path / "o3.npz")])
    assert code == 2 and "'lengths'" in err, err


STEPH = dm.examples.stephenson2()
TIMES = jnp.linspace(0.0, 0.05, 6)

# wrong kinds, shapes and values an independent tester met (one call each, eager): a
# `ValueError` (for a wrong kind, `ArgumentTypeError`, also a `TypeError`) naming the
# argument, before anything runs
WRONG = [
    (lambda: linkage.load(None), "`path`"),
    (lambda: linkage.sweep(LK, steps=2.5), "`steps`"),
    (lambda: linkage.sweep(LK, steps=10, step=0.0), "`step`"),
    (lambda: linkage.sweep(LK, steps=10, inputs=np.array([0.0, 0.1])), "`inputs` or `steps`"),
    (lambda: linkage.default_inputs(LK, steps=0), "`steps`"),
    (lambda: linkage.Drive(torque="x"), "`torque`"),
    (lambda: linkage.Drive(damping=-1.0), "`damping`"),
    (lambda: linkage.simulate_dynamics(LK, 0.0, 0.1, rtol=-1.0), "`rtol`"),
    (lambda: linkage.simulate_dynamics(LK, np.zeros(3), 0.1), "`udot0`"),
    (lambda: linkage.joint_forces(LK, np.linspace(0.0, 1.0, 5), np.ones(3)), "`udot`"),
    (lambda: linkage.joint_forces(LK, linkage.sweep(STEPH, steps=3)), "`u` is not a motion of 'fourbar'"),
    (lambda: linkage.solve(LK, 0.3, guess=np.zeros(3)), "`guess`"),
    (lambda: linkage.mobility(LK, np.zeros(3)), "`x`"),
    (lambda: linkage.mobility(LK, rtol=-1.0), "`rtol`"),
    (lambda: linkage.rates(LK, np.zeros(3), 0.0), "`x`"),
    (lambda: linkage.generalised_inertia(LK, np.zeros(3), 0.0), "`x`"),
    (lambda: linkage.potential(LK, np.zeros(3), 0.0), "`x`"),
    (lambda: linkage.motion_rates(LK, linkage.sweep(STEPH, steps=3)), "`motion`"),
    (lambda: linkage.rod_mass_properties(LK, density=-1.0), "`density`"),
    (lambda: parallel.trajectory(lambda t: jnp.eye(3), lambda t: jnp.zeros(3), np.array([])), "`times`"),
    (lambda: parallel.trajectory("R", lambda t: STEWART.reference, TIMES), "`rotation`"),
    (lambda: parallel.trajectory(lambda t: 2.0 * jnp.eye(3), lambda t: STEWART.reference, TIMES), "not a rotation"),
    (lambda: parallel.trajectory(lambda t: jnp.eye(3), lambda t: jnp.zeros(2), TIMES), "`position`"),
    (lambda: parallel.inverse_kinematics(STEWART, "traj"), "`trajectory`"),
    (lambda: parallel.inverse_dynamics(STEWART, TRAJ, kinematics="kin"), "`kinematics`"),
    (lambda: parallel.body_motion(parallel.ThreeUPSUPUS(), parallel.inverse_kinematics(STEWART, TRAJ)), "`kinematics`"),
    (lambda: parallel.mobility(STEWART, pose="home"), "`pose`"),
    (lambda: parallel.mobility(STEWART, pose=(jnp.eye(2), STEWART.reference)), "`pose[0] (R)`"),
    (lambda: parallel.StewartPlatform(stroke=(0.1, 0.0)), "`stroke`"),
    (lambda: parallel.uniform_times(dt=0.0), "`dt`"),
    (lambda: parallel.uniform_times(duration=0.001, dt=0.1), "`dt`"),
    (lambda: parallel.cylinder_inertia(-1.0, 0.1, 0.01, jnp.array([0.0, 0.0, 1.0])), "`mass`"),
    (lambda: parallel.cylinder_inertia(1.0, 0.1, 0.01, jnp.zeros(3)), "`axis`"),
    (lambda: parallel.wrench_rank(STEWART, np.zeros(3)), "`labels`"),
    (lambda: parallel.screw_rates(STEWART, np.zeros(4), np.zeros(6)), "`theta`"),
    (lambda: synthesis.path_generation(TARGETS, frame=(0.0, 0.0)), "`frame`"),
    (lambda: synthesis.path_generation(TARGETS, grashof="yes"), "`grashof`"),
    (lambda: synthesis.path_generation(TARGETS, "prescribed", crank_angles=np.arange(8.0), phase="zero"), "`phase`"),
    (lambda: synthesis.save_design("not a result", "design.json"), "`result`"),
    (
        lambda: synthesis.PlacedFourBar(
            lengths=jnp.array([0.1, -0.2, 0.3, 0.4]), point=jnp.zeros(2), origin=jnp.zeros(2), angle=jnp.array(0.0)
        ),
        "`lengths`",
    ),
    (lambda: identify.fourbar_tracer(np.zeros(3), np.zeros((3, 2)), (0.1, 0.2, 0.3, 0.4), (0.0, 0.0)), "`initial`"),
    (lambda: identify.fourbar_tracer(np.zeros(3), np.zeros((3, 2)), FB, (0.0, 0.0, 0.0)), "`point0`"),
    (lambda: identify.fourbar_base_parameters("fb"), "`fb`"),
    (lambda: identify.fourbar_from_base(FB, np.ones(7)), "`base`"),
    (lambda: identify.fourbar_regressor(FB, np.zeros(3), np.zeros(4), np.zeros(3)), "`omega_A`"),
    (lambda: identify.payload_parameters("mech"), "`mechanism`"),
    (lambda: identify.with_payload(STEWART, np.ones(9)), "`params`"),
    (lambda: identify.linkage_from_params(STEPH, np.ones(3)), "`p`"),
    (lambda: identify.linkage_tracer(np.zeros(3), np.zeros((3, 2)), STEPH, "J8", max_iter=0), "`max_iter`"),
]


def _slider(x, u, p):  # the README's slider-crank residual
    return jnp.array([(p[0] * jnp.cos(u) - x[0]) ** 2 + (p[0] * jnp.sin(u)) ** 2 - p[1] ** 2])


def _extra_link():
    d = LK.to_dict()
    d["links"]["extra"] = {"joints": ["B", "D"]}  # holds the crank pin to the ground
    return dm.Linkage.from_dict(d)


# misleading causes the script met: each now names the real one
WRONG += [
    (lambda: fourbar.solve(FB, 0.3, guess=jnp.zeros(3)), "`guess`"),
    (lambda: closure.root(lambda x, u, p: jnp.zeros(2), jnp.array([0.35]), 0.5, None), "must be square"),
    (lambda: closure.root(_slider, jnp.array([0.35]), 0.5, (0.1, 0.3), atol=float("nan")), "`atol`"),
    (lambda: linkage.check_initial(LK, tol=-1.0), "`tol`"),
    (
        lambda: synthesis.function_generation(np.array([0.5, 1.0, 1.6]), np.array([1.0, 1.2, 1.5]), margin=-1.0),
        "`margin`",
    ),
    (_extra_link, "links.extra"),
]


SEED = dm.FourBar.seed_crank_rocker()
SWEEP = fourbar.sweep(FB, np.linspace(0.0, 1.0, 4))
NOPE = dm.FourBar(lengths=(0.1, 0.1, 0.1, 1.0))  # assembles nowhere


def _plot(name, *args, **kw):
    from diffmech import plot

    return getattr(plot, name)(*args, **kw)


# the script's second round: kinds and shapes of the four-bar dynamics, the fit and the plots
WRONG += [
    (lambda: fourbar.Drive(torque=5.0), "`torque`"),
    (lambda: fourbar.Drive(damping=(1.0, 2.0)), "`damping`"),
    (lambda: fourbar.simulate_dynamics(SEED, fourbar.assemble(SEED, 0.0), 0.0, 0.2, drive="strong"), "`drive`"),
    (lambda: fourbar.simulate_dynamics(SEED, fourbar.assemble(SEED, 0.0), 0.0, 0.2, adjoint="backsolve"), "`adjoint`"),
    (lambda: fourbar.simulate_dynamics(SEED, fourbar.assemble(SEED, 0.0), 0.0, np.array([0.2, 0.3])), "`t1`"),
    (lambda: identify.fourbar_tracer(np.linspace(0, 1, 4), np.zeros((4, 2)), NOPE, (0.0, 0.0)), "`initial`"),
    (lambda: dm.fit.fit("loss", FB), "`loss`"),
    (lambda: dm.fit.fit(lambda m: jnp.sum(m.lengths), FB, chunk=0), "`chunk`"),
    (lambda: dm.fit.fit(lambda m: jnp.sum(m.lengths), FB, trainable="lengths"), "`trainable`"),
    (lambda: dm.fit.masked_mean(jnp.ones(3), jnp.ones(3)), "`valid`"),
    (lambda: _plot("fourbar_track", FB, SWEEP.q, every=0), "`every`"),
    (lambda: _plot("fourbar_track", FB, SWEEP.q[:, :5]), "`q`"),
    (lambda: _plot("fourbar_dynamics", SWEEP), "`traj`"),
    (lambda: _plot("fourbar_attitudes", [SWEEP]), "`sweeps`"),
    (lambda: _plot("linkage_curve", LK, "m"), "`motion`"),
    (lambda: _plot("linkage_curve", LK, linkage.sweep(STEPH, steps=3)), "`motion`"),
    (lambda: _plot("linkage_curve", LK, linkage.sweep(LK, steps=3), tracers=["J99"]), "`tracers`"),
    (lambda: _plot("animate_linkage", LK, "m"), "`motion`"),
    (lambda: _plot("time_series", np.arange(10.0), np.ones((9, 2)), ["a", "b"]), "`values`"),
]


X0 = jnp.array([0.35])
U12 = jnp.linspace(0.0, 1.0, 12)

# the closure core's entry points: strategy objects, shapes and tolerances
WRONG += [
    (lambda: closure.root(_slider, jnp.array([[0.35]]), 0.5, (0.1, 0.3)), "`x0`"),
    (lambda: closure.root(None, X0, 0.5, (0.1, 0.3)), "`fn`"),
    (lambda: closure.sweep(_slider, X0, U12.reshape(3, 4), (0.1, 0.3)), "must be square"),
    (lambda: closure.sweep(_slider, jnp.array([0.35, 0.0]), U12, (0.1, 0.3)), "must be square"),
    (lambda: closure.sweep(_slider, X0, U12, (0.1, 0.3), predictor="coarse"), "`predictor`"),
    (lambda: closure.sweep(_slider, X0, U12, (0.1, 0.3), fallback="none"), "`fallback`"),
    (lambda: closure.sweep(_slider, X0, U12, (0.1, 0.3), atol=-1.0), "`atol`"),
    (lambda: closure.continuation(_slider, X0, U12, (0.1, 0.3), max_steps=-1), "`max_steps`"),
    (lambda: closure.Coarse(stride=0), "`stride`"),
    (lambda: closure.Newton(steps=-1), "`steps`"),
    (lambda: closure.Newton(certify=-1.0), "`certify`"),
    (lambda: closure.ClosedForm("abc"), "`solution`"),
    (lambda: closure.vmap_chunked(lambda x: x, jnp.ones((5, 2)), 0), "`chunk`"),
    (lambda: closure.vmap_chunked(lambda x: x, (jnp.ones(5), jnp.ones((4, 2))), 2), "`xs`"),
    (lambda: closure.rates(_slider, jnp.array([0.35, 0.1]), 0.5, (0.1, 0.3), 1.0), "must be square"),
    (lambda: closure.velocity(_slider, X0, 0.5, (0.1, 0.3), jnp.ones(3)), "`udot`"),
    (lambda: closure.condition(_slider, jnp.ones((2, 2)), 0.5, (0.1, 0.3)), "`x`"),
]


# the four-bar's building blocks (jittable; their shapes are checked while tracing)
WRONG += [
    (lambda: fourbar.coupler_point(FB, SWEEP.q[:, :5], jnp.array([0.1, 0.05])), "`q`"),
    (lambda: fourbar.coupler_point(FB, SWEEP.q, jnp.array([0.1, 0.05, 0.0])), "`point`"),
    (lambda: fourbar.joint_positions(FB, jnp.zeros(5)), "`q`"),
    (lambda: fourbar.closure_residual(FB, jnp.zeros(7)), "`q`"),
    (lambda: fourbar.velocity_ratios(FB, Q0[:5]), "`q`"),
    (lambda: fourbar.angular_velocities(jnp.zeros(5), jnp.zeros(6)), "`q`"),
    (lambda: fourbar.project(FB, jnp.zeros(6)), "`q0`"),
    # a string flag is truthy: `throw="no"` would have meant True
    (lambda: fourbar.sweep(FB, np.linspace(0.0, 1.0, 4), throw="no"), "`throw`"),
    (lambda: closure.root(_slider, X0, 0.5, (0.1, 0.3), throw="no"), "`throw`"),
]


# third round: the screw algebra, the four-bar's remaining entry points, the closure
# core's argument kinds, sharding, fitting and drawing
BATCH2 = dm.FourBar(lengths=[[0.12, 0.25, 0.26, 0.30]] * 2)
WRONG += [
    (lambda: dm.screw.skew(jnp.ones(2)), "`a`"),
    (lambda: dm.screw.vee(jnp.ones((2, 2))), "`A`"),
    (lambda: dm.screw.rotation(jnp.zeros(3), 0.5), "unit vector"),
    (lambda: dm.screw.rotation_vector(jnp.ones(4)), "`phi`"),
    (lambda: dm.screw.revolute(jnp.array([1.0, 0.0]), jnp.zeros(3)), "`axis`"),
    (lambda: dm.screw.prismatic("z"), "`axis`"),
    (lambda: dm.screw.wrench(jnp.ones(3), jnp.ones(2)), "`point`"),
    (lambda: dm.screw.reciprocal(jnp.ones(6), jnp.ones(5)), "`wrench_`"),
    (lambda: dm.screw.adjoint(jnp.eye(3), jnp.ones(2)), "`p`"),
    (lambda: dm.screw.transform(jnp.eye(3), jnp.ones(3), jnp.ones(5)), "`s`"),
    (lambda: dm.screw.exp(jnp.zeros(5), 0.3, False), "`twist`"),
    (lambda: dm.screw.exp(jnp.r_[0.0, 0.0, 1.0, 0.0, 0.0, 0.0], 0.3, "no"), "`prismatic_`"),
    (lambda: dm.screw.compose((jnp.eye(3), jnp.ones(2)), (jnp.eye(3), jnp.ones(3))), "a[1] (p)"),
    (lambda: dm.FourBar(lengths=[[0.1, 0.2, 0.2, 0.3], [0.1, 0.2, 0.2]]), "`lengths`"),
    (lambda: fourbar.sweep(FB, "all the way round"), "`theta_A_values`"),
    (lambda: fourbar.sweep_functional(FB, jnp.zeros((3, 4))), "`theta_A`"),
    (lambda: fourbar.assemble(FB, None), "`theta_A`"),
    (lambda: fourbar.solve(BATCH2, 0.3), "`fb`"),
    (lambda: fourbar.rates(FB, Q0[:4], 0.0, 1.0), "`q`"),
    (lambda: fourbar.rates(FB, Q0, 2.0, 1.0), "closed configuration at `theta_A`"),
    (lambda: fourbar.grashof(FB, rtol=-1.0), "`rtol`"),
    (lambda: fourbar.is_change_point(FB, rtol=float("nan")), "`rtol`"),
    (lambda: fourbar.branch_sign_at(FB, float("nan")), "`theta_A`"),
    (lambda: fourbar.crank_torque(FB, jnp.zeros(3), jnp.zeros(4), 0.0), "do not broadcast"),
    (lambda: fourbar.energy(SEED, jnp.zeros(3), jnp.zeros((4, 6))), "`Pi`"),
    (lambda: fourbar.momentum(SEED, fourbar.assemble(SEED, 0.0), float("nan")), "`omega_A`"),
    (lambda: fourbar.simulate_dynamics(SEED, jnp.zeros(6), 0.0, 0.1), "`q0`"),
    (lambda: closure.root(_slider, "x", 0.5, (0.1, 0.3)), "`x0`"),
    (lambda: closure.root(_slider, X0, 0.5, ("a", "b")), "`params`"),
    (lambda: closure.jacobian(None), "`fn`"),
    (lambda: closure.has_deferred("x"), "`status`"),
    (
        lambda: closure.sweep(
            _slider, X0, U12, (0.1, 0.3), predictor=closure.ClosedForm(lambda u, p: (jnp.zeros(3), True))
        ),
        "`solution(u, params)`",
    ),
    # the slider-crank's dead centre (crank = rod, x = 0 at u = π/2): the rates are undetermined
    (lambda: closure.rates(_slider, jnp.array([0.0]), jnp.pi / 2, (0.3, 0.3), 1.0), "singular"),
    (lambda: linkage.generalised_inertia(LK, jnp.zeros(LK.x0().shape), 0.0), "`x`"),
    (lambda: linkage.potential(LK, jnp.zeros(LK.x0().shape), 0.0), "`x`"),
    (lambda: shard.run(lambda x: 2 * x, jnp.ones((3, 2)), per_device=2.5), "`per_device`"),
    (lambda: shard.run(lambda x: "text", jnp.ones((3, 2))), "`fn`"),
    (lambda: shard.run(lambda x: 2 * x, jnp.ones((3, 2)), on_chunk="save"), "`on_chunk`"),
    (lambda: shard.run(lambda x: 2 * x, jnp.ones((3, 2)), devices=[None]), "JAX devices"),
    (lambda: shard.pad(jnp.ones((3, 2)), 0), "`multiple`"),
    (lambda: shard.strip(jnp.ones((3, 2)), -1), "`n`"),
    (lambda: shard.initialize("localhost:1", num_processes=0, process_id=0), "`num_processes`"),
    (lambda: shard.initialize("localhost:1", num_processes=2, process_id=5), "`process_id`"),
    (
        lambda: synthesis.function_generation([0.5, 1.0, 1.6], [0.1, 0.2, 0.3], bounds={"lengths": (-1.0, 2.0)}),
        "lo ≥ 0",
    ),
    (lambda: _plot("fourbar_attitudes", {"a": fourbar.sweep(BATCH2, np.linspace(0.0, 1.0, 4))}), "one design"),
    (lambda: _plot("fourbar_attitudes", {"a": fourbar.sweep(NOPE, np.linspace(0.0, 1.0, 4))}), "no converged"),
    (lambda: _plot("fourbar_track", BATCH2, SWEEP.q), "`fb`"),
    (lambda: _plot("animate_fourbar", FB, SWEEP.q), "`sweep`"),
    (lambda: _plot("animate_fourbar", FB, SWEEP, interval=-5), "`interval`"),
    (lambda: _plot("animate_fourbar", NOPE, fourbar.sweep(NOPE, np.linspace(0.0, 1.0, 4))), "no converged"),
]


def _decay_fit(**kw):
    from diffmech import fit

    class Decay(eqx.Module):
        amplitude: jnp.ndarray
        offset: jnp.ndarray

    t = jnp.linspace(0.0, 1.0, 5)
    y = jnp.exp(-t)
    model = kw.pop("model", Decay(jnp.ones(()), jnp.zeros(())))
    loss = kw.pop("loss", lambda m, y: jnp.mean((m.amplitude * jnp.exp(-t) + m.offset - y) ** 2))
    return fit.fit(loss, model, y, steps=2, **kw), Decay


WRONG += [
    (lambda: _decay_fit(loss=lambda m, y: m.amplitude * jnp.ones(5) - y), "must return a scalar"),
    (lambda: _decay_fit(batch=True), "`batch=True`"),
    (lambda: _decay_fit(model=_decay_fit()[1](jnp.ones(3), jnp.zeros(4)), batch=True), "`batch=True`"),
]


def test_an_unknown_joint_name_is_a_key_error_and_a_value_error():
    m = linkage.sweep(LK, steps=3)
    for call in (lambda: m["J99"], lambda: m.path("nope")):
        with pytest.raises(KeyError, match="joints are"):
            call()
        with pytest.raises(ValueError, match="joints are"):
            call()


def test_crank_torque_is_nan_where_the_design_does_not_assemble():
    # past a triple rocker's motion limit there is no motion to drive: NaN, not the
    # 1e64 N·m a failed solve produced; inside the range, finite
    tri = dm.FourBar(lengths=(0.3, 0.3, 0.3, 0.5))
    lim = float(fourbar.crank_limits(tri).theta_max)
    tau = np.asarray(fourbar.crank_torque(tri, np.array([0.5 * lim, lim + 0.3]), np.ones(2), np.zeros(2)))
    assert np.isfinite(tau[0]) and np.isnan(tau[1]), tau


@pytest.mark.parametrize("k", range(len(WRONG)))
def test_a_wrong_kind_shape_or_value_is_named(k):
    call, match = WRONG[k]
    with pytest.raises(ValueError) as err:
        call()
    assert match in str(err.value), str(err.value)


FLOAT32 = """
import warnings
import equinox as eqx
import numpy as np
import diffmech as dm
from diffmech import linkage
import jax
assert not jax.config.jax_enable_x64  # JAX's default: float32
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    lk = dm.examples.cardan()  # over-constrained: its residual and rank judged at float32's round-off
    s = linkage.solve(lk, 0.1)  # and its redundant equations, once solved
assert lk.coords.dtype == np.float32 and s.value.dtype == np.float32 and bool(s.converged)
assert any("float32" in str(w.message) and "jax_enable_x64" in str(w.message) for w in caught)
j = lk.names.index("C.axis.input")  # the cross's axes no longer perpendicular: it does not close
bent = eqx.tree_at(lambda k: k.coords, lk, lk.coords.at[j, 1].add(1e-2))
try:
    linkage.check_initial(bent)
except linkage.LinkageError as e:
    assert "violates its own constraints" in str(e) and "float32" in str(e) and "jax_enable_x64" in str(e), e
else:
    raise AssertionError("a configuration that does not close was accepted")
print("done")
"""


def test_a_linkage_in_float32_loads_at_its_round_off_and_an_open_one_names_float32():
    # JAX's default precision (no `jax_enable_x64`), in a process of its own: a bundled
    # over-constrained linkage loads and solves (its redundant equations held at float32's
    # round-off), warned once that it is float32; a configuration that does not close says
    # so and names float32 as the precision it was judged at
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    out = subprocess.run([sys.executable, "-c", FLOAT32], capture_output=True, text=True, timeout=240, env=env)
    assert out.returncode == 0 and "done" in out.stdout, out.stderr[-3000:]
