"""Linkage simulation speed (issue 4): each of the seed's examples simulated over its
range, against the seed's reported MATLAB times, and batched over perturbed designs;
pylinkage on the planar case it can express (the four-bar), measured in the same run.

    python benchmarks/bench_linkages.py [--designs 1024] [--repeats 20] [--quick]

Compile time is reported separately from run time (medians of repeated runs after a
warm-up). Writes benchmarks/results/linkages.json (or --out) and prints a table.
"""

import argparse
import json
import os
import platform
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import diffmech as dm  # noqa: E402
from benchmarks._timing import add_dispatch_flag, set_dispatch, timed  # noqa: E402
from diffmech import _closure, _linalg, linkage as L  # noqa: E402
from diffmech.linkage import _model, _simulate  # noqa: E402

# seed 003, Sec. 4 (MATLAB, Core i5-7300, 180 steps; the 5-SS's step count is not given)
PAPER_S = dict(fourbar=1.4, stephenson2=3.79, theo_jansen=3.81, spherical_rrpr=1.49, spherical_watt1=3.33, ss5=0.28)


BATCH_CHUNK = 64  # designs per chunk of the batched runs


def perturbed(lk, n, rel=2e-3, seed=0):
    """`n` designs: every point moved by `rel` of the linkage's size, lines shifted."""
    rng = np.random.default_rng(seed)
    size = float(jnp.max(jnp.abs(lk.coords)))
    if lk.geometry == "planar":
        move = np.array([[1.0, 1.0, 0.0] if t != "P" else [0.0, 0.0, 1.0] for t in lk.types])
    else:
        move = np.ones(lk.coords.shape)
    return lk.coords[None] + jnp.asarray(rel * size * rng.normal(size=(n,) + lk.coords.shape) * move)


class generic_predictor:
    """Within it, `linkage.sweep` uses the generic predictor for every linkage."""

    def __enter__(self):
        self.saved = _simulate._structure.predictor
        _simulate._structure.predictor = lambda lk: None

    def __exit__(self, *exc):
        _simulate._structure.predictor = self.saved


