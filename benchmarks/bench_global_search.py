"""An evolution strategy (evosax's CMA-ES or differential evolution) against the
synthesis's basin hopping on one literature problem, in the search's own normalised
loss: basin hopping's best loss over its rounds (`screen=4096, hops=8`, 32 starts ×
600 steps), then the ES started from the best screened candidate for GENS generations
of POP, its per-generation bests polished by the same L-BFGS program. evosax is not a
dependency of diffmech: `pip install evosax` first.

    python benchmarks/bench_global_search.py NV-Case5 cma 4000 1024 1   # case, cma|de, gens, pop, seed
    python benchmarks/bench_global_search.py NV-Case5 cma 2000 256 1 nobh   # the ES alone
"""

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the repository's diffmech
sys.path.insert(0, HERE)

import equinox as eqx  # noqa: E402
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import bench_literature_synthesis as B  # noqa: E402
import jax.flatten_util  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from evosax.algorithms import CMA_ES, DifferentialEvolution  # noqa: E402

import diffmech._fit as _F  # noqa: E402
import diffmech._synthesis as _S  # noqa: E402
from diffmech import synthesis as S  # noqa: E402

P = {p["id"]: p for p in json.load(open(B.DATA))}
case = sys.argv[1]
algo = sys.argv[2]
gens = int(sys.argv[3])
pop = int(sys.argv[4])
seed = int(sys.argv[5])
p = P[case]
t = np.array(p["targets"], float)
orig_fit = _F.fit
calls = []


def spy(loss, model, *args, **kw):
    res = orig_fit(loss, model, *args, **kw)
    calls.append((loss, model, args, kw, res))
    return res


_S._fit.fit = spy
# basin hopping reference (normalised loss of its rounds)
t0 = time.perf_counter()
nobh = len(sys.argv) > 6
r = S.path_generation(
    t, **B.posed(p), starts=32, steps=600 if not nobh else 1, seed=seed, screen=4096, hops=0 if nobh else 8
)
t_bh = time.perf_counter() - t0
if not nobh:
    print(
        case,
        f"basin hopping: objective {r.objective:.4e}, best normalised loss over rounds "
        f"{min(float(np.nanmin(np.asarray(c[4].loss))) for c in calls):.4e}, {t_bh:.1f} s (incl. compile)",
        flush=True,
    )
loss, c0, args, kw, _ = calls[0]
prob = args[0]
trainable = kw["trainable"]
template = jax.tree.map(lambda a: a[0], c0)
leaves0 = trainable(template)
flat0, unravel = jax.flatten_util.ravel_pytree(leaves0)


def build(v):
    fields = unravel(v)
    return eqx.tree_at(trainable, template, fields)


def fitness(v):
    f = loss(build(v), prob)
    return jnp.where(jnp.isfinite(f), f, 1e10)


Alg = {"cma": CMA_ES, "de": DifferentialEvolution}[algo]
es = Alg(population_size=pop, solution=flat0)
params = es.default_params
key = jax.random.key(seed)


@jax.jit
def run(key):
    if algo == "de":
        pop0 = flat0 + 0.5 * jax.random.normal(key, (pop, flat0.size), flat0.dtype)
        state = es.init(key, pop0, jax.vmap(fitness)(pop0), params)
    else:
        state = es.init(key, flat0, params)

    def gen(carry, k):
        state = carry
        k1, k2 = jax.random.split(k)
        x, state = es.ask(k1, state, params)
        f = jax.vmap(fitness)(x)
        state, _ = es.tell(k2, x, f, state, params)
        return state, (jnp.min(f), x[jnp.argmin(f)])

    state, (fs, xs) = jax.lax.scan(gen, state, jax.random.split(key, gens))
    return fs, xs


t0 = time.perf_counter()
fs, xs = run(key)
fs.block_until_ready()
tc = time.perf_counter() - t0
t0 = time.perf_counter()
fs, xs = run(jax.random.key(seed + 100))
fs.block_until_ready()
tr = time.perf_counter() - t0
i = int(jnp.argmin(fs))
print(
    case,
    algo,
    f"pop {pop} gens {gens}: best raw loss {float(fs[i]):.4e} (first run {tc:.1f} s, second {tr:.1f} s)",
    flush=True,
)
# polish: the 32 best of the ES's per-generation bests, by the same L-BFGS program
order = np.argsort(np.asarray(fs))[:32]
starts = jax.vmap(build)(xs[jnp.asarray(order)])
starts = eqx.combine(eqx.filter(starts, eqx.is_array), eqx.filter(c0, lambda a: not eqx.is_array(a)))
starts = jax.tree.map(lambda a, b: a if eqx.is_array(a) else b, starts, c0)
t0 = time.perf_counter()
res = orig_fit(loss, starts, prob, **kw)
print(
    case,
    algo,
    f"after the L-BFGS polish: best normalised loss {float(np.nanmin(np.asarray(res.loss))):.4e} "
    f"({time.perf_counter() - t0:.1f} s)",
    flush=True,
)
