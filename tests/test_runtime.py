"""The installed JAX runtime can run what diffmech compiles.

jaxlib 0.10.x deadlocks on a 2-core CPU when one compiled program holds two
independent batched LAPACK solves: each LU kernel blocks an intra-op pool thread
while waiting for its batch tasks, which need the same (exhausted) pool. Every
parallel-mechanism solve has such pairs, so pyproject.toml keeps jax < 0.10; this
test fails (instead of hanging the suite) if an upgrade brings the deadlock back."""

import os
import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent("""
    import os
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:2]
        os.sched_setaffinity(0, cpus)
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)

    @jax.jit
    def two_solves(A, B, b):
        return jnp.linalg.solve(A, b), jnp.linalg.solve(B, b)

    A = jax.random.normal(jax.random.key(0), (200, 42, 42)) + 10.0 * jnp.eye(42)
    b = jnp.ones((200, 42, 1))
    for i in range(20):
        x, y = jax.block_until_ready(two_solves(A, A + float(i), b))
    assert bool(jnp.isfinite(x).all() & jnp.isfinite(y).all())
    print("done")
""")


def test_two_concurrent_batched_solves_do_not_deadlock():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    try:
        out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=180, env=env)
    except subprocess.TimeoutExpired:
        raise AssertionError("two independent batched solves in one jitted program hang: "
                             "this jaxlib deadlocks its CPU thread pool (see pyproject.toml's jax pin)") from None
    assert out.returncode == 0 and "done" in out.stdout, out.stderr[-2000:]
