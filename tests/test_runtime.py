"""The installed JAX runtime runs what diffmech compiles, without hanging.

jaxlib 0.10.x on the CPU runs a batched LAPACK kernel by splitting the batch over
XLA's intra-op thread pool and blocking a pool thread until the pieces are done; two
such kernels running at once can take every thread of a 2-thread pool and wait for
each other forever. Under jax 0.10.2 the suite hung that way in the exact inverse
kinematics and the payload regressor of the parallel mechanisms (both pool threads in
`LuDecomposition::Kernel → ParallelBatchMap → BlockingCounter::Wait`). diffmech
therefore hands no batch to LAPACK (`diffmech._linalg`). These tests run those
programs, pinned to two CPUs, in a subprocess with a time limit: a hang fails them
instead of eating the suite."""

import os
import subprocess
import sys
import textwrap

PRELUDE = """
import os
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
"""

# the minimal pattern: two independent batched solves in one program
TWO_SOLVES = """
from diffmech import _linalg

@jax.jit
def two_solves(A, B, b):
    return jax.vmap(_linalg.solve)(A, b), jax.vmap(_linalg.solve)(B, b)

A = jax.random.normal(jax.random.key(0), (200, 42, 42)) + 10.0 * jnp.eye(42)
b = jnp.ones((200, 42))
for i in range(20):
    x, y = jax.block_until_ready(two_solves(A, A + float(i), b))
assert bool(jnp.isfinite(x).all() & jnp.isfinite(y).all())
print("done")
"""

# the library's programs that hung: exact inverse kinematics and Newton–Euler forces
# of a Gough–Stewart platform, every sample at once
STEWART = """
from diffmech import parallel
mech = parallel.StewartPlatform()
traj = parallel.stewart_spiral(mech, jnp.arange(0.0, 0.4, 1e-3))
for _ in range(3):
    kin = parallel.inverse_kinematics(mech, traj)
    dyn = parallel.inverse_dynamics(mech, traj, kinematics=kin)
    jax.block_until_ready((kin, dyn))
print("done")
"""


def _run(program, timeout=240):
    # the runtime's own thread pool, as a user's process has it: the suite's one-thread
    # setting is dropped; LLVM's optimisation level is kept at the suite's (it changes
    # the generated loops, not how the runtime schedules LAPACK kernels on its pool)
    flags = os.environ.get("XLA_FLAGS", "").replace("--xla_cpu_multi_thread_eigen=false", "")
    env = dict(os.environ, XLA_FLAGS=flags)
    try:
        out = subprocess.run(
            [sys.executable, "-c", PRELUDE + textwrap.dedent(program)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("a diffmech program hung on this JAX runtime (see diffmech/_linalg.py)") from None
    assert out.returncode == 0 and "done" in out.stdout, out.stderr[-3000:]


def test_two_concurrent_batched_solves_do_not_deadlock():
    _run(TWO_SOLVES)


def test_stewart_exact_inverse_kinematics_and_wrenches_do_not_hang():
    _run(STEWART)
