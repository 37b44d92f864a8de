"""Identification speed (issue 6): the four-bar's dynamic identification from θA(t)
(`identify.fourbar_dynamics`) and a Gough–Stewart payload from actuator forces
(`identify.payload`), each against a baseline measured in the same run:

- four-bar: the output-error Jacobian by forward mode through the Diffrax solve (what
  `fourbar_dynamics` uses) against central finite differences of the same residual
  (2p simulations, vmapped and jitted), per Levenberg–Marquardt evaluation, with the
  difference between the two Jacobians; and the whole fit (1.6 s at 200 Hz, lengths
  1 % off, noise-free), with its recovery error.
- payload: the exact regressor (forward mode through the Newton–Euler wrench solve)
  against central finite differences (20 wrench solves, vmapped and jitted).

    python benchmarks/bench_identify.py [--repeats 3]

Compile time is reported separately (first call minus the median warm run); run
times are medians of `--repeats` runs. Writes benchmarks/results/identify.json.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from test_identify import LOAD, NOMINAL, SIX_INPUTS, TRUE, _measurement, _payload_case, _six_case  # noqa: E402

from benchmarks._timing import timed  # noqa: E402
from diffmech import _identify, identify  # noqa: E402


def central_jacobian(residual, p, h):
    """(r(p + h e_k) − r(p − h e_k)) / 2h for every k, all 2p residuals in one vmap."""
    E = jnp.eye(p.size, dtype=p.dtype) * h
    R = jax.vmap(residual)(jnp.concatenate([p + E, p - E]))
    return ((R[: p.size] - R[p.size :]) / (2 * h[:, None] if jnp.ndim(h) else 2 * h)).T


def fourbar(repeats):
    ts, th, drive = _measurement(0.0)
    w = 5
    tt, meas = jnp.asarray(ts[w:-w]), jnp.asarray(th[w:-w])
    base = np.asarray(identify.fourbar_base_parameters(TRUE))
    nscale = jnp.asarray(np.abs(base))
    p = jnp.concatenate([jnp.sign(jnp.asarray(base)), TRUE.lengths[:3], jnp.asarray([th[w], 2.0])])
    args = (TRUE, drive, None, nscale, tt, meas, 1e-10, True)
    (r, ok, J), c_fwd, t_fwd = timed(lambda x: _identify._oe_linearise(x, *args), p, repeats=repeats)
    h = 1e-6 * jnp.maximum(jnp.abs(p), 1e-2)
    fd = eqx.filter_jit(lambda x: central_jacobian(lambda y: _identify._oe_residual(y, *args)[0], x, h))
    Jfd, c_fd, t_fd = timed(fd, p, repeats=repeats)
    diff = float(jnp.max(jnp.abs(Jfd - J) / jnp.max(jnp.abs(J), axis=0)))

    def fit():
        return identify.fourbar_dynamics(ts, th, NOMINAL, drive=drive)

    t0 = time.perf_counter()
    res = fit()
    first = time.perf_counter() - t0
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fit()
        runs.append(time.perf_counter() - t0)
    err = float(np.abs(np.asarray(res.base) - base).max() / np.abs(base).max())
    return {
        "samples": int(meas.size),
        "parameters": int(p.size),
        "jacobian_forward_mode_s": t_fwd,
        "jacobian_forward_mode_compile_s": c_fwd,
        "jacobian_central_differences_s": t_fd,
        "jacobian_central_differences_compile_s": c_fd,
        "speedup_forward_over_fd": t_fd / t_fwd,
        "max_column_relative_difference": diff,
        "fit_s": statistics.median(runs),
        "fit_first_call_s": first,
        "fit_iterations": int(res.iterations),
        "fit_base_relative_error": err,
    }


def payload(repeats):
    par, nominal, true, traj, kin = _payload_case()
    f = np.asarray(par.inverse_dynamics(true, traj, LOAD, kinematics=kin).actuator_forces)
    fe = jnp.broadcast_to(LOAD, (traj.times.shape[0], 6))
    (Y, f0, ok), c_ex, t_ex = timed(
        lambda m: _identify._payload_regressor(m, kin, fe, "newton_euler"), nominal, repeats=repeats
    )
    p0 = identify.payload_parameters(nominal)
    forces = lambda p: par._dynamics.solve_dynamics(
        identify.with_payload(nominal, p),
        kin,
        fe,  # noqa: E731
        "newton_euler",
    ).actuator_forces.reshape(-1)
    h = 1e-6 * jnp.maximum(jnp.abs(p0), 1e-2)
    fd = eqx.filter_jit(lambda x: central_jacobian(forces, x, h))
    Yfd, c_fd, t_fd = timed(fd, p0, repeats=repeats)
    Yex = np.asarray(Y).reshape(-1, 10)
    diff = float(np.max(np.abs(np.asarray(Yfd) - Yex) / np.abs(Yex).max(axis=0)))
    fit, c_fit, t_fit = timed(lambda: identify.payload(nominal, traj, f, LOAD, kinematics=kin).params, repeats=repeats)
    err = float(
        np.max(
            np.abs(np.asarray(fit) - np.asarray(identify.payload_parameters(true)))
            / np.abs(np.asarray(identify.payload_parameters(true)))
        )
    )
    return {
        "samples": int(traj.times.shape[0]),
        "regressor_exact_s": t_ex,
        "regressor_exact_compile_s": c_ex,
        "regressor_central_differences_s": t_fd,
        "regressor_central_differences_compile_s": c_fd,
        "speedup_exact_over_fd": t_fd / t_ex,
        "max_column_relative_difference": diff,
        "payload_fit_s": t_fit,
        "payload_relative_error": err,
    }


def stephenson2(repeats):
    """Stephenson-II from its tracer J8 (48 inputs, 16 parameters): the positions'
    Jacobian by forward mode through the continuation against central differences of
    the same residual, and the noise-free fit from a nominal 0.1 % off."""
    lk, path, start = _six_case()
    u, pts, k = jnp.asarray(SIX_INPUTS), jnp.asarray(path), lk.names.index("J8")
    p = identify.linkage_params(lk)
    (r, ok, J), c_fwd, t_fwd = timed(lambda x: _identify._lk_linearise(x, lk, u, k, pts), p, repeats=repeats)

    def residual(x):
        m = identify.lks.sweep_functional(identify.linkage_from_params(lk, x), u, branch=True, condition=False)
        return (m.coords[:, k, :2] - pts).reshape(-1)

    h = jnp.full(p.shape, 1e-6, p.dtype)
    Jfd, c_fd, t_fd = timed(eqx.filter_jit(lambda x: central_jacobian(residual, x, h)), p, repeats=repeats)
    seen = np.linalg.norm(np.asarray(J), axis=0) > 1e-8 * np.abs(np.asarray(J)).max()
    diff = float(np.max(np.abs(np.asarray(Jfd - J))[:, seen] / np.abs(np.asarray(J))[:, seen].max(axis=0)))
    res, c_fit, t_fit = timed(lambda: identify.linkage_tracer(SIX_INPUTS, path, start, "J8").params, repeats=repeats)
    return {
        "samples": int(SIX_INPUTS.size),
        "parameters": int(p.size),
        "jacobian_forward_mode_s": t_fwd,
        "jacobian_forward_mode_compile_s": c_fwd,
        "jacobian_central_differences_s": t_fd,
        "jacobian_central_differences_compile_s": c_fd,
        "speedup_forward_over_fd": t_fd / t_fwd,
        "max_column_relative_difference": diff,
        "fit_s": t_fit,
        "fit_first_call_after_jacobian_compiled_s": t_fit + c_fit,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    out = {
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "fourbar_dynamics": fourbar(a.repeats),
        "payload": payload(a.repeats),
        "stephenson2_tracer": stephenson2(a.repeats),
    }
    print(json.dumps(out, indent=1))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "identify.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
