"""One least-squares path (issue 22, item 3): identification's own Levenberg–Marquardt
(`diffmech._identify._levenberg_marquardt`: NumPy steps around one compiled
residual-and-Jacobian program) against optimistix's `LevenbergMarquardt`
(`optx.least_squares`, the whole solve one compiled program), on the same residuals
from the same start, in the same run:

- the Stephenson-II's geometry from its tracer J8 at 48 inputs (the test's case:
  a nominal design 0.1 % off, noise-free; the fit runs in the row space of the
  Jacobian at the start, as `linkage_tracer` does);
- the four-bar's output-error fit (`fourbar_dynamics`'s second stage: base
  parameters, lengths and initial state from θA(t), noise-free, started 1 % off).

Reported: wall time of the first call (compile included) and the median of later
calls, residual evaluations, and the final cost. A failed simulation is a rejected
step in ours; for optimistix it is a residual of +inf (a cost increase, rejected).

    python benchmarks/bench_least_squares.py [--repeats 3]

Writes benchmarks/results/least_squares.json.
"""

import argparse
import json
import os
import platform
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optimistix as optx  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from test_identify import NOMINAL, SIX_INPUTS, TRUE, _measurement, _six_case  # noqa: E402

from benchmarks._timing import timed  # noqa: E402
from diffmech import (  # noqa: E402
    _identify,
    identify,
    linkage as lks,  # noqa: E402
)


def _time(run, repeats):
    """`run()`'s output, its first call's wall time (compile included) and the median
    of `repeats` later calls."""
    out, compile_s, median = timed(run, repeats=repeats)
    return out, compile_s + median, median


def _compare(name, f_linearise, f_residual, p0, tol, floor, repeats):
    """`f_linearise(p) -> (r, ok, J)` for ours; `f_residual(p) -> (r, ok)` traced."""
    calls = {"n": 0}

    def counted(p):
        calls["n"] += 1
        return f_linearise(jnp.asarray(p))

    def ours():
        calls["n"] = 0
        p, r, _, it, conv = _identify._levenberg_marquardt(counted, np.asarray(p0), 100, tol, floor=floor, name=name)
        return dict(cost=float(r @ r), iterations=it, evaluations=calls["n"], converged=bool(conv))

    def fn(p, _):
        r, ok = f_residual(p)
        return jnp.where(ok, r, jnp.inf)

    solver = optx.LevenbergMarquardt(rtol=tol, atol=np.sqrt(floor / max(np.size(fn(jnp.asarray(p0), None)), 1)))

    @jax.jit
    def theirs_jit(p):
        sol = optx.least_squares(fn, solver, p, max_steps=100, throw=False)
        r = fn(sol.value, None)
        return r @ r, sol.stats["num_steps"], sol.result == optx.RESULTS.successful

    def theirs():
        cost, steps, ok = theirs_jit(jnp.asarray(p0))
        return dict(cost=float(cost), iterations=int(steps), converged=bool(ok))

    a, a_first, a_med = _time(ours, repeats)
    b, b_first, b_med = _time(theirs, repeats)
    out = {
        "ours": dict(a, first_call_s=a_first, median_s=a_med),
        "optimistix": dict(b, first_call_s=b_first, median_s=b_med),
    }
    print(
        f"{name}: ours {a_med:.3f} s (first {a_first:.2f} s), {a['iterations']} iterations, cost {a['cost']:.3e}, "
        f"converged {a['converged']} | optimistix {b_med:.3f} s (first {b_first:.2f} s), {b['iterations']} steps, "
        f"cost {b['cost']:.3e}, converged {b['converged']}"
    )
    return out


def stephenson(repeats):
    lk, path, start = _six_case()
    u = jnp.asarray(SIX_INPUTS)
    pts = jnp.asarray(path)
    k = start.names.index("J8")
    p_init = np.asarray(identify.linkage_params(start))
    t0 = time.perf_counter()  # our program's compile (and one evaluation)
    r0, ok0, J0 = (np.asarray(x) for x in _identify._lk_linearise(jnp.asarray(p_init), start, u, k, pts))
    compile_s = time.perf_counter() - t0
    _, s0, Vt0 = np.linalg.svd(J0, full_matrices=False)
    B = jnp.asarray(Vt0[s0 > s0[0] * 1e-12].T)

    def lin(z):
        r, ok, J = _identify._lk_linearise(jnp.asarray(p_init) + B @ z, start, u, k, pts)
        return r, ok, J @ B

    def res(z):
        m = lks.sweep_functional(
            identify.linkage_from_params(start, jnp.asarray(p_init) + B @ z), u, branch=True, condition=False
        )
        return (m.coords[:, k, :2] - pts).reshape(-1), jnp.all(m.converged)

    floor = r0.size * (1e-13 * max(float(np.abs(path).max()), 1.0)) ** 2
    out = _compare("stephenson2 tracer", lin, res, np.zeros(B.shape[1]), 1e-10, floor, repeats)
    out["ours"]["first_call_s"] += compile_s  # its residual-and-Jacobian program was compiled above
    print(f"  (ours: first call including that program's compile {out['ours']['first_call_s']:.2f} s)")
    return out


def fourbar(repeats):
    ts, th, drive = _measurement(0.0)
    w = 5
    tt, meas = jnp.asarray(ts[w:-w]), jnp.asarray(th[w:-w])
    base = np.asarray(identify.fourbar_base_parameters(TRUE))
    nscale = jnp.asarray(np.abs(base))
    p0 = np.concatenate([np.sign(base) * 1.01, np.asarray(NOMINAL.lengths)[:3], [th[w] + 1e-3, 2.0]])
    args = (NOMINAL, drive, None, nscale, tt, meas, 1e-10, True)

    def lin(p):
        return _identify._oe_linearise(p, *args)

    def res(p):
        r, ok = _identify._oe_residual(p, *args)
        return r, jnp.all(ok)

    return _compare("fourbar output error", lin, res, p0, 1e-8, meas.size * 1e-18, repeats)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    out = dict(
        jax=jax.__version__,
        date=time.strftime("%Y-%m-%d"),
        machine=platform.machine(),
        cpus=os.cpu_count(),
        stephenson2=stephenson(a.repeats),
        fourbar=fourbar(a.repeats),
    )
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "results", "least_squares.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
