"""What bounds the batched four-bar dynamics (issue 20's goal: 2x the simulated seconds
per second): under `vmap`, Diffrax's adaptive loop runs every lane until the slowest
is done (lockstep), and each step costs 12 new right-hand sides (Dopri8, FSAL). This
measures, for the bench's batch of 1024 one-second runs (minimal mode, rtol 1e-8):
the wall time, the accepted steps per lane (mean and max), and the batched right-hand
side alone, so that `RHS time x 12 x max steps` says how much of the wall it explains.

    python benchmarks/bench_dynamics_bound.py     # writes benchmarks/results/dynamics_bound.json
"""

import json
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import diffmech as dm  # noqa: E402
from benchmarks.bench_fourbar_dynamics import COM, G, J, L, M, _median_time, random_releases, released  # noqa: E402
from diffmech.fourbar import _dynamics as D  # noqa: E402

fb = dm.FourBar(lengths=L, masses=M, inertias=J, com=COM, gravity=G)
n, t1, rtol = 1024, 1.0, 1e-8
th0, w0 = random_releases(np.random.default_rng(1), n)  # the throughput bench's first batch


@jax.jit
def run(th0, w0):
    def one(th, w):
        tr = released(fb, th, w, t1, rtol)
        return tr.theta_A[-1], tr.num_steps, tr.q[0], tr.Pi[0]

    return jax.vmap(one)(th0, w0)


jax.block_until_ready(run(th0, w0))  # compile
wall = _median_time(lambda: run(th0, w0), 3)
_, steps, q, Pi = run(th0, w0)
steps = np.asarray(steps)
theta = jnp.arctan2(q[:, 1], q[:, 0])
y = jnp.stack([theta, Pi], 1)
rhs = jax.jit(jax.vmap(lambda y: D._rhs_minimal(0.0, y, (fb, D.Drive(), False))))
jax.block_until_ready(rhs(y))
r_wall = _median_time(lambda: rhs(y), 20)
stages = 12  # Dopri8: 12 new evaluations per step (FSAL)
print(
    f"jax {jax.__version__}  batch {n}: wall {wall:.3f} s, {n * t1 / wall:,.0f} sim s/s; accepted steps mean "
    f"{steps.mean():.1f} max {steps.max()} (lockstep efficiency {steps.mean() / steps.max():.2f})"
)
print(
    f"batched RHS over {n} lanes: {r_wall * 1e6:.1f} us; x {stages} stages x max steps (+rejects not counted) = "
    f"{r_wall * stages * steps.max():.3f} s of {wall:.3f} s"
)
out = dict(
    jax=jax.__version__,
    date=time.strftime("%Y-%m-%d"),
    batch=n,
    t1=t1,
    rtol=rtol,
    wall_s=wall,
    sim_per_wall=n * t1 / wall,
    steps_mean=float(steps.mean()),
    steps_max=int(steps.max()),
    rhs_batched_s=r_wall,
    rhs_share_at_max_steps=r_wall * stages * int(steps.max()) / wall,
)
with open(os.path.join(os.path.dirname(__file__), "results", "dynamics_bound.json"), "w") as fh:
    json.dump(out, fh, indent=1)