def bench_example(name, designs, repeats):
    lk = getattr(dm.examples, name)()
    inputs = L.default_inputs(lk)
    steps = int(inputs.shape[0])
    res = dict(
        name=name, geometry=lk.geometry, input=lk.input_kind, steps=steps, counts=lk.counts(), paper_s=PAPER_S[name]
    )
    for label, cond in (("single", True), ("single_lean", False)):
        f = jax.jit(lambda lk, u, c=cond: L.sweep_functional(lk, u, condition=c))
        m, c_s, run_s = timed(f, lk, inputs, repeats=repeats, aot=True)
        ok = np.asarray(m.converged)
        res[label] = dict(
            compile_s=c_s,
            run_s=run_s,
            converged=int(ok.sum()),
            max_residual=float(np.max(np.asarray(m.residual)[ok])),
            speedup_vs_paper=PAPER_S[name] / run_s,
        )
    # where the linkage decomposes into dyads (`linkage.structure`), the closed form
    # predicts every input; the generic predictor (continuation through every 6th
    # input and interpolation) timed in the same run, for the ratio
    res["structure"] = [g.kind for g in L.structure(lk).groups] if lk.geometry != "spatial" else None
    if _simulate._structure.predictor(lk) is not None:
        with generic_predictor():
            for label, cond in (("generic", True), ("generic_lean", False)):
                f = jax.jit(lambda lk, u, c=cond: L.sweep_functional(lk, u, condition=c))
                m, c_s, run_s = timed(f, lk, inputs, repeats=repeats, aot=True)
                res[label] = dict(compile_s=c_s, run_s=run_s, converged=int(np.asarray(m.converged).sum()))
    # the eager entry point a notebook user calls (validation, the initial check and the
    # compiled program), against the jitted program alone: the eager layer's overhead
    jax.block_until_ready(L.sweep(lk))
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(L.sweep(lk))
        runs.append(time.perf_counter() - t)
    res["eager"] = dict(run_s=float(np.median(runs)), overhead=float(np.median(runs)) / res["single"]["run_s"] - 1)
    # baseline in the same run: the sequential continuation through every input
    # (the core's previous algorithm, now its fallback)
    prep_det = lambda x, u, p: _linalg.det(jax.jacfwd(_model.prepared_residual)(x, u, p))
    f = jax.jit(
        lambda lk, u: _closure.continuation(
            _model.prepared_residual, lk.x0(), u, _model.prepare(lk), branch=prep_det, condition=False, max_steps=10
        )
    )
    m, c_s, run_s = timed(f, lk, inputs, repeats=repeats, aot=True)
    res["sequential"] = dict(
        compile_s=c_s,
        run_s=run_s,
        converged=int(np.asarray(m.converged).sum()),
        speedup_of_sweep=run_s / res["single_lean"]["run_s"],
    )
    batch = perturbed(lk, designs)
    # vmapped in chunks of 64 designs inside one jit (`lax.map(batch_size=…)`): a single
    # vmap of 1024 5-SS designs (15 unknowns, LAPACK solves) stalls XLA:CPU in jax
    # 0.10.2, and smaller chunks stay in the caches (1024 designs, 2026-11-25: chunks of
    # 256 / 128 / 64 / 32 / 16 took 1.88 / 1.55 / 1.52 / 1.52 / 3.78 s for the
    # Stephenson-II; 64 against 256: Theo Jansen 1.53 against 1.90 s, Watt-I 1.53
    # against 1.83 s, 5-SS 6.20 against 7.82 s)
    f = jax.jit(
        lambda b: jax.lax.map(
            lambda c: L.sweep_functional(eqx.tree_at(lambda l: l.coords, lk, c), inputs, condition=False),
            b,
            batch_size=min(BATCH_CHUNK, designs),
        )
    )
    m, c_s, run_s = timed(f, batch, repeats=max(3, repeats // 5), aot=True)
    conv = np.asarray(m.converged)
    res["batched"] = dict(
        designs=designs,
        compile_s=c_s,
        run_s=run_s,
        converged_fraction=float(conv.mean()),
        positions_per_s=designs * steps / run_s,
        max_residual=float(np.max(np.asarray(m.residual)[conv])),
    )
    return res


def bench_pylinkage(designs, repeats):
    from benchmarks.peers import pylinkage_fourbar as pk

    if not pk.available():
        return None
    single = pk.single_sweep(n_steps=180, repeats=max(200, repeats * 10))
    single.pop("positions", None)
    batch = pk.batched(n_designs=designs, n_steps=180, repeats=3)
    return dict(single=single, batched=batch)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--designs", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="4 designs, 3 repeats, two examples")
    ap.add_argument("--examples", default=",".join(dm.examples.NAMES))
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument(
        "--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "linkages.json")
    )
    add_dispatch_flag(ap)
    a = ap.parse_args(argv)
    async_dispatch = set_dispatch(a.async_dispatch)
    names = a.examples.split(",")
    if a.quick:
        a.designs, a.repeats, names = 4, 3, ["fourbar", "spherical_rrpr"]
    out = dict(
        machine=dict(
            platform=platform.platform(),
            processor=platform.processor(),
            cpus=os.cpu_count(),
            jax=jax.__version__,
            backend=jax.default_backend(),
            devices=[str(d) for d in jax.devices()],
            jax_cpu_enable_async_dispatch=async_dispatch,
        ),
        examples=[],
    )
    for name in names:
        r = bench_example(name, a.designs, a.repeats)
        out["examples"].append(r)
        s, sl, b = r["single"], r["single_lean"], r["batched"]
        if "generic" in r:
            print(
                f"{name:16s} structure {'+'.join(r['structure'])}: closed form {s['run_s'] * 1e3:.3f} ms "
                f"({sl['run_s'] * 1e3:.3f} ms without conditioning) against the generic predictor "
                f"{r['generic']['run_s'] * 1e3:.3f} ms ({r['generic_lean']['run_s'] * 1e3:.3f} ms): "
                f"{r['generic']['run_s'] / s['run_s']:.2f}x ({r['generic_lean']['run_s'] / sl['run_s']:.2f}x)",
                flush=True,
            )
        print(
            f"{name:16s} {s['converged']:3d}/{r['steps']} steps  run {s['run_s'] * 1e3:7.2f} ms "
            f"(no conditioning {sl['run_s'] * 1e3:6.2f} ms; eager simulate {r['eager']['run_s'] * 1e3:6.2f} ms, "
            f"overhead {100 * r['eager']['overhead']:.0f} %; sequential {r['sequential']['run_s'] * 1e3:6.2f} ms, "
            f"compile {r['sequential']['compile_s']:.1f} s)  compile {s['compile_s']:5.1f} s  "
            f"paper {r['paper_s']:.2f} s -> {s['speedup_vs_paper']:7.0f}x ({sl['speedup_vs_paper']:.0f}x)  "
            f"batch {b['designs']}: {b['positions_per_s'] / 1e6:.3f} M positions/s (compile {b['compile_s']:.1f} s)",
            flush=True,
        )
    if not a.no_peer and not a.quick:
        peer = bench_pylinkage(a.designs, a.repeats)
        if peer is not None:
            out["pylinkage_fourbar"] = peer
            fb = next((r for r in out["examples"] if r["name"] == "fourbar"), None)
            print(
                f"pylinkage four-bar: one 180-step sweep {peer['single']['median_s'] * 1e3:.3f} ms, "
                f"batch {peer['batched']['n_designs']}: {peer['batched']['positions_per_s'] / 1e6:.3f} M positions/s"
            )
            if fb is not None:
                out["fourbar_vs_pylinkage"] = dict(
                    single_ratio=peer["single"]["median_s"] / fb["single_lean"]["run_s"],
                    batched_ratio=fb["batched"]["positions_per_s"] / peer["batched"]["positions_per_s"],
                )
                print(
                    "four-bar, diffmech / pylinkage: single speed ratio "
                    f"{out['fourbar_vs_pylinkage']['single_ratio']:.3f}, batched throughput ratio "
                    f"{out['fourbar_vs_pylinkage']['batched_ratio']:.3f}"
                )
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump(out, fh, indent=1, default=float)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
